"""A topic's subscriptions handled without a consumer, once for every front end: the REST routes
(``/subscription/{sub}/...``), the gRPC calls (``CreateSubscription``, ``ResetCursor``, ...) and so
``pulsarlike admin topics create-subscription|unsubscribe|reset-cursor|skip|clear-backlog|expire-messages|
peek-messages`` over either. Cursor work on one partition is :mod:`broker_core.core.persistent.cursor_admin`'s.

On a partitioned topic the calls fan out over its partitions, with Pulsar's answers:

=====================  =========================================================================================
create                 on every partition, at earliest or latest (a message id names a message of one
                       partition: ``NotAllowedError``, 412); ``SubscriptionAlreadyExists`` (409) when any
                       partition has it, nothing created
delete                 from every partition that has it; ``SubscriptionNotFound`` (404) when none has,
                       ``NotAllowedError`` (412) while consumers are connected to it on any (unless ``force``),
                       nothing deleted
reset to a time        on every partition (each must have it: else ``SubscriptionNotFound``, nothing moved)
skip all, expire by    on every partition
time
reset to a message     one partition (``NotAllowedError`` on a partitioned topic, as Pulsar): a message id
id, skip, expire       belongs to one partition, a count to one backlog
through a message id,
peek
=====================  =========================================================================================

Every call answers an :class:`Outcome`: messages acknowledged, and the first unacknowledged offset of the one
partition acted on (-1 when it acted on several).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker_core.core.admin import targets
from broker_core.core.admin.positions import Position
from broker_core.core.admin.values import string_map
from broker_core.core.namespaces import check_namespace_name
from broker_core.core.persistent import cursor_admin
from broker_core.core.persistent.cursor_admin import Peeked
from broker_core.core.retention_rules import expiry_offset
from broker_core.core.topic_protocol import StoredTopic, stored
from broker_core.errors import (InvalidMessage, MessageNotFound, NotAllowedError, SubscriptionAlreadyExists,
                                SubscriptionNotFound)
from broker_core.types import PERSISTENT, TopicName

if TYPE_CHECKING:
    from broker_core.core.registry import TopicRegistry

log = logging.getLogger(__name__)

PEEK_MAX = cursor_admin.PEEK_MAX


@dataclass(frozen=True)
class Outcome:
    """What a call did: messages it acknowledged, and where the subscription now starts (its first
    unacknowledged offset; -1 when the call acted on several partitions or subscriptions)."""

    acknowledged: int = 0
    next_offset: int = -1


class SubscriptionAdmin:
    """Subscriptions of the topics of ``registry``."""

    def __init__(self, registry: "TopicRegistry") -> None:
        self._registry = registry

    def _stored(self, name: TopicName, verb: str) -> list[StoredTopic]:
        return targets.stored_topics(self._registry, name, verb)

    @staticmethod
    def _outcome(topics: list[StoredTopic], sub: str, acknowledged: int = 0) -> Outcome:
        if len(topics) != 1:
            return Outcome(acknowledged)
        return Outcome(acknowledged, topics[0].durable_subscription(sub).first_unacked_offset())

    # ------------------------------------------------------------------ list, create, delete
    def names(self, name: TopicName) -> list[str]:
        """Subscription names of a topic (of every partition of a partitioned topic), as pulsar-admin
        ``topics subscriptions`` lists them: durable ones and readers' alike."""
        n = self._registry.partitions_of(name)
        found: set[str] = set()
        for target in targets.partitions(self._registry, name):
            if not n or self._registry.exists(target):
                topic = self._registry.get(target, create=False)
                found.update(topic.subscriptions)
                found.update(topic.readers)
        return sorted(found)

    def create(self, name: TopicName, sub: str, start: Position = Position.latest(),
               properties: dict[str, str] | None = None) -> Outcome:
        """A durable subscription at ``start`` (Pulsar's default: latest) on the topic or on each partition, with
        ``properties``."""
        checked = string_map(properties, "properties") if properties is not None else {}
        topics = self._stored(name, "create-subscription")
        if start.is_message and len(topics) > 1:
            raise NotAllowedError(f"{name} is partitioned: a message id names a message of one partition; create"
                                  " the subscription at earliest or latest, or on the partition",
                                  topic=str(name), subscription=sub)
        having = [t.topic for t in topics if sub in t.subscriptions]
        if having:
            raise SubscriptionAlreadyExists(f"subscription {sub[:64]!r} already exists on {having[0]}",
                                            topic=str(name), subscription=sub[:64])
        for topic in topics:
            topic.create_subscription(sub, start.next_offset(topic))
            if checked:
                topic.durable_subscription(sub).replace_properties(checked)
                topic.flush_cursors()
        return self._outcome(topics, sub)

    def delete(self, name: TopicName, sub: str, *, force: bool = False) -> list[str]:
        """Delete ``sub`` from the topic, or from each partition that has it; the topic partitions it left."""
        topics = targets.topics(self._registry, name)
        having = [t for t in topics if sub in t.subscriptions]
        if not having:
            raise SubscriptionNotFound(f"subscription {sub[:64]!r} does not exist on {name}", topic=str(name),
                                       subscription=sub[:64])
        busy = [t.topic for t in having if t.subscriptions[sub].consumers]
        if busy and not force:
            raise NotAllowedError(f"subscription {sub[:64]!r} has connected consumers on {', '.join(busy[:5])}"
                                  f"{', ...' if len(busy) > 5 else ''}: close them first, or delete with force",
                                  topic=str(name), subscription=sub[:64])
        for topic in having:
            topic.unsubscribe(sub, force=force)
        return [t.topic for t in having]

    # ------------------------------------------------------------------ properties
    def _having(self, name: TopicName, sub: str) -> list:
        """``sub`` of the topic or of each partition that has it (a durable one, or a non-persistent topic's);
        ``SubscriptionNotFound`` when none has it."""
        found = [topic.subscriptions[sub] for topic in targets.topics(self._registry, name)
                 if sub in topic.subscriptions]
        if not found:
            raise SubscriptionNotFound(f"subscription {sub[:64]!r} does not exist on {name}", topic=str(name),
                                       subscription=sub[:64])
        return found

    def properties(self, name: TopicName, sub: str) -> dict[str, str]:
        """The subscription's properties (of a partitioned topic, its partitions' together, as Pulsar merges
        them)."""
        merged: dict[str, str] = {}
        for found in self._having(name, sub):
            merged.update(found.properties)
        return merged

    def replace_properties(self, name: TopicName, sub: str, properties: dict[str, str]) -> None:
        """Replace every property of ``sub`` (on each partition that has it), saved with its cursor at once."""
        checked = string_map(properties, "properties")
        self._having(name, sub)
        for topic in targets.topics(self._registry, name):
            found = topic.subscriptions.get(sub)
            if found is not None:
                found.replace_properties(checked)
                if topic.persistent:
                    stored(topic, "subscription properties").flush_cursors()
        log.info("event=subscription_properties_replaced topic=%s subscription=%s properties=%d", name, sub[:64],
                 len(checked))

    # ------------------------------------------------------------------ moving the cursor
    def reset_to_time(self, name: TopicName, sub: str, publish_time_ms: int) -> Outcome:
        """Deliver next the first message published at or after ``publish_time_ms`` (each partition's)."""
        topics = self._stored(name, "reset-cursor")
        subs = [topic.durable_subscription(sub) for topic in topics]
        for topic, found in zip(topics, subs):
            found.seek(topic.offset_for_timestamp(publish_time_ms))
            topic.touch_subscription(sub)
        return self._outcome(topics, sub)

    def reset(self, name: TopicName, sub: str, where: Position) -> Outcome:
        """Deliver next the message ``where`` names (earliest, latest, a message: one partition)."""
        topic = targets.stored_topic(self._registry, name, "reset-cursor")
        topic.durable_subscription(sub).seek(where.next_offset(topic))
        topic.touch_subscription(sub)
        return self._outcome([topic], sub)

    def skip(self, name: TopicName, sub: str, count: int) -> Outcome:
        """Acknowledge the next ``count`` unacknowledged messages (one partition)."""
        acked, next_offset = cursor_admin.skip(targets.stored_topic(self._registry, name, "skip"), sub, count)
        return Outcome(acked, next_offset)

    def clear_backlog(self, name: TopicName, sub: str) -> Outcome:
        """Acknowledge everything stored (``skip_all``), on each partition."""
        topics = self._stored(name, "clear-backlog")
        for topic in topics:
            topic.durable_subscription(sub)  # every partition has it before any moves
        acked = sum(cursor_admin.clear_backlog(topic, sub)[0] for topic in topics)
        return self._outcome(topics, sub, acked)

    def acknowledge_up_to(self, name: TopicName, sub: str, end_offset: int) -> Outcome:
        """Acknowledge every message below ``end_offset`` (one partition; the subscription is created there
        when missing, and never moves back): what the Spark source commits."""
        topic = targets.stored_topic(self._registry, name, "acknowledge-up-to")
        return Outcome(0, topic.acknowledge_up_to(sub, end_offset))

    # ------------------------------------------------------------------ expiring
    def expire_by_time(self, name: TopicName, sub: str, seconds: int) -> Outcome:
        """Acknowledge what was published over ``seconds`` ago on ``sub`` (each partition's)."""
        topics = self._stored(name, "expire-messages")
        subs = [[topic.durable_subscription(sub)] for topic in topics]
        first = [topic.offset_for_timestamp(self._registry.clock.now_ms() - seconds * 1000) for topic in topics]
        acked = sum(self._expire(topic, found, through) for topic, found, through in zip(topics, subs, first))
        return self._outcome(topics, sub, acked)

    def expire_all_by_time(self, name: TopicName, seconds: int) -> Outcome:
        """:meth:`expire_by_time` on every durable subscription of the topic (each partition's)."""
        topics = self._stored(name, "expire-messages")
        now = self._registry.clock.now_ms()
        return Outcome(sum(self._expire(topic, list(topic.subscriptions.values()),
                                        topic.offset_for_timestamp(now - seconds * 1000)) for topic in topics))

    def expire_through(self, name: TopicName, sub: str, where: Position, *, all_subscriptions: bool = False,
                       ) -> Outcome:
        """Acknowledge every message up to and including ``where`` (excluding it when ``isExcluded``; one
        partition) on ``sub``, or on every durable subscription."""
        topic = targets.stored_topic(self._registry, name, "expire-messages")
        if all_subscriptions:
            return Outcome(self._expire(topic, list(topic.subscriptions.values()), where.first_kept(topic)))
        found = topic.durable_subscription(sub)
        return self._outcome([topic], sub, self._expire(topic, [found], where.first_kept(topic)))

    @staticmethod
    def _expire(topic: StoredTopic, subs: list, first_unexpired: int) -> int:
        confirmed, total = topic.confirmed_end_offset, 0
        for found in subs:
            through = expiry_offset(first_unexpired, confirmed, found.cursor.mark_delete_offset)
            if through is None:
                continue
            n = found.expire_through(through)
            topic.msg_expired[found.name] = topic.msg_expired.get(found.name, 0) + n
            total += n
            log.info("event=messages_expired_by_admin topic=%s subscription=%s through=%d messages=%d", topic.topic,
                     found.name, through, n)
        return total

    # ------------------------------------------------------------------ reading without moving
    def peek(self, name: TopicName, sub: str, count: int) -> list[Peeked]:
        """The entries holding the next ``count`` unacknowledged messages (one partition); nothing moves."""
        return cursor_admin.peek(targets.stored_topic(self._registry, name, "peek-messages"), sub, count)

    def peek_entry(self, name: TopicName, sub: str, n: int) -> Peeked:
        """The ``n``-th entry (1: the first) holding messages ``sub`` has not acknowledged, as REST's
        ``position/{n}`` answers; ``MessageNotFound`` past the last."""
        if n < 1:
            raise InvalidMessage(f"position: expected an integer >= 1, got {n}", position=n)
        topic = targets.stored_topic(self._registry, name, "peek-messages")
        count = n  # messages; at least n of them fill n entries
        while True:
            found = cursor_admin.peek(topic, sub, count)
            if len(found) >= n:
                return found[n - 1]
            if sum(p.unacked for p in found) < count or count == PEEK_MAX:
                raise MessageNotFound(f"Message not found: subscription {sub[:64]!r} has {len(found)} unacknowledged"
                                      f" entries, not {n}", topic=str(name), subscription=sub[:64])
            count = min(count * 4, PEEK_MAX)

    # ------------------------------------------------------------------ every topic of a namespace
    def _namespace_topics(self, namespace: str) -> list[StoredTopic]:
        check_namespace_name(namespace)
        self._registry.namespaces.check_exists(namespace)
        names = [TopicName.parse(n) for n in self._registry.list(namespace)]
        loaded = [self._registry.get(n, create=False) for n in names if n.domain == PERSISTENT]
        return [stored(t, "clear-backlog") for t in loaded if t.persistent]

    def clear_namespace_backlog(self, namespace: str, sub: str = "") -> Outcome:
        """Acknowledge everything on every durable subscription (or ``sub``) of every persistent topic of
        the namespace (``namespaces clear-backlog``)."""
        total = 0
        for topic in self._namespace_topics(namespace):
            for found in ([sub] if sub else list(topic.subscriptions)):
                if found in topic.subscriptions:
                    total += cursor_admin.clear_backlog(topic, found)[0]
        log.info("event=namespace_backlog_cleared namespace=%s subscription=%s messages=%d", namespace,
                 sub or "*", total)
        return Outcome(total)

    def unsubscribe_namespace(self, namespace: str, sub: str) -> list[str]:
        """Delete ``sub`` from every topic of the namespace that has it (``namespaces unsubscribe``); refused,
        deleting nothing, while any has a connected consumer. The topic partitions it was deleted from."""
        if not sub:
            raise NotAllowedError("namespaces unsubscribe needs a subscription name (-s)")
        having = [t for t in self._namespace_topics(namespace) if sub in t.subscriptions]
        busy = [t.topic for t in having if t.subscriptions[sub].consumers]
        if busy:
            raise NotAllowedError(f"subscription {sub!r} has connected consumers on {', '.join(busy[:5])}"
                                  f"{', ...' if len(busy) > 5 else ''}: close them first", subscription=sub)
        if not having:
            raise SubscriptionNotFound(f"no topic of {namespace} has subscription {sub!r}", subscription=sub)
        for topic in having:
            topic.unsubscribe(sub)
        log.info("event=namespace_unsubscribed namespace=%s subscription=%s topics=%d", namespace, sub, len(having))
        return [t.topic for t in having]
