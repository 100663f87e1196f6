"""Unloading idle persistent topics (``brokerTopicIdleUnloadSeconds``): a quiescent topic leaves memory,
and its next use loads it from disk again. Rounds run on the event loop and are bounded, so a round never
holds the loop long."""
from __future__ import annotations

import asyncio
import logging
from broker_core.clock import Clock
from broker_core.config import BrokerConfig
from broker_core.core.topic_protocol import Topic, stored
from broker_core.errors import PulsarLikeError

log = logging.getLogger("broker_core.core.registry")  # the registry's events keep their logger name


class IdleUnloader:
    """Unloads from ``topics`` (the registry's loaded topics by name, shared with it)."""

    def __init__(self, topics: dict[str, Topic], config: BrokerConfig, clock: Clock) -> None:
        self._topics = topics
        self._config = config
        self._clock = clock
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """Unload idle topics every so often (``brokerTopicIdleUnloadSeconds``; runs on the event loop)."""
        idle_s = self._config.brokerTopicIdleUnloadSeconds
        if idle_s:
            self._handle = asyncio.get_running_loop().call_later(min(idle_s / 2, 30), self._round)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()

    def _round(self) -> None:
        try:
            self.unload_idle()
        except Exception:  # a failed round must not stop the next ones
            log.exception("event=topic_unload_round_failed")
        self.start()

    def unload_idle(self, max_topics: int = 1000) -> int:
        """Unload persistent topics quiescent for ``brokerTopicIdleUnloadSeconds`` (at most ``max_topics``
        this round, so a round never holds the event loop long); returns how many were unloaded."""
        now = self._clock.now_ms()
        cutoff = now - self._config.brokerTopicIdleUnloadSeconds * 1000
        unloaded = 0
        for key, found in list(self._topics.items()):
            if not found.persistent:
                continue  # non-persistent topics leave on their own once idle
            topic = stored(found, "unload")
            if not topic.quiescent:
                topic.last_used_ms = now
            elif topic.last_used_ms <= cutoff and self.unload(key):
                unloaded += 1
                if unloaded >= max_topics:
                    break
        return unloaded

    def unload(self, key: str) -> bool:
        """Unload the loaded topic ``key`` if it is quiescent; the next use loads it from disk again."""
        found = self._topics.get(key)
        if found is None or not found.persistent:
            return False
        topic = stored(found, "unload")
        try:
            done = topic.unload()
        except (OSError, PulsarLikeError) as exc:
            log.error("event=topic_unload_failed topic=%s error=%r", key, exc)
            done = topic.closed
        if done:
            del self._topics[key]
            log.info("event=topic_unloaded topic=%s", key)
        return done
