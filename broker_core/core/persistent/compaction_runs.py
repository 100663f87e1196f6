"""A persistent topic partition's compaction runs: :class:`TopicCompaction` starts them (admin or
``compactionThreshold``), runs them off the event loop, swaps in the new compacted ledger, holds retention
as Pulsar's ``__compaction`` cursor does, and keeps Pulsar's status and stats of the last run.

- **Off the loop:** a run (:func:`~broker_core.core.persistent.compaction.compact`) runs on the compaction
  thread, one run per topic at a time (a second request gets :class:`CompactionAlreadyRunning`, Pulsar's
  409). It reads the raw log in bounded chunks through the event loop (the log is owned by the loop's
  thread), so producers are never blocked by more than one chunk read.
- **Retention:** once a topic was compacted (or while its first run is pending), the raw messages at and after
  the horizon are held as by a durable cursor whose mark-delete position is the horizon (Pulsar's
  ``__compaction`` subscription): retention only removes what the compacted ledger already covers.
- **Tombstones:** a run keeps the tombstones a compacted reader the broker knows of may still have to read,
  from :meth:`~broker_core.core.persistent.compacted_readers.TombstoneKeeping.floor` on; its new ledger is
  made current on the event loop, right after checking that no reader that came meanwhile needs a tombstone
  the run removed (else the run is made again, once: see
  :mod:`~broker_core.core.persistent.compacted_readers`).
- **Threshold:** every ``brokerServiceCompactionMonitorIntervalInSeconds`` a run starts when the backlog not
  yet compacted exceeds :attr:`TopicCompaction.threshold` bytes (the ``compactionThreshold`` policy, topic
  then namespace then ``brokerServiceCompactionThresholdInBytes``; 0: off). As Pulsar measures it: after a
  first run, the bytes after the horizon; before, the whole topic when it has no durable subscription, else
  the backlog of its slowest one.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from broker_core.clock import Clock
from broker_core.config import BrokerConfig
from broker_core.errors import CompactionAlreadyRunning, DataLost
from broker_core.core.persistent.compacted_readers import TombstoneKeeping
from broker_core.core.persistent.compaction import (
    FOLDER, CompactedLedger, CompactionResult, CompactionStopped, compact, describe, load)
from broker_core.storage.stored_entry import StoredEntry

log = logging.getLogger(__name__)

_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pulsarlike-compaction")
"""Compaction runs one at a time in the broker (Pulsar's compactor executor): a run is CPU work and the
machine's cores serve producers first."""

READ_TIMEOUT_S = 60.0
"""A raw read waits this long for the event loop (a loop gone without closing the topic ends the run)."""

NOT_RUN, RUNNING, SUCCESS, ERROR = "NOT_RUN", "RUNNING", "SUCCESS", "ERROR"


class CompactionRecord:
    """Pulsar's ``CompactionRecord`` of a topic: the last run and the counts since the topic loaded."""

    def __init__(self) -> None:
        self.last_removed = 0
        self.last_succeed_ms = 0
        self.last_failed_ms = 0
        self.last_duration_ms = 0
        self.removed_total = 0
        self.succeed = 0
        self.failed = 0
        self.duration_total_ms = 0
        self.read_bytes = 0
        self.written_bytes = 0
        self.ledger: CompactedLedger | None = None

    def stats(self) -> dict[str, int | float]:
        """The ``compaction`` section of Pulsar's topic stats (its four fields), then the figures of Pulsar's
        ``pulsar_compaction_*`` metrics since the topic loaded (absent until a first run or a compacted ledger,
        as Pulsar exports them only for topics with a compaction record)."""
        out: dict[str, int | float] = {
            "lastCompactionRemovedEventCount": self.last_removed,
            "lastCompactionSucceedTimestamp": self.last_succeed_ms,
            "lastCompactionFailedTimestamp": self.last_failed_ms,
            "lastCompactionDurationTimeInMills": self.last_duration_ms}
        if self.succeed or self.failed or self.ledger is not None:
            seconds = self.duration_total_ms / 1000
            out.update({
                "removedEventCount": self.removed_total, "succeedCount": self.succeed, "failedCount": self.failed,
                "durationTimeInMills": self.duration_total_ms,
                "readThroughput": self.read_bytes / seconds if seconds else 0.0,
                "writeThroughput": self.written_bytes / seconds if seconds else 0.0,
                "compactedEntriesCount": len(self.ledger) if self.ledger is not None else 0,
                "compactedEntriesSize": self.ledger.size_bytes if self.ledger is not None else 0,
                # pulsarlike: how many of those entries are tombstones kept for compacted readers behind them
                "compactedTombstonesCount": self.ledger.tombstones if self.ledger is not None else 0})
        return out


class TopicCompaction:
    """The compaction of the partition ``topic`` stored in ``directory``. ``read_raw(start, end, max)``
    reads raw entries (on the loop's thread), ``durable_end()`` is where a run stops, ``backlog_bytes(offset)``
    the stored bytes from an offset on, ``slowest()`` the slowest durable subscription's first unacknowledged
    offset (None: no durable subscription), ``compacted_positions()`` where the compacted readers the topic
    knows read next (see :class:`~broker_core.core.persistent.compacted_readers.TombstoneKeeping`)."""

    def __init__(self, topic: str, directory: Path, config: BrokerConfig, clock: Clock,
                 read_raw: Callable[[int, int], list[StoredEntry]], durable_end: Callable[[], int],
                 backlog_bytes: Callable[[int], int], slowest: Callable[[], int | None],
                 is_closed: Callable[[], bool], compacted_positions: Callable[[], Iterable[int]] = tuple) -> None:
        self.topic = topic
        self.folder = directory / FOLDER
        self._config = config
        self._clock = clock
        self._read_raw = read_raw
        self._durable_end = durable_end
        self._backlog_bytes = backlog_bytes
        self._slowest = slowest
        self._is_closed = is_closed
        self.compacted: CompactedLedger | None = load(self.folder)
        """The current compacted state (None: never compacted); replaced whole after each run."""
        self.status = NOT_RUN
        self.last_error = ""
        self.record = CompactionRecord()
        self.record.ledger = self.compacted
        self.threshold = 0
        """Compact automatically above this many bytes of backlog not yet compacted (0: off)."""
        self.keeping = TombstoneKeeping(clock, config.compactionTombstoneRetentionSeconds * 1000,
                                        compacted_positions, self.compacted)
        """Which tombstones a run keeps."""
        self._run: asyncio.Future | None = None
        self._timer: asyncio.TimerHandle | None = None

    # ------------------------------------------------------------------ state
    @property
    def running(self) -> bool:
        return self._run is not None and not self._run.done()

    def held_from(self) -> int | None:
        """The first raw offset retention must keep for compaction (None: nothing held)."""
        if self.compacted is not None:
            return self.compacted.horizon
        return 0 if self.running else None

    def backlog_estimate(self) -> int:
        """Pulsar's ``checkCompaction`` estimate, in bytes, of what a run would read raw."""
        if self.compacted is not None:
            return self._backlog_bytes(self.compacted.horizon)
        slowest = self._slowest()
        return self._backlog_bytes(0 if slowest is None else slowest)

    # ------------------------------------------------------------------ runs
    def trigger(self) -> asyncio.Future:
        """Start a run now (on the running loop); raises :class:`CompactionAlreadyRunning` while one runs. The
        future is done when the run is (made again or not), with its :class:`CompactionResult`."""
        if self.running:
            raise CompactionAlreadyRunning(f"Compaction already in progress on {self.topic}", topic=self.topic)
        loop = asyncio.get_running_loop()
        end = self._durable_end()
        floor = self.keeping.floor()
        self.status, self.last_error = RUNNING, ""
        log.info("event=compaction_started topic=%s horizon=%d tombstones_from=%s", self.topic, end, floor)
        self._run = loop.create_future()
        self._attempt(loop, end, self.compacted, floor, self._clock.now_ms(), again=False)
        return self._run

    def _attempt(self, loop: asyncio.AbstractEventLoop, end: int, previous: CompactedLedger | None,
                 floor: int | None, started_ms: int, *, again: bool) -> None:
        def read_raw(start: int, stop: int) -> list[StoredEntry]:  # on the compaction thread
            return asyncio.run_coroutine_threadsafe(self._read_on_loop(start, stop), loop).result(READ_TIMEOUT_S)

        work = loop.run_in_executor(_THREAD, lambda: compact(
            self.folder, previous, read_raw, end, retain_null_key=self._config.topicCompactionRetainNullKey,
            keep_tombstones_from=floor, stopping=self._is_closed, current=False))
        work.add_done_callback(lambda done: self._sealed(done, loop, end, previous, started_ms, again))

    async def _read_on_loop(self, start: int, stop: int) -> list[StoredEntry]:
        """Raw entries from ``start``; a damaged range fails the run (``DataLost`` names it), or with
        ``autoSkipNonRecoverableData`` is passed over (logged): its keys keep what the rest of the log says."""
        if self._is_closed():
            raise CompactionStopped("the topic closed during compaction; the previous compacted state stays")
        while True:
            try:
                return self._read_raw(start, stop)
            except DataLost as lost:
                if not self._config.autoSkipNonRecoverableData or lost.end_offset <= start:
                    raise
                log.warning("event=compaction_skipped_damaged_range topic=%s first_offset=%d last_offset=%d",
                            self.topic, lost.start_offset, lost.end_offset - 1)
                start = lost.end_offset
                if start >= stop:
                    return []

    def _sealed(self, done: asyncio.Future, loop: asyncio.AbstractEventLoop, end: int,
                previous: CompactedLedger | None, started_ms: int, again: bool) -> None:
        """On the loop: the run's ledger is written; make it current (what readers read from now on), unless a
        reader that came meanwhile needs a tombstone it removed: then run again (see the module's doc)."""
        error = done.exception() if not done.cancelled() else asyncio.CancelledError()
        result: CompactionResult | None = None
        if error is None:
            result = done.result()
            redo = None if again or self._is_closed() else self.keeping.redo_floor(result, previous)
            if redo is not None:
                result.sealed.discard()
                log.info("event=compaction_again topic=%s reason=reader_before_removed_tombstone"
                         " removed_tombstone=%d tombstones_from=%d", self.topic, result.dropped_tombstone, redo)
                self._attempt(loop, end, previous, redo, started_ms, again=True)
                return
            try:
                result.sealed.make_current()
            except Exception as exc:  # the previous state stays current
                result.sealed.discard()
                error = exc
        self._finished(result, error, started_ms)

    def _finished(self, result: CompactionResult | None, error: BaseException | None, started_ms: int) -> None:
        now = self._clock.now_ms()
        record = self.record
        record.last_duration_ms = now - started_ms
        record.duration_total_ms += record.last_duration_ms
        if error is None:
            self.compacted = result.ledger  # the previous one stays readable by whoever still holds it
            record.ledger = result.ledger
            record.read_bytes += result.read_bytes
            record.written_bytes += result.ledger.size_bytes
            self.status = SUCCESS
            record.last_removed, record.last_succeed_ms = result.removed, now
            record.removed_total += result.removed
            record.succeed += 1
            log.info("event=compaction_done topic=%s horizon=%d read=%d kept=%d removed=%d tombstones=%d"
                     " duration_ms=%d", self.topic, result.ledger.horizon, result.read, result.kept, result.removed,
                     result.tombstones, record.last_duration_ms)
            self._run.set_result(result)
        else:
            self.status, self.last_error = ERROR, describe(error)
            record.last_failed_ms = now
            record.failed += 1
            log.error("event=compaction_failed topic=%s error=%r", self.topic, error)
            if isinstance(error, asyncio.CancelledError):
                self._run.cancel()
            else:
                self._run.set_exception(error)
                self._run.exception()  # recorded and logged: no "never retrieved" warning when nobody awaits it

    def check_threshold(self) -> bool:
        """Start a run when the backlog not yet compacted exceeds the threshold; True when one started."""
        if self.threshold <= 0 or self.running or self._is_closed():
            return False
        estimate = self.backlog_estimate()
        if estimate <= self.threshold:
            return False
        log.info("event=compaction_threshold_reached topic=%s backlog_bytes=%d threshold=%d", self.topic,
                 estimate, self.threshold)
        self.trigger()
        return True

    def start_checks(self) -> None:
        """Check the threshold at its interval, on the running loop (none when there is none)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._timer = loop.call_later(self._config.brokerServiceCompactionMonitorIntervalInSeconds, self._every)

    def _every(self) -> None:
        if self._is_closed():
            return
        try:
            self.check_threshold()
        except Exception:  # a failed check must not stop the next ones
            log.exception("event=topic_check_failed topic=%s check=compaction_threshold", self.topic)
        self._timer = asyncio.get_running_loop().call_later(
            self._config.brokerServiceCompactionMonitorIntervalInSeconds, self._every)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    async def stopped(self) -> None:
        """Wait for the run, if any, to end (the topic closing makes it stop at its next read)."""
        if self._run is not None:
            try:
                await asyncio.shield(self._run)
            except Exception:  # already recorded and logged
                pass

    def close(self) -> None:
        if self.compacted is not None:
            self.compacted.close()
