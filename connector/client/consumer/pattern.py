"""Pattern subscriptions (seed: "Multi-topic subscriptions"): the topics of one namespace whose names match a
regular expression, re-listed every ``pattern_auto_discovery_period`` seconds.

A pattern is ``[persistent|non-persistent://]tenant/namespace/<regex>`` or a bare ``<regex>`` (in
``public/default``). "All topics must be in the same namespace": the tenant and namespace are plain names,
never expressions, and the expression never spans a ``/`` -- ``persistent://public/.*/orders`` or
``persistent://public/default/a/b.*`` is refused with ``ValueError``. The expression must match the whole
topic name, without the partition suffix (a partitioned topic is matched, and subscribed, as a whole);
it keeps the compiled pattern's flags. Example: ``re.compile("persistent://public/default/finance-.*")``
takes ``finance-eu`` and ``finance-us`` (all their partitions), not ``hr-finance``.

Which domains: the pattern's own, else ``regex_subscription_mode`` (``PersistentOnly`` by default, as in
``pulsar-client``); a pattern and a mode that contradict each other are refused.
"""
from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from typing import Callable

from broker_core.types import TopicName

from connector.client.enums import RegexSubscriptionMode, check_enum

log = logging.getLogger(__name__)

_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.=:\-]+")
"""A tenant or namespace name (a '.' in one is taken literally)."""
_DOMAINS = {
    RegexSubscriptionMode.PersistentOnly: frozenset({"persistent"}),
    RegexSubscriptionMode.NonPersistentOnly: frozenset({"non-persistent"}),
    RegexSubscriptionMode.AllTopics: frozenset({"persistent", "non-persistent"}),
}


@dataclass(frozen=True)
class TopicsPattern:
    """A parsed topics pattern."""

    text: str
    """The pattern as written."""
    namespace: str
    """``tenant/namespace`` whose topics are listed."""
    domains: frozenset[str]
    """``persistent`` and/or ``non-persistent``."""
    topic_regex: re.Pattern[str]
    """Matches the local topic name (after ``tenant/namespace/``), whole."""

    @classmethod
    def parse(cls, pattern: re.Pattern[str] | str,
              mode: RegexSubscriptionMode | None = None) -> "TopicsPattern":
        compiled = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern)
        text = compiled.pattern
        domain = None
        rest = text
        if "://" in text:
            domain, rest = text.split("://", 1)
            if domain not in ("persistent", "non-persistent"):
                raise ValueError(f"topics pattern {text!r}: the domain must be written out as persistent:// "
                                 "or non-persistent://, not as an expression")
        parts = rest.split("/", 2)
        if len(parts) == 1:
            tenant, namespace, local = "public", "default", parts[0]
        elif len(parts) == 3:
            tenant, namespace, local = parts
        else:
            raise ValueError(f"topics pattern {text!r} is not valid; use tenant/namespace/<regex> (or a bare "
                             "<regex> for public/default)")
        for what, name in (("tenant", tenant), ("namespace", namespace)):
            if not _PLAIN_NAME.fullmatch(name):
                raise ValueError(
                    f"topics pattern {text!r}: the {what} {name!r} is an expression, but a pattern subscription "
                    "takes topics of one namespace only: write the tenant and namespace out, e.g. "
                    "persistent://public/default/orders-.*")
        if "/" in local:
            raise ValueError(f"topics pattern {text!r}: the topic expression {local!r} spans a '/', but a "
                             "pattern subscription takes topics of one namespace only")
        if mode is None:
            domains = frozenset({domain or "persistent"})
        else:
            domains = _DOMAINS[check_enum("regex_subscription_mode", mode,  # type: ignore[index]
                                          RegexSubscriptionMode)]
            if domain is not None:
                if domain not in domains:
                    raise ValueError(f"topics pattern {text!r} names {domain} topics, but regex_subscription_mode="
                                     f"{RegexSubscriptionMode(mode).name} excludes them")
                domains = frozenset({domain})
        return cls(text, f"{tenant}/{namespace}", domains, re.compile(local, compiled.flags))

    def matches(self, topic: str) -> bool:
        """Whether the (base, fully qualified) topic name is one of this pattern's."""
        name = TopicName.parse(topic)
        return (name.domain in self.domains and name.namespace_name == self.namespace
                and self.topic_regex.fullmatch(name.local_name) is not None)

    def select(self, listed: list[str]) -> list[str]:
        """The matching base topics among a namespace listing (partitions count as their base topic), in
        listing order, each once."""
        out: list[str] = []
        seen: set[str] = set()
        for topic in listed:
            base = str(TopicName.parse(topic).partitioned_base)
            if base not in seen:
                seen.add(base)
                if self.matches(base):
                    out.append(base)
        return out


class PatternWatcher:
    """Every ``period_s`` seconds: ``list_topics()``, then ``on_change(added, removed)`` with the matching
    topics that appeared and disappeared since the last look. A daemon thread; :meth:`poll` does one look."""

    def __init__(self, pattern: TopicsPattern, period_s: float, known: list[str],
                 list_topics: Callable[[], list[str]],
                 on_change: Callable[[list[str], list[str]], None]) -> None:
        self.pattern = pattern
        self.period_s = period_s
        self.known = list(known)
        self._list_topics = list_topics
        self._on_change = on_change
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.period_s > 0 and self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True,
                                            name=f"pulsarlike-pattern-{self.pattern.text}")
            self._thread.start()

    def poll(self) -> tuple[list[str], list[str]]:
        current = self.pattern.select(self._list_topics())
        known = set(self.known)
        added = [t for t in current if t not in known]
        present = set(current)
        removed = [t for t in self.known if t not in present]
        if added or removed:
            self._on_change(added, removed)
            self.known = [t for t in self.known if t in present] + added
        return added, removed

    def _run(self) -> None:
        while not self._stopped.wait(self.period_s):
            try:
                self.poll()
            except Exception:  # the next look may succeed (e.g. the broker restarts)
                log.exception("topics pattern %r: discovery failed", self.pattern.text)

    def stop(self) -> None:
        self._stopped.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
