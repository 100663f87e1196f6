"""A consumer's receive queue: messages of all its topic partitions, in arrival order.

Partition consumers append on their stream reader threads (:meth:`ReceiveQueue.extend`); the consumer pops
with ``items.popleft()``, lock-free, and waits only when the queue is empty (:meth:`ReceiveQueue.pop_waiting`).
Nothing is removed from the middle: a message that must not reach the application is skipped when taken (see
:mod:`connector.client.consumer.permits`).

A waiting receiver holds a *bell*: a lock of its own, acquired, that it blocks on; :meth:`extend` and
:meth:`wake` release the bells registered then. It is a ``threading.Condition`` without its re-entrant lock
and bookkeeping: this hand-off is on the latency path of every message a receiver waits for, on both sides
(the reader thread that rings, the receiver that wakes and needs the GIL back). No wake-up is lost: the
receiver registers its bell before it looks at the queue once more, and a reader appends before it looks
for bells.
"""
from __future__ import annotations

import collections
import threading
import time
from typing import Callable, Protocol

from broker_core import errors

from connector.client import interrupts
from connector.client.message import Message

_new_lock = threading.Lock


class Bell(Protocol):
    """What a waiting receiver registers: a ``threading.Lock`` held by a waiting thread, or an asyncio
    receiver's object whose ``release()`` wakes its event loop."""

    def release(self) -> None: ...


class ReceiveQueue:
    def __init__(self, check_usable: Callable[[], None]) -> None:
        self.items: collections.deque[Message] = collections.deque()
        self._check_usable = check_usable
        self._bells: list[Bell] = []
        self._bells_lock = _new_lock()

    def extend(self, messages: list[Message]) -> None:
        self.items.extend(messages)
        if self._bells:
            self._ring()

    def wake(self) -> None:
        """Waiters look again (the consumer closed, a partition failed or reached the end of its topic)."""
        self._ring()

    def _ring(self) -> None:
        with self._bells_lock:
            bells, self._bells = self._bells, []
        for bell in bells:
            bell.release()

    def pop_waiting(self, deadline: float | None, timeout_millis: int | None) -> Message:
        """The next message, waiting until ``deadline`` (a ``time.monotonic()`` time; None: forever);
        ``Timeout`` after it, or what ``check_usable`` raises; ``Interrupted`` for Ctrl-C."""
        items = self.items
        while True:
            try:
                return items.popleft()
            except IndexError:
                pass
            self._check_usable()
            if deadline is None:
                remaining = -1.0
            else:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise errors.Timeout(f"no message within {timeout_millis} ms")
            bell = _new_lock()
            bell.acquire()
            with self._bells_lock:
                self._bells.append(bell)
            if items:  # appended before the bell was registered: its ringer may not have seen it
                self._forget(bell)
                continue
            try:
                rung = interrupts.wait(bell, remaining)  # Ctrl-C: Interrupted (connector.client.interrupts)
            except BaseException:
                self._forget(bell)
                raise
            if not rung:
                self._forget(bell)

    def ring_later(self, bell: Bell) -> None:
        """Have ``bell.release()`` called at the next :meth:`extend` or :meth:`wake` (once): how an asyncio
        receiver waits without a thread (:mod:`pulsarlike.asyncio`). Look at the queue again after this
        call, and :meth:`forget` the bell when done waiting."""
        with self._bells_lock:
            self._bells.append(bell)

    def forget(self, bell: Bell) -> None:
        """Stop ringing ``bell`` (a no-op when it was rung already)."""
        self._forget(bell)

    def _forget(self, bell: Bell) -> None:
        with self._bells_lock:
            try:
                self._bells.remove(bell)
            except ValueError:  # rung meanwhile
                pass

    def snapshot(self) -> list[Message]:
        """The buffered messages now (a copy; appends may go on meanwhile)."""
        while True:
            try:
                return list(self.items)
            except RuntimeError:  # mutated while copied: copy again
                continue

    def __len__(self) -> int:
        return len(self.items)
