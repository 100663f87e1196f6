"""Operations on a persistent topic partition besides producing and consuming (a mixin of
:class:`~broker_core.core.persistent.topic.PersistentTopic`, which provides its subscriptions, journal, producers and
cursor bookkeeping): durable subscriptions handled without a consumer (create, acknowledge up to, activity),
termination (:mod:`~broker_core.core.termination`) and closing every client's session (unload)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from broker_core.errors import NotAllowedError, PulsarLikeError, SubscriptionNotFound, TopicTerminated
from broker_core.core.access import AccessMode
from broker_core.core.producers import ProducerInfo

if TYPE_CHECKING:
    from dispatch.subscription import Subscription


class TopicOperations:
    topic: str
    subscriptions: dict[str, "Subscription"]
    producers: dict[int, ProducerInfo]
    journal: Any
    log: Any
    access: Any
    activity: Any
    termination: Any
    closed: bool
    _create_subscription: Callable[..., "Subscription"]
    _cursor_changed: Callable[[str], None]
    all_subscriptions: Callable[[], list["Subscription"]]

    # ------------------------------------------------------------------ subscriptions without consumers
    def durable_subscription(self, name: str) -> "Subscription":
        sub = self.subscriptions.get(name)
        if sub is None:
            raise SubscriptionNotFound(f"subscription {name!r} does not exist on {self.topic}")
        return sub

    def create_subscription(self, name: str, start_offset: int) -> None:
        """A durable subscription whose first message is ``start_offset`` (pulsar-admin
        create-subscription); ``SubscriptionAlreadyExists``-like ``NotAllowedError`` when it exists."""
        if name in self.subscriptions:
            raise NotAllowedError(f"subscription {name!r} already exists on {self.topic}")
        self._create_subscription(name, min(start_offset, self.journal.confirmed_end_offset), True)

    def acknowledge_up_to(self, name: str, end_offset: int) -> int:
        """Acknowledge every message below ``end_offset`` on durable subscription ``name`` (created there
        when missing); never moves the subscription back. Returns its new mark-delete offset + 1."""
        end_offset = min(end_offset, self.journal.confirmed_end_offset)
        sub = self.subscriptions.get(name)
        if sub is None:
            sub = self._create_subscription(name, end_offset, True)
        else:
            if end_offset - 1 > sub.cursor.mark_delete_offset:
                sub.expire_through(end_offset - 1)
            self.touch_subscription(name)  # even when nothing moved: a client keeping its subscription alive
        return sub.cursor.mark_delete_offset + 1

    def touch_subscription(self, name: str) -> None:
        """Record activity on durable subscription ``name`` (see :mod:`.subscription_expiry`)."""
        sub = self.subscriptions.get(name)
        if sub is not None and self.activity.touch(sub.cursor) and not self.closed:
            self._cursor_changed(name)

    # ------------------------------------------------------------------ termination
    def add_producer(self, producer_name: str, properties: dict[str, str],
                     access_mode: AccessMode = AccessMode.SHARED, **callbacks: Any) -> tuple[ProducerInfo, bool]:
        self.termination.refuse()
        return super().add_producer(producer_name, properties, access_mode, **callbacks)  # type: ignore[misc]

    def terminate(self) -> int:
        """Take no more messages, ever: connected producers are closed with ``TopicTerminated``, consumers
        told once they have everything. Returns the offset one past the last message (terminating again
        returns the same)."""
        if self.termination.terminated:
            return self.termination.end_offset
        end = self.log.end_offset  # what was accepted, confirmed or about to be
        self.termination.terminate(end)
        self.disconnect_clients(TopicTerminated(f"topic {self.topic} was terminated: it takes no more messages",
                                                topic=self.topic), consumers=False)
        self.check_end_of_topic()
        return end

    def check_end_of_topic(self) -> None:
        """Send ReachedEndOfTopic to the consumers that now have everything (terminated topics only)."""
        if self.termination.terminated:
            self.termination.check(self.all_subscriptions(), self.journal.confirmed_end_offset)

    # ------------------------------------------------------------------ clients
    def disconnect_clients(self, error: PulsarLikeError, *, consumers: bool = True) -> int:
        """End the session of every producer (waiting ones first, so none is admitted meanwhile) and, with
        ``consumers``, of every consumer, with ``error``; their sessions then leave the topic. Returns how
        many sessions were ended."""
        ended = len(self.access.waiting)
        self.access.drop_waiting(error)
        for producer in list(self.producers.values()):
            producer.disconnect(error)
            ended += 1
        if consumers:
            for sub in self.all_subscriptions():
                for consumer in sub.consumers:
                    consumer.fail(error)
                    ended += 1
        return ended
