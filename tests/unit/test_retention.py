"""Retention and message expiry (seed 002/003: Message retention and expiry): the pure decisions of
:mod:`broker_core.core.retention_rules` with crafted segments and an injected clock, and a subscription's
``expire_through`` (TTL acknowledges on the cursor whoever holds the messages)."""
from __future__ import annotations

from broker_core.clock import FakeClock
from broker_core.core.retention_rules import (MIB, RetentionPolicy, SegmentInfo, consumed_end_offset, expiry_cutoff_ms,
                                           expiry_offset, segments_to_delete)
from broker_core.storage.log import ManagedLog
from dispatch import SubType, Subscription
from dispatch.testing import MemoryEntrySource, RecordingConsumer, make_cursor


def shared_subscription() -> tuple[Subscription, MemoryEntrySource, list[int]]:
    source = MemoryEntrySource()
    changes: list[int] = []
    sub = Subscription("sub", "persistent://public/default/t", -1, source, make_cursor(),
                       on_cursor_changed=lambda: changes.append(1), scheduler=None)
    return sub, source, changes


def test_expiry_acknowledges_through_the_offset_even_what_consumers_hold() -> None:
    sub, source, changes = shared_subscription()
    source.append_many(6, num_messages=2)  # entries at 0, 2, 4, 6, 8, 10
    c = RecordingConsumer(1, permits=6)
    sub.add_consumer(c, SubType.SHARED)
    assert c.take() == [0, 2, 4]
    assert sub.unacked_messages == 6 and sub.backlog == 12
    assert sub.expire_through(7) == 8
    assert sub.cursor.mark_delete_offset == 7 and sub.backlog == 4
    assert sub.unacked_messages == 0 and changes
    sub.flow(c, 4)
    assert c.take() == [8, 10]  # the expired entry at 6 is skipped


def test_expiry_of_part_of_a_pending_batch_keeps_its_later_messages_pending() -> None:
    sub, source, _ = shared_subscription()
    source.append(4)  # offsets 0..3
    c = RecordingConsumer(1, permits=4)
    sub.add_consumer(c, SubType.SHARED)
    assert c.take() == [0]
    assert sub.expire_through(1) == 2
    assert sub.unacked_messages == 2 and sub.backlog == 2


def test_expiry_below_the_mark_delete_offset_changes_nothing() -> None:
    sub, source, changes = shared_subscription()
    source.append_many(3)
    sub.cursor.ack_cumulative(1)
    assert sub.expire_through(1) == 0 and sub.expire_through(-1) == 0
    assert not changes and sub.cursor.mark_delete_offset == 1


# -- the pure decisions --------------------------------------------------------------------------------

NOW = 1_700_000_000_000
MINUTE = 60_000
NO_RETENTION = RetentionPolicy(0, 0)
FOREVER = RetentionPolicy(-1, -1)


def segments(*sizes_mib: float, per: int = 10, age_minutes: list[float] | None = None) -> list[SegmentInfo]:
    """Contiguous segments of ``per`` messages; the last one is the active segment."""
    ages = age_minutes or [0.0] * len(sizes_mib)
    return [SegmentInfo(i * per, (i + 1) * per, int(size * MIB), NOW - int(age * MINUTE))
            for i, (size, age) in enumerate(zip(sizes_mib, ages))]


def test_without_retention_every_consumed_segment_goes_but_never_the_active_one() -> None:
    segs = segments(1, 1, 1, 1)
    assert segments_to_delete(segs, consumed_end=40, policy=NO_RETENTION, now_ms=NOW) == 3


def test_a_partly_consumed_segment_stays_and_so_does_everything_after_it() -> None:
    segs = segments(1, 1, 1, 1)
    assert segments_to_delete(segs, consumed_end=15, policy=NO_RETENTION, now_ms=NOW) == 1
    assert segments_to_delete(segs, consumed_end=9, policy=NO_RETENTION, now_ms=NOW) == 0
    assert segments_to_delete(segs, consumed_end=10, policy=NO_RETENTION, now_ms=NOW) == 1


def test_infinite_retention_keeps_everything() -> None:
    assert segments_to_delete(segments(1, 1, 1), 30, FOREVER, NOW) == 0


def test_the_size_rule_deletes_while_what_stays_is_still_at_least_the_quota() -> None:
    segs = segments(1, 1, 1)  # A, B consumed; C active: the docstring's worked example
    assert segments_to_delete(segs, 30, RetentionPolicy(-1, 1), NOW) == 2
    assert segments_to_delete(segs, 30, RetentionPolicy(-1, 2), NOW) == 1
    assert segments_to_delete(segs, 30, RetentionPolicy(-1, 3), NOW) == 0


def test_the_size_rule_weighs_the_whole_topic_backlog_included() -> None:
    segs = segments(1, 1, 8)  # a large unconsumed active segment
    assert segments_to_delete(segs, 20, RetentionPolicy(-1, 5), NOW) == 2


def test_the_time_rule_deletes_segments_whose_newest_message_is_older_than_the_limit() -> None:
    segs = segments(1, 1, 1, 1, age_minutes=[90, 61, 60, 0])
    assert segments_to_delete(segs, 40, RetentionPolicy(60, -1), NOW) == 2  # exactly 60 minutes: kept
    assert segments_to_delete(segs, 40, RetentionPolicy(60, -1), NOW + MINUTE) == 3


def test_either_limit_exceeded_deletes() -> None:
    segs = segments(1, 1, 1, 1, age_minutes=[90, 10, 5, 0])
    assert segments_to_delete(segs, 40, RetentionPolicy(60, 100), NOW) == 1  # only the time limit
    assert segments_to_delete(segs, 40, RetentionPolicy(600, 2), NOW) == 2  # only the size limit


def test_retention_never_deletes_from_the_middle() -> None:
    segs = segments(1, 1, 1, 1, age_minutes=[5, 90, 90, 0])  # an old segment after a young one
    assert segments_to_delete(segs, 40, RetentionPolicy(60, -1), NOW) == 0


def test_newest_publish_times_are_read_only_when_the_size_rule_does_not_decide() -> None:
    class Unreadable(SegmentInfo):
        @property
        def last_publish_ms(self) -> int:  # type: ignore[override]
            raise AssertionError("scanned")

    segs = [Unreadable(0, 10, MIB, 0), Unreadable(10, 20, MIB, 0)]
    assert segments_to_delete(segs, 20, NO_RETENTION, NOW) == 1


def test_the_consumed_end_is_the_slowest_cursor_or_everything_without_durable_cursors() -> None:
    assert consumed_end_offset([7, 3, 12], end_offset=40) == 4
    assert consumed_end_offset([], end_offset=40) == 40


def test_the_retention_policy_comes_from_the_policy_or_the_broker_defaults() -> None:
    assert RetentionPolicy.of(None, 0, 0) == NO_RETENTION
    assert RetentionPolicy.of({"retentionTimeInMinutes": 60, "retentionSizeInMB": -1}, 0, 0) == (60, -1)
    assert FOREVER.keeps_forever and not RetentionPolicy(-1, 5).keeps_forever


def test_a_message_expires_when_now_is_past_its_publish_time_plus_the_ttl() -> None:
    assert expiry_cutoff_ms(0, NOW) is None
    cutoff = expiry_cutoff_ms(300, NOW)
    assert cutoff == NOW - 300_000  # publish_time < cutoff: expired; == cutoff: not yet


def test_a_subscription_expires_up_to_the_first_unexpired_entry_never_backwards() -> None:
    assert expiry_offset(first_unexpired_offset=20, confirmed_end_offset=30, mark_delete_offset=4) == 19
    assert expiry_offset(40, 30, 4) == 29  # never past what the journal confirmed
    assert expiry_offset(20, 30, 19) is None and expiry_offset(20, 30, 25) is None


# -- what storage gives retention ------------------------------------------------------------------------

def fill(log: ManagedLog, n: int, t0: int) -> None:
    for i in range(n):
        log.append(b"x" * 10, 1, t0 + i)
    log.sync()


def test_segments_roll_by_entry_count_and_one_larger_write_stays_in_one_segment(tmp_path) -> None:
    log = ManagedLog(tmp_path, max_segment_entries=3)
    fill(log, 7, 1000)
    assert [(s.base_offset, s.end_offset) for s in log.retention_view()] == [(0, 3), (3, 6), (6, 7)]
    log.append_many([(b"y", 1, 2000)] * 5)
    assert [(s.base_offset, s.end_offset) for s in log.retention_view()][-1] == (7, 12)


def test_a_segments_newest_publish_time_is_known_without_scanning_and_after_recovery(tmp_path, monkeypatch) -> None:
    from broker_core.storage.segment import Segment

    log = ManagedLog(tmp_path, max_segment_entries=3)
    log.append(b"a", 1, 5000)
    log.append(b"b", 1, 4000)  # publish times need not grow
    log.append(b"c", 1, 4500)
    fill(log, 1, 100)  # rolls
    real = Segment.frames
    monkeypatch.setattr(Segment, "frames", lambda *a, **k: (_ for _ in ()).throw(AssertionError("scan")))
    assert log.retention_view()[0].last_publish_ms == 5000
    monkeypatch.setattr(Segment, "frames", real)
    log.close()
    reopened = ManagedLog(tmp_path, max_segment_entries=3)  # the active segment [3] holds publish time 100
    reopened.append(b"d", 1, 50)
    reopened.append(b"e", 1, 60)
    fill(reopened, 1, 70)  # rolls: the sealed segment's newest is still the recovered 100
    assert [s.last_publish_ms for s in reopened.retention_view()[:2]] == [5000, 100]


def test_offset_for_timestamp_can_start_at_a_cursor(tmp_path) -> None:
    log = ManagedLog(tmp_path, max_segment_entries=4)
    fill(log, 10, 1000)
    assert log.offset_for_timestamp(1002) == 2
    assert log.offset_for_timestamp(1002, from_offset=6) == 6
    assert log.offset_for_timestamp(1007, from_offset=5) == 7
    assert log.offset_for_timestamp(5000, from_offset=5) == 10


def test_detached_segments_vanish_for_readers_and_come_back_if_never_removed(tmp_path) -> None:
    log = ManagedLog(tmp_path, max_segment_entries=3)
    fill(log, 8, 1000)
    detached = log.detach_segments_before(6)
    assert [s.base_offset for s in detached] == [0, 3]
    assert log.start_offset == 6 and log.read(0)[0].offset == 6
    assert all(s.path.exists() for s in detached)  # a crash here: recovery brings them back
    log.close()
    again = ManagedLog(tmp_path, max_segment_entries=3)
    assert again.start_offset == 0
    freed = again.remove_segments(again.detach_segments_before(6))
    assert freed > 0 and not any(p.name.startswith("00000000000000000000") for p in tmp_path.iterdir())
    again.close()
    assert ManagedLog(tmp_path).start_offset == 6


def test_time_retention_on_a_real_log_with_an_injected_clock(tmp_path) -> None:
    clock = FakeClock(NOW)
    log = ManagedLog(tmp_path, max_segment_entries=2, clock=clock)
    for _ in range(5):  # segments [0-1] [2-3] [4]; entry i published at minute i
        log.append(b"x", 1, clock.now_ms())
        clock.advance(MINUTE)
    log.sync()
    policy = RetentionPolicy(10, -1)
    assert segments_to_delete(log.retention_view(), 5, policy, clock.now_ms()) == 0
    clock.advance(6 * MINUTE)  # minute 11: [0-1]'s newest message is exactly 10 minutes old
    assert segments_to_delete(log.retention_view(), 5, policy, clock.now_ms()) == 0
    clock.advance(1)
    assert segments_to_delete(log.retention_view(), 5, policy, clock.now_ms()) == 1
    clock.advance(2 * MINUTE)
    assert segments_to_delete(log.retention_view(), 5, policy, clock.now_ms()) == 2
    assert segments_to_delete(log.retention_view(), 3, policy, clock.now_ms()) == 1  # [2-3] not consumed
