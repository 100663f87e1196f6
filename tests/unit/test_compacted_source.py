"""Compacted reads (Pulsar's readCompacted) over an in-memory compacted ledger: the kept message per key below
the horizon (offsets with gaps), the raw log from the horizon on, a ledger swapped by a later compaction
while a reader is mid-way, and the start, seek and last-message positions of the compacted view."""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import pytest

from broker_core.core.compacted_view import CompactedView
from broker_core.core.consumer_session import LAST_MESSAGE, Start, check_read_compacted
from broker_core.errors import NotAllowedError
from broker_core.storage.stored_entry import StoredEntry
from dispatch import SubType, Subscription
from dispatch.compacted import CompactedSource
from dispatch.testing import MemoryEntrySource, RecordingConsumer, make_cursor

TOMBSTONE = None


@dataclass
class FakeLedger:
    """``compaction.CompactedLedger``'s interface over a list of kept single-message entries."""

    horizon: int
    entries: list[StoredEntry] = field(default_factory=list)

    def read(self, start_offset: int, max_entries: int, max_bytes: int) -> list[StoredEntry]:
        at = bisect.bisect_left([e.offset for e in self.entries], start_offset)
        out: list[StoredEntry] = []
        size = 0
        for entry in self.entries[at:at + max_entries]:
            if out and size + len(entry.data) > max_bytes:
                break
            out.append(entry)
            size += len(entry.data)
        return out

    def entry_at_or_after(self, offset: int) -> StoredEntry | None:
        got = self.read(offset, 1, 1 << 30)
        return got[0] if got else None

    @property
    def last_offset(self) -> int:
        return self.entries[-1].offset if self.entries else -1


class Partition:
    """A raw log of keyed single messages (publish time = offset * 10) and its compactions."""

    def __init__(self) -> None:
        self.raw = MemoryEntrySource()
        self.keys: list[str] = []
        self.values: list[bytes | None] = []
        self.compacted: FakeLedger | None = None

    def publish(self, *pairs: tuple[str, bytes | None]) -> None:
        for key, value in pairs:
            self.keys.append(key)
            self.values.append(value)
            self.raw.append(1, value or b"", publish_time=self.raw.end_offset * 10)

    def compact(self) -> FakeLedger:
        """Keep the latest message per key below the current end; a tombstone deletes its key."""
        horizon = self.raw.end_offset
        latest = {key: offset for offset, key in enumerate(self.keys[:horizon])}
        kept = sorted(o for o in latest.values() if self.values[o] is not TOMBSTONE)
        raw = {e.offset: e for e in self.raw.entries}
        self.compacted = FakeLedger(horizon, [raw[o] for o in kept])
        return self.compacted

    def trim_raw_before(self, offset: int) -> None:
        self.raw.start_offset = offset

    # a Topic as CompactedView reads it
    persistent = True
    topic = "persistent://public/default/t"
    partition_index = -1

    @property
    def start_offset(self) -> int:
        return self.raw.start_offset

    @property
    def confirmed_end_offset(self) -> int:
        return self.raw.durable_end_offset

    def offset_for_timestamp(self, publish_time_ms: int) -> int:
        for entry in self.raw.entries:
            if entry.offset >= self.raw.start_offset and entry.publish_time >= publish_time_ms:
                return entry.offset
        return self.raw.end_offset

    def entry_containing(self, offset: int) -> StoredEntry | None:
        if offset < self.raw.start_offset:
            return None
        return next((e for e in self.raw.entries if e.offset <= offset < e.end_offset), None)

    def last_message_id(self):
        from broker_core.types import MessageId
        end = self.confirmed_end_offset
        return MessageId.of(0, end - 1, -1, -1) if end > self.start_offset else None

    def source(self) -> CompactedSource:
        return CompactedSource(self.raw, lambda: self.compacted)

    def reader(self, start: int | None = None, permits: int = 1000, max_read_entries: int = 100):
        source = self.source()
        cursor = make_cursor()
        cursor.reset((source.start_offset if start is None else start) - 1)
        sub = Subscription("sub", self.topic, -1, source, cursor, max_read_entries=max_read_entries)
        consumer = RecordingConsumer(1, permits=permits)
        sub.add_consumer(consumer, SubType.EXCLUSIVE)
        return sub, consumer


def ticker() -> Partition:
    """k1=a k2=b k1=c k2=<tombstone> k3=d (compacted at 5: 2:k1=c 4:k3=d), then k1=e k2=f raw."""
    p = Partition()
    p.publish(("k1", b"a"), ("k2", b"b"), ("k1", b"c"), ("k2", TOMBSTONE), ("k3", b"d"))
    p.compact()
    p.publish(("k1", b"e"), ("k2", b"f"))
    return p


def test_reads_below_the_horizon_come_from_the_compacted_ledger_then_the_raw_log() -> None:
    p = ticker()
    source = p.source()
    assert [e.offset for e in source.read(0, 100, 1 << 20)] == [2, 4]
    assert [e.offset for e in source.read(3, 100, 1 << 20)] == [4]
    assert [e.offset for e in source.read(5, 100, 1 << 20)] == [5, 6]


def test_a_compacted_reader_gets_the_latest_value_per_key_then_the_raw_tail() -> None:
    _, consumer = ticker().reader()
    assert consumer.received() == [2, 4, 5, 6]


def test_reads_report_the_compacted_away_offsets_they_pass_over() -> None:
    p = ticker()
    skipped: list[tuple[int, int]] = []
    source = CompactedSource(p.raw, lambda: p.compacted, lambda start, end: skipped.append((start, end)))
    assert [e.offset for e in source.read(0, 1, 1 << 20)] == [2]
    assert skipped == [(0, 2)]
    assert [e.offset for e in source.read(3, 100, 1 << 20)] == [4]
    assert skipped == [(0, 2), (3, 4)]
    assert [e.offset for e in source.read(5, 100, 1 << 20)] == [5, 6]  # raw: nothing passed over
    p.publish(("k4", b"x"), ("k4", TOMBSTONE))  # 7, 8
    p.compact()
    skipped.clear()
    source.read(7, 100, 1 << 20)
    assert skipped == [(7, 9)]


def test_a_read_past_the_last_kept_message_goes_on_at_the_horizon() -> None:
    p = ticker()
    assert [e.offset for e in p.source().read(4 + 1, 100, 1 << 20)] == [5, 6]
    p.publish(("k9", b"x"), ("k9", TOMBSTONE))  # 7, 8
    p.compact()  # horizon 9: k9 deleted, nothing kept past 6
    assert [e.offset for e in p.source().read(7, 100, 1 << 20)] == []
    p.publish(("k4", b"y"))
    assert [e.offset for e in p.source().read(7, 100, 1 << 20)] == [9]


def test_reads_stop_at_the_durable_end() -> None:
    p = ticker()
    p.raw.append(1, b"pending", durable=False)
    assert [e.offset for e in p.source().read(5, 100, 1 << 20)] == [5, 6]
    assert [e.offset for e in p.source().read(0, 100, 1 << 20, end_offset=3)] == [2]


def test_without_a_compaction_a_compacted_reader_reads_the_raw_log() -> None:
    p = Partition()
    p.publish(("k1", b"a"), ("k1", b"b"))
    _, consumer = p.reader()
    assert consumer.received() == [0, 1]


def test_the_view_starts_at_the_first_kept_message_or_the_horizon() -> None:
    p = ticker()
    assert CompactedView(p).start_offset == 2
    assert p.source().start_offset == 0  # dispatch reads from the raw start: 0 and 1 are passed over
    p.publish(("k1", TOMBSTONE), ("k3", TOMBSTONE), ("k2", TOMBSTONE))
    p.compact()  # every key deleted
    assert CompactedView(p).start_offset == p.raw.end_offset == 10


def test_a_subscription_older_than_the_first_kept_message_passes_over_what_was_compacted_before_it() -> None:
    p = Partition()
    p.publish(*((f"k{i % 2}", b"v%d" % i) for i in range(10)))  # kept: 8 and 9
    p.compact()
    source = p.source()
    cursor = make_cursor()  # a subscription made before the compaction, at the start
    source.on_skipped = cursor.ack
    sub = Subscription("sub", p.topic, -1, source, cursor)
    consumer = RecordingConsumer(1, permits=10)
    sub.add_consumer(consumer, SubType.EXCLUSIVE)
    assert consumer.received() == [8, 9]
    assert cursor.mark_delete_offset == 7 and sub.backlog == 2


def test_kept_messages_older_than_the_raw_logs_start_stay_readable() -> None:
    p = ticker()
    p.trim_raw_before(5)  # retention removed the raw messages the compaction read
    _, consumer = p.reader()
    assert consumer.received() == [2, 4, 5, 6]
    assert CompactedView(p).start_offset == p.source().start_offset == 2


def test_a_ledger_swapped_mid_read_loses_no_live_key_and_repeats_nothing() -> None:
    p = Partition()
    p.publish(*((f"k{i % 5}", b"v%d" % i) for i in range(20)))  # k0..k4 latest at 15..19
    p.compact()
    p.publish(("k0", b"new0"), ("k1", TOMBSTONE), ("k5", b"five"), ("k2", b"new2"))  # 20..23
    sub, consumer = p.reader(permits=2)  # reads 15, 16 then stops
    assert consumer.take() == [15, 16]
    p.compact()  # horizon 24: k0@20, k2@22, k3@18, k4@19, k5@22.. swapped under the reader
    p.publish(("k3", b"tail"))  # 24, raw
    sub.flow(consumer, 100)
    assert consumer.take() == [18, 19, 20, 22, 23, 24]


def test_a_reader_in_the_raw_tail_continues_in_the_new_ledger_after_a_compaction() -> None:
    p = ticker()
    sub, consumer = p.reader(permits=3)
    assert consumer.take() == [2, 4, 5]
    p.publish(("k1", b"g"), ("k4", b"h"))  # 7, 8: k1's 5 and 7 ... k2@6 stays latest
    p.compact()  # horizon 9 keeps 4, 6, 7, 8
    sub.flow(consumer, 100)
    assert consumer.take() == [6, 7, 8]


def test_a_seek_below_the_horizon_resumes_at_the_next_kept_message() -> None:
    p = ticker()
    sub, consumer = p.reader()
    consumer.take()
    sub.seek(3)
    assert consumer.take() == [4, 5, 6]
    sub.seek(0)
    assert consumer.take() == [2, 4, 5, 6]


def test_the_last_message_of_a_view_whose_newest_raw_messages_are_compacted_away() -> None:
    p = Partition()
    p.publish(("k1", b"a"), ("k2", b"b"), ("k2", TOMBSTONE))
    p.compact()
    view = CompactedView(p)
    assert p.last_message_id().entry_id() == 2
    assert view.last_message_id().entry_id() == 0  # k2 is deleted: 0 (k1) is the last a reader gets
    assert LAST_MESSAGE.offset(view) == 0
    p.publish(("k3", b"c"))  # raw past the horizon: the raw last message is the view's too
    assert view.last_message_id().entry_id() == 3
    assert LAST_MESSAGE.offset(view) == 3


def test_a_view_with_every_key_deleted_has_no_last_message() -> None:
    p = Partition()
    p.publish(("k1", b"a"), ("k1", TOMBSTONE))
    p.compact()
    view = CompactedView(p)
    assert view.last_message_id() is None
    assert LAST_MESSAGE.offset(view) == p.confirmed_end_offset


def test_start_positions_of_the_compacted_view() -> None:
    p = ticker()
    view = CompactedView(p)
    assert Start("earliest").offset(view) == 2
    assert Start("latest").offset(view) == 7
    assert Start.published(25).offset(view) == 3  # raw 3 is published at 30: the next kept one is 4
    p.trim_raw_before(5)
    assert Start.published(15).offset(view) == 2  # before the raw start: the kept messages are searched
    assert Start.published(55).offset(view) == 6


def test_the_kept_entry_holding_an_offset_below_the_horizon() -> None:
    p = ticker()
    p.trim_raw_before(5)
    view = CompactedView(p)
    assert view.entry_containing(4).offset == 4
    assert view.entry_containing(3) is None
    assert view.entry_containing(6).offset == 6


@pytest.mark.parametrize("sub_type", [SubType.SHARED, SubType.KEY_SHARED])
def test_compacted_reads_are_refused_on_shared_subscription_types(sub_type: SubType) -> None:
    with pytest.raises(NotAllowedError, match="readCompacted only allowed on failover or exclusive"):
        check_read_compacted(Partition(), sub_type)


def test_compacted_reads_are_refused_on_non_persistent_topics() -> None:
    topic = Partition()
    topic.persistent = False  # type: ignore[misc]
    with pytest.raises(NotAllowedError, match="persistent topics"):
        check_read_compacted(topic, SubType.EXCLUSIVE)
    check_read_compacted(Partition(), SubType.FAILOVER)


class Events:
    def __init__(self) -> None:
        self.delivered: list[int] = []

    def subscribed(self) -> None: ...

    def deliver(self, deliveries) -> None:
        self.delivered.extend(d.entry.offset for d in deliveries)

    def active_changed(self, active: bool) -> None: ...

    def reached_end_of_topic(self) -> None: ...

    def error(self, exc: Exception) -> None:
        raise exc

    def ended(self) -> None: ...


class CompactedTopic(Partition):
    """A Partition as ConsumerSession uses a topic (the subscription reads compacted when asked)."""

    def __init__(self, tmp_path) -> None:
        from broker_core.clock import FakeClock
        from broker_core.core.termination import Termination
        from broker_core.core.throttling import TopicThrottling
        super().__init__()
        self.termination = Termination(tmp_path, self.topic)
        self.throttling = TopicThrottling(FakeClock(), scheduler=None)  # no rate limits set
        self.subs: dict[str, Subscription] = {}
        self.subscriptions = self.subs  # what ConsumerSession reads to learn whether a subscribe creates one
        self.readers: dict[str, Subscription] = {}

    def subscribe(self, name, sub_type, consumer, *, durable, start_offset, read_compacted=False):
        source = self.source() if read_compacted else self.raw
        sub = self.subs.get(name)
        if sub is None:
            cursor = make_cursor(name)
            cursor.reset(max(start_offset, source.start_offset) - 1)
            sub = self.subs[name] = Subscription(name, self.topic, -1, source, cursor, delayed_delivery=None)
            if read_compacted:  # as core.persistent.subscriptions wires it
                source.on_skipped = cursor.ack
        sub.add_consumer(consumer, sub_type)
        return sub

    def consumer_left(self, sub, consumer, *, keep_reader=False) -> None:
        sub.remove_consumer(consumer)


def compacted_session(tmp_path, start: Start = Start("earliest")):
    from broker_core.core.consumer_session import ConsumerSession
    topic = CompactedTopic(tmp_path)
    topic.publish(("k1", b"a"), ("k2", b"b"), ("k1", b"c"), ("k2", TOMBSTONE), ("k3", b"d"))
    topic.compact()
    topic.publish(("k1", b"e"), ("k2", b"f"))
    events = Events()
    session = ConsumerSession(events)
    session.subscribe(topic, "s", SubType.EXCLUSIVE, start, consumer_id=1, consumer_name="c", read_compacted=True,
                      permits=100)
    return topic, session, events


def test_a_compacted_session_starts_at_the_first_kept_message(tmp_path) -> None:
    _, session, events = compacted_session(tmp_path)
    assert events.delivered == [2, 4, 5, 6]
    assert session.positions.start_offset == 2


def test_acknowledging_each_kept_message_leaves_no_backlog_in_the_compaction_gaps(tmp_path) -> None:
    topic, session, events = compacted_session(tmp_path)
    cursor = session.sub.cursor
    assert session.sub.backlog == 4  # what was delivered, not the raw 7
    session.acknowledge([(2, 3)])
    assert cursor.mark_delete_offset == 3  # 0, 1 and 3 were passed over: acknowledged
    session.acknowledge([(5, 6)])
    assert cursor.mark_delete_offset == 3  # 4 is kept and not acknowledged yet
    session.acknowledge([(4, 5)])
    session.acknowledge([(6, 7)])
    assert cursor.mark_delete_offset == 6
    assert session.sub.backlog == 0


def test_a_cumulative_ack_of_the_last_kept_message_reaches_the_horizon(tmp_path) -> None:
    topic, session, events = compacted_session(tmp_path)
    topic.publish(("k1", b"x"), ("k1", b"y"))  # 7, 8
    topic.compact()  # horizon 9 keeps 4 (k3), 6 (k2), 8 (k1)
    session.sub.on_new_entries()  # the broker's journal confirming 7 and 8
    assert events.delivered[-1] == 8
    session.acknowledge_cumulative(6)
    assert session.sub.cursor.mark_delete_offset == 7  # 7 was compacted away


def test_a_compacted_session_is_refused_on_a_shared_subscription(tmp_path) -> None:
    from broker_core.core.consumer_session import ConsumerSession
    topic = CompactedTopic(tmp_path)
    session = ConsumerSession(Events())
    with pytest.raises(NotAllowedError, match="failover or exclusive"):
        session.subscribe(topic, "s", SubType.SHARED, Start("earliest"), consumer_id=1, consumer_name="c",
                          read_compacted=True)
    assert session.sub is None and not topic.subs
