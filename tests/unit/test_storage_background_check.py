"""Recovery step 3, background half: a last segment reloaded through the clean-close shortcut and too big to
verify before its first append (``VERIFY_BEFORE_APPEND_MAX_BYTES``) is verified on a worker thread up to its
size at the load; what it finds is recorded on the owner thread (one ``event=log_range_damaged`` ERROR line)
without any read reaching it, and the segment rolls at the next append."""
import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from broker_core.clock import FakeClock
from broker_core.config import BrokerConfig
from broker_core.core.persistent.topic import PersistentTopic
from broker_core.errors import DataLost
from broker_core.storage.damage import DamagedRange
from broker_core.storage.format import HEADER_SIZE
from broker_core.storage.log import CLEAN_CLOSE_FILE, VERIFY_BEFORE_APPEND_MAX_BYTES, ManagedLog
from broker_core.types import TopicName

DATA = 1000
FRAME = HEADER_SIZE + DATA
MESSAGES = VERIFY_BEFORE_APPEND_MAX_BYTES // FRAME + 50  # one segment a little over the limit
DAMAGED = 300  # the offset whose frame gets a flipped byte
SEG0 = "00000000000000000000.log"


def closed_cleanly(path: Path, messages: int = MESSAGES) -> None:
    log = ManagedLog(path)
    for i in range(messages):
        log.append(bytes([i % 250 + 1]) * DATA, 1, 1000 + i)
    log.close()
    assert (path / CLEAN_CLOSE_FILE).exists()


def flip(path: Path, position: int) -> None:
    raw = bytearray(path.read_bytes())
    raw[position] ^= 0x40
    path.write_bytes(bytes(raw))


def damaged_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.ERROR and "event=log_range_damaged" in r.getMessage()]


EXPECTED = DamagedRange(DAMAGED, DAMAGED + 1, DAMAGED * FRAME, (DAMAGED + 1) * FRAME, "CRC mismatch")


def test_a_big_reloaded_last_segment_is_verified_off_the_owner_thread_and_its_damage_merged_there(tmp_path, caplog):
    closed_cleanly(tmp_path)
    flip(tmp_path / SEG0, DAMAGED * FRAME + HEADER_SIZE + 7)
    caplog.set_level(logging.ERROR)
    log = ManagedLog(tmp_path)
    check = log.background_check()
    assert check is not None and log.background_check() is None  # taken once
    first = log.append(b"at once", 1, 0)  # appends do not wait for the check
    assert first.offset == MESSAGES
    with ThreadPoolExecutor(1) as executor:
        found = executor.submit(check.scan).result()
    assert found == [EXPECTED]
    assert log.damaged_ranges() == [] and damaged_lines(caplog) == []  # nothing recorded from the worker thread
    check.merge(found)
    assert log.damaged_ranges() == [(0, EXPECTED)]
    [line] = damaged_lines(caplog)
    assert f"first_offset={DAMAGED}" in line and "lost_messages=1" in line
    second = log.append(b"after", 1, 0)  # a damaged segment takes no more appends: the log rolled
    log.sync()
    assert second.offset == MESSAGES + 1 and log.segment_base(second.offset) == MESSAGES + 1
    assert log.read(MESSAGES, 10) == [first, second]
    with pytest.raises(DataLost):
        log.read(DAMAGED, 1)
    log.close()


def test_the_check_reads_only_the_bytes_the_segment_had_at_the_load(tmp_path):
    closed_cleanly(tmp_path)
    log = ManagedLog(tmp_path)
    check = log.background_check()
    for i in range(5):
        log.append(b"later", 1, 0)
    log.sync()
    with open(tmp_path / SEG0, "r+b") as f:  # bytes appended after the load are not the check's
        f.seek(0, 2)
        f.write(b"\x00" * 100)
    assert check.scan() == []
    log.close()


def test_a_small_reloaded_last_segment_is_verified_before_the_first_append_as_before(tmp_path):
    closed_cleanly(tmp_path, messages=100)
    flip(tmp_path / SEG0, 10 * FRAME + HEADER_SIZE)
    log = ManagedLog(tmp_path)
    assert log.background_check() is None
    log.append(b"x", 1, 0)
    assert [found.start_offset for _, found in log.damaged_ranges()] == [10]
    log.close()


def test_what_a_check_finds_after_the_log_closed_is_not_recorded(tmp_path):
    closed_cleanly(tmp_path)
    flip(tmp_path / SEG0, DAMAGED * FRAME + HEADER_SIZE + 7)
    log = ManagedLog(tmp_path)
    check = log.background_check()
    found = check.scan()
    log.close()
    check.merge(found)
    assert log.damaged_ranges() == []
    assert check.scan() is None  # a check started after the close stops at once


def test_a_loading_topic_runs_the_check_on_its_executor(tmp_path, caplog):
    folder = tmp_path / "t"
    closed_cleanly(folder)
    flip(folder / SEG0, DAMAGED * FRAME + HEADER_SIZE + 7)
    caplog.set_level(logging.ERROR)

    async def load_and_wait(executor) -> list:
        topic = PersistentTopic(TopicName.parse("persistent://public/default/t"), folder, BrokerConfig(), executor,
                                FakeClock())
        # one worker: this runs after the check; its completion reaches the loop after the check's
        await asyncio.get_running_loop().run_in_executor(executor, lambda: None)
        await asyncio.sleep(0)
        found = topic.log.damaged_ranges()
        await topic.close()
        return found

    with ThreadPoolExecutor(1) as executor:
        assert asyncio.run(load_and_wait(executor)) == [(0, EXPECTED)]
    assert len(damaged_lines(caplog)) == 1
