"""Producers of a topic: default names (unique across broker restarts: deduplication keys on producer
names), their bookkeeping, and admission under the access modes and the producer limit
(:class:`TopicProducers`, which each topic owns)."""
from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from typing import Callable

from broker_core.errors import NotAllowedError, ProducerBusy, ProducerFenced, PulsarLikeError
from broker_core.core.access import AccessMode, ProducerAccess


class ProducerNames:
    """``<cluster>-<run id>-<n>``, as Pulsar's ``<cluster>-<broker>-<n>``; the random run id keeps names
    of different broker runs apart."""

    def __init__(self, cluster: str) -> None:
        self._prefix = f"{cluster}-{os.urandom(3).hex()}-"
        self._counter = itertools.count()

    def next(self) -> str:
        return f"{self._prefix}{next(self._counter)}"


@dataclass
class ProducerInfo:
    producer_name: str
    producer_id: int
    properties: dict[str, str] = field(default_factory=dict)
    access_mode: AccessMode = AccessMode.SHARED
    msg_in_counter: int = 0
    bytes_in_counter: int = 0
    disconnect: Callable[[PulsarLikeError], None] = lambda error: None
    """Ends the producer's session with ``error`` (termination, unload); set by whoever serves it."""


def check_producer_limit(topic: str, limit: int, producers: int) -> None:
    """``ProducerBusy`` when ``producers`` (connected or waiting) already reach ``limit`` (0: none), with
    Pulsar's words ("Topic reached max producers limit")."""
    if limit and producers >= limit:
        raise ProducerBusy(f"Topic {topic} reached max producers limit ({limit}): close a producer, or raise"
                           " maxProducersPerTopic (`pulsarlike admin namespaces set-max-producers-per-topic`,"
                           " `topics set-max-producers`)", topic=topic, limit=limit)


_PRODUCER_IDS = itertools.count(1)
"""Producer ids are broker-wide: a session's producer id never names two topics' producers."""


class TopicProducers:
    """The producers of one topic (persistent or not): ``producers`` by id, ``access`` (the access modes)
    and ``max_producers``. ``is_closed`` tells whether the topic is closing; ``refuse`` runs first on each
    new producer (a persistent topic raises ``TopicTerminated`` there once terminated)."""

    def __init__(self, topic: str, max_producers: int, is_closed: Callable[[], bool], *,
                 refuse: Callable[[], None] = lambda: None) -> None:
        self.topic = topic
        self.max_producers = max_producers
        """Most producers at once (0: no limit); the registry applies namespace and topic policies."""
        self.producers: dict[int, ProducerInfo] = {}
        self.access = ProducerAccess(topic)
        self._is_closed = is_closed
        self._refuse = refuse

    def add_producer(self, producer_name: str, properties: dict[str, str],
                     access_mode: AccessMode = AccessMode.SHARED, *,
                     fence: Callable[[PulsarLikeError], None] = lambda error: None,
                     granted: Callable[[], None] = lambda: None) -> tuple[ProducerInfo, bool]:
        """Register a producer under the access modes' rules (see :mod:`.access`): returns its info and
        whether it may publish now (False: ``WaitForExclusive`` queued it; ``granted`` runs later).
        ``fence(error)`` ends the producer's session: fenced by another, or the topic terminated or unloaded."""
        self._refuse()
        if self._is_closed():
            raise NotAllowedError(f"topic {self.topic} is closing")
        check_producer_limit(self.topic, self.max_producers, len(self.producers) + len(self.access.waiting))
        info = ProducerInfo(producer_name, next(_PRODUCER_IDS), dict(properties), AccessMode(access_mode),
                            disconnect=fence)

        def admitted() -> None:
            self.producers[info.producer_id] = info
            granted()

        def fenced(error: ProducerFenced) -> None:
            self.producers.pop(info.producer_id, None)
            fence(error)

        now = self.access.add(info.producer_id, producer_name, info.access_mode, fence=fenced,
                              granted=admitted)
        if now:
            self.producers[info.producer_id] = info
        return info, now

    def remove_producer(self, info: ProducerInfo) -> None:
        self.producers.pop(info.producer_id, None)
        self.access.remove(info.producer_id)

    def disconnect_all(self, error: PulsarLikeError) -> int:
        """End every producer's session with ``error``, waiting ones first (so none is admitted meanwhile);
        returns how many were ended."""
        ended = len(self.access.waiting)
        self.access.drop_waiting(error)
        for producer in list(self.producers.values()):
            producer.disconnect(error)
            ended += 1
        return ended

    def stats(self) -> list[dict]:
        """The ``publishers`` of Pulsar's topic stats."""
        return [{"producerName": p.producer_name, "producerId": p.producer_id,
                 "msgInCounter": p.msg_in_counter, "bytesInCounter": p.bytes_in_counter,
                 "metadata": p.properties, "accessMode": p.access_mode.pulsar_name}
                for p in self.producers.values()]
