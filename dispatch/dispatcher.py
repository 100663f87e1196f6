"""The dispatcher interface a subscription type plugs into, and the entry preparation they share.

A :class:`Subscription` owns the cursor and the acknowledgment bookkeeping; its dispatcher decides which
consumer gets which entry, and when. A dispatcher implements five hooks:

- ``add_consumer(c)`` / ``remove_consumer(c)``: membership (raise ``ConsumerBusy`` to refuse);
- ``flow(c, permits)``: the consumer has room for more messages;
- ``dispatch()``: send what can be sent now (called on flow, new entries, acks, seeks);
- ``on_acked(c)``: the consumer acknowledged something (a Shared dispatcher unblocks it here);
- ``redeliver_unacknowledged(c)`` and ``on_seek(offset)``: rewind.
"""
from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar

from broker_core.errors import CorruptLog, DataLost
from broker_core.protocol.ack_set import to_words, unacked_bits
from broker_core.protocol.entry_limits import MAX_UNCOMPRESSED_SIZE, MIN_BATCH_FRAME

from dispatch.consumer import Consumer, Delivery
from dispatch.types import SubType

if TYPE_CHECKING:
    from broker_core.storage.stored_entry import StoredEntry
    from dispatch.subscription import Subscription

log = logging.getLogger(__name__)

MAX_ACK_SET_MESSAGES = MAX_UNCOMPRESSED_SIZE // MIN_BATCH_FRAME
"""No honest batch holds more messages; an entry stored before the broker checked counts may claim more,
and then gets no ack set (a bitset of its claimed size could take gigabytes)."""


def split_by_bytes(deliveries: list[Delivery], limit: int) -> list[list[Delivery]]:
    """``deliveries`` cut into consecutive groups of at most ``limit`` bytes of entries (a bigger entry
    goes alone): one group per message to the consumer."""
    groups: list[list[Delivery]] = []
    group: list[Delivery] = []
    size = 0
    for d in deliveries:
        n = len(d.entry.data)
        if group and size + n > limit:
            groups.append(group)
            group, size = [], 0
        group.append(d)
        size += n
    if group:
        groups.append(group)
    return groups


class Dispatcher(ABC):
    allows_cumulative_ack: ClassVar[bool] = True

    def __init__(self, subscription: "Subscription", sub_type: SubType) -> None:
        self.subscription = subscription
        self.sub_type = sub_type
        self.consumers: list[Consumer] = []
        self._dispatching = False
        self._again = False

    @abstractmethod
    def add_consumer(self, consumer: Consumer) -> None: ...

    @abstractmethod
    def remove_consumer(self, consumer: Consumer) -> None: ...

    def flow(self, consumer: Consumer, permits: int) -> None:
        consumer.permits += permits
        self.dispatch()

    def dispatch(self) -> None:
        """Send what can be sent now. A sink may call back into the subscription (flow, ack) while a
        round runs: the round finishes, then another one starts."""
        if self._dispatching:
            self._again = True
            return
        self._dispatching = True
        try:
            self._again = True
            while self._again:
                self._again = False
                try:
                    self._dispatch_rounds()
                except DataLost as lost:  # a damaged range: skipped (autoSkipNonRecoverableData), or the end
                    if not self.subscription.skip_damaged(lost):
                        raise
                    self._again = True
        except CorruptLog as exc:  # damaged storage: its readers fail, writers and other subscriptions go on
            self._read_failed(exc)
            return
        finally:
            self._dispatching = False
        self._after_dispatch()

    def _read_failed(self, error: CorruptLog) -> None:
        """Every consumer of the subscription gets ``error`` (once): dispatch cannot get past the damaged range
        until the cursor is moved (reset-cursor, skip, a seek) or the segment is restored. What a consumer's
        session does with it is its front end's business (see ``Consumer.fail``)."""
        consumers = [c for c in self.consumers if c.failed is None]
        if consumers:
            log.error("event=subscription_read_failed topic=%s subscription=%s consumers=%d error=%r",
                      self.subscription.topic, self.subscription.name, len(consumers), error.message)
        for consumer in consumers:
            consumer.fail(error)

    def skip_range(self, start: int, end: int) -> None:
        """Dispatch goes on at ``end``: the messages ``[start, end)`` are passed over (a damaged range that
        ``autoSkipNonRecoverableData`` skips)."""
        self.read_offset = max(self.read_offset, end)  # type: ignore[attr-defined]

    @abstractmethod
    def _dispatch_rounds(self) -> None:
        """Read and send until nothing more can go now."""

    def read_budget(self) -> tuple[int, int] | None:
        """``(entries, bytes)`` the next read may take: the subscription's read limits, or less under a dispatch
        rate limit (:mod:`dispatch.throttle`); None while a rate's budget is spent (dispatch resumes when it
        renews)."""
        sub = self.subscription
        throttle = sub.throttle
        if throttle is None:
            return sub.max_read_entries, sub.max_delivery_bytes
        return throttle.read_budget(sub.max_read_entries, sub.max_delivery_bytes, self._rate_renewed)

    def _rate_renewed(self) -> None:
        if not self.subscription.closed:
            self.dispatch()

    def _after_dispatch(self) -> None:
        """Hook: runs once a dispatch is over (e.g. arm a timer)."""

    def limits_changed(self) -> None:
        """The subscription's unacked limits or delayed-delivery settings changed: dispatch under them."""
        self.dispatch()

    def on_acked(self, consumer: Consumer) -> None:
        """Hook: ``consumer`` acknowledged messages."""

    @abstractmethod
    def redeliver_unacknowledged(self, consumer: Consumer) -> None: ...

    def redeliver(self, consumer: Consumer, ranges: list[tuple[int, int]]) -> None:
        """Send again the messages in ``ranges`` that ``consumer`` holds (negative acks). Ordered types
        cannot redeliver single messages without breaking order: they rewind everything, as Pulsar does."""
        self.redeliver_unacknowledged(consumer)

    def entries_done(self, consumer: Consumer, starts: list[int]) -> None:
        """Hook: the entries at ``starts`` left ``consumer``'s pending list, fully acknowledged."""

    def stats(self) -> dict[str, object]:
        """Extra subscription stats of this type."""
        return {}

    def consumer_stats(self, consumer: Consumer) -> dict[str, object]:
        """Extra per-consumer stats of this type."""
        return {}

    @abstractmethod
    def on_seek(self, offset: int) -> None:
        """The cursor was reset so that ``offset`` is the next message; pending lists are already empty."""

    def active_consumer(self) -> Consumer | None:
        return None

    def close(self) -> None:
        self.consumers.clear()

    # -- shared by the implementations -------------------------------------------------------------

    def prepare(self, entry: "StoredEntry") -> Delivery | None:
        """The delivery for ``entry``: None when the cursor holds it fully acknowledged, an ack set when
        partly. One cursor lookup per entry; no per-message work."""
        sub = self.subscription
        cursor = sub.cursor
        start = entry.offset
        end = entry.end_offset
        md = cursor.mark_delete_offset
        if end - 1 <= md:
            return None
        acked = cursor.acked_within(start, end)
        count = sub.redelivery_counts.get(start, 0) if sub.redelivery_counts else 0
        if start > md and not acked:
            return Delivery(entry, count, None, entry.num_messages)
        if not sub.batch_index_ack or entry.num_messages > MAX_ACK_SET_MESSAGES:  # the batch goes out whole
            return Delivery(entry, count, None, entry.num_messages) if cursor.next_unacked(start) < end else None
        bits = unacked_bits(start, end, md, acked)
        if not bits:
            return None
        unacked = bits.bit_count()
        if unacked == entry.num_messages:
            return Delivery(entry, count, None, unacked)
        return Delivery(entry, count, to_words(bits, entry.num_messages), unacked)

    def send(self, consumer: Consumer, deliveries: list[Delivery]) -> None:
        """Record ``deliveries`` as pending on ``consumer`` and hand them to its sink (one call)."""
        sub = self.subscription
        messages = 0
        nbytes = 0
        redelivered = 0
        highest = consumer.highest_delivered_end
        pending = consumer.pending
        for d in deliveries:
            entry = d.entry
            end = entry.end_offset
            messages += d.messages
            nbytes += len(entry.data)
            if d.redelivery_count:
                redelivered += d.messages
            pending.add(entry.offset, end, d.messages)
            if end > highest:
                highest = end
        consumer.highest_delivered_end = highest
        consumer.msg_out_counter += messages
        consumer.bytes_out_counter += nbytes
        sub.msg_out_counter += messages
        sub.bytes_out_counter += nbytes
        if redelivered:
            consumer.msg_redeliver_counter += redelivered
            sub.msg_redeliver_counter += redelivered
        consumer.last_consumed_ms = sub.last_consumed_ms = sub.clock.now_ms()  # one clock read per send
        if sub.throttle is not None:
            sub.throttle.charge(messages, nbytes, len(deliveries))
        consumer.sink(deliveries)

    def drop_pending(self, consumer: Consumer) -> None:
        """Forget what ``consumer`` holds unacknowledged; each such entry counts one more redelivery."""
        counts = self.subscription.redelivery_counts
        for start in consumer.pending.clear():
            counts[start] = counts.get(start, 0) + 1
