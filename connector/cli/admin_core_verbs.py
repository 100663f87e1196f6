"""``pulsarlike admin`` verbs for routes served before issue 31's CLI pass, with pulsar-admin's names and flags
(its ``CmdNamespaces`` and ``CmdTopics``), over gRPC or ``--admin-url`` REST alike:

    namespaces set-backlog-quota NS -p POLICY [-l SIZE] [-lt TIME] [-t destination_storage|message_age]
    namespaces get-backlog-quotas NS                      every quota by type (JSON)
    namespaces remove-backlog-quota NS [-t TYPE]
    namespaces set-schema-compatibility-strategy NS -c FULL|BACKWARD|...
    namespaces get-schema-compatibility-strategy NS       the strategy, upper case (UNDEFINED: none set)
    namespaces set-auto-topic-creation NS -e|-d [-t non-partitioned|partitioned] [-n PARTITIONS]
    namespaces get-auto-topic-creation NS                 Pulsar's AutoTopicCreationOverride (JSON)
    namespaces remove-auto-topic-creation NS
    topics partitioned-terminate TOPIC                    every partition terminated, one line each
    topics enable-deduplication|disable-deduplication|get-deduplication-enabled TOPIC
                                                          pulsar-admin's deprecated spellings of
                                                          set-deduplication -e|-d and get-deduplication

Errors are pulsar-admin's: a quota of type ``destination_storage`` needs ``--limit``, one of ``message_age``
``--limitTime``; ``set-auto-topic-creation`` needs one of ``--enable`` and ``--disable``, a partitioned type a
partition count above 0 (exit 2 before anything is sent).
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from connector.cli import output
from connector.cli.units import parse_relative_seconds, parse_size

Verb = Callable[..., argparse.ArgumentParser]
NS = "namespace"
QUOTA_TYPES = ("destination_storage", "message_age")
QUOTA_POLICIES = ("producer_request_hold", "producer_exception", "consumer_backlog_eviction")


def _typed(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return convert


def _set_backlog_quota(admin: Any, o: argparse.Namespace) -> None:
    if o.type == "destination_storage":
        if o.limit is None:
            raise ValueError("Quota type of 'destination_storage' needs a size limit")
        admin.set_namespace_backlog_quota(o.namespace, o.policy, limit_size=o.limit, quota_type=o.type)
    else:
        if o.limit_time is None:
            raise ValueError("Quota type of 'message_age' needs a time limit")
        admin.set_namespace_backlog_quota(o.namespace, o.policy, limit_time=o.limit_time, quota_type=o.type)


def _set_auto_topic_creation(admin: Any, o: argparse.Namespace) -> None:
    if o.enable == o.disable:
        raise ValueError("Need to specify either --enable or --disable")
    kind = o.type.strip().lower()
    if o.enable:
        if kind not in ("partitioned", "non-partitioned"):
            raise ValueError("Must specify type of topic to be created. Possible values: (partitioned, "
                             "non-partitioned)")
        if kind == "partitioned" and (o.num_partitions is None or o.num_partitions <= 0):
            raise ValueError("Must specify num-partitions or num-partitions > 0 for partitioned topic type.")
    admin.set_namespace_auto_topic_creation(o.namespace, o.enable, kind if kind in ("partitioned", "non-partitioned")
                                            else "non-partitioned", o.num_partitions)


def _strategy(admin: Any, o: argparse.Namespace) -> None:
    strategy = (o.compatibility or "").upper()
    from connector.client.admin.core_policies import STRATEGIES
    if strategy not in STRATEGIES:
        raise ValueError(f"Illegal schema compatibility strategy {o.compatibility}. Possible values: "
                         f"{', '.join(STRATEGIES)}")
    admin.set_namespace_schema_compatibility_strategy(o.namespace, strategy)


def namespace_verbs(verb: Verb) -> None:
    """The namespaces verbs above, on the group's ``verb(name, run, what, positional)``."""
    p = verb("set-backlog-quota", _set_backlog_quota, "Set a backlog quota policy for a namespace", NS)
    p.add_argument("-l", "--limit", type=_typed(parse_size), default=None, help="size limit (eg: 10M, 16G)")
    p.add_argument("-lt", "--limitTime", dest="limit_time", type=_typed(parse_relative_seconds), default=None,
                   help="time limit in seconds (or 100m, 3h, 2d, 5w); for --type message_age")
    p.add_argument("-p", "--policy", required=True, choices=QUOTA_POLICIES, metavar="POLICY",
                   help="what happens when the limit is reached: " + ", ".join(QUOTA_POLICIES))
    p.add_argument("-t", "--type", default="destination_storage", choices=QUOTA_TYPES, metavar="TYPE",
                   help="backlog quota type: destination_storage (default, needs --limit) or message_age "
                        "(needs --limitTime)")
    verb("get-backlog-quotas", lambda a, o: output.pulsar_json(a.get_namespace_backlog_quotas(o.namespace)),
         "Get the backlog quota policies of a namespace", NS)
    verb("remove-backlog-quota", lambda a, o: a.remove_namespace_backlog_quota(o.namespace, o.type),
         "Remove a backlog quota policy from a namespace", NS).add_argument(
        "-t", "--type", default="destination_storage", choices=QUOTA_TYPES, metavar="TYPE",
        help="backlog quota type to remove: destination_storage (default) or message_age")
    verb("set-schema-compatibility-strategy", _strategy, "Set the schema compatibility strategy of a namespace",
         NS).add_argument("-c", "--compatibility", default=None,
                          help="ALWAYS_INCOMPATIBLE, ALWAYS_COMPATIBLE, BACKWARD, FORWARD, FULL, BACKWARD_TRANSITIVE,"
                               " FORWARD_TRANSITIVE, FULL_TRANSITIVE or UNDEFINED (the broker's)")
    verb("get-schema-compatibility-strategy", lambda a, o: a.get_namespace_schema_compatibility_strategy(
        o.namespace).upper(), "Get the schema compatibility strategy of a namespace", NS)
    p = verb("set-auto-topic-creation", _set_auto_topic_creation, "Enable or disable autoTopicCreation for a "
             "namespace, overriding broker settings", NS)
    p.add_argument("-e", "--enable", action="store_true", help="enable allowAutoTopicCreation on the namespace")
    p.add_argument("-d", "--disable", action="store_true", help="disable allowAutoTopicCreation on the namespace")
    p.add_argument("-t", "--type", default="non-partitioned",
                   help="type of topic to be auto-created: partitioned or non-partitioned (default)")
    p.add_argument("-n", "--num-partitions", dest="num_partitions", type=int, default=None,
                   help="default number of partitions of a topic auto-created partitioned")
    verb("get-auto-topic-creation", lambda a, o: output.pulsar_json(a.get_namespace_auto_topic_creation(o.namespace)),
         "Get autoTopicCreation info for a namespace", NS)
    verb("remove-auto-topic-creation", lambda a, o: a.remove_namespace_auto_topic_creation(o.namespace),
         "Remove the override of autoTopicCreation for a namespace", NS)


def _message_id_text(mid: Any) -> str:
    """``ledgerId:entryId:partitionIndex``, as Pulsar's MessageId prints."""
    return f"{mid.ledger_id()}:{mid.entry_id()}:{mid.partition()}"


def _partitioned_terminate(admin: Any, o: argparse.Namespace) -> str:
    from broker_core.types import TopicName
    name = str(TopicName.parse(o.topic))
    ids = admin.terminate_partitioned_topic(o.topic)
    return "\n".join(f"Topic {name}-partition-{i} successfully terminated at {_message_id_text(mid)}"
                     for i, mid in sorted(ids.items()))


def _deprecated(old: str, new: str, run: Callable[[Any, argparse.Namespace], Any]) -> Callable[..., Any]:
    def warned(admin: Any, o: argparse.Namespace) -> Any:
        print(f"pulsarlike admin: warning: 'topics {old}' is deprecated; use 'topics {new}' (pulsar-admin's name)",
              file=sys.stderr)
        return run(admin, o)
    return warned


def topic_verbs(verb: Verb) -> None:
    """The topics verbs above, on the group's ``verb(name, run, what, positional)``."""
    verb("partitioned-terminate", _partitioned_terminate, "Terminate every partition of a partitioned topic: no "
         "more messages, ever", "topic")
    verb("enable-deduplication", _deprecated("enable-deduplication", "set-deduplication -e",
                                             lambda a, o: a.set_topic_deduplication(o.topic, True)),
         "Enable the deduplication policy for a topic (deprecated: set-deduplication -e)", "topic")
    verb("disable-deduplication", _deprecated("disable-deduplication", "set-deduplication -d",
                                              lambda a, o: a.set_topic_deduplication(o.topic, False)),
         "Disable the deduplication policy for a topic (deprecated: set-deduplication -d)", "topic")
    verb("get-deduplication-enabled", _deprecated("get-deduplication-enabled", "get-deduplication",
                                                  lambda a, o: output.pulsar_json(a.get_topic_deduplication(o.topic))),
         "Get the deduplication policy of a topic (deprecated: get-deduplication)", "topic")
