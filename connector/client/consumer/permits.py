"""Flow permits of one subscription stream, and what taking a buffered message does.

Permits: the stream subscribes with ``receiver_queue_size`` permits; each time half of that has been taken
by the application (or settled without it: messages an ack set leaves out, chunks, dead letters), the same
number is sent back in one ``Flow``, as Pulsar's clients do. Example, ``receiver_queue_size=10``: Flow(5)
after the 5th message taken, Flow(5) after the 10th.

Taking a message is the consumer's hot path, so it costs one ``next()`` and one comparison: every buffered
message's entry points to a *taker* with a ``counter`` and a ``threshold``, and only when
``next(counter) >= threshold`` does ``refill()`` run. A live :class:`PermitWindow` is a taker whose refill
sends the Flow. The other takers always refill, which is how a message that must not reach the application
is dropped without searching the receive queue:

- a window that was retired (:meth:`PermitWindow.retire`: the stream reconnected or sought; the broker
  starts those permits afresh) raises :class:`Skipped`;
- :class:`Discarded` (its entry is being redelivered) returns the permit and raises :class:`Skipped`;
- :class:`Undecodable` (its entry could not be decoded) returns the permit, acknowledges the entry and
  raises the entry's ``MessageDecodeError``;
- :class:`Unreadable` (the broker could not read the next message: a damaged stored range) raises its
  ``DataLost``; the binary transport reports an entry its positions cannot hold the same way (a
  ``MessageDecodeError``, the entry already acknowledged by its real id).
"""
from __future__ import annotations

import itertools
import threading
from typing import Callable, Iterator, NoReturn, Protocol

from broker_core.errors import MessageDecodeError


class Skipped(Exception):
    """Taking a message that must not reach the application: the caller takes the next one instead."""


class Taker(Protocol):
    """What taking a buffered message does (see the module docstring)."""

    counter: Iterator[int]
    threshold: int

    @property
    def stale(self) -> bool:
        """Of a stream generation that ended (its messages are skipped)."""

    def refill(self) -> None: ...

    def took(self, count: int) -> None:
        """``count`` messages were settled without the application: their permits count as taken."""


class PermitWindow:
    """The permits of one stream generation (a reconnection or a seek starts a new one)."""

    def __init__(self, size: int, send_flow: Callable[[int], None]) -> None:
        self.size = max(1, size)
        self._every = max(1, self.size // 2)
        self._send_flow = send_flow
        self._lock = threading.Lock()
        self.counter: Iterator[int] = itertools.count(1)
        """``next()`` once per message taken, lock-free (``itertools.count`` is atomic)."""
        self._probes = 0
        """``next()`` calls of :meth:`_settle` itself: the counter is takes + probes."""
        self._credited = 0
        """Messages settled without the application (:meth:`took`)."""
        self._returned = 0
        self._next_refill = self._every
        self.threshold = self._every
        """The counter value at which the next Flow is due."""
        self.stale = False

    def refill(self) -> None:
        self._settle(0)

    def took(self, count: int) -> None:
        if count > 0:
            self._settle(count)

    def _settle(self, credit: int) -> None:
        with self._lock:
            if self.stale:
                if credit:
                    return
                raise Skipped()
            self._probes += 1
            self._credited += credit
            taken = next(self.counter) - self._probes + self._credited
            permits = 0
            if taken >= self._next_refill:
                permits, self._returned = taken - self._returned, taken
                self._next_refill = taken + self._every
            self.threshold = self._next_refill + self._probes - self._credited
        if permits:
            self._send_flow(permits)

    def grow(self, size: int) -> None:
        """Keep ``size`` permits out from now on, when that is more than now: the difference is sent at once,
        and later refills send half of ``size`` (a range reader sizes its window by the bytes it sees)."""
        with self._lock:
            extra = size - self.size
            if extra <= 0 or self.stale:
                return
            self.size = size
            self._every = max(1, size // 2)
            self._next_refill = self._returned + self._every
            self.threshold = self._next_refill + self._probes - self._credited
        self._send_flow(extra)

    def retire(self) -> None:
        """Messages of this generation still buffered are skipped when taken, and give no permits back."""
        with self._lock:
            self.stale = True
            self.threshold = -1


class Discarded:
    """The taker of messages whose entry is being redelivered (a negative ack, an ack timeout, a rewind):
    taking one returns its permit (unless ``returns_permit`` is false) and skips it."""

    counter: Iterator[int] = itertools.repeat(0)
    threshold = 0

    def __init__(self, window: Taker, returns_permit: bool = True) -> None:
        self.window = window
        self.returns_permit = returns_permit

    @property
    def stale(self) -> bool:
        return self.window.stale

    def refill(self) -> NoReturn:
        if self.returns_permit:
            self.window.took(1)
        raise Skipped()

    def took(self, count: int) -> None:
        self.window.took(count)


class Unreadable:
    """The taker of the place a message the broker could not read holds in the queue (``DataLost``: a damaged
    stored range): taking it raises ``error`` once, after the messages received before it; it holds no
    permit. Skipped when its stream generation ended (the broker reports it again on the new one)."""

    counter: Iterator[int] = itertools.repeat(0)
    threshold = 0

    def __init__(self, window: Taker, error: Exception) -> None:
        self.window = window
        self.error = error

    @property
    def stale(self) -> bool:
        return self.window.stale

    def refill(self) -> NoReturn:
        if self.window.stale:
            raise Skipped()
        raise self.error

    def took(self, count: int) -> None:
        self.window.took(count)


class Undecodable:
    """The taker of the place an undecodable entry holds in the queue: taking it returns its permit,
    settles the entry (``settle()`` acknowledges it, as Pulsar's client discards a corrupted message) and
    raises ``error``."""

    counter: Iterator[int] = itertools.repeat(0)
    threshold = 0

    def __init__(self, window: Taker, error: MessageDecodeError, settle: Callable[[], None]) -> None:
        self.window = window
        self.error = error
        self._settle = settle

    @property
    def stale(self) -> bool:
        return self.window.stale

    def refill(self) -> NoReturn:
        if self.window.stale:  # the entry comes again on the new stream generation
            raise Skipped()
        self.window.took(1)
        self._settle()
        raise self.error

    def took(self, count: int) -> None:
        self.window.took(count)
