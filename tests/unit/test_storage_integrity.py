"""Storage under bad luck: lost tails, damaged segments, wrong index entries, missing files, failed
fsyncs. Nothing is lost silently (every loss is an ERROR line) and no offset is handed out twice."""
import logging
import os

import pytest

from broker_core.errors import CorruptLog, DataLost, PersistenceError
from broker_core.storage.files import FileBudget
from broker_core.storage.format import HEADER_SIZE, encode_header
from broker_core.storage.index import ENTRY
from broker_core.storage.log import CLEAN_CLOSE_FILE, START_OFFSET_FILE, ManagedLog

SEG0 = "00000000000000000000.log"


def filled(path, n, count=1, size=40, **opts) -> tuple[ManagedLog, list]:
    log = ManagedLog(path, **opts)
    entries = [log.append(bytes([i % 256]) * size, count, 1000 + i) for i in range(n)]
    log.sync()
    return log, entries


def errors(caplog, event: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR and f"event={event}" in r.getMessage()]


# -- gap frames ---------------------------------------------------------------------------------------
def test_skip_to_moves_the_end_with_a_gap_that_reads_and_seeks_pass_over(tmp_path):
    log, entries = filled(tmp_path, 3)
    log.skip_to(10)
    after = log.append(b"after", 2, 5000)
    log.sync()
    assert (after.offset, log.end_offset) == (10, 12)
    assert log.read(0, 100) == entries + [after]
    assert log.read(5) == [after] and log.entry_containing(5) is None
    assert log.offset_for_timestamp(1) == 0 and log.offset_for_timestamp(4000) == 10
    log.close()
    reopened = ManagedLog(tmp_path)
    assert reopened.end_offset == 12 and reopened.read(3) == [after]


def test_skip_to_an_offset_already_reached_changes_nothing(tmp_path):
    log, _ = filled(tmp_path, 3)
    size = log.size_bytes
    log.skip_to(2)
    assert (log.end_offset, log.size_bytes) == (3, size)


# -- rollback after a failed fsync ------------------------------------------------------------------------
def test_rollback_removes_the_entries_that_are_not_durable(tmp_path):
    log, entries = filled(tmp_path, 3)
    log.append(b"lost-1", 1, 0)
    log.append(b"lost-2", 4, 0)
    assert log.rollback_to(3) == 3
    assert log.end_offset == 3 and log.read(0, 100, end_offset=100) == entries
    again = log.append(b"again", 1, 0)
    log.sync()
    log.close()
    assert ManagedLog(tmp_path).read(0, 100) == entries + [again]


def test_rollback_never_cuts_a_sealed_segment(tmp_path):
    log, entries = filled(tmp_path, 4, max_segment_entries=2)  # segments [0, 2) and [2, 4)
    log.append(b"x", 1, 0)
    assert log.rollback_to(0) == 4 and log.read(0, 100, end_offset=100) == entries


# -- the index is checked, not trusted ----------------------------------------------------------------------
def test_a_plausible_but_wrong_index_entry_is_caught_and_the_index_rebuilt(tmp_path, caplog):
    log, entries = filled(tmp_path, 40, size=5000, max_segment_entries=40)  # every frame is indexed
    log.append(b"roll", 1, 0)  # seals segment 0: it is opened through its index from now on
    log.close()
    index = tmp_path / "00000000000000000000.index"
    rows = list(ENTRY.iter_unpack(index.read_bytes()))
    assert [offset for offset, _ in rows] == list(range(40))
    # offsets and positions still increase and stay inside the log: only the frame itself can tell
    wrong = rows[:10] + [(10, rows[15][1])] + rows[16:]
    index.write_bytes(b"".join(ENTRY.pack(o, p) for o, p in wrong))
    log = ManagedLog(tmp_path)
    assert [e.offset for e in log.read(10, 5)] == [10, 11, 12, 13, 14]
    assert errors(caplog, "segment_index_wrong")
    assert list(ENTRY.iter_unpack(index.read_bytes())) == rows  # rebuilt


# -- damaged segments fence reads, not writes ---------------------------------------------------------------
def test_a_damaged_sealed_segment_fails_the_reads_of_its_damaged_range_only(tmp_path):
    log, entries = filled(tmp_path, 6, size=100, max_segment_entries=3)
    log.close()
    path = tmp_path / SEG0
    raw = bytearray(path.read_bytes())
    raw[HEADER_SIZE + (HEADER_SIZE + 100) + 5] ^= 1  # the second frame's data
    path.write_bytes(bytes(raw))
    log = ManagedLog(tmp_path)
    assert log.read(0, 100) == entries[:1]  # the entry before the damage, then the read stops
    with pytest.raises(DataLost) as err:
        log.read(1, 100)
    assert (err.value.path, err.value.position, err.value.start_offset, err.value.end_offset) == \
        (SEG0, HEADER_SIZE + 100, 1, 2)
    with pytest.raises(DataLost):  # known now: fails at once
        log.read(1)
    assert log.read(2, 100) == entries[2:]
    new = log.append(b"new", 1, 0)
    log.sync()
    assert new.offset == 6 and log.read(6) == [new]


def test_a_sealed_segment_damaged_after_its_last_index_entry_is_mapped_at_load(tmp_path, caplog):
    log, entries = filled(tmp_path, 6, size=10, max_segment_entries=3)
    log.close()
    path = tmp_path / SEG0
    raw = bytearray(path.read_bytes())
    raw[-3] ^= 1  # the last frame of the sealed segment: scanned at load, after the index's last entry
    path.write_bytes(bytes(raw))
    log = ManagedLog(tmp_path)
    [line] = errors(caplog, "log_range_damaged")
    assert "first_offset=2 end_offset=3 lost_messages=1" in line
    assert log.read(0, 100) == entries[:2]
    with pytest.raises(DataLost):
        log.read(2)
    assert log.read(3, 100) == entries[3:] and log.append(b"x", 1, 0).offset == 6


# -- nothing is lost without an ERROR line ------------------------------------------------------------------
def test_a_truncated_tail_is_logged_at_error_with_the_first_offset_lost(tmp_path, caplog):
    log, entries = filled(tmp_path, 3)
    log.close()
    (tmp_path / CLEAN_CLOSE_FILE).unlink()  # as a crash leaves it: a torn tail, cut
    path = tmp_path / SEG0
    path.write_bytes(path.read_bytes()[:-1])
    assert ManagedLog(tmp_path).end_offset == 2
    assert any("first_lost_offset=2" in line for line in errors(caplog, "log_tail_truncated"))


def test_a_tail_lost_after_a_clean_close_is_a_damaged_range_whose_offsets_are_kept(tmp_path, caplog):
    log, entries = filled(tmp_path, 3)
    log.close()  # every byte fsynced: a shorter file now is damage, not a torn write
    path = tmp_path / SEG0
    path.write_bytes(path.read_bytes()[:-1])
    log = ManagedLog(tmp_path)
    assert log.end_offset == 3 and log.read(0, 10) == entries[:2]
    with pytest.raises(DataLost) as err:
        log.read(2)
    assert (err.value.start_offset, err.value.end_offset) == (2, 3)
    assert any("first_offset=2 end_offset=3 lost_messages=1" in line for line in errors(caplog, "log_range_damaged"))
    assert log.append(b"x", 1, 0).offset == 3


def test_an_emptied_active_segment_is_logged_at_error(tmp_path, caplog):
    log, entries = filled(tmp_path, 5, size=5000)  # each frame indexed
    log.close()
    (tmp_path / CLEAN_CLOSE_FILE).unlink()  # a crash: what the index saw is all that says data was lost
    (tmp_path / SEG0).write_bytes(b"")
    assert ManagedLog(tmp_path).end_offset == 0
    lines = errors(caplog, "log_tail_lost")
    assert lines and "lost_messages_at_least=5" in lines[0]


def test_an_active_segment_emptied_after_a_clean_close_keeps_its_offsets(tmp_path, caplog):
    log, entries = filled(tmp_path, 5, size=5000)
    log.close()
    (tmp_path / SEG0).write_bytes(b"")
    log = ManagedLog(tmp_path)
    assert log.end_offset == 5 and log.append(b"x", 1, 0).offset == 5
    with pytest.raises(DataLost):
        log.read(0)
    assert errors(caplog, "log_range_damaged")


def test_a_missing_first_segment_is_logged_at_error(tmp_path, caplog):
    log, entries = filled(tmp_path, 6, max_segment_entries=2)
    log.close()
    (tmp_path / SEG0).unlink()
    log = ManagedLog(tmp_path)
    assert log.start_offset == 2
    assert any("lost_messages=2" in line for line in errors(caplog, "log_segments_missing"))
    log.close()
    caplog.clear()
    ManagedLog(tmp_path).close()  # reported once: the new start is recorded
    assert not errors(caplog, "log_segments_missing")


def test_retention_records_the_start_so_its_deletions_are_not_reported_as_loss(tmp_path, caplog):
    log, entries = filled(tmp_path, 6, max_segment_entries=2)
    assert log.delete_segments_before(4) > 0
    log.close()
    assert (tmp_path / START_OFFSET_FILE).read_text() == "4"
    assert ManagedLog(tmp_path).start_offset == 4 and not errors(caplog, "log_segments_missing")


def test_segments_an_interrupted_retention_left_behind_are_removed(tmp_path):
    log, entries = filled(tmp_path, 6, max_segment_entries=2)
    log.close()
    (tmp_path / START_OFFSET_FILE).write_text("4")  # recorded, then the broker died before unlinking
    log = ManagedLog(tmp_path)
    assert log.start_offset == 4 and log.read(0, 100) == entries[4:]
    assert not (tmp_path / SEG0).exists()


def test_an_empty_folder_with_a_recorded_start_starts_there(tmp_path):
    (tmp_path / START_OFFSET_FILE).write_text("40")
    log = ManagedLog(tmp_path)
    assert (log.start_offset, log.end_offset) == (40, 40)


# -- failed appends ----------------------------------------------------------------------------------------
def test_a_failed_append_raises_persistence_error_and_leaves_no_partial_frame(tmp_path, monkeypatch):
    log, entries = filled(tmp_path, 2)
    import broker_core.storage.frame_writer as log_module

    def disk_full(fd, buffers):
        os.write(fd, b"\x00" * 7)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(log_module, "write_all", disk_full)
    with pytest.raises(PersistenceError) as err:
        log.append(b"x", 1, 0)
    assert "No space left" in err.value.message and str(tmp_path) not in err.value.message
    monkeypatch.undo()
    after = log.append(b"y", 1, 0)
    log.sync()
    log.close()
    assert ManagedLog(tmp_path).read(0, 100) == entries + [after]


# -- the open-file budget ------------------------------------------------------------------------------------
def test_the_file_budget_closes_the_least_recently_used_idle_files(tmp_path):
    budget = FileBudget(max_open=2)
    paths = []
    for name in "abc":
        (tmp_path / name).write_bytes(name.encode())
        paths.append(tmp_path / name)
    a, b, c = (budget.handle(p, os.O_RDONLY) for p in paths)
    for handle, expected in ((a, b"a"), (b, b"b"), (a, b"a"), (c, b"c")):
        with handle as fd:
            assert os.pread(fd, 1, 0) == expected
    assert (a.is_open, b.is_open, c.is_open) == (True, False, True) and budget.open_count == 2
    with b as fd:  # reopened on use
        assert os.pread(fd, 1, 0) == b"b"


def test_a_file_in_use_is_never_closed_under_its_user(tmp_path):
    budget = FileBudget(max_open=1)
    for name in "ab":
        (tmp_path / name).write_bytes(name.encode())
    a, b = budget.handle(tmp_path / "a", os.O_RDONLY), budget.handle(tmp_path / "b", os.O_RDONLY)
    with a as fd_a:
        with b:
            assert os.pread(fd_a, 1, 0) == b"a"  # a stayed open while in use
        a.close()  # retired while in use: closed when its user lets go
        assert os.pread(fd_a, 1, 0) == b"a"
    assert not a.is_open


def test_a_log_under_a_tiny_budget_keeps_working(tmp_path):
    budget = FileBudget(max_open=2)
    logs = [ManagedLog(tmp_path / str(i), files=budget, max_segment_entries=3) for i in range(5)]
    for round_ in range(7):
        for log in logs:
            log.append(f"{round_}".encode(), 1, round_)
            log.sync()
    assert budget.open_count <= 2 and budget.evictions > 0
    for log in logs:
        assert [e.data for e in log.read(0, 100)] == [str(r).encode() for r in range(7)]
        log.close()


def test_an_eviction_whose_fsync_fails_fails_the_next_sync(tmp_path, monkeypatch):
    import broker_core.storage.files as files

    budget = FileBudget(max_open=1)
    (tmp_path / "a").write_bytes(b"")
    (tmp_path / "b").write_bytes(b"")
    a = budget.handle(tmp_path / "a", os.O_WRONLY)
    with a as fd:
        os.write(fd, b"x")
        a.dirty = True

    def failing(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(files, "datasync", failing)
    with budget.handle(tmp_path / "b", os.O_RDONLY):  # evicts a, whose fsync fails
        pass
    monkeypatch.undo()
    with pytest.raises(OSError):
        a.sync()
    a.sync()  # reported once


def test_frames_written_as_gaps_are_never_delivered_as_entries(tmp_path):
    path = tmp_path / SEG0
    first = b"first"
    with open(path, "wb") as f:
        f.write(encode_header(first, 0, 1, 1) + first + encode_header(b"", 1, 9, 0))
    log = ManagedLog(tmp_path)
    assert [e.offset for e in log.read(0, 100)] == [0] and log.end_offset == 10
