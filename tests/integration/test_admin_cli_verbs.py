"""pulsar-admin's verbs as the yardstick of ``pulsarlike admin`` (issue 31).

``tests/data/pulsar_admin_cli_verbs.json`` (built by ``scripts/gen_admin_cli_verbs.py`` from pulsar-admin's
``Cmd*.java`` and the Java admin client's ``*Impl.java``) lists each verb of pulsar-admin with its flags and the
admin REST routes it sends. For every verb whose routes the admin app serves (the served computation of
``scripts/gen_admin_docs.py``), ``pulsarlike admin GROUP VERB`` must exist with every (visible) flag of
pulsar-admin's, long and short names; and run over ``--admin-url`` against a real broker, a sample of verbs of
each group must send the methods and paths pulsar-admin's verb sends.

What is missing today is :data:`KNOWN_CLI_GAPS`, one reason each, worded as the test words it: adding a verb (or
a flag) means deleting its line (the test fails on a gap that is gone, as on a new one). ``pytest -s`` prints the
figure: verbs served / pulsar-admin verbs that apply.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import re
from pathlib import Path
from typing import Iterator

import pytest
from aiohttp import web

from broker_core.broker import Broker
from broker_core.frontends.http.admin import Advertised, admin_app
from broker_core.security import Authorizer, Security
from connector.cli import admin as cli

DATA = Path(__file__).resolve().parent.parent / "data"
TABLE = json.loads((DATA / "pulsar_admin_cli_verbs.json").read_text())
VERBS = TABLE["verbs"]
ROUTES = json.loads((DATA / "pulsar_admin_v2_routes.json").read_text())["routes"]
NO_GROUP = "no such group in pulsarlike admin"
NO_VERB = "no such verb"

KNOWN_CLI_GAPS: dict[str, str] = {
    # brokers' dynamic configuration, broker-stats, resource groups, rates (helper A's routes and verbs)
    # namespace and topic policies added with their routes (admin_namespaces.py)
    # schemas extract reads a schema from a Java class in a jar (no Java here: a pulsarlike way would take a
    # Python Record); create-shadow-topic needs shadow topics (not served)
    'schemas extract': 'no such verb',
    'topics create-shadow-topic': 'no such verb',
}
"""``group`` (a whole group) or ``group verb`` -> what is missing, as :func:`gaps` words it. Delete a line when
the verb (or flag) exists."""


def served_routes() -> set[tuple[str, str]]:
    from scripts.gen_admin_docs import app_served, load
    return app_served(load())


@pytest.fixture(scope="module")
def served() -> set[tuple[str, str]]:
    return served_routes()


def flag_names(parser) -> set[str]:
    return {name for action in parser._actions for name in action.option_strings}


def gaps(served: set[tuple[str, str]]) -> tuple[dict[str, str], list[dict], list[dict]]:
    """(problems keyed as KNOWN_CLI_GAPS, the verbs that apply, the verbs of those pulsarlike admin has)."""
    parser = cli.build_parser()
    groups = {group for group, _ in parser.leaves}
    problems: dict[str, str] = {}
    applicable = [v for v in VERBS if v["applies"]]
    present = [v for v in applicable if (v["group"], v["verb"]) in parser.leaves]
    for v in applicable:
        if v["group"] not in groups:
            problems[v["group"]] = NO_GROUP
            continue
        if not {(r["method"], r["path"]) for r in v["routes"]} <= served:
            continue  # a route it sends is not served yet: the route comes first
        key = f"{v['group']} {v['verb']}"
        leaf = parser.leaves.get((v["group"], v["verb"]))
        if leaf is None:
            problems[key] = NO_VERB
            continue
        ours = flag_names(leaf)
        lacking = [name for flag in v["flags"] if not flag.get("hidden") for name in flag["names"] if name not in ours]
        if lacking:
            problems[key] = "lacks " + ", ".join(lacking)
    return problems, applicable, present


def test_every_verb_reaching_a_served_route_exists_with_pulsar_admins_flags(served):
    problems, applicable, present = gaps(served)
    by_group: dict[str, list[int]] = {}
    for v in applicable:
        counts = by_group.setdefault(v["group"], [0, 0])
        counts[0] += 1
        counts[1] += v in present
    main = [v for v in applicable if v["group"] != "topicPolicies"]
    n = sum(v in present for v in main)
    print(f"\npulsarlike admin has {n} of pulsar-admin's {len(main)} verbs that apply to one broker "
          f"({100 * n / len(main):.0f} %; topicPolicies, whose verbs repeat the topics group's, left out); "
          + ", ".join(f"{group} {have}/{total}" for group, (total, have) in by_group.items()))
    new = {key: text for key, text in problems.items() if KNOWN_CLI_GAPS.get(key) != text}
    gone = sorted(KNOWN_CLI_GAPS.keys() - problems.keys())
    assert not new and not gone, (
        ("missing, not in KNOWN_CLI_GAPS as found (add the verb or flag, or list it there):\n" + "".join(
            f"    {key!r}: {text!r},\n" for key, text in sorted(new.items())) if new else "") +
        ("\nthere now, delete from KNOWN_CLI_GAPS:\n  " + "\n  ".join(gone) if gone else ""))


def test_the_table_says_where_it_comes_from():
    header = TABLE["header"]
    assert header["repository"] == "https://github.com/apache/pulsar" and re.fullmatch(r"[0-9a-f]{40}",
                                                                                         header["commit"])
    assert any(path.endswith("CmdNamespaces.java") for path in header["files"])
    templates = {(r["method"], r["path"]) for r in ROUTES}
    for v in VERBS:
        for route in v["routes"]:
            assert (route["method"], route["path"]) in templates, (v["group"], v["verb"], route)


# ---------------------------------------------------------------------------------- what goes on the wire
@contextlib.contextmanager
def recording_admin(data_dir: Path) -> Iterator[tuple[Broker, str, list[tuple[str, str, int]]]]:
    """An in-process broker and its admin app on 127.0.0.1 port 0, recording (method, path, status) of every
    request it answers."""
    broker = Broker(data_dir=data_dir, port=0, journalSyncMode="never").start()
    seen: list[tuple[str, str, int]] = []
    try:
        registry = broker._service.registry

        async def record(request: web.Request, response: web.StreamResponse) -> None:
            seen.append((request.method, request.path, response.status))

        async def serve() -> tuple[web.AppRunner, int]:
            security = Security(broker.config, Authorizer(broker.config.super_user_roles(), registry.namespaces,
                                                          registry.policies))
            app = admin_app(registry, security, broker.config, Advertised("http://127.0.0.1:8080",
                                                                          broker.service_url))
            app.on_response_prepare.append(record)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            return runner, site._server.sockets[0].getsockname()[1]

        runner, port = asyncio.run_coroutine_threadsafe(serve(), broker._loop).result(timeout=30)
        try:
            yield broker, f"http://127.0.0.1:{port}", seen
        finally:
            asyncio.run_coroutine_threadsafe(runner.cleanup(), broker._loop).result(timeout=30)
    finally:
        broker.stop()


def template_of(method: str, path: str) -> str | None:
    """The route table's template naming a concrete path (the one with the most literal segments)."""
    best = None
    for row in ROUTES:
        if row["method"] != method:
            continue
        pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(row["path"])) + "$"
        if re.match(pattern, path):
            literal = sum(not part.startswith("{") for part in row["path"].split("/"))
            if best is None or literal > best[0]:
                best = (literal, row["path"])
    return best[1] if best else None


TOPIC = "/admin/v2/persistent/{tenant}/{namespace}/{topic}"
PARTITIONS, STATS = f"GET {TOPIC}/partitions", f"GET {TOPIC}/stats"
KNOWN_WIRE_GAPS: dict[str, str] = {
    # the CLI builds Pulsar's Policies from Admin.namespace_policies and the tenant's clusters, where the broker's
    # GET namespaces/{t}/{ns} answers the Policies themselves (an Admin method returning them is still to add)
    'namespaces policies': "also sends GET /admin/v2/tenants/{tenant}",
}
"""``group verb`` -> what ``pulsarlike admin`` sends over ``--admin-url`` beyond (or instead of) what pulsar-admin's
verb sends, as the test words it. Delete a line when the client sends only Pulsar's requests."""

T = "persistent://acme/orders/t1"
PT = "persistent://acme/orders/pt"
SAMPLE: list[list[str]] = [
    ["tenants", "list"], ["tenants", "get", "acme"], ["tenants", "update", "acme", "-r", "ops"],
    ["namespaces", "list", "acme"], ["namespaces", "topics", "acme/orders"],
    ["namespaces", "set-retention", "acme/orders", "-t", "3h", "-s", "10M"],
    ["namespaces", "get-retention", "acme/orders"],
    ["namespaces", "set-compaction-threshold", "acme/orders", "-t", "10M"],
    ["namespaces", "set-message-ttl", "acme/orders", "-ttl", "60"],
    ["namespaces", "set-deduplication", "acme/orders", "--enable"],
    ["namespaces", "set-max-producers-per-topic", "acme/orders", "-p", "3"],
    ["namespaces", "grant-permission", "acme/orders", "--role", "r1", "--actions", "produce"],
    ["topics", "list", "acme/orders"], ["topics", "stats", T], ["topics", "stats-internal", T],
    ["topics", "partitioned-stats", PT], ["topics", "create-subscription", T, "-s", "s2"],
    ["topics", "skip", T, "-s", "s1", "-n", "1"], ["topics", "clear-backlog", T, "-s", "s1"],
    ["topics", "reset-cursor", T, "-s", "s1", "-t", "1h"],
    ["topics", "expire-messages", T, "-s", "s1", "-t", "1h"],
    ["topics", "peek-messages", T, "-s", "s1"], ["topics", "last-message-id", T],
    ["topics", "set-retention", T, "-t", "3h", "-s", "10M"], ["topics", "get-retention", T],
    ["topics", "set-message-ttl", T, "-t", "60"], ["topics", "unload", T],
    ["topics", "unsubscribe", T, "-s", "s2"],
    ["schemas", "get", T], ["clusters", "list"], ["clusters", "get", "standalone"],
    ["brokers", "healthcheck"], ["brokers", "leader-broker"],
    ["namespaces", "set-backlog-quota", "acme/orders", "-l", "10M", "-p", "producer_request_hold"],
    ["namespaces", "get-backlog-quotas", "acme/orders"], ["namespaces", "remove-backlog-quota", "acme/orders"],
    ["namespaces", "set-schema-compatibility-strategy", "acme/orders", "-c", "FULL"],
    ["namespaces", "get-schema-compatibility-strategy", "acme/orders"],
    ["namespaces", "set-auto-topic-creation", "acme/orders", "-e"],
    ["namespaces", "get-auto-topic-creation", "acme/orders"], ["namespaces", "remove-auto-topic-creation", "acme/orders"],
    ["topics", "partitioned-terminate", PT],
    # policies: a get-* reads its own route, a remove-* deletes it
    ["namespaces", "get-message-ttl", "acme/orders"], ["namespaces", "remove-message-ttl", "acme/orders"],
    ["namespaces", "get-deduplication", "acme/orders"], ["namespaces", "get-compaction-threshold", "acme/orders"],
    ["namespaces", "get-max-producers-per-topic", "acme/orders"], ["namespaces", "remove-retention", "acme/orders"],
    ["namespaces", "get-subscription-expiration-time", "acme/orders"],
    ["topics", "get-message-ttl", T], ["topics", "remove-message-ttl", T], ["topics", "remove-retention", T],
    ["topics", "set-deduplication", T, "--enable"], ["topics", "get-deduplication", T],
    ["topics", "set-max-producers", T, "-p", "2"], ["topics", "get-max-producers", T],
    ["topics", "remove-max-producers", T], ["topics", "get-compaction-threshold", T],
    # subscriptions, a partitioned topic's included (the broker applies them to each partition)
    ["topics", "subscriptions", T], ["topics", "create-subscription", PT, "-s", "p1"],
    ["topics", "clear-backlog", PT, "-s", "p1"], ["topics", "reset-cursor", PT, "-s", "p1", "-t", "1h"],
    ["topics", "unsubscribe", PT, "-s", "p1"], ["topics", "expire-messages-all-subscriptions", T, "-t", "1h"],
    ["topics", "get-partitioned-topic-metadata", PT], ["namespaces", "clear-backlog", "acme/orders", "-force"],
    ["namespaces", "policies", "acme/orders"],
    # schemas (delete last: the samples above read T's schema)
    ["schemas", "delete", T],
]
"""Verbs run over ``--admin-url`` (the world of :func:`world` made first)."""


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    with recording_admin(tmp_path_factory.mktemp("cli-verbs")) as (broker, url, seen):
        for args in (["tenants", "create", "acme", "-c", "standalone"], ["namespaces", "create", "acme/orders"],
                     ["topics", "create", T], ["topics", "create-partitioned-topic", PT, "-p", "2"],
                     ["topics", "create-subscription", T, "-s", "s1"]):
            assert cli.main(["--admin-url", url, *args]) == 0, args
        schema = tmp_path_factory.mktemp("schema") / "s.json"
        schema.write_text(json.dumps({"type": "STRING", "schema": "", "properties": {}}))
        assert cli.main(["--admin-url", url, "schemas", "upload", T, "-f", str(schema)]) == 0
        yield url, seen


@pytest.mark.parametrize("args", SAMPLE, ids=lambda a: " ".join(a[:2]))
def test_a_verb_sends_what_pulsar_admin_sends(world, args, capsys):
    url, seen = world
    verb = next(v for v in VERBS if (v["group"], v["verb"]) == tuple(args[:2]))
    pulsars = {(r["method"], r["path"]) for r in verb["routes"]}
    del seen[:]
    code = cli.main(["--admin-url", url, *args])
    assert code == 0, capsys.readouterr().err
    sent = {(method, template_of(method, path)) for method, path, _ in seen}
    key = " ".join(args[:2])
    extra = sorted(f"{method} {template}" for method, template in sent - pulsars)
    problem = (None if not extra else f"also sends {', '.join(extra)}" if sent & pulsars
               else f"sends none of pulsar-admin's requests, but {', '.join(extra)}")
    assert problem == KNOWN_WIRE_GAPS.get(key), (
        f"pulsarlike admin {key}: {problem or 'sends only what pulsar-admin sends'} (pulsar-admin sends "
        f"{sorted(pulsars)}); KNOWN_WIRE_GAPS says {KNOWN_WIRE_GAPS.get(key)!r}")
