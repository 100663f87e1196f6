"""``pulsarlike admin topicPolicies``: pulsar-admin's topic-policy group (its ``CmdTopicPolicies``), the ``topics``
group's policy verbs again under the group's own names, each with ``-g/--global``::

    pulsarlike admin topicPolicies set-message-ttl persistent://acme/orders/t -t 1h
    pulsarlike admin topicPolicies get-max-subscriptions-per-topic T        (topics get-max-subscriptions T)
    pulsarlike admin topicPolicies set-max-subscriptions-per-topic T -s 5  (topics set-max-subscriptions T -m 5)
    pulsarlike admin topicPolicies get-backlog-quota T                      (topics get-backlog-quotas T)

They send the same topic-level policy routes as the ``topics`` verbs they are: each verb is written once, by the
``topics`` group's builders, and registered here through :func:`policies_verb`, which keeps the verbs named in
:data:`NAMES` (renamed and with :data:`FLAG_RENAMES`' flags where pulsar-admin spells them otherwise in this
group) and drops the others. ``--global`` asks for a global policy, one replicated to every cluster of a
geo-replicated Pulsar: a pulsarlike broker is its own only cluster, so it is refused (exit 2) before anything
is sent. The rate verbs are :mod:`connector.cli.admin_rates`' (``topic_verbs(policies=True)``).
"""
from __future__ import annotations

import argparse
from typing import Any, Callable

Verb = Callable[..., argparse.ArgumentParser]
Run = Callable[[Any, argparse.Namespace], Any]

_SAME = ("message-ttl", "retention", "deduplication", "max-producers", "max-consumers", "compaction-threshold",
         "max-consumers-per-subscription", "max-unacked-messages-per-consumer",
         "max-unacked-messages-per-subscription", "max-message-size", "delayed-delivery", "inactive-topic-policies",
         "subscription-types-enabled", "auto-subscription-creation", "deduplication-snapshot-interval",
         "schema-compatibility-strategy")
NAMES: dict[str, str] = {
    **{f"{action}-{suffix}": f"{action}-{suffix}" for suffix in _SAME for action in ("set", "get", "remove")},
    **{f"{action}-max-subscriptions": f"{action}-max-subscriptions-per-topic" for action in ("set", "get", "remove")},
    "set-backlog-quota": "set-backlog-quota", "get-backlog-quotas": "get-backlog-quota",
    "remove-backlog-quota": "remove-backlog-quota",
}
"""A ``topics`` verb -> its name in ``topicPolicies`` (the ``topics`` verbs not named here are not in the group)."""
FLAG_RENAMES: dict[str, dict[str, str]] = {
    "set-max-subscriptions-per-topic": {"-m": "-s"},
    "get-auto-subscription-creation": {"-ap": "-a"},
}
"""Where ``CmdTopicPolicies`` names a flag otherwise than ``CmdTopics``: verb -> {topics' flag: this group's}."""
NO_GLOBAL = frozenset({"set-schema-compatibility-strategy", "get-schema-compatibility-strategy",
                       "remove-schema-compatibility-strategy"})
"""The verbs pulsar-admin gives no ``--global``."""


def refuse_global(o: argparse.Namespace) -> None:
    """``ValueError`` (exit 2, nothing sent) for ``--global``."""
    if getattr(o, "global_policy", False):
        raise ValueError("--global: a global topic policy is replicated to the other clusters of a geo-replicated"
                         " Pulsar; a pulsarlike broker is its only cluster: leave -g out (the topic's own policy"
                         " is what it has)")


class _Renaming:
    """A verb's parser whose ``add_argument`` spells flags as this group does (everything else is the parser's)."""

    def __init__(self, parser: argparse.ArgumentParser, renames: dict[str, str]) -> None:
        self._parser = parser
        self._renames = renames

    def add_argument(self, *names: str, **kwargs: Any) -> argparse.Action:
        return self._parser.add_argument(*(self._renames.get(name, name) for name in names), **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._parser, name)


def policies_verb(verb: Verb) -> Verb:
    """The ``topicPolicies`` group's ``verb`` factory for the ``topics`` group's builders: a verb of
    :data:`NAMES` is registered under its name here with ``-g/--global``; any other goes to a parser no one
    reads."""
    def make(name: str, run: Run, what: str, positional: str | None = None) -> Any:
        ours = NAMES.get(name)
        if ours is None:
            return argparse.ArgumentParser(add_help=False)

        def guarded(admin: Any, o: argparse.Namespace) -> Any:
            refuse_global(o)
            return run(admin, o)

        p = verb(ours, guarded, what, positional)
        if ours not in NO_GLOBAL:
            p.add_argument("-g", "--global", dest="global_policy", action="store_true",
                           help="a global (replicated) policy: refused, a pulsarlike broker is its only cluster")
        renames = FLAG_RENAMES.get(ours)
        return _Renaming(p, renames) if renames else p
    return make
