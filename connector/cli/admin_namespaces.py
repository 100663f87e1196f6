"""``pulsarlike admin namespaces`` verbs for the namespace routes served after the first ones, with
pulsar-admin's names and flags (its ``CmdNamespaces``), over gRPC or ``--admin-url`` REST alike:

    pulsarlike admin namespaces unload acme/orders
    pulsarlike admin namespaces bundles acme/orders
    pulsarlike admin namespaces set-max-consumers-per-subscription acme/orders -c 2
    pulsarlike admin namespaces set-max-unacked-messages-per-consumer acme/orders -c 1000
    pulsarlike admin namespaces set-max-unacked-messages-per-subscription acme/orders -c 10000
    pulsarlike admin namespaces set-max-subscriptions-per-topic acme/orders -m 5
    pulsarlike admin namespaces set-max-topics-per-namespace acme/orders -t 100
    pulsarlike admin namespaces set-auto-subscription-creation acme/orders --enable
    pulsarlike admin namespaces set-delayed-delivery acme/orders --enable --time 2s
    pulsarlike admin namespaces set-inactive-topic-policies acme/orders -e -t 1h -m delete_when_no_subscriptions
    pulsarlike admin namespaces set-deduplication-snapshot-interval acme/orders -i 60
    pulsarlike admin namespaces set-subscription-types-enabled acme/orders -t Shared,Key_Shared
    pulsarlike admin namespaces set-subscription-auth-mode acme/orders -m Prefix
    pulsarlike admin namespaces grant-subscription-permission acme/orders -s audit -rs alice,bob
    pulsarlike admin namespaces set-encryption-required acme/orders -e
    pulsarlike admin namespaces set-schema-validation-enforce acme/orders -e
    pulsarlike admin namespaces set-is-allow-auto-update-schema acme/orders -d
    pulsarlike admin namespaces set-schema-autoupdate-strategy acme/orders -c Backward
    pulsarlike admin namespaces set-property acme/orders -k owner -v billing
    pulsarlike admin namespaces set-properties acme/orders -p a=1,b=2

Each ``get-*`` prints what pulsar-admin prints (JSON; ``get-schema-autoupdate-strategy``, ``get-is-allow-
auto-update-schema`` and ``get-schema-validation-enforce`` print the bare value, as it does); a change prints
nothing. Times read as pulsar-admin reads them (``10s``, ``5m``, ``1h``, a bare number of seconds).
"""
from __future__ import annotations

import argparse
from typing import Any, Callable

from connector.cli import admin_topic_policies, output
from connector.cli.units import parse_relative_seconds

Verb = Callable[..., argparse.ArgumentParser]
NS = "namespace"
ONE_BUNDLE = "0x00000000_0xffffffff"
"""The only bundle of a pulsarlike namespace (``--bundle`` of ``unload`` may name it)."""
LIMITS = (  # verb suffix, pulsar-admin's flags, Admin method suffix, what
    ("max-consumers-per-subscription", ("-c", "--max-consumers-per-subscription"),
     "max_consumers_per_subscription", "consumers on each subscription"),
    ("max-unacked-messages-per-consumer", ("-c", "--max-unacked-messages-per-topic"),
     "max_unacked_messages_per_consumer", "unacked messages a Shared consumer holds"),
    ("max-unacked-messages-per-subscription", ("-c", "--max-unacked-messages-per-subscription"),
     "max_unacked_messages_per_subscription", "unacked messages a Shared subscription holds"),
    ("max-subscriptions-per-topic", ("-m", "--max-subscriptions-per-topic", "--maxSubscriptionsPerTopic"),
     "max_subscriptions_per_topic", "subscriptions on each topic partition"),
    ("max-topics-per-namespace", ("-t", "--max-topics-per-namespace"), "max_topics_per_namespace",
     "topics in the namespace, a partition counting as one"),
)
AUTO_UPDATE = {"FULL": "Full", "BACKWARD": "Backward", "FORWARD": "Forward", "NONE": "AlwaysCompatible"}
"""``set-schema-autoupdate-strategy --compatibility`` as pulsar-admin reads it (any case)."""


def _typed(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return convert


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _key_values(text: str) -> dict[str, str]:
    """``a=1,b=2`` (pulsar-admin's ``--properties``)."""
    found = {}
    for item in _csv(text):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"invalid property {item!r}: use key=value[,key=value...]")
        found[key] = value
    return found


def _switch(p: argparse.ArgumentParser, enable: tuple[str, ...], disable: tuple[str, ...], what: str) -> None:
    """pulsar-admin's ``--enable``/``--disable`` pair: exactly one of them."""
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument(*enable, dest="enable", action="store_true", help=f"enable {what}")
    group.add_argument(*disable, dest="enable", action="store_false", help=f"disable {what}")


def _call(method: str, *args: Callable[[argparse.Namespace], Any]) -> Callable[[Any, argparse.Namespace], Any]:
    return lambda a, o: getattr(a, method)(o.namespace, *(f(o) for f in args)) and None


def _shown(method: str, bare: bool = False) -> Callable[[Any, argparse.Namespace], str]:
    def show(a: Any, o: argparse.Namespace) -> str:
        value = getattr(a, method)(o.namespace)
        if bare:  # pulsar-admin prints these with println, not as JSON
            return str(value).lower() if isinstance(value, bool) else str(value).upper()
        return output.pulsar_json(value)
    return show


def add_verbs(verb: Verb) -> None:
    """The verbs, on the ``namespaces`` group's ``verb`` factory."""
    _operations(verb)
    _limits(verb)
    _subscriptions(verb)
    _delivery(verb)
    _schemas(verb)
    _properties(verb)


TOPIC_LIMITS = (  # pulsar-admin topics' verb suffixes (and its other spellings), flags, Admin method suffix, what
    (("max-consumers-per-subscription",), ("-c", "--max-consumers-per-subscription"),
     "max_consumers_per_subscription", "consumers on each subscription"),
    (("max-unacked-messages-on-consumer", "max-unacked-messages-per-consumer"), ("-m", "--maxNum"),
     "max_unacked_messages_per_consumer", "unacked messages a Shared consumer holds"),
    (("max-unacked-messages-on-subscription", "max-unacked-messages-per-subscription"), ("-m", "--maxNum"),
     "max_unacked_messages_per_subscription", "unacked messages a Shared subscription holds"),
    (("max-subscriptions",), ("-m", "--max-subscriptions-per-topic"), "max_subscriptions_per_topic",
     "subscriptions on the topic (each partition)"),
    (("max-message-size",), ("-m", "--max-message-size"), "max_message_size",
     "bytes in one message (at most the broker's maxMessageSize)"),
)


def topic_verbs(verb: Verb) -> None:
    """A topic's own limits (``pulsarlike admin topics set-max-consumers-per-subscription TOPIC -c 2``, ...),
    on the ``topics`` group's ``verb`` factory; they win over the namespace's."""
    for names, flags, method, what in TOPIC_LIMITS:
        for suffix in names:
            p = verb(f"set-{suffix}", lambda a, o, m=method: getattr(a, f"set_topic_{m}")(o.topic, o.limit),
                     f"At most this many {what} (0: no limit), the topic's own", "topic")
            p.add_argument(*flags, dest="limit", type=int, required=True, help=f"max {what} (>= 0)")
            verb(f"get-{suffix}", lambda a, o, m=method: output.pulsar_json(getattr(a, f"get_topic_{m}")(o.topic)),
                 f"The topic's own max {what} (null: not set)", "topic").add_argument(
                "-ap", "--applied", action="store_true", help="accepted as pulsar-admin's: the topic's own is shown")
            verb(f"remove-{suffix}", lambda a, o, m=method: getattr(a, f"remove_topic_{m}")(o.topic),
                 f"Remove the topic's own max {what}", "topic")
    admin_topic_policies.add_verbs(verb)  # and its delivery, subscription and schema policies


def _unload(admin: Any, o: argparse.Namespace) -> None:
    if o.bundle is not None and o.bundle != ONE_BUNDLE:
        raise ValueError(f"--bundle {o.bundle[:64]!r}: a pulsarlike namespace has one bundle, {ONE_BUNDLE}; unload"
                         " it (or the whole namespace, without --bundle)")
    admin.unload_namespace(o.namespace)


def _operations(verb: Verb) -> None:
    verb("unload", _unload, "Unload the namespace's topics: their producers and consumers reconnect",
         NS).add_argument("-b", "--bundle", default=None, help=f"{{start}}_{{end}}: only {ONE_BUNDLE} here")
    verb("bundles", _shown("get_namespace_bundles"), "The namespace's bundles (one: the whole hash range)", NS)


def _limits(verb: Verb) -> None:
    for suffix, flags, method, what in LIMITS:
        p = verb(f"set-{suffix}", _call(f"set_namespace_{method}", lambda o: o.limit),
                 f"At most this many {what} (0: no limit)", NS)
        p.add_argument(*flags, dest="limit", type=int, required=True, help=f"max {what} (>= 0)")
        verb(f"get-{suffix}", _shown(f"get_namespace_{method}"), f"The namespace's max {what} (null: not set)", NS)
        verb(f"remove-{suffix}", _call(f"remove_namespace_{method}"), f"Remove the namespace's max {what}", NS)


def _subscriptions(verb: Verb) -> None:
    verb("set-auto-subscription-creation", _call("set_namespace_auto_subscription_creation", lambda o: o.enable),
         "Whether consumers create subscriptions by subscribing (without --enable: they may not)",
         NS).add_argument("-e", "--enable", action="store_true", help="allow auto subscription creation")
    verb("get-auto-subscription-creation", _shown("get_namespace_auto_subscription_creation"),
         "The namespace's auto subscription creation override (null: the broker's setting)", NS)
    verb("remove-auto-subscription-creation", _call("remove_namespace_auto_subscription_creation"),
         "Remove the namespace's auto subscription creation override", NS)
    p = verb("set-subscription-types-enabled", _call("set_namespace_subscription_types_enabled", lambda o: o.types),
             "The subscription types consumers may use", NS)
    p.add_argument("-t", "--types", type=_csv, required=True,
                   help="comma-separated: Exclusive, Shared, Failover, Key_Shared")
    verb("get-subscription-types-enabled", _shown("get_namespace_subscription_types_enabled"),
         "The namespace's subscription types ([]: the broker's)", NS)
    verb("remove-subscription-types-enabled", _call("remove_namespace_subscription_types_enabled"),
         "Remove the namespace's subscription types", NS)
    verb("set-subscription-auth-mode", _call("set_namespace_subscription_auth_mode", lambda o: o.mode),
         "Prefix: a role consumes only from subscriptions named after it", NS).add_argument(
        "-m", "--subscription-auth-mode", dest="mode", required=True, choices=["None", "Prefix"],
        help="None or Prefix")
    verb("get-subscription-auth-mode", _shown("get_namespace_subscription_auth_mode"),
         "The namespace's subscription auth mode", NS)
    verb("subscription-permission", _shown("get_subscription_permissions"),
         "The roles each subscription is reserved for (JSON)", NS)
    p = verb("grant-subscription-permission", lambda a, o: a.grant_subscription_permission(
        o.namespace, o.subscription, o.roles), "Reserve a subscription for roles", NS)
    p.add_argument("-s", "--subscription", required=True, help="subscription name")
    p.add_argument("-rs", "--roles", type=_csv, required=True, help="comma-separated roles")
    p = verb("revoke-subscription-permission", lambda a, o: a.revoke_subscription_permission(
        o.namespace, o.subscription, o.role), "A role no longer has a subscription", NS)
    p.add_argument("-s", "--subscription", required=True, help="subscription name")
    p.add_argument("-r", "--role", required=True, help="the client role")


def _delivery(verb: Verb) -> None:
    p = verb("set-delayed-delivery", _call("set_namespace_delayed_delivery", lambda o: o.enable,
                                           lambda o: o.time * 1000, lambda o: o.max_delay * 1000),
             "Honour (or not) messages' delivery times on Shared and Key_Shared subscriptions", NS)
    _switch(p, ("-e", "--enable"), ("-d", "--disable"), "delayed delivery")
    p.add_argument("-t", "--time", type=_typed(parse_relative_seconds), default=1,
                   help="the tick (1s, 10s, 1m; a bare number is seconds); default 1s")
    p.add_argument("-md", "--maxDelay", dest="max_delay", type=_typed(parse_relative_seconds), default=0,
                   help="the longest delay a message may ask (1h, 1d; 0: any)")
    verb("get-delayed-delivery", _shown("get_namespace_delayed_delivery"),
         "The namespace's delayed delivery policy (null: the broker's)", NS)
    verb("remove-delayed-delivery", _call("remove_namespace_delayed_delivery"),
         "Remove the namespace's delayed delivery policy", NS)
    p = verb("set-inactive-topic-policies", _call("set_namespace_inactive_topic_policies", lambda o: o.mode,
                                                  lambda o: o.duration, lambda o: o.enable),
             "Delete topics left inactive this long", NS)
    _switch(p, ("-e", "--enable-delete-while-inactive"), ("-d", "--disable-delete-while-inactive"),
            "deleting inactive topics")
    p.add_argument("-t", "--max-inactive-duration", dest="duration", type=_typed(parse_relative_seconds),
                   required=True, help="how long a topic is inactive before it goes (1s, 10m, 5h, 3d)")
    p.add_argument("-m", "--delete-mode", dest="mode", required=True,
                   choices=["delete_when_no_subscriptions", "delete_when_subscriptions_caught_up"],
                   help="delete_when_no_subscriptions or delete_when_subscriptions_caught_up")
    verb("get-inactive-topic-policies", _shown("get_namespace_inactive_topic_policies"),
         "The namespace's inactive topic policies (null: the broker's)", NS)
    verb("remove-inactive-topic-policies", _call("remove_namespace_inactive_topic_policies"),
         "Remove the namespace's inactive topic policies", NS)
    verb("set-deduplication-snapshot-interval", _call("set_namespace_deduplication_snapshot_interval",
                                                      lambda o: o.interval),
         "Snapshot deduplication state when entries come this many seconds after the last one", NS).add_argument(
        "-i", "--interval", type=int, required=True, help="seconds (0: by entry count only)")
    verb("get-deduplication-snapshot-interval", _shown("get_namespace_deduplication_snapshot_interval"),
         "The namespace's deduplication snapshot interval in seconds (null: the broker's)", NS)
    verb("remove-deduplication-snapshot-interval", _call("remove_namespace_deduplication_snapshot_interval"),
         "Remove the namespace's deduplication snapshot interval", NS)


def _auto_update(admin: Any, o: argparse.Namespace) -> None:
    if o.disabled:
        strategy = "AutoUpdateDisabled"
    elif (o.compatibility or "").upper() in AUTO_UPDATE:
        strategy = AUTO_UPDATE[o.compatibility.upper()]
    else:
        raise ValueError("Either --compatibility (Full, Backward, Forward or None) or --disabled must be specified")
    admin.set_namespace_schema_auto_update_strategy(o.namespace, strategy)


def _no_replicator(run: Callable[[Any, argparse.Namespace], Any]) -> Callable[[Any, argparse.Namespace], Any]:
    def checked(admin: Any, o: argparse.Namespace) -> Any:
        if o.for_replicator:
            raise ValueError("--enable-for-replicator: it lets geo-replication's producers update schemas; a "
                             "pulsarlike broker is its only cluster and replicates nothing: leave it out")
        return run(admin, o)
    return checked


def _schemas(verb: Verb) -> None:
    p = verb("set-encryption-required", _call("set_namespace_encryption_required", lambda o: o.enable),
             "Refuse producers and messages that are not encrypted", NS)
    _switch(p, ("-e", "--enable"), ("-d", "--disable"), "message encryption required")
    verb("get-encryption-required", _shown("get_namespace_encryption_required"),
         "Whether the namespace requires encryption", NS)
    p = verb("set-schema-validation-enforce", _call("set_namespace_schema_validation_enforced",
                                                    lambda o: o.enable),
             "On topics with a schema, refuse messages sent without one", NS)
    _switch(p, ("-e", "--enable"), ("-d", "--disable"), "schema validation enforced")
    verb("get-schema-validation-enforce", _shown("get_namespace_schema_validation_enforced", bare=True),
         "Whether the namespace enforces schema validation", NS).add_argument(
        "-ap", "--applied", action="store_true", help="accepted as pulsar-admin's: the namespace's value is shown")
    p = verb("set-is-allow-auto-update-schema", _no_replicator(_call("set_namespace_is_allow_auto_update_schema",
                                                                     lambda o: o.enable)),
             "Whether clients may register new schema versions", NS)
    _switch(p, ("-e", "--enable"), ("-d", "--disable"), "auto update of schemas")
    p.add_argument("--enable-for-replicator", dest="for_replicator", action="store_true",
                   help="the same for geo-replication's producers: refused, a pulsarlike broker replicates nothing")
    verb("get-is-allow-auto-update-schema", _shown("get_namespace_is_allow_auto_update_schema", bare=True),
         "Whether clients may register new schema versions", NS)
    p = verb("set-schema-autoupdate-strategy", _auto_update,
             "The compatibility strategy while schemaCompatibilityStrategy is UNDEFINED (deprecated)", NS)
    p.add_argument("-c", "--compatibility", default=None, help="Full, Backward, Forward or None")
    p.add_argument("-d", "--disabled", action="store_true", help="disable automatic schema updates")
    verb("get-schema-autoupdate-strategy", _shown("get_namespace_schema_auto_update_strategy", bare=True),
         "The namespace's schema auto-update strategy", NS)


def _properties(verb: Verb) -> None:
    p = verb("set-property", lambda a, o: a.set_namespace_property(o.namespace, o.key, o.value),
             "Set one property of the namespace", NS)
    p.add_argument("-k", "--key", required=True, help="the property's key")
    p.add_argument("-v", "--value", required=True, help="its value")
    verb("get-property", lambda a, o: output.pulsar_json(a.get_namespace_property(o.namespace, o.key)),
         "One property of the namespace (null: not set)", NS).add_argument(
        "-k", "--key", required=True, help="the property's key")
    verb("remove-property", lambda a, o: a.remove_namespace_property(o.namespace, o.key),
         "Remove one property of the namespace", NS).add_argument("-k", "--key", required=True,
                                                                  help="the property's key")
    verb("set-properties", _call("set_namespace_properties", lambda o: o.properties),
         "Set properties of the namespace (the others stay)", NS).add_argument(
        "-p", "--properties", type=_key_values, required=True, help="key=value[,key=value...]")
    verb("get-properties", _shown("get_namespace_properties"), "The namespace's properties (JSON)", NS)
    verb("clear-properties", _call("clear_namespace_properties"), "Remove every property of the namespace", NS)
