"""WriteFault: a topic that cannot write stays so until a probe of the failed size, or a write, succeeds."""
from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Future

import pytest

from broker_core.clock import FakeClock
from broker_core.errors import PersistenceError
from broker_core.core.write_fault import PROBE_FILE, WriteFault, room_for

FULL = PersistenceError("t: cannot store the entry: No space left on device", reason="No space left on device")


class Inline:
    """An executor that runs the probe at once."""

    def submit(self, fn, *args) -> Future:
        done: Future = Future()
        try:
            done.set_result(fn(*args))
        except Exception as exc:
            done.set_exception(exc)
        return done


class Disk:
    """The probe: fails while ``full``; records the sizes asked for."""

    def __init__(self) -> None:
        self.full = True
        self.asked: list[int] = []

    def __call__(self, size: int) -> None:
        self.asked.append(size)
        if self.full:
            raise OSError(28, "No space left on device")


class Timer:
    def __init__(self, callback) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Timers:
    """The scheduler: timers run when the test says so."""

    def __init__(self) -> None:
        self.due: list[Timer] = []

    def __call__(self, delay_s: float, callback) -> Timer:
        timer = Timer(callback)
        self.due.append(timer)
        return timer

    async def fire(self) -> None:
        timers, self.due = [t for t in self.due if not t.cancelled], []
        for timer in timers:
            timer.callback()
        await asyncio.sleep(0)  # the probe's report comes back through call_soon_threadsafe


def fault(disk: Disk, timers: Timers) -> WriteFault:
    return WriteFault("t", disk, Inline(), FakeClock(), timers)


def test_a_failed_write_holds_waiters_until_a_probe_of_the_failed_size_succeeds():
    async def run() -> None:
        disk, timers, woken = Disk(), Timers(), []
        writes = fault(disk, timers)
        writes.failed(FULL, 200_000)
        writes.failed(FULL, 10)
        writes.wait(lambda: woken.append("p1"))
        assert not writes.can_write and woken == []
        await timers.fire()
        assert disk.asked == [200_000] and not writes.can_write and woken == []
        disk.full = False
        await timers.fire()
        assert writes.can_write and woken == ["p1"] and timers.due == []
    asyncio.run(run())


def test_a_successful_write_ends_the_state_at_once_and_forgotten_waiters_are_not_called():
    async def run() -> None:
        disk, timers, woken = Disk(), Timers(), []
        writes = fault(disk, timers)
        writes.failed(FULL, 100)

        def gone() -> None:
            woken.append("gone")
        writes.wait(gone)
        writes.wait(lambda: woken.append("kept"))
        writes.forget(gone)
        writes.succeeded()
        assert writes.can_write and woken == ["kept"]
        writes.wait(lambda: woken.append("now"))  # a writable topic does not hold anyone
        assert woken == ["kept", "now"]
    asyncio.run(run())


def test_a_closed_topic_stops_probing():
    async def run() -> None:
        disk, timers = Disk(), Timers()
        writes = fault(disk, timers)
        writes.failed(FULL, 100)
        writes.close()
        await timers.fire()
        assert disk.asked == []
    asyncio.run(run())


def test_every_failed_write_is_counted_in_one_line(caplog):
    async def run() -> None:
        writes = fault(Disk(), Timers())
        for _ in range(500):
            writes.failed(FULL, 100)
        writes.succeeded()
    caplog.set_level(logging.INFO, logger="broker_core.core.write_fault")
    asyncio.run(run())
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 4, lines  # first failure, cannot_write, the count of the other 499, can_write_again
    assert "occurrences=499" in lines[2] and "event=topic_can_write_again" in lines[3]


def test_the_probe_leaves_no_file_behind_and_fails_where_it_cannot_write(tmp_path):
    room_for(tmp_path, 1 << 20)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(OSError):
        room_for(tmp_path / "missing", 10)
    assert PROBE_FILE.endswith(".tmp")  # recovery step 1 removes one a crash left
