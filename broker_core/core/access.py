"""Who may produce on one topic partition: Pulsar's producer access modes (PIP-68).

==========================  ============================================================================
mode                        when another producer is there
==========================  ============================================================================
``Shared`` (default)        admitted with other shared producers; ``ProducerBusy`` while an exclusive
                            producer holds the topic or exclusive producers are waiting for it
``Exclusive``               ``ProducerFenced`` at once ("Topic has an existing exclusive producer" /
                            "... existing shared producers"), as Pulsar answers
``ExclusiveWithFencing``    every connected producer is fenced (its session ends with ``ProducerFenced``,
                            so its next send fails), waiting ones are refused with ``ProducerFenced``;
                            the newcomer becomes the exclusive producer
``WaitForExclusive``        queued, FIFO and without a timeout, until no producer is left; then it is
                            the exclusive producer (leader election: the leader is whoever was granted)
==========================  ============================================================================

A producer name is unique on a topic: a second producer with the name of a connected one gets
``ProducerBusy`` (deduplication keys on producer names, so two live writers must never share one).

Pure bookkeeping: callers pass ``fence`` (end that producer's session) and ``granted`` (let a queued
producer open) callbacks; nothing here knows about gRPC or the event loop.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import IntEnum
from typing import Callable

from broker_core.errors import ProducerBusy, ProducerFenced, PulsarLikeError


class AccessMode(IntEnum):
    """Values as on the wire (``broker.proto`` ProducerAccessMode)."""

    SHARED = 0
    EXCLUSIVE = 1
    EXCLUSIVE_WITH_FENCING = 2
    WAIT_FOR_EXCLUSIVE = 3

    @property
    def pulsar_name(self) -> str:
        """As Pulsar's stats print it: ``Shared``, ``Exclusive``, ``ExclusiveWithFencing``, ..."""
        return "".join(part.capitalize() for part in self.name.split("_"))


@dataclass
class _Producer:
    producer_id: int
    name: str
    mode: AccessMode
    fence: Callable[[ProducerFenced], None]
    granted: Callable[[], None]


class ProducerAccess:
    """Admits, queues and fences the producers of one topic partition."""

    def __init__(self, topic: str) -> None:
        self._topic = topic
        self._producers: dict[int, _Producer] = {}
        self._exclusive: _Producer | None = None
        self._waiting: deque[_Producer] = deque()

    @property
    def exclusive_producer(self) -> str | None:
        return self._exclusive.name if self._exclusive is not None else None

    @property
    def waiting(self) -> list[str]:
        return [p.name for p in self._waiting]

    def add(self, producer_id: int, name: str, mode: AccessMode, *,
            fence: Callable[[ProducerFenced], None], granted: Callable[[], None]) -> bool:
        """Admit a producer: True when it may open now, False when it waits (``granted`` is called once
        it is admitted). Raises ``ProducerBusy``/``ProducerFenced`` when it is refused."""
        mode = AccessMode(mode)
        for other in self._producers.values():
            if other.name == name:
                raise ProducerBusy(f"producer with name {name!r} is already connected to topic "
                                   f"{self._topic}")
        if any(p.name == name for p in self._waiting):
            raise ProducerBusy(f"producer with name {name!r} is already waiting on topic {self._topic}")
        producer = _Producer(producer_id, name, mode, fence, granted)
        holder = self._exclusive
        if mode == AccessMode.SHARED:
            if holder is not None or self._waiting:
                raise ProducerBusy(f"Topic has an existing exclusive producer: "
                                   f"{holder.name if holder else self._waiting[0].name}")
        elif mode == AccessMode.EXCLUSIVE:
            if holder is not None or self._waiting:
                raise ProducerFenced(f"Topic has an existing exclusive producer: "
                                     f"{holder.name if holder else self._waiting[0].name}")
            if self._producers:
                raise ProducerFenced("Topic has existing shared producers")
            self._exclusive = producer
        elif mode == AccessMode.EXCLUSIVE_WITH_FENCING:
            waiting, self._waiting = list(self._waiting), deque()
            fenced, self._producers = list(self._producers.values()), {}
            self._exclusive = producer
            for other in waiting + fenced:
                other.fence(ProducerFenced(f"fenced out by producer {name!r} "
                                           f"(ExclusiveWithFencing) on {self._topic}"))
        else:  # WAIT_FOR_EXCLUSIVE
            if holder is not None or self._producers or self._waiting:
                self._waiting.append(producer)
                return False
            self._exclusive = producer
        self._producers[producer_id] = producer
        return True

    def drop_waiting(self, error: PulsarLikeError) -> None:
        """End every waiting producer's session with ``error`` (the topic is terminated or unloaded)."""
        waiting, self._waiting = list(self._waiting), deque()
        for producer in waiting:
            producer.fence(error)  # type: ignore[arg-type]

    def remove(self, producer_id: int) -> None:
        """A producer (or a waiting one) left; the head of the queue is admitted once nobody is left."""
        producer = self._producers.pop(producer_id, None)
        if producer is None:
            self._waiting = deque(p for p in self._waiting if p.producer_id != producer_id)
            return
        if self._exclusive is producer:
            self._exclusive = None
        if not self._producers and self._waiting:
            head = self._waiting.popleft()
            self._exclusive = head
            self._producers[head.producer_id] = head
            head.granted()
