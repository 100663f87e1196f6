"""pulsar-admin's remaining flags on ``pulsarlike admin`` verbs that exist (issue 31), each with the meaning it can
have on one pulsarlike broker::

    topics create T -m k=v [-m k2=v2]          the topic's properties, set right after it is created
    topics create-partitioned-topic T -p 3 -m k=v
    topics create-subscription T -s S -p k=v   the subscription's properties; -r (replicated) refused
    topics list NS [-td persistent|non_persistent] [-b 0x00000000_0xffffffff] [-ist] [-p k=v]
    namespaces topics NS [-m PERSISTENT|NON_PERSISTENT|ALL] [-ist]
    namespaces create NS [-c CLUSTER] [-b 1]   the cluster must be one of the tenant's; one bundle
    topics peek-messages T -s S [-ssm] [-til READ_COMMITTED|READ_UNCOMMITTED]

No system topics exist on a pulsarlike broker (no ``__change_events``; topic policies live in its policy store),
so ``-ist`` lists what the listing lists without it; it has no markers among messages (no replication, no
transactions), so ``-ssm`` and ``-til`` show what ``peek-messages`` shows. A flag whose meaning needs what one
broker has not (a replicated subscription, BookKeeper ledger metadata, another cluster) is accepted and refused
with a ``ValueError`` saying why (exit 2, nothing sent): see :func:`refuse`.
"""
from __future__ import annotations

import argparse
from typing import Any, Callable

from connector.cli import output

ONE_BUNDLE = "0x00000000_0xffffffff"
"""The only bundle of a pulsarlike namespace."""
DOMAINS = {"persistent": "persistent://", "non_persistent": "non-persistent://"}
MODES = ("PERSISTENT", "NON_PERSISTENT", "ALL")


def _property(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"property {text!r} is not valid; use key=value")
    return key, value


def properties_flag(p: argparse.ArgumentParser, short: str, long: str, what: str) -> None:
    p.add_argument(short, long, dest="properties", action="append", type=_property, default=None,
                   help=f"{what} key=value (repeat the flag for more)")


def refuse(flag: str, why: str) -> None:
    raise ValueError(f"{flag}: {why}")


# ====================================================================================== creating
def create_topic(admin: Any, o: argparse.Namespace) -> None:
    admin.create_topic(o.topic)
    if o.properties:
        admin.update_topic_properties(o.topic, dict(o.properties))


def create_partitioned_topic(admin: Any, o: argparse.Namespace) -> None:
    admin.create_partitioned_topic(o.topic, o.partitions)
    if o.properties:
        admin.update_topic_properties(o.topic, dict(o.properties))


def create_subscription_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("-r", "--replicated", action="store_true",
                   help="a replicated subscription: refused, a pulsarlike broker is its only cluster")
    properties_flag(p, "-p", "--property", "a subscription property")


def create_subscription(admin: Any, o: argparse.Namespace) -> None:
    if o.replicated:
        refuse("--replicated", "a replicated subscription follows its cursor on the other clusters of a "
                               "geo-replicated Pulsar; a pulsarlike broker is its only cluster: leave -r out")
    admin.create_subscription(o.topic, o.subscription, o.message_id)
    if o.properties:
        admin.update_subscription_properties(o.topic, o.subscription, dict(o.properties))


def namespace_create_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("-c", "--clusters", type=lambda t: [c.strip() for c in t.split(",") if c.strip()], default=None,
                   help="the namespace's replication clusters: this broker's cluster only (one of the tenant's)")
    p.add_argument("-b", "--bundles", type=int, default=None, help="the number of bundles: 1 here")


def create_namespace(admin: Any, o: argparse.Namespace) -> None:
    if o.bundles is not None and o.bundles != 1:
        refuse("--bundles", f"a pulsarlike namespace has one bundle ({ONE_BUNDLE}), not {o.bundles}: leave -b out")
    if o.clusters:
        allowed = admin.get_tenant(o.namespace.split("/")[0]).get("allowedClusters") or []
        if len(o.clusters) > 1:
            refuse("--clusters", f"{', '.join(o.clusters)}: replicating to other clusters needs a geo-replicated "
                                 f"Pulsar; a pulsarlike broker is its only cluster ({', '.join(allowed)})")
        if o.clusters[0] not in allowed:
            refuse("--clusters", f"cluster {o.clusters[0]!r} is not in the list of allowed clusters of the tenant "
                                 f"({', '.join(allowed) or 'none'})")
    admin.create_namespace(o.namespace)


# ====================================================================================== listing
def topics_list_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("-td", "--topic-domain", dest="domain", choices=sorted(DOMAINS), default=None,
                   help="only persistent or non_persistent topics")
    p.add_argument("-b", "--bundle", default=None, help=f"only the topics of this bundle: {ONE_BUNDLE} here")
    system_topics_flag(p)
    properties_flag(p, "-p", "--property", "only topics with this property")


def system_topics_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("-ist", "--include-system-topic", dest="system_topics", action="store_true",
                   help="with system topics (a pulsarlike broker has none)")


def list_topics(admin: Any, o: argparse.Namespace) -> str:
    if o.bundle is not None and o.bundle != ONE_BUNDLE:
        refuse("--bundle", f"a pulsarlike namespace has one bundle, {ONE_BUNDLE}; give it or leave -b out")
    topics = admin.list_topics(o.namespace)
    if o.domain is not None:
        topics = [t for t in topics if t.startswith(DOMAINS[o.domain])]
    if o.properties:
        wanted = dict(o.properties)
        topics = [t for t in topics if _has(admin.get_topic_properties(t), wanted)]
    return output.lines(topics)


def _has(properties: dict[str, str] | None, wanted: dict[str, str]) -> bool:
    return all((properties or {}).get(key) == value for key, value in wanted.items())


def namespace_topics_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("-m", "--mode", default="PERSISTENT", type=str.upper, choices=MODES,
                   help="PERSISTENT (default), NON_PERSISTENT or ALL")
    system_topics_flag(p)


def namespace_topics(admin: Any, o: argparse.Namespace) -> str:
    return output.lines(admin.list_namespace_topics(o.namespace, o.mode))  # GET namespaces/{t}/{ns}/topics?mode=


# ====================================================================================== reading
def peek_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("-ssm", "--show-server-marker", dest="server_markers", action="store_true",
                   help="with the broker's markers (a pulsarlike broker writes none)")
    p.add_argument("-til", "--transaction-isolation-level", dest="isolation", type=str.upper,
                   choices=["READ_COMMITTED", "READ_UNCOMMITTED"], default="READ_COMMITTED",
                   help="READ_COMMITTED (default) or READ_UNCOMMITTED: the same here, no transactions")


def refusing(flags: dict[str, tuple[str, str]], run: Callable[[Any, argparse.Namespace], Any]
             ) -> Callable[[Any, argparse.Namespace], Any]:
    """``run``, after refusing each given flag of ``flags`` (dest -> (flag, why))."""
    def checked(admin: Any, o: argparse.Namespace) -> Any:
        for dest, (flag, why) in flags.items():
            if getattr(o, dest, None):
                refuse(flag, why)
        return run(admin, o)
    return checked
