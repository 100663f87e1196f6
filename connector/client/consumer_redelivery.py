"""The redelivery half of :class:`~connector.client.consumer.Consumer` (a mixin: it shares the consumer's
state): negative acks, the ack timeout, dropping buffered messages of redelivered entries, dead letters and
``reconsume_later``.

Redelivery (seed: "Negative acknowledgment", "Acknowledgment timeout"). ``negative_acknowledge`` puts the
message's entry in a :class:`~connector.client.redelivery.NegativeAcksTracker`; an ack timeout puts every
message handed out in an :class:`~connector.client.redelivery.UnAckedMessageTracker`. The client timer looks
at them every tick and asks the broker, in one request per partition, for the entries that are due: Shared
and Key_Shared redeliver exactly those entries; Exclusive and Failover rewind to the first unacknowledged
message (as Pulsar's client does). Messages of those entries still buffered are dropped -- not by rewriting
the queue under ``receive()``, but by marking their entry (:class:`~connector.client.message.Discarded`): a
marked message is skipped when taken. With no ack timeout, ``receive()`` does no tracking at all (a tracking
``receive`` is installed on the instance only when one is set). Entries due for redelivery that reached
``max_redeliver_count`` go to the dead letter topic instead (:mod:`connector.client.dead_letter`).
"""
from __future__ import annotations

import datetime
import logging
from typing import Any, Callable, Iterable

from broker_core import errors
from broker_core.types import MessageId

from connector.client.enums import ConsumerType
from connector.client.message import DecodeFailure, Discarded, Message
from connector.client.partition_consumer import PartitionConsumer

log = logging.getLogger(__name__)

SHARED_TYPES = (ConsumerType.Shared, ConsumerType.KeyShared)


class RedeliveryMixin:
    """Needs the consumer's ``_client``, ``_subs``, ``_queue``, ``_closed``, ``_subscription``,
    ``_consumer_type``, ``_track_lock``, ``_nacks``, ``_nack_timer_armed``, ``_unacked``, ``_dead_letters``,
    ``_nack_delay_s``, ``_nack_scheduled`` and ``_open_sub``."""

    _client: Any
    _subs: list[PartitionConsumer]
    _queue: Any
    _closed: bool
    _subscription: str
    _consumer_type: ConsumerType
    _track_lock: Any
    _nacks: Any
    _nack_timer_armed: bool
    _unacked: Any
    _dead_letters: Any
    _nack_delay_s: float
    _nack_scheduled: set[int]
    _open_sub: Callable[..., tuple[PartitionConsumer, int, int, int]]

    def negative_acknowledge(self, message: Message | MessageId) -> None:
        """Have the message redelivered after ``negative_ack_redelivery_delay_ms`` (or the backoff's delay
        for its redelivery count). Shared and Key_Shared redeliver its entry (a batch comes whole); Exclusive
        and Failover rewind to the first unacknowledged message, as in Pulsar."""
        sub, entry_id, index, _ = self._open_sub(message)
        count = message.redelivery_count() if isinstance(message, Message) else 0
        with self._track_lock:
            self._nacks.add((sub, entry_id), count)
            if self._unacked is not None:
                self._unacked.remove((sub, entry_id, entry_id + max(index, 0)))
            arm = not self._nack_timer_armed
            self._nack_timer_armed = True
        if arm:
            self._client._timer.call_later(self._nacks.tick_ms / 1000.0, self._nack_tick)

    def _nack_tick(self) -> None:
        with self._track_lock:
            due = self._nacks.pop_due()
            more = self._nack_timer_armed = len(self._nacks) > 0 and not self._closed
        if more:
            self._client._timer.call_later(self._nacks.tick_ms / 1000.0, self._nack_tick)
        if due and not self._closed:
            self._redeliver_entries(due)  # type: ignore[arg-type]

    def _ack_timeout_tick(self) -> None:
        if self._closed:
            return
        tracker = self._unacked
        assert tracker is not None
        with self._track_lock:
            expired = tracker.tick()
        self._client._timer.call_later(tracker.tick_ms / 1000.0, self._ack_timeout_tick)
        if expired:
            log.info("subscription %s: %d message(s) not acknowledged within the ack timeout are redelivered",
                     self._subscription, len(expired))
            self._redeliver_entries(dict.fromkeys((sub, entry_id) for sub, entry_id, _ in expired))  # type: ignore

    def _redeliver_entries(self, keys: Iterable[tuple[PartitionConsumer, int]]) -> None:
        """Ask again for these ``(partition consumer, entry id)``: dead letters first, then per partition
        the entries (Shared types) or a rewind (ordered types)."""
        if self._closed:
            return
        keys = list(keys)
        if self._dead_letters is not None:
            keys = self._dead_letters.take(keys)
        by_sub: dict[PartitionConsumer, list[int]] = {}
        for sub, entry_id in keys:
            by_sub.setdefault(sub, []).append(entry_id)
        for sub, entry_ids in by_sub.items():
            if sub.closed:
                continue
            if self._consumer_type in SHARED_TYPES:
                self._discard_queued(sub, set(entry_ids))
                sub.redeliver(entry_ids)
            else:
                self._rewind(sub)

    def _rewind(self, sub: PartitionConsumer) -> None:
        """Everything ``sub`` holds unacknowledged comes again: drop its buffered messages and tracking."""
        self._discard_queued(sub, None)
        self._forget_tracked(lambda key: key[0] is sub)
        sub.redeliver()

    def _forget_tracked(self, doomed: Callable[[Any], bool]) -> None:
        with self._track_lock:
            self._nacks.remove_if(doomed)
            if self._unacked is not None:
                self._unacked.remove_if(doomed)
        if self._dead_letters is not None:
            self._dead_letters.forget(doomed)

    def _redeliver_later(self, sub: PartitionConsumer) -> None:
        """Have ``sub``'s unacknowledged messages redelivered after ``negative_ack_redelivery_delay_ms``
        (chunked messages given up for now)."""
        key = id(sub)
        if key not in self._nack_scheduled:
            self._nack_scheduled.add(key)
            self._client._timer.call_later(self._nack_delay_s, self._redeliver_after_nack, sub)

    def _redeliver_after_nack(self, sub: PartitionConsumer) -> None:
        self._nack_scheduled.discard(id(sub))
        if not self._closed and not sub.closed:
            self._rewind(sub)

    def redeliver_unacknowledged_messages(self) -> None:
        """Drop what is buffered and have the broker redeliver every unacknowledged message (Shared: to any
        consumer of the subscription)."""
        if self._closed:
            raise errors.AlreadyClosed(f"the consumer of {self._subscription!r} is closed")
        for sub in self._subs:
            self._rewind(sub)

    def _discard_queued(self, sub: PartitionConsumer, entry_ids: set[int] | None,
                        returns_permit: bool = True) -> None:
        """Mark ``sub``'s buffered messages (of these entries, or all) so that taking them skips them."""
        marker = Discarded(sub, returns_permit)
        while True:
            try:
                queued = list(self._queue)
                break
            except RuntimeError:  # mutated while copied: copy again
                continue
        for item in queued:
            if item.__class__ is DecodeFailure:
                if item.consumer is sub and (  # type: ignore[union-attr]
                        entry_ids is None or item.error.message_id.entry_id in entry_ids):  # type: ignore
                    item.discarded = marker  # type: ignore[union-attr]
                continue
            entry = item._entry
            if entry.sub is sub and (entry_ids is None or entry.entry_id in entry_ids):
                entry.sub = marker

    # --- retry letters --------------------------------------------------------------------------------
    def reconsume_later(self, message: Message, delay_ms: int | datetime.timedelta,
                        properties: dict[str, str] | None = None) -> None:
        """Store ``message`` on the retry letter topic, to be consumed again after ``delay_ms`` (with
        ``properties`` added), and acknowledge it; after ``max_redeliver_count`` reconsumes it goes to the
        dead letter topic instead. Needs ``retry_enable=True``."""
        dead = self._dead_letters
        if dead is None or not dead.retry_enable:
            raise errors.InvalidConfiguration("reconsume_later() needs a consumer subscribed with "
                                              "retry_enable=True")
        if isinstance(delay_ms, datetime.timedelta):
            delay_ms = int(delay_ms.total_seconds() * 1000)
        if isinstance(delay_ms, bool) or not isinstance(delay_ms, (int, float)) or delay_ms < 0:
            raise ValueError(f"delay_ms={delay_ms!r} is not valid; use a number of milliseconds >= 0")
        if not isinstance(message, Message):
            raise TypeError(f"reconsume_later() takes a received Message, not {type(message).__name__}")
        if properties is not None and not all(isinstance(k, str) and isinstance(v, str)
                                              for k, v in properties.items()):
            raise ValueError("properties must map str to str")
        self._open_sub(message)
        dead.reconsume_later(message, int(delay_ms), dict(properties) if properties else None)
