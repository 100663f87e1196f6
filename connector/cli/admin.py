"""``pulsarlike admin``: manage a broker like ``pulsar-admin`` -- same groups, verbs, flags and output.

    pulsarlike admin [--admin-url URL] tenants list|get|create|update|delete ...
    pulsarlike admin [--admin-url URL] namespaces list|topics|create|delete|policies|set-retention|...
    pulsarlike admin [--admin-url URL] topics list|create|create-partitioned-topic|update-partitioned-topic|
                                              list-partitioned-topics|delete|stats|partitioned-stats|
                                              stats-internal|subscriptions|create-subscription|unsubscribe|
                                              skip|clear-backlog|reset-cursor|peek-messages|examine-messages|
                                              expire-messages|last-message-id|terminate|unload|lookup|
                                              compact|compaction-status|set-retention|verify|...
    pulsarlike admin --admin-url http://HOST:8080 clusters list|get, brokers list|healthcheck|version|
                                              leader-broker
    pulsarlike admin [--admin-url URL] schemas get|upload|delete|compatibility

Permissions: ``namespaces|topics grant-permission|revoke-permission|permissions``
(:mod:`connector.cli.admin_permissions`). ``--auth-plugin``, ``--auth-params``, ``--tls-trust-cert-path``,
``--tls-allow-insecure`` and ``--tls-enable-hostname-verification`` (before or after the verb,
:mod:`connector.cli.security_flags`) authenticate to a broker that requires it.

``--admin-url`` (alias ``--service-url``, ``--url``; before or after the verb) is where the admin calls go:
``http://HOST:8080`` (``https://HOST:8443``) as pulsar-admin's -- Pulsar's admin REST API, on a pulsarlike
broker's web service port or an Apache Pulsar cluster (``Admin(admin_url=...)``) -- or a service URL,
``pulsar://HOST:PORT``, for this broker's gRPC admin calls on the port its clients use. Default:
``$PULSARLIKE_SERVICE_URL``, else ``pulsar://127.0.0.1:6650``. A ``pulsar://`` URL of another Pulsar
broker (Apache Pulsar, pulsar-lite) has no gRPC admin: the error then says to give its ``--admin-url``.
``clusters`` and ``brokers``
(:mod:`connector.cli.admin_rest_groups`) need an HTTP URL (over ``pulsar://`` the Admin's ``NotSupported``
says so, exit 1); ``schemas`` works over both.

Output is pulsar-admin's: lists one name per line, stats and policies as JSON laid out like Jackson's
pretty printer, nothing for a change that succeeded. Sizes and times are read like pulsar-admin reads
them (``--size 10M``, ``--time 3h``, a bare number of seconds, ``-1`` for no limit; see
:mod:`connector.cli.units`).

Exit codes: 0 done; 1 the broker refused or could not be reached (``Code: message`` on stderr, the code
being the typed error's, e.g. ``NamespaceNotFound``); 2 bad usage (an unknown verb or flag names the closest
one); 3 ``topics verify`` found damage (:mod:`connector.cli.admin_verify`). Every verb is listed with an
example in ``docs/admin.md``.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
from typing import Any, Callable, Sequence

from connector.cli.args import SuggestingParser

from broker_core.errors import PulsarLikeError

from connector.cli import (admin_core_verbs, admin_namespaces, admin_permissions, admin_rates, admin_rest_groups,
                           admin_target, admin_topic_policy_group, admin_topics, admin_verb_flags, admin_verify, output,
                           security_flags)
from connector.cli.units import (parse_message_id, parse_relative_seconds, parse_size, seconds_to_minutes,
                                 size_to_mb)

DEFAULT_URL = "pulsar://127.0.0.1:6650"
URL_ENV = "PULSARLIKE_SERVICE_URL"
URL_FLAGS = ("--admin-url", "--service-url", "--url")
Run = Callable[[Any, argparse.Namespace], "str | None"]


class _Parser(SuggestingParser):
    """The admin tool's parser: an unknown flag is compared with the flags of the verb given."""

    leaves: dict[tuple[str, str], "_Parser"]

    def leaf(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        return getattr(self, "leaves", {}).get((getattr(parsed, "group", ""), getattr(parsed, "verb", "")), self)


def _stats_flags(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """pulsar-admin's stats flags. As pulsar-admin, the subscriptions' ``backlogSize`` is always asked (its
    ``-sbs`` defaults to true, so the flag changes nothing)."""
    p.add_argument("-gpb", "--get-precise-backlog", action="store_true",
                   help="accepted: the backlog counts of a pulsarlike broker are always precise")
    p.add_argument("-sbs", "--get-subscription-backlog-size", action="store_true",
                   help="each subscription's backlogSize in bytes (always asked, as pulsar-admin's default)")
    p.add_argument("-etb", "--get-earliest-time-in-backlog", action="store_true",
                   help="each subscription's earliestMsgPublishTimeInBacklog (publish time of its first "
                        "unacknowledged message; -1: none) and the topic's earliestMsgPublishTimeInBacklogs")
    return p


def _typed(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return convert


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


# ====================================================================================== tenants
def _tenants(verb: Callable[..., argparse.ArgumentParser]) -> None:
    verb("list", lambda a, o: output.lines(a.list_tenants()), "List the tenants")
    verb("get", lambda a, o: output.pulsar_json(a.get_tenant(o.tenant)), "A tenant's admin roles and allowed "
         "clusters", "tenant")
    for name, run, what in (("create", lambda a, o: a.create_tenant(o.tenant, o.admin_roles, o.allowed_clusters),
                             "Create a tenant"),
                            ("update", lambda a, o: a.update_tenant(o.tenant, o.admin_roles, o.allowed_clusters),
                             "Update a tenant's admin roles and/or allowed clusters")):
        p = verb(name, run, what, "tenant")
        p.add_argument("-r", "--admin-roles", type=_csv, default=None, help="comma-separated admin roles "
                       "(kept and shown; not enforced: no authentication)")
        p.add_argument("-c", "--allowed-clusters", type=_csv, default=None, help="comma-separated clusters "
                       "(default: the broker's clusterName)")
    verb("delete", lambda a, o: a.delete_tenant(o.tenant, force=o.force), "Delete a tenant (refused while it "
         "has namespaces, unless --force)", "tenant").add_argument(
        "-f", "--force", action="store_true", help="delete its namespaces and their topics too")


# ====================================================================================== namespaces
def _retention(value: Any) -> Any:
    """Fields in the order Pulsar's ``RetentionPolicies`` prints them."""
    if not isinstance(value, dict):
        return value
    return {"retentionTimeInMinutes": value.get("retentionTimeInMinutes"),
            "retentionSizeInMB": value.get("retentionSizeInMB")}


def _policies_json(admin: Any, namespace: str) -> str:
    """``namespaces policies``: Pulsar's ``Policies`` field names for what this broker has."""
    set_here = admin.namespace_policies(namespace)
    return output.pulsar_json({
        "replication_clusters": admin.get_tenant(namespace.split("/")[0])["allowedClusters"],
        "deduplicationEnabled": set_here.get("deduplicationEnabled"),
        "message_ttl_in_seconds": set_here.get("messageTTLInSeconds"),
        "retention_policies": _retention(set_here.get("retention")),
        "max_producers_per_topic": set_here.get("maxProducersPerTopic"),
        "max_consumers_per_topic": set_here.get("maxConsumersPerTopic"),
        "subscription_expiration_time_minutes": set_here.get("subscriptionExpirationTimeMinutes"),
        "deleted": False,
    })


def _namespaces(verb: Callable[..., argparse.ArgumentParser]) -> None:
    verb("list", lambda a, o: output.lines(a.list_namespaces(o.tenant)), "List a tenant's namespaces", "tenant")
    for name in ("topics", "destinations"):  # destinations: pulsar-admin's older name of the same verb
        admin_verb_flags.namespace_topics_flags(verb(
            name, admin_verb_flags.namespace_topics,
            "List a namespace's topics (partitions and non-partitioned topics; persistent ones by default)",
            "namespace"))
    admin_verb_flags.namespace_create_flags(verb("create", admin_verb_flags.create_namespace, "Create a namespace",
                                                 "namespace"))
    verb("delete", lambda a, o: a.delete_namespace(o.namespace, force=o.force), "Delete a namespace (refused "
         "while it has topics, unless --force)", "namespace").add_argument(
        "-f", "--force", action="store_true", help="delete its topics too, connected clients or not")
    verb("policies", lambda a, o: _policies_json(a, o.namespace), "A namespace's policies", "namespace")
    verb("set-subscription-expiration-time", lambda a, o: a.set_namespace_subscription_expiration_time(
        o.namespace, o.time), "Delete subscriptions unused this long (no consumer, no activity)",
        "namespace").add_argument("-t", "--time", type=int, required=True,
                                  help="subscription expiration time in minutes (0: never)")
    verb("get-subscription-expiration-time", lambda a, o: output.pulsar_json(
        a.get_namespace_subscription_expiration_time(o.namespace)),
        "The namespace's subscription expiration time in minutes (null: not set)", "namespace")
    verb("remove-subscription-expiration-time", lambda a, o: a.remove_namespace_subscription_expiration_time(
        o.namespace), "Remove the namespace's subscription expiration time", "namespace")
    p = verb("clear-backlog", _clear_namespace_backlog, "Acknowledge every message of every subscription (or one) "
             "of the namespace's topics", "namespace")
    p.add_argument("-s", "--sub", dest="subscription", default=None, help="only this subscription")
    p.add_argument("-force", "--force", dest="force", action="store_true", help="do not ask for confirmation")
    verb("unsubscribe", lambda a, o: a.unsubscribe_namespace(o.namespace, o.subscription) and None,
         "Delete a subscription from every topic of the namespace", "namespace").add_argument(
        "-s", "--sub", dest="subscription", required=True, help="subscription name")
    _policy_verbs(verb, "namespace", "namespace")
    admin_core_verbs.namespace_verbs(verb)
    admin_namespaces.add_verbs(verb)
    admin_rates.namespace_verbs(verb)
    admin_permissions.add_verbs(verb, "namespace", "namespace")


def _policy_verbs(verb: Callable[..., argparse.ArgumentParser], level: str, arg: str) -> None:
    """set-/get-/remove- verbs for retention, message TTL, deduplication, max producers and consumers, at
    the namespace level (``namespaces set-max-producers-per-topic -p``) or the topic level (``topics
    set-max-producers -p``), with pulsar-admin's flags."""
    def call(method: str, *args: Callable[[argparse.Namespace], Any]) -> Run:
        return lambda a, o: getattr(a, method.format(level=level))(getattr(o, arg), *(f(o) for f in args))

    def shown(method: str, convert: Callable[[Any], Any] = lambda v: v) -> Run:
        def show(a: Any, o: argparse.Namespace) -> str:
            if getattr(o, "applied", False):
                return output.pulsar_json(convert(_applied(a, method, getattr(o, arg))))
            return output.pulsar_json(convert(getattr(a, method.format(level=level))(getattr(o, arg))))
        return show

    def applied_flag(p: argparse.ArgumentParser) -> None:
        if level == "topic":
            p.add_argument("-ap", "--applied", action="store_true",
                           help="the value in force: the topic's own, else its namespace's")

    p = verb("set-retention", call("set_{level}_retention", lambda o: seconds_to_minutes(o.time),
                                   lambda o: size_to_mb(o.size)), f"Set the {level}'s retention", arg)
    p.add_argument("-t", "--time", type=_typed(parse_relative_seconds), required=True,
                   help="retention time (100m, 3h, 2d, 5w; a bare number is seconds); 0: none, -1: infinite")
    p.add_argument("-s", "--size", type=_typed(parse_size), required=True,
                   help="retention size (10M, 16G, 3T); 0 (or below 1M): none, -1: infinite")
    applied_flag(verb("get-retention", shown("get_{level}_retention", _retention),
                      f"The {level}'s retention (null: not set)", arg))
    verb("remove-retention", call("remove_{level}_retention"), f"Remove the {level}'s retention", arg)

    p = verb("set-message-ttl", call("set_{level}_message_ttl", lambda o: o.ttl), f"Set the {level}'s message "
             "TTL", arg)
    flags = ("-ttl", "--messageTTL") if level == "namespace" else ("-t", "--ttl")
    p.add_argument(*flags, dest="ttl", type=_typed(parse_relative_seconds), required=True,
                   help="message TTL (seconds, or 30m, 1h, 2d); 0: none")
    applied_flag(verb("get-message-ttl", shown("get_{level}_message_ttl"), f"The {level}'s message TTL in seconds",
                      arg))
    verb("remove-message-ttl", call("remove_{level}_message_ttl"), f"Remove the {level}'s message TTL", arg)

    p = verb("set-deduplication", call("set_{level}_deduplication", lambda o: o.enable),
             f"Enable or disable deduplication for the {level}", arg)
    switch = p.add_mutually_exclusive_group(required=True)
    switch.add_argument("-e", "--enable", action="store_true", dest="enable", help="enable deduplication")
    switch.add_argument("-d", "--disable", action="store_false", dest="enable", help="disable deduplication")
    verb("get-deduplication", shown("get_{level}_deduplication"), f"The {level}'s deduplication setting", arg)
    verb("remove-deduplication", lambda a, o: getattr(a, f"set_{level}_deduplication")(getattr(o, arg), None),
         f"Remove the {level}'s deduplication setting", arg)

    for what, short in (("producers", "-p"), ("consumers", "-c")):
        suffix = f"max-{what}-per-topic" if level == "namespace" else f"max-{what}"
        method = f"{{level}}_max_{what}_per_topic" if level == "namespace" else f"{{level}}_max_{what}"
        # pulsar-admin topics' older spelling of the producers' verbs: set-|get-|remove-maxProducers
        for name in [suffix] + (["maxProducers"] if level == "topic" and what == "producers" else []):
            p = verb(f"set-{name}", call("set_" + method, lambda o: o.limit),
                     f"At most this many {what} on each topic partition (0: no limit)", arg)
            p.add_argument(short, f"--{suffix}", dest="limit", type=int, required=True, help=f"max {what} (>= 0)")
            applied_flag(verb(f"get-{name}", shown("get_" + method), f"The {level}'s max {what} (null: not set)",
                              arg))
            verb(f"remove-{name}", call("remove_" + method), f"Remove the {level}'s max {what}", arg)

    p = verb("set-compaction-threshold", call("set_{level}_compaction_threshold", lambda o: o.threshold),
             f"Compact the {level}'s topics once their backlog not yet compacted exceeds this size (0: never)", arg)
    p.add_argument("-t", "--threshold", type=_typed(parse_size), required=True,
                   help="bytes (10M, 16G, 3T; a bare number is bytes); 0: never")
    applied_flag(verb("get-compaction-threshold", shown("get_{level}_compaction_threshold"),
                      f"The {level}'s compaction threshold in bytes (null: not set)", arg))
    verb("remove-compaction-threshold", call("remove_{level}_compaction_threshold"),
         f"Remove the {level}'s compaction threshold", arg)


APPLIED_DEFAULTS = {"retention": "defaultRetentionTimeInMinutes and defaultRetentionSizeInMB",
                    "message_ttl": "ttlDurationDefaultInSeconds", "max_producers": "maxProducersPerTopic",
                    "max_consumers": "maxConsumersPerTopic",
                    "compaction_threshold": "brokerServiceCompactionThresholdInBytes"}
"""The broker configuration keys whose value applies to a topic when neither it nor its namespace sets one."""


def _applied(admin: Any, method: str, topic: str) -> Any:
    """A topic policy in force (``get-X -ap``), as Pulsar resolves it: the topic's own, else its namespace's; when
    neither sets it the broker's configuration applies, which ``NotSupported`` names (the REST routes do not
    serve ``applied=true`` yet)."""
    from broker_core.errors import NotSupported
    from broker_core.types import TopicName

    name = TopicName.parse(topic)
    own = getattr(admin, method.format(level="topic"))(topic)
    if own is not None:
        return own
    namespace_method = method.format(level="namespace").replace("max_producers", "max_producers_per_topic").replace(
        "max_consumers", "max_consumers_per_topic")
    inherited = getattr(admin, namespace_method)(f"{name.tenant}/{name.namespace}")
    if inherited is not None:
        return inherited
    key = next(k for k in APPLIED_DEFAULTS if method.endswith(k))
    raise NotSupported(f"--applied: neither {topic} nor its namespace sets it, so the broker's configuration "
                       f"applies ({APPLIED_DEFAULTS[key]}; brokers get-runtime-config shows it over --admin-url)")


# ====================================================================================== topics
EXCLUDE_RESET = ("--exclude-reset-position", "moving the cursor to the message after the one given is not served "
                                             "yet: give the next message's id (or a later time) instead")


def _reset_cursor(admin: Any, o: argparse.Namespace) -> None:
    if o.message_id is not None:
        admin.reset_cursor(o.topic, o.subscription, message_id=o.message_id)
    else:
        admin.reset_cursor(o.topic, o.subscription, timestamp_ms=max(0, int(time.time() * 1000) - o.time * 1000))


def _peek(admin: Any, o: argparse.Namespace) -> str:
    messages = admin.peek_messages(o.topic, o.subscription, o.count)
    return output.peeked_json(messages) if o.json else output.peeked(messages)


def _topics(verb: Callable[..., argparse.ArgumentParser]) -> None:
    flags = admin_verb_flags
    flags.topics_list_flags(verb("list", flags.list_topics, "List a namespace's topics (partitions and "
                                 "non-partitioned topics)", "namespace"))
    flags.properties_flag(verb("create", flags.create_topic, "Create a non-partitioned topic", "topic"),
                          "-m", "--metadata", "a topic property")
    p = verb("create-partitioned-topic", flags.create_partitioned_topic, "Create a partitioned topic", "topic")
    p.add_argument("-p", "--partitions", type=int, required=True, help="number of partitions")
    flags.properties_flag(p, "-m", "--metadata", "a topic property")
    p = verb("update-partitioned-topic", flags.refusing(
        {"force": ("--force", "pulsarlike checks nothing a forced update would skip: leave -f out")},
        lambda a, o: a.update_partitioned_topic(o.topic, o.partitions)),
        "Add partitions to a partitioned topic (never fewer, as in Pulsar)", "topic")
    p.add_argument("-p", "--partitions", type=int, required=True, help="the new number of partitions (above the "
                   "current one)")
    p.add_argument("-ulo", "--update-local-only", action="store_true",
                   help="this cluster only: always so here, a pulsarlike broker is its only cluster")
    p.add_argument("-f", "--force", action="store_true", help="refused: nothing to skip here")
    flags.system_topics_flag(verb("list-partitioned-topics", lambda a, o: output.lines(a.list_partitioned_topics(
        o.namespace)), "List a namespace's partitioned topics", "namespace"))
    verb("get-partitioned-topic-metadata", lambda a, o: output.pulsar_json(a.get_partitioned_topic_metadata(
        o.topic)), "The partition count (0: not partitioned)", "topic")
    for name in ("delete", "delete-partitioned-topic"):
        verb(name, lambda a, o: a.delete_topic(o.topic, force=o.force), "Delete a topic (every partition of a "
             "partitioned one)", "topic").add_argument("-f", "--force", action="store_true",
                                                       help="even with connected producers or consumers")
    _stats_flags(verb("stats", lambda a, o: output.pulsar_json(a.topic_stats(
        o.topic, o.get_precise_backlog, True, o.get_earliest_time_in_backlog)), "A topic's stats", "topic"))
    _stats_flags(verb("partitioned-stats", lambda a, o: output.pulsar_json(a.partitioned_topic_stats(
        o.topic, o.per_partition, o.get_precise_backlog, True, o.get_earliest_time_in_backlog)),
        "A partitioned topic's stats, summed", "topic")).add_argument(
        "--per-partition", action="store_true", help="each partition's stats too")
    verb("stats-internal", flags.refusing({"metadata": (
        "--metadata", "BookKeeper's ledger metadata: a pulsarlike topic's segments are local files, their "
                      "figures are in stats-internal already")},
        lambda a, o: output.pulsar_json(a.topic_internal_stats(o.topic))),
        "Segments (ledgers) and cursors of a topic", "topic").add_argument(
        "-m", "--metadata", action="store_true", help="refused: no BookKeeper ledger metadata here")
    verb("partitioned-stats-internal", lambda a, o: output.pulsar_json(a.topic_internal_stats(o.topic)),
         "Segments (ledgers) and cursors of each partition of a partitioned topic", "topic")
    verb("subscriptions", lambda a, o: output.lines(a.list_subscriptions(o.topic)), "A topic's subscriptions",
         "topic")

    def sub_verb(name: str, run: Run, what: str) -> argparse.ArgumentParser:
        p = verb(name, run, what, "topic")
        p.add_argument("-s", "--subscription", required=True, help="subscription name")
        return p

    p = sub_verb("create-subscription", flags.create_subscription, "Create a durable subscription")
    p.add_argument("-m", "--messageId", dest="message_id", default="latest", type=_typed(lambda t: parse_message_id(
        t, sentinels=True)), help="where it starts: latest (default), earliest or ledgerId:entryId")
    flags.create_subscription_flags(p)
    sub_verb("unsubscribe", lambda a, o: a.delete_subscription(o.topic, o.subscription, force=o.force),
             "Delete a subscription").add_argument("-f", "--force", action="store_true",
                                                   help="even with connected consumers")
    sub_verb("skip", lambda a, o: a.skip_messages(o.topic, o.subscription, o.count) and None,
             "Acknowledge the next N messages of a subscription").add_argument(
        "-n", "--count", type=int, required=True, help="messages to skip")
    sub_verb("clear-backlog", lambda a, o: a.clear_backlog(o.topic, o.subscription) and None,
             "Acknowledge every message of a subscription")
    p = sub_verb("reset-cursor", flags.refusing({"exclude": EXCLUDE_RESET}, _reset_cursor),
                 "Move a subscription back or forward")
    p.add_argument("-e", "--exclude-reset-position", dest="exclude", action="store_true",
                   help="refused: not served yet")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("-t", "--time", type=_typed(parse_relative_seconds),
                       help="to the first message published this long ago (10m, 3h, 2d; bare number: seconds)")
    where.add_argument("-m", "--messageId", dest="message_id", type=_typed(parse_message_id),
                       help="to this message, ledgerId:entryId")
    p = sub_verb("peek-messages", _peek, "Show the next messages of a subscription without moving it")
    p.add_argument("-n", "--count", type=int, default=1, help="messages to show (default 1)")
    p.add_argument("--json", action="store_true", help="print a JSON list instead (pulsarlike extension)")
    flags.peek_flags(p)
    _operation_verbs(verb, sub_verb)
    admin_topics.add_verbs(verb)
    admin_core_verbs.topic_verbs(verb)
    admin_namespaces.topic_verbs(verb)
    admin_rates.topic_verbs(verb)
    admin_verify.add_verbs(verb)
    admin_permissions.add_verbs(verb, "topic", "topic")
    _policy_verbs(verb, "topic", "topic")


def _message_id_text(mid: Any) -> str:
    """``ledgerId:entryId:partitionIndex[:batchIndex]``, as Pulsar's MessageId prints."""
    return f"{mid.ledger_id()}:{mid.entry_id()}:{mid.partition()}" + (f":{mid.batch_index()}" if mid.batch_index() >= 0
                                                                 else "")


def _message_id_json(mid: Any) -> str:
    fields = {"ledgerId": mid.ledger_id(), "entryId": mid.entry_id(), "partitionIndex": mid.partition()}
    if mid.batch_index() >= 0:
        fields["batchIndex"] = mid.batch_index()
    return output.pulsar_json(fields)


def _expire(admin: Any, o: argparse.Namespace) -> None:
    if o.message_id is not None:
        admin.expire_messages(o.topic, o.subscription, message_id=o.message_id)
    else:
        admin.expire_messages(o.topic, o.subscription, expire_time_seconds=o.time)


def _compaction_status(admin: Any, o: argparse.Namespace) -> str:
    """pulsar-admin's answer; ``-w`` waits while it runs; a failed compaction exits 1."""
    status = admin.compaction_status(o.topic)
    while o.wait_complete and status["status"] == "RUNNING":
        time.sleep(1)  # pulsar-admin polls once a second too
        status = admin.compaction_status(o.topic)
    state = status["status"]
    if state == "ERROR":
        raise SystemExit(f"Error in compaction: {status['lastError']}")
    return {"NOT_RUN": f"Compaction has not been run for {o.topic} since broker startup",
            "RUNNING": "Compaction is currently running", "SUCCESS": "Compaction was a success"}.get(state, state)


def _operation_verbs(verb: Callable[..., argparse.ArgumentParser],
                     sub_verb: Callable[..., argparse.ArgumentParser]) -> None:
    verb("terminate", lambda a, o: f"Topic successfully terminated at {_message_id_text(a.terminate_topic(o.topic))}",
         "Terminate a topic: no more messages, ever (its consumers see the end of the topic)", "topic")
    verb("unload", lambda a, o: a.unload_topic(o.topic), "Unload a topic now; its producers and consumers are "
         "disconnected", "topic")
    verb("compact", lambda a, o: a.trigger_compaction(o.topic) or f"Topic compaction requested for {o.topic}",
         "Compact a topic: keep the latest message of each key for compacted readers", "topic")
    p = verb("compaction-status", _compaction_status, "The status of a topic's last compaction", "topic")
    p.add_argument("-w", "--wait-complete", dest="wait_complete", action="store_true",
                   help="wait while the compaction runs")
    verb("last-message-id", lambda a, o: _message_id_json(a.get_last_message_id(o.topic)),
         "The id of a topic partition's last message", "topic")
    verb("lookup", lambda a, o: a.lookup_topic(o.topic), "The service URL of the broker serving a topic", "topic")
    for name, what in (("examine-messages", "Show one stored message, counted from the newest or the oldest"),
                       ("examine-message", "Deprecated spelling of examine-messages (pulsar-admin's name)")):
        p = verb(name, _examine if name == "examine-messages" else _examine_deprecated, what, "topic")
        p.add_argument("-i", "--initialPosition", dest="initial_position", default="latest",
                       choices=["latest", "earliest"], metavar="POSITION",
                       help="count from latest (default) or earliest")
        p.add_argument("-m", "--messagePosition", dest="message_position", type=int, default=1,
                       help="which message, 1 being the newest (or the oldest); default 1")
    p = sub_verb("expire-messages", admin_verb_flags.refusing({"exclude": EXCLUDE_RESET}, _expire),
                 "Acknowledge the messages published more than a time ago, or up to a message")
    when = p.add_mutually_exclusive_group(required=True)
    when.add_argument("-t", "--expireTime", dest="time", type=_typed(parse_relative_seconds),
                      help="published more than this long ago (100m, 3h, 2d; a bare number is seconds)")
    when.add_argument("-p", "--position", "-m", "--messageId", dest="message_id", type=_typed(parse_message_id),
                      help="every message up to and including this one, ledgerId:entryId")
    p.add_argument("-e", "--exclude-reset-position", dest="exclude", action="store_true",
                   help="refused: not served yet")
    verb("expire-messages-all-subscriptions", lambda a, o: a.expire_messages_for_all_subscriptions(
        o.topic, o.time) and None, "expire-messages -t on every subscription", "topic").add_argument(
        "-t", "--expireTime", dest="time", type=_typed(parse_relative_seconds), required=True,
        help="published more than this long ago (100m, 3h, 2d; a bare number is seconds)")


def _examine(admin: Any, o: argparse.Namespace) -> str:
    return output.peeked([admin.examine_message(o.topic, o.initial_position, o.message_position)])


def _examine_deprecated(admin: Any, o: argparse.Namespace) -> str:
    print("pulsarlike admin: warning: 'topics examine-message' is deprecated; use 'topics examine-messages'"
          " (pulsar-admin's name)", file=sys.stderr)
    return _examine(admin, o)


def _clear_namespace_backlog(admin: Any, o: argparse.Namespace) -> None:
    if not o.force:
        if not sys.stdin.isatty():
            raise ValueError("clear-backlog acknowledges every message of the namespace's subscriptions: confirm"
                             " with --force (pulsar-admin asks; there is no terminal to ask on)")
        answer = input(f"Are you sure you want to clear the backlog of {o.namespace}? (yes/no) ")
        if answer.strip().lower() not in ("y", "yes"):
            return
    admin.clear_namespace_backlog(o.namespace, o.subscription)


# ====================================================================================== parser and main
GROUPS = {"tenants": ("Operations about tenants", _tenants),
          "namespaces": ("Operations about namespaces", _namespaces),
          "topics": ("Operations about topics", _topics),
          "clusters": ("Operations about clusters (--admin-url http://...)", admin_rest_groups.clusters),
          "topicPolicies": ("Topic policies: the topics group's policy verbs with --global (pulsar-admin's "
                            "topicPolicies)", lambda verb: (_topics(admin_topic_policy_group.policies_verb(verb)),
                                                            admin_rates.topic_verbs(verb, policies=True))),
          "brokers": ("Operations about brokers (--admin-url http://...)",
                      lambda verb: (admin_rest_groups.brokers(verb), admin_rates.broker_verbs(verb))),
          "broker-stats": ("The broker's stats (--admin-url http://...)", admin_rates.broker_stats),
          "resourcegroups": ("Operations about resource groups (--admin-url http://...)", admin_rates.resource_groups),
          "schemas": ("Operations about schemas", admin_rest_groups.schemas)}


def _url_flag(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument(*URL_FLAGS, dest="admin_url", default=default, metavar="URL",
                        help=f"http://HOST:8080 (https://HOST:8443): Pulsar's admin REST API, as pulsar-admin; or "
                             f"pulsar://HOST:PORT: this broker's gRPC admin calls. Default: ${URL_ENV} or "
                             f"{DEFAULT_URL}")


def build_parser(groups_used: set[str] | None = None) -> _Parser:
    """The whole parser; with ``groups_used``, the verbs of those groups only (the others are listed, with no
    verbs): building all ~340 verb parsers costs a command about half a second."""
    parser = _Parser(prog="pulsarlike admin", allow_abbrev=False,
                     description="Manage a pulsarlike broker like pulsar-admin.")
    _url_flag(parser, os.environ.get(URL_ENV) or DEFAULT_URL)
    security_flags.add(parser)
    parser.leaves = {}
    groups = parser.add_subparsers(dest="group", metavar="GROUP", required=True)
    for group, (description, add_verbs) in GROUPS.items():
        gp = groups.add_parser(group, help=description, description=description, allow_abbrev=False)
        verbs = gp.add_subparsers(dest="verb", metavar="VERB", required=True)
        if groups_used is not None and group not in groups_used:
            continue

        def verb(name: str, run: Run, what: str, positional: str | None = None, *, _group: str = group,
                 _verbs: Any = verbs) -> argparse.ArgumentParser:
            p = _verbs.add_parser(name, help=what, description=what, allow_abbrev=False)
            if positional:
                p.add_argument(positional, help={"tenant": "tenant name", "namespace": "tenant/namespace",
                                                 "cluster": "cluster name",
                                                 "topic": "persistent://tenant/namespace/topic, "
                                                          "tenant/namespace/topic or a short name"}[positional])
            _url_flag(p, argparse.SUPPRESS)
            security_flags.add(p, suppress=True)
            p.set_defaults(run=run)
            parser.leaves[(_group, name)] = p
            return p

        add_verbs(verb)
    return parser


def _negative_values(argv: list[str]) -> list[str]:
    """``--size -5M`` as ``--size=-5M``: argparse takes ``-5M`` for an option (it only knows bare negative
    numbers are values), pulsar-admin takes it for the value; no option here starts with a digit."""
    out: list[str] = []
    for token in argv:
        if re.fullmatch(r"-\d+[A-Za-z]", token) and out and out[-1].startswith("-") and "=" not in out[-1]:
            out[-1] = f"{out[-1]}={token}"
        else:
            out.append(token)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["admin"]:
        argv = argv[1:]
    argv = _negative_values(argv)
    parser = build_parser(set(argv) & GROUPS.keys() or None)
    if not argv:
        parser.print_help(sys.stderr)
        return 2
    try:
        args = parser.parse_args(argv)
    except SystemExit as done:  # argparse: usage errors exit 2, --help 0
        return int(done.code or 0)
    from connector.client.admin import Admin

    try:
        admin_target.refuse_another_broker(args)
        with admin_target.open_admin(Admin, args) as admin:
            printed = args.run(admin, args)
    except PulsarLikeError as exc:
        print(f"pulsarlike admin: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    except (ValueError, TypeError) as exc:  # refused by the client before anything was sent
        print(f"pulsarlike admin: error: {exc}", file=sys.stderr)
        return 2
    if isinstance(printed, admin_verify.Verdict):
        print(printed.text)
        return printed.exit_code
    if isinstance(printed, str) and printed:
        print(printed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
