"""A topic's compaction runs (broker_core.core.persistent.compaction_runs): one at a time, off the event loop,
the new ledger swapped in whole, the status and stats of the last run, what retention must keep, the
threshold as Pulsar measures it."""
from __future__ import annotations

import asyncio
import threading

import pytest

from broker_core.clock import SYSTEM_CLOCK
from broker_core.config import BrokerConfig
from broker_core.core.persistent.compaction_runs import TopicCompaction
from broker_core.errors import CompactionAlreadyRunning
from tests.unit.test_compaction import Topic


class Runs:
    """A topic's log and its TopicCompaction (its raw reads run on the loop, as a broker's do)."""

    def __init__(self, tmp_path, slowest=None) -> None:
        self.topic = Topic(tmp_path)
        self.loop_threads: set[str] = set()
        self.closed = False
        self.compaction = TopicCompaction("t", tmp_path, BrokerConfig(), SYSTEM_CLOCK, self._read,
                                          self._end, lambda offset: 100 * (self.topic.log.end_offset - offset),
                                          lambda: slowest, lambda: self.closed)

    def _read(self, start, end):
        self.loop_threads.add(threading.current_thread().name)
        return self.topic.read_raw(start, end)

    def _end(self) -> int:
        return self.topic.log.sync()


def test_one_run_at_a_time_then_the_new_ledger_is_current(tmp_path):
    async def scenario():
        runs = Runs(tmp_path)
        runs.topic.send("a", b"a1")
        runs.topic.send("a", b"a2")
        assert runs.compaction.held_from() is None and runs.compaction.status == "NOT_RUN"
        run = runs.compaction.trigger()  # its reads wait for the loop: it cannot end before we await it
        assert runs.compaction.status == "RUNNING" and runs.compaction.held_from() == 0
        with pytest.raises(CompactionAlreadyRunning):
            runs.compaction.trigger()
        await run
        assert runs.compaction.status == "SUCCESS" and runs.compaction.compacted.horizon == 2
        assert runs.compaction.held_from() == 2
        assert runs.loop_threads == {threading.current_thread().name}  # raw reads on the loop's thread
        stats = runs.compaction.record.stats()
        assert stats["lastCompactionRemovedEventCount"] == 1 and stats["succeedCount"] == 1
        assert stats["compactedEntriesCount"] == 1

    asyncio.run(scenario())


def test_a_failed_run_keeps_the_previous_state_and_says_why(tmp_path):
    async def scenario():
        runs = Runs(tmp_path)
        runs.topic.send("a", b"a1")
        await runs.compaction.trigger()
        first = runs.compaction.compacted
        runs.topic.send("a", b"a2")
        runs.closed = True  # the topic closes: the run stops at its next read
        with pytest.raises(Exception):
            await runs.compaction.trigger()
        assert runs.compaction.compacted is first
        assert runs.compaction.status == "ERROR" and "closed" in runs.compaction.last_error
        assert runs.compaction.record.stats()["lastCompactionFailedTimestamp"] > 0

    asyncio.run(scenario())


@pytest.mark.parametrize("slowest, compacted_before, expected", [
    (None, False, 100 * 3),  # never compacted, no durable subscription: the whole topic
    (2, False, 100 * 1),  # never compacted: the slowest durable subscription's backlog
    (None, True, 100 * 1),  # compacted: what came after the horizon
])
def test_the_threshold_weighs_the_backlog_as_pulsar_does(tmp_path, slowest, compacted_before, expected):
    async def scenario():
        runs = Runs(tmp_path, slowest=slowest)
        for value in (b"1", b"2"):
            runs.topic.send("k", value)
        if compacted_before:
            await runs.compaction.trigger()
        runs.topic.send("k", b"3")
        assert runs.compaction.backlog_estimate() == expected
        runs.compaction.threshold = expected
        assert not runs.compaction.check_threshold()  # at the threshold: not above it
        runs.compaction.threshold = expected - 1
        assert runs.compaction.check_threshold()
        await runs.compaction.stopped()
        assert runs.compaction.status == "SUCCESS"

    asyncio.run(scenario())
