"""Recovery step 4c: the last segment of a cleanly closed log found damaged (zeroed blocks, a flipped byte)
costs the messages of its damaged range only: the frames before and after it are read, writes go on in a new
segment after its end, no offset is handed out twice, and the loss is one ERROR line with counts."""
import logging
from pathlib import Path

import pytest

from broker_core.errors import DataLost
from broker_core.storage.format import HEADER_SIZE
from broker_core.storage.log import CLEAN_CLOSE_FILE, ManagedLog

PER_SEGMENT = 3


def closed_cleanly(path: Path, n: int, size: int = 40) -> list:
    """``n`` entries of two messages each, three entries a segment, closed cleanly; returns the entries."""
    log = ManagedLog(path, max_segment_entries=PER_SEGMENT)
    entries = [log.append(bytes([i % 251 + 1]) * size, 2, 1000 + i) for i in range(n)]
    log.close()
    assert (path / CLEAN_CLOSE_FILE).exists()
    return entries


def last_segment(path: Path) -> Path:
    return sorted(path.glob("*.log"))[-1]


def damage(segment: Path, start: int, end: int | None = None, *, flip: bool = False) -> None:
    """Zero bytes ``[start, end)`` of ``segment`` in place, or flip one bit at ``start``: its size stays."""
    raw = bytearray(segment.read_bytes())
    if flip:
        raw[start] ^= 0x10
    else:
        end = len(raw) if end is None else min(end, len(raw))
        raw[start:end] = bytes(end - start)
    segment.write_bytes(bytes(raw))


def damaged_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.ERROR and "event=log_range_damaged" in r.getMessage()]


def reopen(path: Path) -> ManagedLog:
    return ManagedLog(path, max_segment_entries=PER_SEGMENT)


def test_a_flipped_byte_in_the_last_frame_costs_that_entry_and_writes_go_on_after_it(tmp_path, caplog):
    entries = closed_cleanly(tmp_path, 8)  # segments at offsets 0, 6, 12 (entries 6 and 7: offsets 12..15)
    damaged = last_segment(tmp_path)
    damage(damaged, damaged.stat().st_size - 3, flip=True)
    caplog.set_level(logging.ERROR)

    log = reopen(tmp_path)
    assert log.read(0, 100) == entries[:7]  # everything before the damaged entry
    with pytest.raises(DataLost) as err:
        log.read(14)
    assert (err.value.path, err.value.position) == (damaged.name, HEADER_SIZE + 40)
    assert (err.value.start_offset, err.value.end_offset) == (14, 16)
    new = log.append(b"after", 1, 0)
    log.sync()
    assert new.offset == 16 and log.read(16) == [new]  # 14..15 are never handed out again
    [line] = damaged_lines(caplog)
    assert "first_offset=14" in line and "end_offset=16" in line and "lost_messages=2" in line
    log.close()

    again = reopen(tmp_path)  # the damaged segment is now a sealed one, and keeps its damaged range
    assert again.read(0, 100) == entries[:7] and again.read(16) == [new]
    with pytest.raises(DataLost):
        again.read(14)
    assert again.append(b"later", 1, 0).offset == 17
    again.close()


FRAME = HEADER_SIZE + 2000


@pytest.mark.parametrize("zeroed, lost", [((0, 4096), (6, 12)), ((FRAME, 2 * FRAME), (8, 10)),
                                          ((2 * FRAME + 100, None), (10, 12)), ((0, None), (6, 12))],
                         ids=["first-block", "middle-frame", "tail", "whole-segment"])
def test_zeroed_blocks_in_the_last_segment_cost_their_frames_and_keep_their_offsets(tmp_path, zeroed, lost):
    entries = closed_cleanly(tmp_path, 6, size=2000)  # the last segment: entries 3..5, offsets 6..11
    segments = {p.name for p in tmp_path.glob("*.log")}
    damage(last_segment(tmp_path), *zeroed)

    log = reopen(tmp_path)
    assert log.read(0, 100) == [e for e in entries if e.end_offset <= lost[0]]
    with pytest.raises(DataLost) as err:
        log.read(lost[0])
    assert (err.value.start_offset, err.value.end_offset) == lost
    assert log.read(lost[1], 100) == [e for e in entries if e.offset >= lost[1]]
    assert log.append(b"after", 1, 0).offset == 12
    log.close()
    assert segments < {p.name for p in tmp_path.glob("*.log")}  # a new segment; the damaged one is kept


def test_a_clean_close_record_of_the_previous_format_still_keeps_every_offset(tmp_path):
    """Records written before step 4c name no end offset: each entry held at least one message."""
    closed_cleanly(tmp_path, 5)
    record = tmp_path / CLEAN_CLOSE_FILE
    record.write_text(" ".join(record.read_text().split()[:4]))
    damage(last_segment(tmp_path), 0)

    log = reopen(tmp_path)
    assert log.append(b"after", 1, 0).offset >= 8  # two entries since offset 6: at least 6..7 were used
    log.close()


def test_damage_the_load_did_not_read_is_found_before_the_first_append_lands_in_the_segment(tmp_path, caplog):
    entries = closed_cleanly(tmp_path, 6, size=3000)  # last segment: frames at 0, 3032, 6064; indexed: 0, 6064
    damaged = last_segment(tmp_path)
    damage(damaged, 0, HEADER_SIZE + 3000)  # before the index's last entry: the shortcut does not read it
    caplog.set_level(logging.ERROR)

    log = reopen(tmp_path)
    assert not damaged_lines(caplog)
    new = log.append(b"after", 1, 0)
    assert new.offset == 12 and len(damaged_lines(caplog)) == 1
    log.close()
    again = reopen(tmp_path)
    assert again.read(0, 100) == entries[:3] and again.read(12) == [new]  # from disk, not from a cache
    with pytest.raises(DataLost):
        again.read(6)
    assert again.read(8, 100) == [*entries[4:], new]
    again.close()


def test_deduplication_replays_the_log_past_a_damaged_range(tmp_path, caplog):
    """A topic with deduplication replays the log on load: a damaged range is passed over (ERROR), the
    topic loads, and sequence ids stored after the range are known."""
    from broker_core.core.persistent.dedup import Deduplication
    from tests.unit.test_dedup import append, metadata

    log = ManagedLog(tmp_path, max_segment_entries=PER_SEGMENT)
    for seq in range(8):
        append(log, metadata("p", seq))
    log.close()
    first = sorted(tmp_path.glob("*.log"))[0]
    damage(first, 0, 8)  # the first segment's first header (offset 0)
    caplog.set_level(logging.ERROR)

    dedup = Deduplication(tmp_path)  # no snapshot: the whole log is replayed
    dedup.recover(reopen(tmp_path))
    assert dedup.last_sequence_id("p") == 7
    skipped = [r.getMessage() for r in caplog.records if "event=dedup_replay_skipped_damage" in r.getMessage()]
    assert len(skipped) == 1 and "from_offset=0 to_offset=0" in skipped[0]


def test_a_large_reloaded_segment_takes_appends_without_a_scan_and_keeps_its_messages(tmp_path, monkeypatch):
    """Sealing it instead would hand its messages to retention at every restart (a topic without
    subscriptions lost them: tests/crash found it); scanning it would stall the event loop."""
    from broker_core.storage import log as log_module
    from broker_core.storage.segment import Segment

    monkeypatch.setattr(log_module, "VERIFY_BEFORE_APPEND_MAX_BYTES", 4096)
    entries = closed_cleanly(tmp_path, 5, size=3000)  # the last segment: two entries, over 4096 bytes
    segments = sorted(tmp_path.glob("*.log"))
    monkeypatch.setattr(Segment, "verify", lambda self: pytest.fail("a large segment was scanned"))

    log = reopen(tmp_path)
    new = log.append(b"after", 1, 0)
    assert new.offset == 10 and sorted(tmp_path.glob("*.log")) == segments  # no new segment, no scan
    log.close()
    monkeypatch.undo()
    again = reopen(tmp_path)
    assert again.read(0, 100) == [*entries, new]
    again.close()
