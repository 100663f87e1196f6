"""Bounded reply queues: back-pressure, not buffering.

A stream's replies wait in its :class:`Outbox` until gRPC has handed them to the client's connection. A
client that does not read must not make the broker buffer without end, so:

1. An outbox is bounded by count and bytes (``streamReplyQueueMaxMessages``, ``streamReplyQueueMaxBytes``),
   and every outbox together by bytes (``brokerReplyQueueMaxBytes``, a :class:`ReplyBudget`). A producer's
   sends that wait to be persisted count as replies too (:meth:`Outbox.hold`): their receipts are owed,
   and go out in request order (:class:`OrderedReplies`).
2. A reply is always queued -- dispatch has already recorded a delivery as pending, so it is never dropped.
   The outbox becomes *full* when it reaches a bound, or when the broker-wide budget is spent and it holds
   anything unread.
3. While an outbox is full its stream's sources stop: the stream reads no more requests
   (:meth:`Outbox.wait_room`), and a consumer's permits are withheld (:class:`PermitGate`), so every
   dispatcher treats it as a consumer without room. Later entries wait in the log, in order.
4. It has room again once the client has read half of it (all of it while the budget is spent); the
   withheld permits go back through the subscription's ``flow``, which dispatches again.

A full outbox overshoots its bound by at most one dispatch round (about ``dispatcherMaxDeliveryBytes``).
"""
from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any, Callable

log = logging.getLogger(__name__)

END = object()
"""Put by :meth:`Outbox.end`: the stream ends after the replies before it."""


class ReplyBudget:
    """Bytes of replies queued on every stream of the broker together."""

    __slots__ = ("max_bytes", "queued_bytes")

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.queued_bytes = 0

    @property
    def spent(self) -> bool:
        return self.queued_bytes >= self.max_bytes


class Outbox:
    """One stream's replies, in order, with their count and bytes bounded (see the module docstring).

    ``on_full`` / ``on_room`` are called when the outbox becomes full and when it has room again.
    """

    def __init__(self, max_messages: int, max_bytes: int, budget: ReplyBudget) -> None:
        self._queue: deque[tuple[Any, int]] = deque()
        self._held_back: list[tuple[Any, int]] | None = None
        self._max_messages = max_messages
        self._max_bytes = max_bytes
        self._budget = budget
        self._messages = 0  # queued, held back and promised (hold) replies
        self._bytes = 0
        self._full = False
        self._closed = False
        self._room = asyncio.Event()
        self._room.set()
        self._ready = asyncio.Event()
        self.on_full: Callable[[], None] | None = None
        self.on_room: Callable[[], None] | None = None

    @property
    def full(self) -> bool:
        return self._full

    def put(self, message: Any) -> None:
        """Queue ``message`` (never refused: a full outbox stops its source, not its replies)."""
        if self._closed:  # a receipt that completes after its stream ended: nobody will read it
            return
        size = message.ByteSize()
        self._messages += 1
        self._bytes += size
        self._budget.queued_bytes += size
        if self._held_back is not None:
            self._held_back.append((message, size))
        else:
            self._queue.append((message, size))
            self._ready.set()
        self._check_full()

    def hold_back(self) -> None:
        """Keep what is put from now on until :meth:`put_first` (a reply that must come before it)."""
        if self._held_back is None:
            self._held_back = []

    def put_first(self, message: Any) -> None:
        """Queue ``message``, then what was held back."""
        held, self._held_back = self._held_back or [], None
        self.put(message)
        self._queue.extend(held)
        self._ready.set()

    def discard_held(self) -> None:
        """Forget what was held back (the reply it waited for will not come)."""
        held, self._held_back = self._held_back or [], None
        for message, size in held:
            if message is not END:
                self._messages -= 1
                self._bytes -= size
                self._budget.queued_bytes -= size

    def hold(self) -> None:
        """A reply is owed (a send waits to be persisted): it counts against the bound until :meth:`release`."""
        self._messages += 1
        self._check_full()

    def release(self) -> None:
        """An owed reply is settled (its messages were put, or there were none)."""
        self._messages -= 1
        self._check_room()

    def end(self) -> None:
        """The stream ends after what is queued (or held back) now."""
        if self._held_back is not None:
            self._held_back.append((END, 0))
            return
        self._queue.append((END, 0))
        self._ready.set()

    async def get(self) -> Any:
        """The next reply, or :data:`END`."""
        queue = self._queue
        while not queue:
            self._ready.clear()
            await self._ready.wait()
        message, size = queue.popleft()
        if message is not END:
            self._messages -= 1
            self._bytes -= size
            self._budget.queued_bytes -= size
            if self._full:
                self._check_room()
        return message

    async def wait_room(self) -> None:
        """Return once the outbox is not full."""
        while self._full:
            await self._room.wait()

    def close(self) -> None:
        """The stream is over: what it still held no longer counts against the broker-wide budget, and
        what is put later is dropped."""
        self._closed = True
        self._budget.queued_bytes -= self._bytes
        self._bytes = 0
        self._queue.clear()
        self._held_back = None

    def _check_full(self) -> None:
        if self._full:
            return
        if (self._messages >= self._max_messages or self._bytes >= self._max_bytes
                or (self._bytes and self._budget.spent)):
            self._full = True
            self._room.clear()
            log.debug("event=reply_queue_full messages=%d bytes=%d broker_bytes=%d", self._messages, self._bytes,
                      self._budget.queued_bytes)
            if self.on_full is not None:
                self.on_full()

    def _check_room(self) -> None:
        if not self._full:
            return
        if self._budget.spent and self._bytes:
            return
        if self._messages <= self._max_messages // 2 and self._bytes <= self._max_bytes // 2:
            self._full = False
            self._room.set()
            if self.on_room is not None:
                self.on_room()


class PermitGate:
    """A consumer's flow permits, withheld while its stream's outbox is full.

    Dispatchers send only to a consumer with permits, so taking them away is how a consumer whose client
    does not read stops being dispatched to, whatever its subscription type; giving them back through
    ``flow`` dispatches what waited, in order. The counting stays exact: permits a dispatch round takes
    after the gate shut make the consumer's count negative, and the withheld ones are added back to it.
    """

    __slots__ = ("_consumer", "_flow", "withheld", "shut")

    def __init__(self, consumer: Any) -> None:
        self._consumer = consumer
        self._flow: Callable[[int], None] | None = None
        self.withheld = 0
        self.shut = False

    def attach(self, flow: Callable[[int], None]) -> None:
        """``flow(permits)`` gives permits to the consumer (its subscription's flow)."""
        self._flow = flow
        if not self.shut and self.withheld:
            self.open()

    def close(self) -> None:
        consumer = self._consumer
        self.shut = True
        if consumer.permits > 0:
            self.withheld += consumer.permits
            consumer.permits = 0

    def open(self) -> None:
        self.shut = False
        if self._flow is None:
            return
        permits, self.withheld = self.withheld, 0
        if permits:
            self._flow(permits)

    def flow(self, permits: int) -> None:
        """The client grants ``permits`` more."""
        if self.shut or self._flow is None:
            self.withheld += permits
        else:
            self._flow(permits)

    def reset(self) -> None:
        """After a seek: the client grants its permits again from zero."""
        self.withheld = 0


class OrderedReplies:
    """Releases a producer's per-request replies in request order, whatever order their durability completes
    in; a reserved reply counts against the outbox's bound until it is released (:meth:`Outbox.hold`)."""

    def __init__(self, out: Outbox) -> None:
        self._out = out
        self._slots: deque[list] = deque()
        self._drained = asyncio.Event()
        self._drained.set()

    def reserve(self) -> list:
        slot: list = []
        self._slots.append(slot)
        self._drained.clear()
        self._out.hold()
        return slot

    def fill(self, slot: list, messages: list) -> None:
        slot.append(messages)
        out = self._out
        while self._slots and self._slots[0]:
            for message in self._slots.popleft()[0]:
                out.put(message)
            out.release()
        if not self._slots:
            self._drained.set()

    async def drained(self) -> None:
        """Wait until every reserved reply has been released."""
        await self._drained.wait()
