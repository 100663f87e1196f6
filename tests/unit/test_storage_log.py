"""ManagedLog: appends, reads, rolls, reopen, seek by time, retention."""
import os
import threading

import pytest

from broker_core.clock import FakeClock
from broker_core.errors import AlreadyClosed, MessageTooBig
from broker_core.storage.log import ManagedLog, StoredEntry


def payload(i: int) -> bytes:
    return f"entry-{i}-".encode() * (i % 7 + 1)


def fill(log: ManagedLog, n: int, count: int = 1, t0: int = 1000) -> list[StoredEntry]:
    entries = [log.append(payload(i), count, t0 + i) for i in range(n)]
    log.sync()
    return entries


def test_a_new_log_is_empty_and_starts_at_offset_zero(tmp_path):
    log = ManagedLog(tmp_path / "t")
    assert (log.start_offset, log.end_offset, log.durable_end_offset) == (0, 0, 0)
    assert log.read(0) == [] and log.size_bytes == 0


def test_append_assigns_offsets_by_message_count(tmp_path):
    log = ManagedLog(tmp_path)
    a = log.append(b"a", 3, 1)
    b = log.append(b"b", 1, 2)
    assert (a.offset, a.end_offset, b.offset, log.end_offset) == (0, 3, 3, 4)
    assert a.ledger_id == 0 and a.data == b"a"


def test_reads_stop_at_the_durable_end_until_sync(tmp_path):
    log = ManagedLog(tmp_path)
    log.append(b"a", 1, 1)
    assert log.read(0) == []
    assert log.read(0, end_offset=log.end_offset)[0].data == b"a"
    assert log.sync() == 1 and log.durable_end_offset == 1
    assert [e.data for e in log.read(0)] == [b"a"]


def test_a_read_inside_a_batch_starts_at_the_entry_containing_it(tmp_path):
    log = ManagedLog(tmp_path)
    fill(log, 5, count=10)
    assert log.read(37)[0].offset == 30
    assert log.entry_containing(37).offset == 30
    assert log.entry_containing(50) is None and log.entry_containing(-1) is None


def test_a_read_before_the_start_begins_at_the_first_stored_entry(tmp_path):
    log = ManagedLog(tmp_path, max_segment_bytes=100)
    fill(log, 10)
    log.delete_segments_before(5)
    assert log.read(0)[0].offset == log.start_offset > 0


def test_reads_honour_max_entries_max_bytes_and_end_offset(tmp_path):
    log = ManagedLog(tmp_path)
    for i in range(10):
        log.append(b"x" * 100, 1, i)
    log.sync()
    assert len(log.read(0, max_entries=3)) == 3
    assert len(log.read(0, max_bytes=250)) == 2
    assert len(log.read(0, max_bytes=1)) == 1  # always at least one entry
    assert [e.offset for e in log.read(2, end_offset=5)] == [2, 3, 4]


def test_cache_and_disk_reads_are_identical(tmp_path):
    cached = ManagedLog(tmp_path / "a", max_segment_bytes=300)
    uncached = ManagedLog(tmp_path / "b", max_segment_bytes=300, cache_bytes=0)
    fill(cached, 40, count=2)
    fill(uncached, 40, count=2)
    for start in (0, 1, 17, 79):
        assert cached.read(start, 1000) == uncached.read(start, 1000)
    cached.close()
    assert ManagedLog(tmp_path / "a", max_segment_bytes=300).read(0, 1000) == uncached.read(0, 1000)


def test_recent_reads_are_served_from_the_cache_without_touching_disk(tmp_path, monkeypatch):
    log = ManagedLog(tmp_path)
    fill(log, 5)
    monkeypatch.setattr(os, "pread", lambda *a: pytest.fail("disk read"))
    assert [e.offset for e in log.read(1)] == [1, 2, 3, 4]


def test_the_cache_is_bounded_and_older_entries_come_from_disk(tmp_path):
    log = ManagedLog(tmp_path, cache_bytes=250)
    for i in range(10):
        log.append(bytes([i]) * 100, 1, i)
    log.sync()
    assert [e.data[0] for e in log.read(0, 100)] == list(range(10))


def test_a_reopened_log_holds_the_same_entries(tmp_path):
    log = ManagedLog(tmp_path, max_segment_bytes=200)
    written = fill(log, 30, count=3)
    log.close()
    again = ManagedLog(tmp_path, max_segment_bytes=200)
    assert again.end_offset == again.durable_end_offset == 90
    assert again.read(0, 1000) == written
    assert again.append(b"next", 1, 0).offset == 90


def test_segments_roll_by_size_and_are_named_by_base_offset(tmp_path):
    log = ManagedLog(tmp_path, max_segment_bytes=100)
    fill(log, 6)
    names = sorted(p.name for p in tmp_path.glob("*.log"))
    assert len(names) > 1 and names[0] == "00000000000000000000.log"
    assert all(len(n) == 24 for n in names)
    stats = log.segments()
    assert sum(s["entries"] for s in stats) == 6
    assert [s["ledgerId"] for s in stats] == [int(n[:20]) for n in names]
    assert stats[0]["lastOffset"] + 1 == stats[1]["firstOffset"]
    assert log.size_bytes == sum(p.stat().st_size for p in tmp_path.glob("*.log"))


def test_a_roll_makes_the_previous_segment_durable(tmp_path):
    log = ManagedLog(tmp_path, max_segment_bytes=100)
    for i in range(4):
        log.append(b"x" * 60, 1, i)
    assert log.durable_end_offset == 3


def test_segments_roll_by_age_with_an_injected_clock(tmp_path):
    clock = FakeClock()
    log = ManagedLog(tmp_path, max_segment_age_ms=1000, clock=clock)
    log.append(b"a", 1, 0)
    clock.advance(999)
    log.append(b"b", 1, 0)
    assert len(log.segments()) == 1
    clock.advance(1)
    entry = log.append(b"c", 1, 0)
    assert len(log.segments()) == 2 and entry.ledger_id == 2


def test_an_entry_larger_than_the_maximum_is_rejected(tmp_path):
    log = ManagedLog(tmp_path, max_entry_bytes=10)
    with pytest.raises(MessageTooBig) as err:
        log.append(b"x" * 11, 1, 0)
    assert (err.value.size, err.value.limit) == (11, 10) and log.end_offset == 0
    with pytest.raises(ValueError, match="max_entry_bytes"):
        ManagedLog(tmp_path / "b", max_entry_bytes=1 << 40)


def test_append_writes_one_writev_per_entry_and_one_for_many(tmp_path, monkeypatch):
    log = ManagedLog(tmp_path)
    calls = []
    real = os.writev
    monkeypatch.setattr(os, "writev", lambda fd, bufs: calls.append(len(bufs)) or real(fd, bufs))
    log.append(b"a", 1, 0)
    entries = log.append_many([(b"b", 1, 0), (b"c", 2, 0), (b"d", 1, 0)])
    assert calls == [2, 6]
    assert [e.offset for e in entries] == [1, 2, 4]


def test_offset_for_timestamp_finds_the_first_entry_at_or_after_it(tmp_path):
    log = ManagedLog(tmp_path, max_segment_bytes=150)
    fill(log, 20, count=2, t0=1000)
    assert log.offset_for_timestamp(0) == 0
    assert log.offset_for_timestamp(1007) == 14
    assert log.offset_for_timestamp(5000) == log.end_offset == 40
    log.close()
    assert ManagedLog(tmp_path, max_segment_bytes=150).offset_for_timestamp(1013) == 26


def test_a_search_by_time_in_a_large_segment_bisects_its_index_instead_of_reading_it_all(tmp_path, monkeypatch):
    from broker_core.storage.segment import Segment

    log = ManagedLog(tmp_path)
    fill(log, 20_000, t0=1000)  # one segment, publish times 1000..20999
    headers_read = []
    frames = Segment.frames

    def counted(self, *args, **kwargs):
        for item in frames(self, *args, **kwargs):
            headers_read.append(item[0])
            yield item
    monkeypatch.setattr(Segment, "frames", counted)
    for wanted in (0, 1000, 1001, 12_345, 20_999):
        headers_read.clear()
        assert log.offset_for_timestamp(wanted) == max(wanted - 1000, 0)
        assert len(headers_read) < 200  # about one index interval of 4 KiB, not 20,000 frames
    assert log.offset_for_timestamp(10 ** 9) == log.end_offset == 20_000
    log.close()


def test_delete_segments_before_drops_only_whole_segments_below_the_offset(tmp_path):
    log = ManagedLog(tmp_path, max_segment_bytes=100)
    fill(log, 10)
    bases = [s["ledgerId"] for s in log.segments()]
    before = log.size_bytes
    freed = log.delete_segments_before(bases[2])
    assert freed == before - log.size_bytes > 0
    assert log.start_offset == bases[2] and log.read(0)[0].offset == bases[2]
    assert log.delete_segments_before(10 ** 9) > 0 and len(log.segments()) == 1  # never the active one
    log.close()
    assert ManagedLog(tmp_path, max_segment_bytes=100).start_offset == log.start_offset


def test_sync_from_a_worker_thread_while_appending_loses_nothing(tmp_path):
    log = ManagedLog(tmp_path, max_segment_bytes=4096)
    done = threading.Event()
    seen = []

    def syncer():
        while not done.is_set():
            seen.append(log.sync())

    worker = threading.Thread(target=syncer)
    worker.start()
    for i in range(2000):
        log.append(payload(i), 1, i)
    done.set()
    worker.join()
    assert seen == sorted(seen)
    assert log.sync() == 2000
    log.close()
    assert [e.data for e in ManagedLog(tmp_path).read(0, 5000)] == [payload(i) for i in range(2000)]


def test_close_is_idempotent_and_appends_after_close_fail(tmp_path):
    log = ManagedLog(tmp_path)
    log.append(b"a", 1, 0)
    log.close()
    log.close()
    assert log.durable_end_offset == 1
    with pytest.raises(AlreadyClosed):
        log.append(b"b", 1, 0)


def test_delete_removes_the_directory(tmp_path):
    log = ManagedLog(tmp_path / "topic")
    fill(log, 3)
    log.delete()
    assert not (tmp_path / "topic").exists()
