"""Partitions added to a topic reach running producers and consumers, as in Pulsar's clients: every
``partitions_update_interval_seconds`` (60, the C++ and Java clients' default) one thread per client asks
each of its producers and consumers to look its partitioned topics up again
(``update_partitions()``); each one that finds more partitions than it has opens the new ones (a consumer
reads them from their first message, so nothing sent there before it looked is missed).

Partitions are only ever added (``update-partitioned-topic`` refuses fewer), so a count at or below what a
producer or consumer has changes nothing. A failed look (the broker restarting) is logged as one WARNING
line and tried again at the next interval.
"""
from __future__ import annotations

import logging
import threading
from typing import Callable, Protocol, Sequence

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_S = 60


class GrowsPartitions(Protocol):
    def topic(self) -> str: ...

    def update_partitions(self) -> None:
        """Open the partitions added to this one's topics since it looked last."""


class PartitionsUpdater:
    """A daemon thread calling ``update_partitions()`` on each of ``children()`` every ``period_s``; a period
    of 0 turns it off."""

    def __init__(self, period_s: float, children: Callable[[], Sequence[GrowsPartitions]]) -> None:
        self.period_s = period_s
        self._children = children
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        if period_s > 0:
            self._thread = threading.Thread(target=self._run, name="pulsarlike-partitions-update", daemon=True)
            self._thread.start()

    def update_now(self) -> None:
        """One round over every child (the thread's work, also for tests)."""
        for child in self._children():
            if self._stopped.is_set():
                return
            try:
                child.update_partitions()
            except Exception as exc:  # the next round may succeed (e.g. the broker restarts)
                if self._stopped.is_set():
                    return  # the client closed under the look
                log.warning("event=partitions_update_failed %s=%s error=%r", type(child).__name__.lower(),
                            child.topic(), exc)

    def _run(self) -> None:
        while not self._stopped.wait(self.period_s):
            self.update_now()

    def stop(self) -> None:
        """Stop; a round in progress ends after the child it is at (not waited for: a look may be retrying)."""
        self._stopped.set()
