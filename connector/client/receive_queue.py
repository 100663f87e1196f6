"""A consumer's receive queue: messages of all its topic partitions, in arrival order.

Partition consumers append on their stream reader threads (:meth:`ReceiveQueue.extend`); the consumer pops
with ``items.popleft()``, lock-free, and takes the condition only when the queue is empty
(:meth:`ReceiveQueue.pop_waiting`). Nothing is removed from the middle: a message that must not reach the
application is skipped when taken (see :mod:`connector.client.permits`).
"""
from __future__ import annotations

import collections
import threading
import time
from typing import Callable

from broker_core import errors

from connector.client.message import Message


class ReceiveQueue:
    def __init__(self, check_usable: Callable[[], None]) -> None:
        self.items: collections.deque[Message] = collections.deque()
        self._check_usable = check_usable
        self._cond = threading.Condition()
        self._waiting = 0

    def extend(self, messages: list[Message]) -> None:
        self.items.extend(messages)
        if self._waiting:
            with self._cond:
                self._cond.notify_all()

    def wake(self) -> None:
        """Waiters look again (the consumer closed, a partition failed or reached the end of its topic)."""
        with self._cond:
            self._cond.notify_all()

    def pop_waiting(self, deadline: float | None, timeout_millis: int | None) -> Message:
        """The next message, waiting until ``deadline`` (a ``time.monotonic()`` time; None: forever);
        ``Timeout`` after it, or what ``check_usable`` raises."""
        with self._cond:
            self._waiting += 1
            try:
                while True:
                    try:
                        return self.items.popleft()
                    except IndexError:
                        pass
                    self._check_usable()
                    if deadline is None:
                        self._cond.wait()
                        continue
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise errors.Timeout(f"no message within {timeout_millis} ms")
                    self._cond.wait(remaining)
            finally:
                self._waiting -= 1

    def snapshot(self) -> list[Message]:
        """The buffered messages now (a copy; appends may go on meanwhile)."""
        while True:
            try:
                return list(self.items)
            except RuntimeError:  # mutated while copied: copy again
                continue

    def __len__(self) -> int:
        return len(self.items)
