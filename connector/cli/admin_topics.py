"""``pulsarlike admin topics`` verbs for a topic's stored messages, backlog, storage and subscription properties,
with pulsar-admin's names and flags (over gRPC, or ``--admin-url`` REST):

    topics get-message-by-id TOPIC -l LEDGER -e ENTRY       the entry's messages, printed as peek-messages
    topics get-message-id TOPIC -d 2024-05-01T10:00:00Z      the first message published at or after the time
    topics get-message-id-by-index TOPIC -i INDEX            the entry holding a message index (PIP-415)
    topics get-backlog-size TOPIC [-m LEDGER:ENTRY]         bytes stored from the message on (default: all)
    topics analyze-backlog TOPIC -s SUB [-p LEDGER:ENTRY]   what the subscription has not acknowledged
        [-b MAX_ENTRIES [-q]] [--plain]                      -b: scan in rounds up to MAX_ENTRIES entries
    topics trim-topic TOPIC                                  retention applied now
    topics create-missed-partitions TOPIC                    a partitioned topic's partitions not stored yet made
    topics info-internal TOPIC                               Pulsar's ManagedLedgerInfo
    topics truncate TOPIC                                    everything acknowledged, every segment but the
                                                             active one removed
    topics get-subscription-properties TOPIC -s SUB          the subscription's properties (one-line JSON)
    topics update-subscription-properties TOPIC -s SUB -p k=v [-p k2=v2] | --clear
    topics get-properties TOPIC                              the topic's properties (JSON)
    topics update-properties TOPIC -p k=v [-p k2=v2]         those set, the others kept
    topics remove-properties TOPIC -k KEY
    topics get-backlog-quotas TOPIC [-ap]                    the topic's quotas by type (-ap: in force)
    topics set-backlog-quota TOPIC -p POLICY [-l SIZE] [-lt TIME] [-t destination_storage|message_age]
    topics remove-backlog-quota TOPIC [-t TYPE]
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
from typing import Any, Callable

from connector.cli import output
from connector.cli.units import parse_message_id, parse_relative_seconds, parse_size

_FRACTION = re.compile(r"(\.\d{6})\d+")


def _typed(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return convert


def parse_datetime_ms(text: str) -> int:
    """pulsar-admin's ``-d`` (ISO_OFFSET_DATE_TIME: ``2021-06-28T16:53:08Z``, ``2021-06-28T16:53:08.123+08:00``) as
    ms since the epoch; nanoseconds are cut to microseconds."""
    try:
        found = datetime.datetime.fromisoformat(_FRACTION.sub(r"\1", text.strip()))
    except ValueError:
        raise ValueError(f"datetime {text!r} is not valid; use ISO 8601 with an offset, e.g."
                         " 2021-06-28T16:53:08Z or 2021-06-28T16:53:08.123+08:00") from None
    if found.tzinfo is None:
        raise ValueError(f"datetime {text!r} has no offset; add one, e.g. Z or +08:00")
    return int(found.timestamp() * 1000)


def _property(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ValueError(f"property {text!r} is not valid; use key=value")
    return key, value


def message_id_json(mid: Any) -> str:
    """A message id as pulsar-admin prints one: ``{"ledgerId", "entryId", "partitionIndex"}``."""
    return output.pulsar_json({"ledgerId": mid.ledger_id(), "entryId": mid.entry_id(),
                               "partitionIndex": mid.partition()})


def _message_id_at_time(admin: Any, o: argparse.Namespace) -> str:
    found = admin.get_message_id_by_timestamp(o.topic, o.datetime)
    return f"Cannot find any messages based on timestamp {o.datetime}" if found is None else message_id_json(found)


def _update_subscription_properties(admin: Any, o: argparse.Namespace) -> None:
    properties = dict(o.properties or [])
    if not properties and not o.clear:
        raise ValueError("If you want to clear the properties you have to use --clear")
    if properties and o.clear:
        raise ValueError("If you set --clear then you should not pass any properties")
    admin.update_subscription_properties(o.topic, o.subscription, properties)


SHADOW_SOURCE = "PULSAR.SHADOW_SOURCE"
"""The topic property naming a shadow topic's source (Pulsar's ``PROPERTY_SHADOW_SOURCE_KEY``)."""
QUOTA_TYPES = ("destination_storage", "message_age")
QUOTA_POLICIES = ("producer_request_hold", "producer_exception", "consumer_backlog_eviction")


def _set_backlog_quota(admin: Any, o: argparse.Namespace) -> None:
    admin.set_topic_backlog_quota(o.topic, o.policy, limit_size=o.limit, limit_time=o.limit_time, quota_type=o.type)


def analyze_backlog(admin: Any, o: argparse.Namespace) -> str:
    """``topics analyze-backlog`` as pulsar-admin runs it: one request without ``-b``; with it, rounds until
    ``-b`` entries are counted or the broker read to the end, each round's merged result printed unless
    ``--quiet`` (and not the round that reaches ``-b``), the final one always; ``--plain``: one line each."""
    show = output.pulsar_json if not o.plain else output.plain_json
    if o.backlog_scan_max_entries is None:
        return show(admin.analyze_backlog(o.topic, o.subscription, o.position))
    if o.backlog_scan_max_entries <= 0:
        raise ValueError("--backlog-scan-max-entries must be greater than 0")

    def terminate(result: dict[str, Any]) -> bool:
        done = result.get("entries", 0) >= o.backlog_scan_max_entries
        if not o.quiet and not done:
            print(show(result), flush=True)
        return done

    return show(admin.analyze_backlog(o.topic, o.subscription, o.position, terminate=terminate))


def add_verbs(verb: Callable[..., argparse.ArgumentParser]) -> None:
    """The verbs above, on the ``topics`` group's ``verb(name, run, what, positional)``."""
    p = verb("get-message-by-id", lambda a, o: output.peeked(a.get_message_by_id(o.topic, o.ledger_id, o.entry_id)),
             "Get message by its ledgerId and entryId", "topic")
    p.add_argument("-l", "--ledgerId", dest="ledger_id", type=int, required=True,
                   help="ledger id pointing to the desired ledger")
    p.add_argument("-e", "--entryId", dest="entry_id", type=int, required=True,
                   help="entry id pointing to the desired entry")
    verb("get-message-id", _message_id_at_time, "Get message ID: the first message published at or after a time",
         "topic").add_argument("-d", "--datetime", type=_typed(parse_datetime_ms), required=True,
                               help="ISO_OFFSET_DATE_TIME, e.g. 2021-06-28T16:53:08Z or 2021-06-28T16:53:08.123+08:00")
    verb("get-message-id-by-index", lambda a, o: message_id_json(a.get_message_id_by_index(o.topic, o.index)),
         "Get the id of the entry holding a message index", "topic").add_argument(
        "-i", "--index", type=int, required=True, help="the message's index (its offset in the partition)")
    verb("get-backlog-size", lambda a, o: str(a.get_backlog_size(o.topic, o.message_id)),
         "Calculate backlog size by a message ID (in bytes)", "topic").add_argument(
        "-m", "--messageId", dest="message_id", default=None,
        type=_typed(lambda t: None if t.strip() == "-1:-1" else parse_message_id(t)),
        help="messageId used to calculate backlog size, ledgerId:entryId (default -1:-1: everything stored)")
    p = verb("analyze-backlog", analyze_backlog, "Analyze the backlog of a subscription", "topic")
    p.add_argument("-s", "--subscription", required=True, help="Subscription to be analyzed")
    p.add_argument("-p", "--position", type=_typed(parse_message_id), default=None,
                   help="message position to start the scan from (ledgerId:entryId)")
    p.add_argument("-b", "--backlog-scan-max-entries", type=int, default=None,
                   help="the most backlog entries to scan: while the broker's answer says it stopped early "
                        "(its subscriptionBacklogScanMaxEntries), ask again from there until this many")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="with -b, do not print each round's merged result (the progress)")
    p.add_argument("--plain", action="store_true", help="print the results as one-line JSON (NDJSON)")
    verb("trim-topic", lambda a, o: a.trim_topic(o.topic), "Trim a topic: remove now what retention no longer keeps",
         "topic")
    verb("create-missed-partitions", lambda a, o: a.create_missed_partitions(o.topic),
         "Try to create partitions for partitioned topic (those not stored yet)", "topic")
    verb("info-internal", lambda a, o: output.pulsar_json(a.get_internal_info(o.topic)),
         "Get the internal metadata info for the topic", "topic")
    verb("truncate", lambda a, o: a.truncate_topic(o.topic), "Truncate a topic: move every cursor to the end and"
         " delete every inactive segment", "topic")
    verb("get-subscription-properties", lambda a, o: json.dumps(a.get_subscription_properties(
        o.topic, o.subscription), separators=(",", ":")), "Get the properties of a subscription on a topic",
        "topic").add_argument("-s", "--subscription", required=True, help="Subscription to describe")
    p = verb("update-subscription-properties", _update_subscription_properties,
             "Update the properties of a subscription on a topic", "topic")
    p.add_argument("-s", "--subscription", required=True, help="Subscription to update")
    p.add_argument("-p", "--property", dest="properties", action="append", type=_typed(_property),
                   help="key value pair properties (-p a=b -p c=d)")
    p.add_argument("-c", "--clear", action="store_true", help="Remove all properties")
    _setting_verbs(verb)


def _setting_verbs(verb: Callable[..., argparse.ArgumentParser]) -> None:
    """A topic's properties and backlog quotas (pulsar-admin's flags; set-backlog-quota sets both limits, -1
    being none, as pulsar-admin's does)."""
    verb("get-properties", lambda a, o: output.pulsar_json(a.get_topic_properties(o.topic)),
         "Get the properties of a topic", "topic")
    verb("get-shadow-source", lambda a, o: a.get_topic_properties(o.topic).get(SHADOW_SOURCE) or "null",
         "Get the source topic of a shadow topic (null: not a shadow topic; pulsarlike makes none)", "topic")
    verb("update-properties", lambda a, o: a.update_topic_properties(o.topic, dict(o.properties or [])),
         "Update the properties of a topic (those given set, the others kept)", "topic").add_argument(
        "-p", "--property", dest="properties", action="append", type=_typed(_property),
        help="key value pair properties (-p a=b -p c=d)")
    verb("remove-properties", lambda a, o: a.remove_topic_properties(o.topic, o.key),
         "Remove the key in properties of a topic", "topic").add_argument(
        "-k", "--key", required=True, help="the key to remove in the properties of the topic")
    verb("get-backlog-quotas", lambda a, o: output.pulsar_json(a.get_topic_backlog_quotas(o.topic, o.applied)),
         "Get the backlog quota policies of a topic", "topic").add_argument(
        "-ap", "--applied", action="store_true", help="the quotas in force: the namespace's when the topic has none")
    p = verb("set-backlog-quota", _set_backlog_quota, "Set a backlog quota policy for a topic", "topic")
    p.add_argument("-l", "--limit", type=_typed(parse_size), default=-1, help="size limit (eg: 10M, 16G)")
    p.add_argument("-lt", "--limitTime", dest="limit_time", type=_typed(parse_relative_seconds), default=-1,
                   help="time limit in seconds (or 100m, 3h, 2d, 5w); non-positive: no time limit")
    p.add_argument("-p", "--policy", required=True, choices=QUOTA_POLICIES, metavar="POLICY",
                   help="what happens when the limit is reached: " + ", ".join(QUOTA_POLICIES))
    p.add_argument("-t", "--type", default="destination_storage", choices=QUOTA_TYPES, metavar="TYPE",
                   help="backlog quota type: destination_storage (default: by size) or message_age (by time)")
    verb("remove-backlog-quota", lambda a, o: a.remove_topic_backlog_quota(o.topic, o.type),
         "Remove a backlog quota policy from a topic", "topic").add_argument(
        "-t", "--type", default="destination_storage", choices=QUOTA_TYPES, metavar="TYPE",
        help="backlog quota type to remove: destination_storage (default) or message_age")
