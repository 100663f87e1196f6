"""Recovery, step by step (see broker_core.storage.recovery), each with a crafted broken file."""
import random

import pytest

from broker_core.errors import DataLost
from broker_core.storage.format import HEADER_SIZE, MAGIC_BYTES, encode_header
from pathlib import Path

from broker_core.storage.log import CLEAN_CLOSE_FILE, ManagedLog

SEG0 = "00000000000000000000.log"


def data(i: int, size: int = 40) -> bytes:
    return bytes((i * 31 + k) % 251 for k in range(size))


def build(path, sizes, count=2, **opts):
    """A log with one entry per size, synced but not closed cleanly (as a crash leaves it); returns
    (entries, frame start positions in segment 0)."""
    log = ManagedLog(path, **opts)
    entries = [log.append(data(i, s), count, 1000 + i) for i, s in enumerate(sizes)]
    log.close()
    (Path(path) / CLEAN_CLOSE_FILE).unlink()
    positions, pos = [], 0
    for s in sizes:
        positions.append(pos)
        pos += HEADER_SIZE + s
    return entries, positions


def reopen_expecting(path, expected, **opts):
    """Reopen; the log must hold exactly ``expected`` and accept the next append at the right offset."""
    log = ManagedLog(path, **opts)
    assert log.read(0, 10_000) == expected
    end = expected[-1].end_offset if expected else 0
    assert log.end_offset == log.durable_end_offset == end
    assert log.append(b"after", 1, 0).offset == end
    log.sync()
    log.close()
    again = ManagedLog(path, **opts)
    assert again.read(0, 10_000) == expected + again.read(end)
    assert [e.data for e in again.read(end)] == [b"after"]
    again.close()


# -- step 1: listing --------------------------------------------------------------------------------
def test_stray_temp_files_and_orphan_indexes_are_removed(tmp_path):
    entries, _ = build(tmp_path, [10, 20])
    (tmp_path / "00000000000000000000.index.tmp").write_bytes(b"junk")
    (tmp_path / "00000000000000000099.index").write_bytes(b"junk")
    reopen_expecting(tmp_path, entries)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["00000000000000000000.index", SEG0, CLEAN_CLOSE_FILE]


def test_a_zero_length_segment_file_is_an_empty_log_at_its_base(tmp_path):
    (tmp_path / "00000000000000000042.log").write_bytes(b"")
    log = ManagedLog(tmp_path)
    assert (log.start_offset, log.end_offset) == (42, 42)
    assert log.append(b"x", 1, 0).offset == 42


# -- step 2: sealed segments ----------------------------------------------------------------------------
def sealed_log(tmp_path):
    log = ManagedLog(tmp_path, max_segment_bytes=200)
    entries = [log.append(data(i), 1, i) for i in range(12)]
    log.close()
    return entries, sorted(tmp_path.glob("*.log"))


def test_a_sealed_segment_without_its_index_gets_it_rebuilt(tmp_path):
    entries, segs = sealed_log(tmp_path)
    index = segs[0].with_suffix(".index")
    original = index.read_bytes()
    index.unlink()
    assert ManagedLog(tmp_path).read(0, 100) == entries
    assert index.read_bytes() == original


def test_a_sealed_segment_with_a_garbage_index_is_still_read_correctly(tmp_path):
    entries, segs = sealed_log(tmp_path)
    segs[0].with_suffix(".index").write_bytes(bytes(24) + b"\xff" * 40)
    assert ManagedLog(tmp_path).read(0, 100) == entries


def test_a_sealed_index_pointing_between_frames_is_rebuilt_not_reported(tmp_path):
    log = ManagedLog(tmp_path, max_segment_bytes=10_000)
    entries = [log.append(data(i, 3000), 1, i) for i in range(6)]
    log.close()
    index = sorted(tmp_path.glob("*.index"))[0]
    original = index.read_bytes()
    index.write_bytes(original[:16] + (1).to_bytes(8, "big") + (100).to_bytes(8, "big"))
    assert ManagedLog(tmp_path).read(0, 100) == entries
    assert index.read_bytes() == original


def test_a_missing_middle_segment_is_a_damaged_range_the_log_reads_and_writes_around(tmp_path):
    entries, segs = sealed_log(tmp_path)
    segs[1].unlink()
    log = ManagedLog(tmp_path)  # it opens: a missing file costs its messages, not the topic
    lost = [e for e in entries if int(segs[1].stem) <= e.offset < int(segs[2].stem)]
    before = [e for e in entries if e.offset < lost[0].offset]
    assert log.read(0, 100) == before
    with pytest.raises(DataLost) as err:
        log.read(lost[0].offset)
    assert (err.value.start_offset, err.value.end_offset) == (lost[0].offset, lost[-1].end_offset)
    assert err.value.path == segs[0].name and str(tmp_path) not in err.value.message
    assert log.read(lost[-1].end_offset, 100) == entries[entries.index(lost[-1]) + 1:]
    assert log.append(b"more", 1, 0).offset == entries[-1].end_offset


def test_a_bit_flip_in_a_sealed_segment_is_found_when_read_and_costs_one_entry(tmp_path):
    log = ManagedLog(tmp_path, max_segment_bytes=10_000)
    entries = [log.append(data(i, 3000), 1, i) for i in range(6)]
    log.close()
    segs = sorted(tmp_path.glob("*.log"))
    raw = bytearray(segs[0].read_bytes())
    raw[HEADER_SIZE + 3] ^= 0x10  # the first frame's data; the index lets open skip it
    segs[0].write_bytes(bytes(raw))
    log = ManagedLog(tmp_path)
    assert log.read(entries[-1].offset) == [entries[-1]]
    with pytest.raises(DataLost) as err:
        log.read(0)
    assert (err.value.path, err.value.position, err.value.start_offset, err.value.end_offset) == (segs[0].name, 0, 0, 1)
    assert log.read(1, 100) == entries[1:]  # the next entry on is read
    assert log.append(b"more", 1, 0).offset == entries[-1].end_offset  # writers are not stalled


# -- steps 3 and 4: the last segment, torn tails ----------------------------------------------------------
def test_the_last_frame_truncated_at_every_byte_is_a_torn_tail(tmp_path):
    entries, positions = build(tmp_path / "orig", [30, 50, 70])
    raw = (tmp_path / "orig" / SEG0).read_bytes()
    for cut in range(positions[2], len(raw)):
        d = tmp_path / f"cut{cut}"
        d.mkdir()
        (d / SEG0).write_bytes(raw[:cut])
        reopen_expecting(d, entries[:2])
        assert (d / SEG0).stat().st_size == positions[2] + HEADER_SIZE + len(b"after")


@pytest.mark.parametrize("zeros", [1, 2, 31, 32, 33, 511, 512, 513, 4095, 4096, 8192, 12 * 1024])
def test_a_zero_filled_tail_is_a_torn_tail(tmp_path, zeros):
    entries, _ = build(tmp_path, [30, 50, 70])
    with open(tmp_path / SEG0, "ab") as f:
        f.write(bytes(zeros))
    reopen_expecting(tmp_path, entries)


@pytest.mark.parametrize("sector_start", [0, 512, 1024, 1536])
def test_a_zeroed_sector_inside_the_last_frame_is_a_torn_tail(tmp_path, sector_start):
    entries, positions = build(tmp_path, [100, 2000])
    raw = bytearray((tmp_path / SEG0).read_bytes())
    at = positions[1] + sector_start
    raw[at:at + 512] = bytes(512)
    (tmp_path / SEG0).write_bytes(bytes(raw))
    reopen_expecting(tmp_path, entries[:1])


def test_a_huge_length_in_the_last_header_is_a_torn_tail_not_an_allocation(tmp_path):
    entries, positions = build(tmp_path, [30, 50])
    raw = bytearray((tmp_path / SEG0).read_bytes())
    raw[positions[1] + 4:positions[1] + 8] = b"\xff\xff\xff\xff"
    (tmp_path / SEG0).write_bytes(bytes(raw))
    reopen_expecting(tmp_path, entries[:1])


def damaged_last_segment_opens(path, entries, lost, position, end_offset):
    """The log opens: the entries before and after the damaged range are read, a read of the range's
    ``lost`` offsets fails with its position, writes go on after ``end_offset`` in a new segment, and the
    damaged bytes are kept for inspection."""
    size = (path / SEG0).stat().st_size
    log = ManagedLog(path)
    assert log.read(0, 100) == [e for e in entries if e.end_offset <= lost[0]]
    with pytest.raises(DataLost) as err:
        log.read(lost[0])
    assert (err.value.path, err.value.position) == (SEG0, position)
    assert (err.value.start_offset, err.value.end_offset) == lost
    assert str(position) in err.value.message and str(path) not in err.value.message
    assert log.read(lost[1], 100) == [e for e in entries if e.offset >= lost[1]]
    assert log.end_offset == end_offset
    appended = log.append(b"after", 1, 0)
    log.sync()
    assert appended.offset == end_offset and log.read(end_offset) == [appended]
    log.close()
    assert (path / SEG0).stat().st_size == size
    return log


def test_a_bit_flip_in_the_middle_of_the_last_segment_costs_its_frame_only(tmp_path):
    entries, positions = build(tmp_path, [30, 50, 70, 90])
    raw = bytearray((tmp_path / SEG0).read_bytes())
    raw[positions[1] + HEADER_SIZE + 10] ^= 0x04
    (tmp_path / SEG0).write_bytes(bytes(raw))
    damaged_last_segment_opens(tmp_path, entries, (2, 4), positions[1], entries[-1].end_offset)


def test_a_zeroed_header_in_the_middle_is_a_damaged_range_not_skipped_silently(tmp_path):
    entries, positions = build(tmp_path, [30, 50, 70])
    raw = bytearray((tmp_path / SEG0).read_bytes())
    raw[positions[1]:positions[1] + HEADER_SIZE] = bytes(HEADER_SIZE)
    (tmp_path / SEG0).write_bytes(bytes(raw))
    damaged_last_segment_opens(tmp_path, entries, (2, 4), positions[1], entries[-1].end_offset)


def test_a_valid_frame_after_a_gap_in_its_offsets_keeps_the_frame_and_loses_the_gap(tmp_path):
    entries, _ = build(tmp_path, [30])
    stray = data(9)
    with open(tmp_path / SEG0, "ab") as f:
        f.write(encode_header(stray, entries[-1].end_offset + 5, 1, 0) + stray)
    log = ManagedLog(tmp_path)
    with pytest.raises(DataLost) as err:
        log.read(2)
    assert (err.value.start_offset, err.value.end_offset, err.value.position) == (2, 7, HEADER_SIZE + 30)
    assert [e.data for e in log.read(7)] == [stray]
    assert log.append(b"after", 1, 0).offset == 8  # offsets are never handed out twice
    log.close()


def test_a_frame_written_twice_at_the_end_loses_nothing_and_the_log_goes_on(tmp_path):
    entries, positions = build(tmp_path, [30, 50])
    raw = (tmp_path / SEG0).read_bytes()
    (tmp_path / SEG0).write_bytes(raw + raw[positions[1]:])
    log = ManagedLog(tmp_path)
    assert log.read(0, 100) == entries  # the copy is stepped over: no message lost, no error
    assert log.append(b"after", 1, 0).offset == entries[-1].end_offset
    log.close()


def test_garbage_tails_never_produce_an_invented_entry(tmp_path):
    rng = random.Random(1234)
    entries, _ = build(tmp_path / "orig", [30, 50])
    raw = (tmp_path / "orig" / SEG0).read_bytes()
    for trial in range(60):
        tail = bytearray(rng.randbytes(rng.randrange(1, 3000)))
        if trial % 2:  # plant the magic, and sometimes a plausible header, so resync has work to do
            at = rng.randrange(len(tail))
            tail[at:at + 4] = MAGIC_BYTES
        d = tmp_path / f"g{trial}"
        d.mkdir()
        (d / SEG0).write_bytes(raw + bytes(tail))
        reopen_expecting(d, entries)


def test_a_segment_of_zeros_recovers_to_an_empty_log(tmp_path):
    (tmp_path / SEG0).write_bytes(bytes(4096))
    reopen_expecting(tmp_path, [])


# -- step 5: the last segment's index -------------------------------------------------------------------
def test_the_last_segments_index_is_rebuilt_from_the_scan(tmp_path):
    build(tmp_path, [5000, 10, 5000, 10])
    index = tmp_path / "00000000000000000000.index"
    original = index.read_bytes()
    index.write_bytes(b"\x00" * 7)
    ManagedLog(tmp_path).close()
    assert index.read_bytes() == original and len(original) == 3 * 16


# -- step 6: offsets after recovery -------------------------------------------------------------------------
def test_end_offset_continues_from_the_last_valid_frame_across_segments(tmp_path):
    log = ManagedLog(tmp_path, max_segment_bytes=200)
    entries = [log.append(data(i), 3, i) for i in range(10)]
    log.close()
    (tmp_path / CLEAN_CLOSE_FILE).unlink()  # a crash: the cut is a torn tail
    last = sorted(tmp_path.glob("*.log"))[-1]
    raw = last.read_bytes()
    last.write_bytes(raw[:-5])
    log = ManagedLog(tmp_path, max_segment_bytes=200)
    assert log.end_offset == entries[-2].end_offset == 27
    assert log.read(0, 100) == entries[:-1]


# -- step 3's shortcut: a clean close ---------------------------------------------------------------------
def test_a_cleanly_closed_log_opens_without_scanning_its_last_segment(tmp_path, monkeypatch):
    log = ManagedLog(tmp_path, max_segment_entries=5)
    entries = [log.append(data(i), 1, 1000 + i) for i in range(3)]
    log.close()
    from broker_core.storage import segment

    monkeypatch.setattr(segment.Segment, "recover_last", lambda self: pytest.fail("scanned"))
    again = ManagedLog(tmp_path, max_segment_entries=5)
    assert again.read(0, 100) == entries and again.end_offset == 3
    assert [again.append(data(9), 1, 0).offset for _ in range(3)][-1] == 5  # entry count known: it rolls
    assert len(list(tmp_path.glob("*.log"))) == 2


def test_a_last_segment_that_changed_size_since_the_clean_close_is_scanned(tmp_path):
    log = ManagedLog(tmp_path)
    entries = [log.append(data(i), 1, 1000 + i) for i in range(3)]
    log.close()
    with open(tmp_path / SEG0, "ab") as f:
        f.write(b"\x00" * 100)  # zeros after a clean close: a torn append of a later run
    reopen_expecting(tmp_path, entries)
