"""``pulsarlike admin topics``: a topic's own delivery, subscription and schema policies, with pulsar-admin's
verb names and flags (``CmdTopics`` / ``CmdTopicPolicies``); a topic's own value wins over its namespace's::

    pulsarlike admin topics set-delayed-delivery persistent://acme/orders/t -e -t 1s -md 1h
    pulsarlike admin topics get-delayed-delivery persistent://acme/orders/t      {"tickTime" : 1000, ...} or null
    pulsarlike admin topics set-inactive-topic-policies T -e -t 1h -m delete_when_no_subscriptions
    pulsarlike admin topics set-subscription-types-enabled T -t Shared,Key_Shared
    pulsarlike admin topics set-auto-subscription-creation T [-e]
    pulsarlike admin topics set-deduplication-snapshot-interval T -i 60
    pulsarlike admin topics set-schema-compatibility-strategy T -s BACKWARD      (UNDEFINED removes it)
    pulsarlike admin topics set-schema-validation-enforce T [-e]

Each ``set-X`` has a ``get-X`` and (but ``schema-validation-enforce``, as pulsar-admin) a ``remove-X``.
"""
from __future__ import annotations

import argparse
from typing import Callable

from connector.cli import output
from connector.cli.units import parse_relative_seconds

Verb = Callable[..., argparse.ArgumentParser]
TOPIC = "topic"


def _seconds(text: str) -> int:
    try:
        return parse_relative_seconds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _switch(p: argparse.ArgumentParser, enable: tuple[str, ...], disable: tuple[str, ...], what: str) -> None:
    """pulsar-admin's ``--enable``/``--disable`` pair: exactly one of them."""
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument(*enable, dest="enable", action="store_true", help=f"enable {what}")
    group.add_argument(*disable, dest="enable", action="store_false", help=f"disable {what}")


def _get_and_remove(verb: Verb, suffix: str, method: str, what: str, remove: bool = True) -> None:
    verb(f"get-{suffix}", lambda a, o: output.pulsar_json(getattr(a, f"get_topic_{method}")(o.topic)),
         f"The topic's own {what} (null: its namespace's applies)", TOPIC).add_argument(
        "-ap", "--applied", action="store_true", help="accepted as pulsar-admin's: the topic's own is shown")
    if remove:
        verb(f"remove-{suffix}", lambda a, o: getattr(a, f"remove_topic_{method}")(o.topic),
             f"Remove the topic's own {what}", TOPIC)


def add_verbs(verb: Verb) -> None:
    """The verbs, on the ``topics`` group's ``verb`` factory."""
    p = verb("set-delayed-delivery", lambda a, o: a.set_topic_delayed_delivery(
        o.topic, o.enable, o.time * 1000, o.max_delay * 1000),
        "Honour (or not) messages' delivery times on the topic's Shared and Key_Shared subscriptions", TOPIC)
    _switch(p, ("-e", "--enable"), ("-d", "--disable"), "delayed delivery")
    p.add_argument("-t", "--time", type=_seconds, default=1, help="the tick (1s, 10s; a bare number is seconds)")
    p.add_argument("-md", "--maxDelay", dest="max_delay", type=_seconds, default=0,
                   help="the longest delay a message may ask (0: any)")
    _get_and_remove(verb, "delayed-delivery", "delayed_delivery", "delayed delivery policy")

    p = verb("set-inactive-topic-policies", lambda a, o: a.set_topic_inactive_topic_policies(
        o.topic, o.mode, o.duration, o.enable), "Delete the topic once inactive this long", TOPIC)
    _switch(p, ("-e", "--enable-delete-while-inactive"), ("-d", "--disable-delete-while-inactive"),
            "deleting the topic while inactive")
    p.add_argument("-t", "--max-inactive-duration", dest="duration", type=_seconds, required=True,
                   help="how long the topic is inactive before it goes (1s, 10m, 5h, 3d)")
    p.add_argument("-m", "--delete-mode", dest="mode", required=True,
                   choices=["delete_when_no_subscriptions", "delete_when_subscriptions_caught_up"])
    _get_and_remove(verb, "inactive-topic-policies", "inactive_topic_policies", "inactive topic policies")

    verb("set-subscription-types-enabled", lambda a, o: a.set_topic_subscription_types_enabled(o.topic, o.types),
         "The subscription types the topic's consumers may use", TOPIC).add_argument(
        "-t", "--types", type=_csv, required=True, help="comma-separated: Exclusive, Shared, Failover, Key_Shared")
    _get_and_remove(verb, "subscription-types-enabled", "subscription_types_enabled", "subscription types")

    verb("set-auto-subscription-creation", lambda a, o: a.set_topic_auto_subscription_creation(o.topic, o.enable),
         "Whether consumers create subscriptions by subscribing (without --enable: they may not)",
         TOPIC).add_argument("-e", "--enable", action="store_true", help="allow auto subscription creation")
    _get_and_remove(verb, "auto-subscription-creation", "auto_subscription_creation",
                    "auto subscription creation override")

    verb("set-deduplication-snapshot-interval", lambda a, o: a.set_topic_deduplication_snapshot_interval(
        o.topic, o.interval), "Snapshot deduplication state when entries come this many seconds after the last",
        TOPIC).add_argument("-i", "--interval", type=int, required=True, help="seconds (0: by entry count only)")
    _get_and_remove(verb, "deduplication-snapshot-interval", "deduplication_snapshot_interval",
                    "deduplication snapshot interval")

    verb("set-schema-compatibility-strategy", lambda a, o: a.set_topic_schema_compatibility_strategy(
        o.topic, o.strategy), "The topic's schema compatibility strategy", TOPIC).add_argument(
        "-s", "--strategy", required=True, help="UNDEFINED (removes it), ALWAYS_INCOMPATIBLE, ALWAYS_COMPATIBLE,"
                                                " BACKWARD, FORWARD, FULL, BACKWARD_TRANSITIVE, ...")
    verb("get-schema-compatibility-strategy", lambda a, o: a.get_topic_schema_compatibility_strategy(o.topic),
         "The topic's own schema compatibility strategy (UNDEFINED: none)", TOPIC).add_argument(
        "-ap", "--applied", action="store_true", help="accepted as pulsar-admin's: the topic's own is shown")
    verb("remove-schema-compatibility-strategy", lambda a, o: a.remove_topic_schema_compatibility_strategy(o.topic),
         "Remove the topic's schema compatibility strategy", TOPIC)

    verb("set-schema-validation-enforce", lambda a, o: a.set_topic_schema_validation_enforced(o.topic, o.enable),
         "Refuse producers and messages without a schema on the topic once it has one (without --enable: "
         "do not)", TOPIC).add_argument("-e", "--enable", action="store_true", help="enforce schema validation")
    verb("get-schema-validation-enforce", lambda a, o: str(a.get_topic_schema_validation_enforced(o.topic)).lower(),
         "Whether the topic enforces schema validation", TOPIC).add_argument(
        "-ap", "--applied", action="store_true", help="accepted as pulsar-admin's: the topic's own is shown")
