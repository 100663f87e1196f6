"""What ``pulsar-admin topics`` does to a durable subscription without a consumer -- ``skip``,
``clear-backlog``, ``peek-messages`` -- on one topic partition (the admin core,
:mod:`broker_core.core.admin.subscriptions`, finds the partitions and answers the front ends).

Positions are message offsets (see :mod:`broker_core.storage.log`), so the unit is the message where
Pulsar's cursor counts entries: ``skip -n 3`` acknowledges the next three unacknowledged messages, whether
they are three entries or one batch of three (Pulsar would skip three entries).

Worked example (a cursor with ``mark_delete_offset = 4`` and ``[6, 8)`` individually acknowledged, the log
ending at 12)::

    offset:   3 4 | 5 6 7 8 9 10 11
    acked:    x x |   x x
    backlog:        5     8 9 10 11      (5 messages)

``skip(n=2)`` acknowledges 5 and 8 (everything through 8: the mark-delete offset moves to 8);
``peek(n=2)`` returns the entries holding 5 and 8 and moves nothing; ``clear_backlog`` acknowledges
everything through 11.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker_core.errors import NotAllowedError, SubscriptionNotFound
from broker_core.protocol.ack_set import to_words, unacked_bits

if TYPE_CHECKING:
    from broker_core.core.topic_protocol import StoredTopic
    from broker_core.storage.stored_entry import StoredEntry
    from dispatch.subscription import Subscription

PEEK_MAX = 1000
"""Most messages one peek returns (Pulsar's peek also walks entries one by one: keep it small)."""


@dataclass(frozen=True)
class Peeked:
    """A stored entry holding messages to peek; ``ack_set`` (Pulsar's words) when some are acknowledged."""

    entry: "StoredEntry"
    ack_set: list[int] | None
    unacked: int


def subscription_of(topic: StoredTopic, name: str) -> Subscription:
    """The durable subscription ``name``, else a reader's (non-durable) one of that name."""
    sub = topic.subscriptions.get(name) or topic.readers.get(name)
    if sub is None:
        raise SubscriptionNotFound(f"subscription {name!r} does not exist on {topic.topic}",
                                   subscription=name, topic=topic.topic)
    return sub


def skip(topic: StoredTopic, name: str, count: int) -> tuple[int, int]:
    """Acknowledge the next ``count`` unacknowledged messages of durable subscription ``name`` (fewer when
    the backlog is shorter); returns (messages acknowledged, offset of the first unacknowledged one)."""
    if count < 0:
        raise NotAllowedError(f"cannot skip {count} messages: the count must be >= 0", count=count)
    sub = topic.durable_subscription(name)
    end = topic.confirmed_end_offset
    last = _last_of_next(sub, count, end)
    acked = sub.expire_through(last) if last >= 0 else 0
    return acked, sub.first_unacked_offset()


def _last_of_next(sub: Subscription, count: int, end: int) -> int:
    """The offset of the ``count``-th unacknowledged message from the cursor on (the last one before
    ``end`` when there are fewer); -1 when there is none to skip."""
    cursor = sub.cursor
    position = sub.first_unacked_offset()
    last = -1
    for start, stop in [*cursor.individually_acked, (end, end)]:
        if stop <= position:
            continue
        gap_end = min(start, end)
        if position < gap_end and count > 0:
            take = min(count, gap_end - position)
            last = position + take - 1
            count -= take
        position = max(position, stop)
        if count == 0 or position >= end:
            break
    return last


def clear_backlog(topic: StoredTopic, name: str) -> tuple[int, int]:
    """Acknowledge every stored message on durable subscription ``name`` (``skipAllMessages``)."""
    sub = topic.durable_subscription(name)
    end = topic.confirmed_end_offset
    acked = sub.expire_through(end - 1) if end > 0 else 0
    return acked, sub.first_unacked_offset()


def peek(topic: StoredTopic, name: str, count: int) -> list[Peeked]:
    """The entries holding the next ``count`` unacknowledged messages of subscription ``name``, from its
    first unacknowledged message on; nothing moves."""
    if not 0 < count <= PEEK_MAX:
        raise NotAllowedError(f"cannot peek {count} messages: the count must be between 1 and {PEEK_MAX}",
                              count=count)
    sub = subscription_of(topic, name)
    cursor = sub.cursor
    end = topic.confirmed_end_offset
    position = sub.first_unacked_offset()
    found: list[Peeked] = []
    taken = 0
    while taken < count and position < end:
        entries = topic.read(position, max_entries=min(100, count - taken + 1), end_offset=end)
        if not entries:
            break
        for entry in entries:
            bits = unacked_bits(entry.offset, entry.end_offset, cursor.mark_delete_offset,
                                cursor.acked_within(entry.offset, entry.end_offset))
            unacked = bin(bits).count("1")
            if not unacked:
                continue
            whole = unacked == entry.num_messages
            found.append(Peeked(entry, None if whole else to_words(bits, entry.num_messages), unacked))
            taken += unacked
            if taken >= count:
                break
        position = max(position + 1, entries[-1].end_offset)
    return found
