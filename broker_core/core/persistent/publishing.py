"""Publishing on a persistent topic partition: a produce request becomes stored entries (a helper the
:class:`~broker_core.core.persistent.topic.PersistentTopic` owns and delegates ``publish`` to).

The broker touches entries, never individual messages: it verifies the entry's CRC, reads its
``MessageMetadata`` (count, publish time, sequence ids), prefixes ``BrokerEntryMetadata`` (broker time and
the index of the entry's last message) and appends the bytes as they are; deduplication
(:mod:`~broker_core.core.persistent.dedup`) drops resent entries, and the sender hears back once the journal
confirmed the stored ones per ``journalSyncMode``.
"""
from __future__ import annotations

from typing import Callable, Sequence

from broker_core.clock import Clock
from broker_core.config import BrokerConfig
from broker_core.errors import NotAllowedError, PersistenceError, PulsarLikeError
from broker_core.log_limits import LogLimiter
from broker_core.protocol.codec import broker_entry_prefix
from broker_core.protocol.entry_limits import FRAME_PADDING
from broker_core.core.persistent.dedup import DeduplicationSwitch, SequenceKey
from broker_core.core.producers import ProducerInfo
from broker_core.core.termination import Termination
from broker_core.core.topic_policies import TopicPolicies, of_config
from broker_core.core.topic_rules import Accepted, checked_entry
from broker_core.core.write_fault import WriteFault
from broker_core.storage.format import HEADER_SIZE
from broker_core.storage.journal import Journal
from broker_core.storage.log import ManagedLog


class Publisher:
    """Appends checked entries to ``managed_log`` and counts what came in (``msg_in_counter``,
    ``bytes_in_counter``). ``on_segment_rolled`` runs when an append opened a new segment (the old one may
    be trimmable now); ``lines`` limits the dedup snapshot failure lines."""

    def __init__(self, topic: str, config: BrokerConfig, clock: Clock, managed_log: ManagedLog, journal: Journal,
                 termination: Termination, writes: WriteFault, dedup: DeduplicationSwitch, lines: LogLimiter, *,
                 is_closed: Callable[[], bool], on_segment_rolled: Callable[[], None]) -> None:
        self.topic = topic
        self._max_message_size = config.maxMessageSize
        self._max_entry = config.maxMessageSize + FRAME_PADDING
        self._clock = clock
        self._log = managed_log
        self._journal = journal
        self._termination = termination
        self._writes = writes
        self._dedup = dedup
        self._lines = lines
        self._is_closed = is_closed
        self._on_segment_rolled = on_segment_rolled
        self._active_ledger = managed_log.retention_view()[-1].base_offset
        self.msg_in_counter = 0
        self.bytes_in_counter = 0
        self.policies: TopicPolicies = of_config(config)
        """What each entry is checked against besides its form (encryption, schema: the topic sets it)."""

    def publish(self, producer: ProducerInfo, entries: Sequence,
                on_done: Callable[[list[Accepted], BaseException | None], None]) -> None:
        """Verify and append ``entries`` (``SendEntry`` messages); ``on_done(results, error)`` runs once
        the stored ones are confirmed per ``journalSyncMode``."""
        if self._is_closed():
            raise NotAllowedError(f"topic {self.topic} is closing")
        self._termination.refuse()
        now = self._clock.now_ms()
        dedup = self._dedup.current
        keys: list[SequenceKey] = []
        results: list[Accepted] = []
        to_append: list[tuple[bytes, int, int]] = []
        positions: list[int] = []
        next_offset = self._log.end_offset
        policies = self.policies if self.policies.checks_entries else None
        for send in entries:
            try:
                metadata, count = checked_entry(send, self._max_entry, self._max_message_size)
                if policies is not None:
                    policies.check_entry(self.topic, metadata, len(send.data))
            except PulsarLikeError as exc:
                results.append(Accepted(send.sequence_id, send.highest_sequence_id, error=exc))
                continue
            if dedup is not None:
                key = SequenceKey.of(metadata)
                if send.highest_sequence_id > key.highest_sequence_id and key.checked:
                    # a batch whose metadata lacks highest_sequence_id (the C++ client's): its request says it
                    key = key._replace(highest_sequence_id=send.highest_sequence_id)
                if dedup.is_duplicate(key):
                    results.append(Accepted(send.sequence_id, send.highest_sequence_id, duplicate=True))
                    continue
                keys.append(key)
            positions.append(len(results))
            results.append(Accepted(send.sequence_id, send.highest_sequence_id))
            to_append.append((broker_entry_prefix(now, next_offset + count - 1) + send.data, count,
                              metadata.publish_time))
            next_offset += count
        if not to_append:
            on_done(results, None)
            return
        size = sum(HEADER_SIZE + len(data) for data, _, _ in to_append)
        try:
            stored = self._log.append_many(to_append)
        except PersistenceError as exc:  # this request fails; the producer and the topic go on
            if dedup is not None:
                dedup.failed(keys)
            for pos in positions:
                results[pos] = Accepted(results[pos].sequence_id, results[pos].highest_sequence_id, error=exc)
            self._writes.failed(exc, size)
            on_done(results, None)
            return
        except BaseException:
            if dedup is not None:
                dedup.failed(keys)
            raise
        for pos, entry in zip(positions, stored):
            results[pos] = Accepted(results[pos].sequence_id, results[pos].highest_sequence_id, entry=entry)
            producer.msg_in_counter += entry.num_messages
            producer.bytes_in_counter += len(entry.data)
            self.msg_in_counter += entry.num_messages
            self.bytes_in_counter += len(entry.data)
        end = stored[-1].end_offset
        if stored[-1].ledger_id != self._active_ledger:  # a segment rolled: the old one may be trimmable
            self._active_ledger = stored[-1].ledger_id
            self._on_segment_rolled()
        writes = self._writes

        def confirmed(error: BaseException | None) -> None:
            if error is None:
                writes.succeeded()
            elif isinstance(error, PersistenceError):
                writes.failed(error, size)
            if dedup is not None and error is not None:
                dedup.failed(keys)
            elif dedup is not None and dedup.confirmed(keys, end):
                try:
                    dedup.snapshot(end)
                except OSError as exc:  # the log still holds everything: a restart replays it
                    self._lines.error("dedup_snapshot_failed", "event=dedup_snapshot_failed topic=%s error=%r",
                                      self.topic, exc)
            on_done(results, error)

        self._journal.appended(end, confirmed)
