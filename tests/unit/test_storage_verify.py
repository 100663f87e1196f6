"""``verify`` (broker_core.storage.verify): a topic partition's files checked without changing them. Each
crafted damage is reported as exactly the range a read of it maps (flipped byte, zeroed tail, huge length,
frame written twice, truncated or missing segments, garbage index, index entries between frames, damaged
cursor copies, stray files), and the folder is byte-for-byte what it was: no file written, truncated,
renamed or removed, not even a temp file."""
import os
from pathlib import Path

import pytest

from broker_core.errors import DataLost
from broker_core.storage.cursor import ManagedCursor
from broker_core.storage.cursor_store import CursorStore
from broker_core.storage.damage import DamagedRange
from broker_core.storage.format import HEADER_SIZE
from broker_core.storage.index import ENTRY
from broker_core.storage.log import CLEAN_CLOSE_FILE, START_OFFSET_FILE, ManagedLog
from broker_core.storage.verify import LiveSegment, Stopped, verify_files

DATA = 40
FRAME = HEADER_SIZE + DATA  # 72 bytes: one message per frame, ten frames per segment
SEGMENT = 10 * FRAME


def seg(base: int, suffix: str = ".log") -> str:
    return f"{base:020d}{suffix}"


@pytest.fixture
def stored(tmp_path) -> Path:
    """35 messages (offsets 0..34) in segments at 0, 10, 20, 30, closed cleanly; cursor ``s`` saved twice
    (slot 1 the newest) and ``other`` once."""
    log = ManagedLog(tmp_path, max_segment_entries=10)
    for i in range(35):
        log.append(bytes([i + 1]) * DATA, 1, 1000 + i)
    log.close()
    store = CursorStore(tmp_path / "cursors")
    cursor = ManagedCursor("s", 4)
    store.save(cursor)
    cursor.ack_cumulative(9)
    store.save(cursor)
    store.save(ManagedCursor("other", 2))
    return tmp_path


def snapshot(folder: Path) -> dict:
    """Every file and folder under ``folder``: its bytes, inode and modification time."""
    found = {}
    for path in sorted(folder.rglob("*")):
        st = path.stat()
        found[str(path.relative_to(folder))] = (path.read_bytes() if path.is_file() else None, st.st_ino,
                                                st.st_mtime_ns, st.st_size)
    return found


def verify(folder: Path, **kwargs):
    """:func:`verify_files` on ``folder``, asserting that it changed nothing there."""
    before = snapshot(folder)
    report = verify_files(folder, folder / "cursors", **kwargs)
    assert snapshot(folder) == before
    return report


def patch(path: Path, position: int, data: bytes) -> None:
    raw = bytearray(path.read_bytes())
    raw[position:position + len(data)] = data
    path.write_bytes(bytes(raw))


def ranges(report) -> list[tuple[int, DamagedRange]]:
    return [(s.base_offset, found) for s in report.segments for found in s.damaged]


def read_fails_with(folder: Path, offset: int) -> DataLost:
    """What a read of ``offset`` raises once the broker loads the log (the range verify must report)."""
    log = ManagedLog(folder, max_segment_entries=10)
    try:
        with pytest.raises(DataLost) as err:
            log.read(offset, 100, end_offset=log.end_offset)
        return err.value
    finally:
        log.close()


# -- a sound topic ---------------------------------------------------------------------------------------
def test_a_sound_topic_is_ok_with_every_segment_frame_and_cursor_copy(stored):
    report = verify(stored)
    assert report.ok and not report.live
    assert [(s.base_offset, s.size, s.frames, s.end_offset) for s in report.segments] == [
        (0, SEGMENT, 10, 10), (10, SEGMENT, 10, 20), (20, SEGMENT, 10, 30), (30, 5 * FRAME, 5, 35)]
    assert report.as_dict()["totals"] == {"segments": 4, "bytes": 35 * FRAME, "frames": 35, "damagedRanges": 0,
                                          "messagesLost": 0, "indexProblems": 0, "cursorProblems": 0}
    cursors = {c.subscription: c for c in report.cursors}
    assert cursors["s"].newest == "s.cursor.1" and cursors["s"].outcome == "ok"
    assert [(c.file, c.generation) for c in cursors["s"].copies] == [("s.cursor", 1), ("s.cursor.1", 2)]
    assert cursors["other"].newest == "other.cursor"
    assert report.stray_files == [] and report.torn_tail is None


# -- damaged frames ----------------------------------------------------------------------------------------
def test_a_flipped_byte_costs_the_frame_that_holds_it_as_a_read_maps_it(stored):
    patch(stored / seg(10), 3 * FRAME + HEADER_SIZE + 5, b"\xee")  # inside the data of offset 13
    report = verify(stored)
    assert not report.ok and report.messages_lost == 1
    assert ranges(report) == [(10, DamagedRange(13, 14, 3 * FRAME, 4 * FRAME, "CRC mismatch"))]
    lost = read_fails_with(stored, 13)
    assert (lost.start_offset, lost.end_offset, lost.path, lost.position) == (13, 14, seg(10), 3 * FRAME)


def test_a_zeroed_tail_of_a_sealed_segment_costs_its_offsets_up_to_the_next_segment(stored):
    patch(stored / seg(10), 6 * FRAME + 60, bytes(SEGMENT - 6 * FRAME - 60))
    report = verify(stored)
    assert ranges(report) == [(10, DamagedRange(16, 20, 6 * FRAME, SEGMENT, "CRC mismatch"))]
    assert report.messages_lost == 4
    lost = read_fails_with(stored, 17)
    assert (lost.start_offset, lost.end_offset) == (16, 20)


def test_a_huge_length_is_refused_before_anything_is_allocated_and_the_next_frame_resyncs(stored):
    patch(stored / seg(20), 2 * FRAME + 4, b"\xff\xff\xff\xff")  # the length field of offset 22
    report = verify(stored)
    [(base, found)] = ranges(report)
    assert (base, found.start_offset, found.end_offset, found.position, found.resume_position) == (
        20, 22, 23, 2 * FRAME, 3 * FRAME)
    assert found.reason.startswith("length 4294967295 exceeds the maximum")


def test_a_frame_written_twice_is_a_range_of_bytes_that_costs_no_message(stored):
    path = stored / seg(10)
    raw = path.read_bytes()
    path.write_bytes(raw[:3 * FRAME] + raw[2 * FRAME:3 * FRAME] + raw[3 * FRAME:])  # offset 12 again
    report = verify(stored)
    assert ranges(report) == [(10, DamagedRange(13, 13, 3 * FRAME, 4 * FRAME, "offset 12 where 13 was expected"))]
    assert report.messages_lost == 0 and not report.ok
    assert report.segments[1].frames == 10


def test_a_sealed_segment_cut_short_mid_frame_loses_its_offsets_up_to_the_next_segment(stored):
    os.truncate(stored / seg(10), 6 * FRAME + 40)
    report = verify(stored)
    assert ranges(report) == [(10, DamagedRange(16, 20, 6 * FRAME, 6 * FRAME + 40, "truncated data"))]
    lost = read_fails_with(stored, 16)
    assert (lost.start_offset, lost.end_offset) == (16, 20)


def test_a_missing_middle_segment_is_a_range_at_the_end_of_the_one_before_it(stored):
    (stored / seg(10)).unlink()
    (stored / seg(10, ".index")).unlink()
    report = verify(stored)
    assert ranges(report) == [(0, DamagedRange(
        10, 20, SEGMENT, SEGMENT, "frames up to offset 20 are missing: the segment file ends at offset 10"
        " (truncated, or segment files after it are missing)"))]
    assert [s.base_offset for s in report.segments] == [0, 20, 30]
    lost = read_fails_with(stored, 12)
    assert (lost.start_offset, lost.end_offset) == (10, 20)


def test_missing_first_segments_are_a_range_before_the_first_one_left(stored):
    for base in (0, 10):
        (stored / seg(base)).unlink()
        (stored / seg(base, ".index")).unlink()
    report = verify(stored)
    assert report.start_offset == 0
    assert ranges(report) == [(20, DamagedRange(0, 20, 0, 0, "segment files before offset 20 are missing: the log"
                                                              f" starts at 0 ({START_OFFSET_FILE})"))]


def test_segments_below_the_recorded_start_are_retention_leftovers_not_damage(stored):
    (stored / START_OFFSET_FILE).write_text("20")
    report = verify(stored)
    assert report.ok and [s.base_offset for s in report.segments] == [20, 30] and report.start_offset == 20
    assert [s.file for s in report.stray_files] == [seg(0), seg(10)]


# -- the last segment -------------------------------------------------------------------------------------
def test_after_a_crash_a_last_frame_cut_short_is_a_torn_tail_not_damage(stored):
    (stored / CLEAN_CLOSE_FILE).unlink()
    path = stored / seg(30)
    raw = path.read_bytes()
    path.write_bytes(raw + raw[:HEADER_SIZE + 10])  # a write the stop interrupted
    report = verify(stored)
    assert report.ok and ranges(report) == []
    assert report.torn_tail == DamagedRange(35, 35, 5 * FRAME, 5 * FRAME + HEADER_SIZE + 10, "truncated data")
    assert report.segments[-1].end_offset == 35


def test_after_a_clean_close_the_last_segment_ends_where_the_record_says(stored):
    os.truncate(stored / seg(30), 3 * FRAME)  # fsynced frames 33 and 34 gone
    report = verify(stored)
    assert ranges(report) == [(30, DamagedRange(
        33, 35, 3 * FRAME, 3 * FRAME, "frames up to offset 35 are missing: the segment file ends at offset 33"
        " (truncated, or segment files after it are missing)"))]


def test_after_a_clean_close_a_damaged_last_frame_is_damage_not_a_torn_tail(stored):
    patch(stored / seg(30), 4 * FRAME + HEADER_SIZE + 1, b"\x00\x00")  # every byte was fsynced before the close
    report = verify(stored)
    assert report.torn_tail is None
    assert ranges(report) == [(30, DamagedRange(34, 35, 4 * FRAME, 5 * FRAME, "CRC mismatch"))]
    lost = read_fails_with(stored, 34)
    assert (lost.start_offset, lost.end_offset) == (34, 35)


def test_a_clean_close_record_of_an_earlier_version_ends_the_last_segment_at_its_frames(stored):
    record = (stored / CLEAN_CLOSE_FILE).read_text().split()
    (stored / CLEAN_CLOSE_FILE).write_text(" ".join(record[:4]))
    patch(stored / seg(30), 4 * FRAME + HEADER_SIZE + 1, b"\x00\x00")
    report = verify(stored)
    assert report.torn_tail is None and report.segments[-1].end_offset == 34
    assert ranges(report) == [(30, DamagedRange(34, 34, 4 * FRAME, 5 * FRAME, "CRC mismatch"))]


# -- indexes ----------------------------------------------------------------------------------------------
def test_a_garbage_index_is_reported_entry_by_entry(stored):
    (stored / seg(0, ".index")).write_bytes(b"\xab" * (6 * ENTRY.size + 4))
    report = verify(stored)
    garbage = int.from_bytes(b"\xab" * 8, "big")
    assert not report.ok and ranges(report) == [] and report.index_problem_count == 8
    assert [(p.entry, p.problem) for p in report.index_problems] == [
        (0, "the first entry must be (0, 0)"), (0, f"points beyond the end of the log (byte {SEGMENT})"),
        *[(i, "not after the entry before it (offsets and positions must increase)") for i in range(1, 6)],
        (6, "4 bytes of a partial entry at its end")]
    assert {(p.index, p.offset) for p in report.index_problems[:2]} == {(seg(0, ".index"), garbage)}


def test_index_entries_between_frames_or_naming_the_wrong_offset_are_reported(stored):
    (stored / seg(0, ".index")).write_bytes(b"".join(ENTRY.pack(o, p) for o, p in [
        (0, 0), (3, 3 * FRAME + 34), (5, 5 * FRAME), (7, 6 * FRAME)]))
    report = verify(stored)
    assert [(p.entry, p.offset, p.position, p.problem) for p in report.index_problems] == [
        (1, 3, 3 * FRAME + 34, f"points inside the frame at byte {3 * FRAME} (offset 3), not at its start"),
        (3, 7, 6 * FRAME, "points at the frame of offset 6, not of offset 7")]


def test_an_index_entry_in_a_damaged_range_and_a_missing_index_are_reported(stored):
    (stored / seg(10, ".index")).write_bytes(ENTRY.pack(10, 0) + ENTRY.pack(13, 3 * FRAME))
    patch(stored / seg(10), 3 * FRAME + 40, b"\x00")
    (stored / seg(20, ".index")).unlink()
    report = verify(stored)
    assert [(p.index, p.entry, p.problem) for p in report.index_problems] == [
        (seg(10, ".index"), 1, f"points into the damaged bytes {3 * FRAME}..{4 * FRAME - 1}"),
        (seg(20, ".index"), None, "missing: recovery rebuilds it from the log at the next load")]


# -- cursors ----------------------------------------------------------------------------------------------
def flip_state_byte(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[-3] ^= 0x01
    path.write_bytes(bytes(raw))


def test_a_damaged_newest_cursor_copy_is_recovered_to_the_last_good_one(stored):
    flip_state_byte(stored / "cursors" / "s.cursor.1")
    report = verify(stored)
    assert not report.ok and report.cursor_problems == 1 and ranges(report) == []
    [s] = [c for c in report.cursors if c.subscription == "s"]
    assert (s.newest, s.newest_lost) == ("s.cursor", True)
    assert [(c.file, c.generation, c.damage) for c in s.damaged] == [("s.cursor.1", 2, "CRC mismatch")]
    assert s.outcome.startswith("recovered to its last good copy (s.cursor)")


def test_a_damaged_older_cursor_copy_loses_nothing(stored):
    flip_state_byte(stored / "cursors" / "s.cursor")
    [s] = [c for c in verify(stored).cursors if c.subscription == "s"]
    assert (s.newest, s.newest_lost, s.outcome) == ("s.cursor.1", False,
                                                     "an older copy is damaged: the newest is used, nothing is lost")


def test_a_cursor_with_no_usable_copy_starts_again_at_the_log_start(stored):
    (stored / "cursors" / "other.cursor").write_bytes(b"")
    [other] = [c for c in verify(stored).cursors if c.subscription == "other"]
    assert other.newest is None and other.damaged[0].damage == "empty file"
    assert other.outcome.startswith("no copy is usable: recovered to the log's start")


# -- stray files ------------------------------------------------------------------------------------------
def test_stray_files_are_listed_and_left_where_they_are(stored):
    (stored / (seg(30, ".index") + ".tmp")).write_bytes(b"x")
    (stored / seg(90, ".index")).write_bytes(ENTRY.pack(90, 0))
    (stored / "cursors" / "s.cursor.1.tmp").write_bytes(b"half")
    (stored / "cursors" / "old.cursor.damaged").write_bytes(b"?")
    (stored / "cursors" / "notes.txt").write_text("hi")
    report = verify(stored)
    assert report.ok  # stray files are no damage
    assert [s.file for s in report.stray_files] == [
        seg(30, ".index") + ".tmp", seg(90, ".index"), "cursors/notes.txt", "cursors/old.cursor.damaged",
        "cursors/s.cursor.1.tmp"]
    assert (stored / "cursors" / "s.cursor.1.tmp").read_bytes() == b"half"


# -- a running broker's log -------------------------------------------------------------------------------
def test_a_live_log_is_verified_up_to_the_sizes_it_had_when_the_verification_started(tmp_path):
    log = ManagedLog(tmp_path, max_segment_entries=10)
    for i in range(25):
        log.append(bytes([i + 1]) * DATA, 1, 1000 + i)
    log.sync()
    view = [LiveSegment(v.base_offset, v.size, v.end_offset) for v in log.retention_view()]
    for i in range(3):  # the active segment grows after the view was taken
        log.append(b"later" * 8, 1, 2000 + i)
    patch(tmp_path / seg(10), 4 * FRAME + 50, b"\x99")  # damage no read has reached
    report = verify(tmp_path, live=view)
    assert report.live and report.index_problem_count == 0
    assert [(s.base_offset, s.size, s.frames, s.end_offset) for s in report.segments] == [
        (0, SEGMENT, 10, 10), (10, SEGMENT, 9, 20), (20, 5 * FRAME, 5, 25)]
    assert ranges(report) == [(10, DamagedRange(14, 15, 4 * FRAME, 5 * FRAME, "CRC mismatch"))]
    assert log.damaged_ranges() == []  # the running log was not touched
    log.close()


def test_a_segment_removed_while_it_is_verified_is_not_damage(stored):
    view = [LiveSegment(0, SEGMENT, 10), LiveSegment(10, SEGMENT, 20)]
    (stored / seg(0)).unlink()  # retention got there first
    report = verify_files(stored, None, live=view)
    assert report.segments[0].removed and report.ok


def test_a_verification_stops_when_asked(stored):
    with pytest.raises(Stopped):
        verify_files(stored, None, stop=lambda: True)


def test_a_missing_folder_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        verify_files(tmp_path / "gone", None)
