"""The durability policy: receipts wait for the fsync that covers them; a failed fsync fails them."""
from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from broker_core.errors import PersistenceError
from broker_core.storage.journal import Journal
from broker_core.storage.sync_threads import SyncThreads

POOLS = {"thread-pool": lambda: ThreadPoolExecutor(2), "sync-threads": lambda: SyncThreads(2)}
"""The fsyncs run the same on any Executor and on the broker's own sync threads (``SyncThreads.run``)."""
make_pool = POOLS["sync-threads"]


@pytest.fixture(autouse=True, params=sorted(POOLS))
def pool(request, monkeypatch):
    monkeypatch.setattr(f"{__name__}.make_pool", POOLS[request.param])


class FakeLog:
    def __init__(self, fail: bool = False) -> None:
        self.end_offset = 0
        self.durable_end_offset = 0
        self.syncs = 0
        self.fail = fail
        self.cut_fails = False
        self.rollbacks: list[int] = []
        self.gate = threading.Event()
        self.gate.set()

    def sync(self) -> int:
        self.gate.wait(10)
        if self.fail:
            raise PersistenceError("cannot make entries durable: No space left on device")
        self.syncs += 1
        self.durable_end_offset = self.end_offset
        return self.end_offset

    def rollback_to(self, offset: int) -> int:
        if self.cut_fails:
            raise OSError(5, "Input/output error")
        self.rollbacks.append(offset)
        self.end_offset = max(offset, self.durable_end_offset)
        return self.end_offset


def _run(mode: str, log: FakeLog, scenario):
    async def main():
        with make_pool() as executor:
            confirmed = []
            journal = Journal(log, mode, 0, executor, lambda: confirmed.append(journal.confirmed_end_offset))
            try:
                return await scenario(journal, confirmed)
            finally:
                await journal.close()
    return asyncio.run(main())


async def _append(journal: Journal, log: FakeLog, end: int) -> asyncio.Future:
    log.end_offset = end
    done = asyncio.get_running_loop().create_future()
    journal.appended(end, lambda error: done.set_result(error))
    return done


def test_group_mode_releases_receipts_only_after_the_covering_sync():
    log = FakeLog()
    log.gate.clear()  # hold the fsync

    async def scenario(journal, confirmed):
        first = await _append(journal, log, 5)
        second = await _append(journal, log, 9)
        await asyncio.sleep(0.05)
        assert not first.done() and not second.done() and journal.confirmed_end_offset == 0
        log.gate.set()
        assert await asyncio.wait_for(first, 10) is None
        assert await asyncio.wait_for(second, 10) is None
        return journal.confirmed_end_offset, confirmed

    end, confirmed = _run("group", log, scenario)
    assert end == 9 and confirmed[-1] == 9
    assert log.syncs <= 2  # appends made while an fsync ran share the next one


def test_group_mode_fails_waiting_receipts_when_fsync_fails():
    log = FakeLog(fail=True)

    async def scenario(journal, confirmed):
        error = await asyncio.wait_for(await _append(journal, log, 3), 10)
        later = await asyncio.wait_for(await _append(journal, log, 4), 10)
        return error, later, journal.confirmed_end_offset

    error, later, end = _run("group", log, scenario)
    assert isinstance(error, PersistenceError) and "No space left" in error.message
    assert isinstance(later, PersistenceError) and end == 0
    assert log.rollbacks == [0, 0]  # each failure cuts the unsynced entries out of the log


def test_a_failed_fsync_fails_only_its_receipts_and_the_next_append_succeeds():
    log = FakeLog()

    async def scenario(journal, confirmed):
        assert await asyncio.wait_for(await _append(journal, log, 2), 10) is None
        log.fail = True
        failed = await asyncio.wait_for(await _append(journal, log, 5), 10)
        log.fail = False  # space was freed
        after = await asyncio.wait_for(await _append(journal, log, log.end_offset + 1), 10)
        return failed, after, journal.confirmed_end_offset

    failed, after, end = _run("group", log, scenario)
    assert isinstance(failed, PersistenceError) and after is None
    assert log.rollbacks == [2] and end == 3


def test_a_journal_whose_rollback_fails_is_fenced():
    log = FakeLog(fail=True)
    log.cut_fails = True

    async def scenario(journal, confirmed):
        first = await asyncio.wait_for(await _append(journal, log, 1), 10)
        log.fail = False
        later = await asyncio.wait_for(await _append(journal, log, 2), 10)
        return first, later, journal.fenced

    first, later, fenced = _run("group", log, scenario)
    assert isinstance(first, PersistenceError) and later is fenced and "reloaded" in fenced.message


def test_always_mode_fails_the_append_whose_fsync_fails():
    log = FakeLog(fail=True)

    async def scenario(journal, confirmed):
        future = await _append(journal, log, 4)
        return future.result(), journal.confirmed_end_offset

    error, end = _run("always", log, scenario)
    assert isinstance(error, PersistenceError) and end == 0 and log.rollbacks == [0]


@pytest.mark.parametrize("mode, syncs", [("always", 1), ("never", 0)])
def test_always_syncs_before_confirming_and_never_confirms_at_once(mode, syncs):
    log = FakeLog()

    async def scenario(journal, confirmed):
        future = await _append(journal, log, 7)
        assert future.done() and future.result() is None
        return journal.confirmed_end_offset

    assert _run(mode, log, scenario) == 7
    assert log.syncs == syncs


def test_a_disk_that_fails_every_fsync_is_logged_once_with_the_count_when_the_journal_closes(caplog):
    log = FakeLog(fail=True)

    async def scenario(journal, confirmed):
        for end in range(1, 101):
            await _append(journal, log, end)

    caplog.set_level("ERROR", logger="broker_core.storage.journal")
    _run("always", log, scenario)
    lines = [r.getMessage() for r in caplog.records if "event=journal_sync_failed" in r.getMessage()]
    assert len(lines) == 2 and "occurrences=1" in lines[0] and "occurrences=99" in lines[1]
