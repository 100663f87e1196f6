"""Topic termination (``pulsarlike admin topics terminate``, Pulsar's ``terminate``): a terminated topic
partition takes no more messages, ever, and its consumers learn when they have received everything.

- **Producers**: the connected ones are closed with ``TopicTerminated``; a new one, and any send, is
  refused with it.
- **Consumers and readers**: once a subscription has nothing left to deliver -- every message up to the
  end is acknowledged or held by one of its consumers (Pulsar: the dispatcher finds no more entries to
  read) -- each of its consumers is sent ``ReachedEndOfTopic`` once; the client's
  ``has_reached_end_of_topic()`` is then true once it has handed out what it buffered. A seek back makes
  the end to be reached again. Checked at termination, after each delivery, seek and subscribe on a
  terminated topic (never on the hot path of a topic that is not terminated).
- **Persistence**: a ``terminated`` marker in the topic folder (atomic write) holds the end offset, so a
  terminated topic stays terminated across unloads and restarts.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from broker_core.errors import CorruptLog, TopicTerminated
from broker_core.storage.atomic import atomic_write

if TYPE_CHECKING:
    from dispatch.consumer import Consumer
    from dispatch.subscription import Subscription

log = logging.getLogger(__name__)

MARKER = "terminated"


def nothing_left_to_deliver(sub: "Subscription") -> bool:
    """Every unacknowledged message of ``sub`` (up to the confirmed end) is held by one of its consumers.
    Delayed messages not yet delivered, and messages waiting for redelivery, keep it False."""
    return sub.backlog <= sum(c.unacked_messages for c in sub.consumers)


class Termination:
    """The terminated state of one topic partition, and its consumers' end-of-topic notifications."""

    def __init__(self, directory: Path, topic: str) -> None:
        self._path = directory / MARKER
        self._topic = topic
        self.end_offset: int | None = None
        """One past the last message of a terminated topic; None while it is not terminated."""
        if self._path.exists():
            try:
                self.end_offset = int(json.loads(self._path.read_bytes())["endOffset"])
            except (ValueError, KeyError, TypeError) as exc:
                log.error("event=termination_marker_corrupt topic=%s error=%r", topic, exc)
                raise CorruptLog(f"the termination marker of {topic} is corrupt; the broker's log has the details",
                                 path=MARKER, position=0) from None
        self._notify: dict[int, Callable[[], None]] = {}
        self._notified: set[int] = set()

    @property
    def terminated(self) -> bool:
        return self.end_offset is not None

    def refuse(self) -> None:
        """``TopicTerminated`` when the topic is terminated."""
        if self.end_offset is not None:
            raise TopicTerminated(f"topic {self._topic} is terminated: it takes no more messages", topic=self._topic)

    def terminate(self, end_offset: int) -> bool:
        """Terminate at ``end_offset`` (persisted before it returns); False when it already was."""
        if self.end_offset is not None:
            return False
        atomic_write(self._path, json.dumps({"endOffset": end_offset}).encode())
        self.end_offset = end_offset
        log.info("event=topic_terminated topic=%s end_offset=%d", self._topic, end_offset)
        return True

    def watch(self, consumer: "Consumer", notify: Callable[[], None]) -> None:
        """``notify()`` sends ``consumer`` its ReachedEndOfTopic."""
        self._notify[consumer.consumer_id] = notify

    def forget(self, consumer: "Consumer") -> None:
        self._notify.pop(consumer.consumer_id, None)
        self._notified.discard(consumer.consumer_id)

    def rewound(self, sub: "Subscription") -> None:
        """``sub`` was moved back (seek): its consumers have to reach the end again."""
        for consumer in sub.consumers:
            self._notified.discard(consumer.consumer_id)

    def check(self, subscriptions: Iterable["Subscription"], confirmed_end_offset: int) -> None:
        """Tell the consumers of every subscription that has nothing left to deliver that they reached the
        end (once each)."""
        if self.end_offset is None or confirmed_end_offset < self.end_offset:
            return
        for sub in subscriptions:
            if not sub.consumers or not nothing_left_to_deliver(sub):
                continue
            for consumer in sub.consumers:
                notify = self._notify.get(consumer.consumer_id)
                if notify is not None and consumer.consumer_id not in self._notified:
                    self._notified.add(consumer.consumer_id)
                    notify()
