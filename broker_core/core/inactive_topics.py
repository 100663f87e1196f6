"""Deleting inactive topics, as Pulsar's ``InactiveTopicPolicies`` ask (a namespace's or a topic's
``inactiveTopicPolicies``, else the broker's ``brokerDeleteInactiveTopics*``):

- ``deleteWhileInactive`` false (the broker's ``brokerDeleteInactiveTopicsEnabled``, off by default here):
  nothing is deleted;
- a persistent topic partition is *inactive* when it has no producer and no consumer, and
  (``delete_when_no_subscriptions``) no subscription at all, or (``delete_when_subscriptions_caught_up``)
  every subscription has acknowledged everything;
- one inactive for ``maxInactiveDurationSeconds`` is deleted (its data, cursors and topic policies; a
  non-partitioned topic's schema too). A partition of a partitioned topic is deleted alone, as Pulsar's
  collector deletes it: the partitioned topic stays, and the partition is empty when next used.

Every ``brokerDeleteInactiveTopicsFrequencySeconds`` a round looks at the loaded persistent topics. Inactivity
is counted from when a round last saw the topic active (the first round that sees it counts it active then),
or from when the registry last handed it out (a producer, a consumer, an admin call), whichever is later, so
a topic is deleted between one and two rounds after its time; a topic the registry unloads meanwhile (idle
unloading) stays counted, since nothing can use it without loading it again, which starts the count anew.
Non-persistent topics leave memory by themselves once idle: there is nothing to delete.

Example: namespace ``acme/tmp`` with ``{"inactiveTopicDeleteMode": "delete_when_no_subscriptions",
"maxInactiveDurationSeconds": 60, "deleteWhileInactive": true}``: a topic written once and never subscribed
to is deleted one to two rounds after 60 s without producers.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable

from broker_core.clock import Clock
from broker_core.config import BrokerConfig
from broker_core.core.topic_protocol import Topic
from broker_core.errors import PulsarLikeError
from broker_core.types import TopicName

log = logging.getLogger("broker_core.core.registry")  # the registry's events keep their logger name

NO_SUBSCRIPTIONS, CAUGHT_UP = "delete_when_no_subscriptions", "delete_when_subscriptions_caught_up"


def is_inactive(topic: Topic, mode: str) -> bool:
    """Whether a loaded topic is inactive under ``mode`` now."""
    if topic.has_clients or topic.access.waiting:
        return False
    subs = [*topic.subscriptions.values(), *topic.readers.values()]
    if mode == NO_SUBSCRIPTIONS:
        return not subs
    return all(sub.backlog == 0 for sub in subs)


class InactiveTopics:
    """Deletes from ``topics`` (the registry's loaded topics by name, shared with it): ``policy_of(name)`` is
    a topic's effective ``InactiveTopicPolicies`` (a dict), ``stored_subscriptions(name)`` whether an unloaded
    topic has subscriptions on disk, ``delete(name)`` deletes it (refusing a topic with clients)."""

    def __init__(self, topics: dict[str, Topic], policy_of: Callable[[TopicName], dict[str, Any]],
                 stored_subscriptions: Callable[[TopicName], bool], delete: Callable[[TopicName], Awaitable[None]],
                 config: BrokerConfig, clock: Clock) -> None:
        self._topics = topics
        self._policy_of = policy_of
        self._stored_subscriptions = stored_subscriptions
        self._delete = delete
        self._config = config
        self._clock = clock
        self._active_at: dict[str, int] = {}
        """By topic, when it was last seen active (or handed out): the topics that may be deleted only."""
        self._handle: asyncio.TimerHandle | None = None
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        """A round every ``brokerDeleteInactiveTopicsFrequencySeconds`` (on the event loop)."""
        self._handle = asyncio.get_running_loop().call_later(
            self._config.brokerDeleteInactiveTopicsFrequencySeconds, self._round)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        if self._task is not None:
            self._task.cancel()

    def _round(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._sweep_then_next())

    async def _sweep_then_next(self) -> None:
        try:
            await self.sweep()
        except Exception:  # a failed round must not stop the next ones
            log.exception("event=inactive_topic_round_failed")
        self.start()

    def used(self, key: str) -> None:
        """The registry handed ``key`` out (loaded it): its inactivity starts again."""
        if key in self._active_at:
            self._active_at[key] = self._clock.now_ms()

    async def sweep(self) -> list[str]:
        """One round: the topics deleted."""
        now = self._clock.now_ms()
        due: list[tuple[str, Topic | None, str]] = []
        for key, topic in list(self._topics.items()):
            if not topic.persistent:
                continue
            policy = self._policy_of(topic.name)
            if not policy["deleteWhileInactive"]:
                self._active_at.pop(key, None)
                continue
            mode = policy["inactiveTopicDeleteMode"]
            if not is_inactive(topic, mode):
                self._active_at[key] = now
                continue
            # first seen inactive (the policy may be new): counted from now, never from before
            since = self._active_at[key] = max(self._active_at.get(key, now), topic.last_used_ms)
            if now - since >= policy["maxInactiveDurationSeconds"] * 1000:
                due.append((key, topic, mode))
        for key in [k for k in self._active_at if k not in self._topics]:  # unloaded since last seen inactive
            name = TopicName.parse(key)
            policy = self._policy_of(name)
            if not policy["deleteWhileInactive"]:
                del self._active_at[key]
            elif now - self._active_at[key] >= policy["maxInactiveDurationSeconds"] * 1000:
                due.append((key, None, policy["inactiveTopicDeleteMode"]))
        deleted = []
        for key, topic, mode in due:
            name = TopicName.parse(key)
            loaded = self._topics.get(key)
            if loaded is not topic or (loaded is not None and not is_inactive(loaded, mode)):
                continue  # used meanwhile: the next round looks again
            if loaded is None and mode == NO_SUBSCRIPTIONS and self._stored_subscriptions(name):
                self._active_at.pop(key, None)
                continue
            self._active_at.pop(key, None)
            try:
                await self._delete(name)
            except PulsarLikeError as exc:  # gone already, or a client came: nothing to delete now
                log.info("event=inactive_topic_kept topic=%s reason=%s", key, exc.code)
                continue
            deleted.append(key)
            log.info("event=inactive_topic_deleted topic=%s mode=%s", key, mode)
        return deleted
