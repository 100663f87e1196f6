"""One deadline for a call that opens many partitions: :class:`Deadline` and :func:`open_all`.

``create_producer``, ``subscribe`` and ``create_reader`` honour ``operation_timeout_seconds`` as a whole, not
per partition: the client sets one :class:`Deadline` when the call starts, and the lookups (partition counts,
a pattern's topics) and the opening of every partition (topic, or partition of a topic) share it. A broker
that answers each partition just in time cannot stretch a call to partitions x the timeout.

:func:`open_all` opens up to :data:`OPEN_CONCURRENCY` partitions at a time, each on a worker thread (an opening
waits for the broker's answer; both transports carry many openings at once on one connection: gRPC's HTTP/2
channel, the binary protocol's multiplexed producers and consumers). It returns them in the order asked, or,
at the first refusal or once the deadline passes, stops starting new ones, closes those opened and raises
the refusal or ``Timeout`` naming how many of how many were opened. An opening still in flight then is closed
by its worker as soon as it completes (it ends within its own ``operation_timeout_seconds``); the caller waits
at most :data:`CLOSE_WAIT_S` for the closes, which go on in the background past that. A single opening runs on
the calling thread when the lookups took (almost) nothing of the deadline (:data:`INLINE_SLACK_S`).

Example: ``subscribe`` to 100 partitions whose lookups each take 0.5 s, ``operation_timeout_seconds=2``: 16
open at a time, 48 are open when the deadline passes; ``Timeout("... 48 of 100 partitions opened ...")`` is
raised 2 s after the call started, and the 48 are closed, then the 16 in flight as they complete
(``create_producer``: 33 of 100, its first partition opened alone).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Generic, Sequence, TypeVar

from broker_core import errors

log = logging.getLogger(__name__)

OPEN_CONCURRENCY = 16
"""Partitions opened at a time by one call."""
INLINE_SLACK_S = 0.1
"""A call opening one topic (most calls) opens it on the calling thread, without a worker, when its lookups
left at least its whole timeout less this: the opening's own ``operation_timeout_seconds`` then ends at most
this long after the call's deadline. A thread hop costs a call about a millisecond more on a busy machine."""
CLOSE_WAIT_S = 1.0
"""How long a call that failed waits for the partitions it opened to be closed (the broker answering each
close); the closes go on in the background after that."""

Item = TypeVar("Item")
Opened = TypeVar("Opened")


class Deadline:
    """The end of one operation: ``timeout_s`` after it started (``clock``: ``time.monotonic``)."""

    __slots__ = ("timeout_s", "at", "_clock")

    def __init__(self, timeout_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.timeout_s = timeout_s
        self._clock = clock
        self.at = clock() + timeout_s

    def left(self) -> float:
        """Seconds left (<= 0 once passed)."""
        return self.at - self._clock()

    def remaining(self, what: str) -> float:
        """The seconds left for the next step, ``what``; ``Timeout`` naming it when none are."""
        left = self.left()
        if left <= 0:
            raise errors.Timeout(f"{what}: operation_timeout_seconds={self.timeout_s:g} passed before it could "
                                 "start (one deadline covers the lookups and the opening of every partition)",
                                 timeout_s=self.timeout_s)
        return left


def open_all(items: Sequence[Item], open_one: Callable[[Item], Opened], close_one: Callable[[Opened], None],
             deadline: Deadline | None, what: str, *, lead: bool = False,
             concurrency: int = OPEN_CONCURRENCY) -> list[Opened]:
    """``[open_one(item) for item in items]``, opened ``concurrency`` at a time within ``deadline`` (None: as
    long as they take); see the module docstring. ``what`` names the call in the ``Timeout``
    (``"create_producer on persistent://public/default/t"``). ``lead``: the first item is opened alone, the
    others once it is open (they take what it learned: a producer's name, which the broker gives)."""
    if not items:
        return []
    if len(items) == 1 and (deadline is None or deadline.left() >= deadline.timeout_s - INLINE_SLACK_S):
        return [open_one(items[0])]  # bounded by its own operation timeout, which ends by the call's (+ slack)
    return _Opening(items, open_one, close_one, what, lead).run(deadline, concurrency)


class _Opening(Generic[Item, Opened]):
    def __init__(self, items: Sequence[Item], open_one: Callable[[Item], Opened], close_one: Callable[[Opened], None],
                 what: str, lead: bool) -> None:
        self._items = items
        self._open_one = open_one
        self._close_one = close_one
        self._what = what
        self._changed = threading.Condition()
        self._results: list[Opened | None] = [None] * len(items)
        self._next = 0
        self._finished = 0
        self._leading = lead
        """The first item is taken and not open yet: the other workers wait."""
        self._error: BaseException | None = None
        self._abandoned = False

    def run(self, deadline: Deadline | None, concurrency: int) -> list[Opened]:
        total = len(self._items)
        for number in range(min(max(1, concurrency), total)):
            threading.Thread(target=self._work, daemon=True, name=f"pulsarlike-open-{number}").start()
        try:
            with self._changed:
                while self._finished < total and self._error is None:
                    if deadline is None:
                        self._changed.wait()
                        continue
                    left = deadline.left()
                    if left <= 0:
                        break
                    self._changed.wait(left)
                if self._finished == total and self._error is None:
                    return self._results  # type: ignore[return-value]
        except BaseException:  # the caller interrupted (KeyboardInterrupt): nothing opened may outlive the call
            self._abandon()
            raise
        opened, error = self._abandon()
        if error is not None:
            raise error
        assert deadline is not None
        if total == 1:
            raise errors.Timeout(
                f"{self._what}: not opened within operation_timeout_seconds={deadline.timeout_s:g} (its lookups "
                "included)", opened=0, partitions=1, timeout_s=deadline.timeout_s)
        raise errors.Timeout(
            f"{self._what}: {len(opened)} of {total} partitions opened within operation_timeout_seconds="
            f"{deadline.timeout_s:g} (one deadline for the lookups and every partition); the {len(opened)} opened "
            "were closed: raise operation_timeout_seconds, or check the broker's lookups",
            opened=len(opened), partitions=total, timeout_s=deadline.timeout_s)

    def _abandon(self) -> tuple[list[Opened], BaseException | None]:
        """Stop the workers, close what was opened (what opens later is closed by its worker); returns what was
        opened and the first refusal."""
        with self._changed:
            self._abandoned = True
            self._changed.notify_all()  # workers waiting for a lead item stop
            opened = [result for result in self._results if result is not None]
            error = self._error
        _close_all(opened, self._close_one, self._what)
        return opened, error

    def _work(self) -> None:
        while True:
            with self._changed:
                while self._leading and self._next > 0 and not self._abandoned and self._error is None:
                    self._changed.wait()
                if self._abandoned or self._error is not None or self._next >= len(self._items):
                    return
                index = self._next
                self._next += 1
            try:
                result = self._open_one(self._items[index])
            except BaseException as exc:  # the caller raises it (or has given up already)
                with self._changed:
                    if self._error is None and not self._abandoned:
                        self._error = exc
                    self._finished += 1
                    self._changed.notify_all()
                continue
            with self._changed:
                late = self._abandoned or self._error is not None
                if not late:
                    self._results[index] = result
                self._finished += 1
                if index == 0:
                    self._leading = False
                self._changed.notify_all()
            if late:  # the call failed meanwhile: what it would have held is closed here
                _close_quietly(self._close_one, result, self._what)


def _close_all(opened: list[Opened], close_one: Callable[[Opened], None], what: str) -> None:
    """Close ``opened`` (concurrently), waiting at most :data:`CLOSE_WAIT_S` for the broker's answers."""
    if not opened:
        return
    pending = list(opened)
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                if not pending:
                    return
                result = pending.pop()
            _close_quietly(close_one, result, what)
    workers = [threading.Thread(target=work, daemon=True, name=f"pulsarlike-close-{n}")
               for n in range(min(OPEN_CONCURRENCY, len(opened)))]
    for worker in workers:
        worker.start()
    until = time.monotonic() + CLOSE_WAIT_S
    for worker in workers:
        worker.join(max(0.0, until - time.monotonic()))


def _close_quietly(close_one: Callable[[Opened], None], result: Opened, what: str) -> None:
    try:
        close_one(result)
    except Exception:  # closing what a failed call opened: log, the error that matters is the call's
        log.warning("event=partition_close_failed call=%r", what, exc_info=True)
