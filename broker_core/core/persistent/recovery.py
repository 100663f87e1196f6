"""What a topic checks when it loads: its durable state against the log it recovered (:func:`open_log`).

The log recovers on its own (:mod:`broker_core.storage.log`): a torn tail is cut, a damaged segment is
fenced. But a topic also stores other things that name offsets -- the cursors of its durable
subscriptions and the deduplication snapshot -- and they are written at other times than the log. When
the log lost its tail (a power loss in ``journalSyncMode=never``, a damaged last frame, an emptied
segment), they can point beyond it. And a cursor's own files can be damaged. Then:

1. Each subscription's cursor is its newest stored copy that verifies (:mod:`broker_core.storage.cursor_store`,
   steps 1-4) and, when the log proves its end (:attr:`ManagedLog.end_proven`: closed cleanly, nothing
   lost at its end), acknowledges nothing at or beyond that end. If a newer copy may have been lost, or the
   newest was impossible, the subscription is recovered -- redeliver rather than lose -- to its last good
   copy (moved up to the log's first offset if below it), else to the log's start (everything stored is
   delivered again); one ERROR line ``event=cursor_recovered`` says from where, and the recovered cursor is
   saved over both copies so the next load is clean. A damaged copy proven older than the one used costs
   nothing (WARNING). A cursor with no usable copy whose name is a hash that no copy proves is set aside
   (``*.damaged``, ERROR ``event=cursor_lost``). Only that subscription notices: readers, producers and the
   other subscriptions load as always. When the end is not proven, a cursor beyond it stays (step 5).
2. Each cursor that acknowledged offsets at or beyond the recovered end is reported at ERROR, with how
   many acknowledged messages were lost and where (the cursor itself is kept: its positions stay true).
3. A cursor whose first unacknowledged offset lies before the log's first stored offset is reported at
   ERROR too (retention never deletes what a subscription has not acknowledged: files went missing).
4. A deduplication snapshot covering offsets the log no longer holds would drop a producer's resend of
   a lost message as a duplicate: it is discarded (ERROR), so deduplication is rebuilt from the log.
5. The next offset the log hands out is ``max(log end, every cursor position, the snapshot's offset)``:
   the log skips to it with a gap frame, so an offset a consumer (or a Spark checkpoint) has seen is
   never given to another message. A damaged segment the log fenced (recovery steps 2 and 4c in
   :mod:`broker_core.storage.recovery`) is inside the log end: its offsets stay taken though unreadable,
   so a cursor inside it is neither lost nor moved, and its consumers get ``CorruptLog`` until it is moved
   past.

The delayed-delivery index is not stored (it is rebuilt from the log after each load), so it needs no
check.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Iterable

from broker_core.clock import Clock
from broker_core.config import BrokerConfig
from broker_core.core.persistent.dedup import discard_snapshot, stored_snapshot_offset
from broker_core.protocol.entry_limits import FRAME_PADDING
from broker_core.storage.cursor import ManagedCursor
from broker_core.storage.cursor_store import CursorStore, StoredCursor
from broker_core.storage.files import FileBudget
from broker_core.storage.log import ManagedLog

log = logging.getLogger("broker_core.core.persistent.topic")


def _acked_at_or_after(cursor: ManagedCursor, offset: int) -> tuple[int, int]:
    """(acknowledged offsets at or after ``offset``, the position after the highest one)."""
    count = max(0, cursor.mark_delete_offset + 1 - offset)
    high = cursor.mark_delete_offset + 1
    for start, end in cursor.individually_acked:
        high = max(high, end)
        if end > offset:
            count += end - max(start, offset)
    return count, high


def _impossible(cursor: ManagedCursor, end_offset: int) -> str:
    """Why ``cursor`` cannot be true of a log that provably never handed out ``end_offset`` ("": it can)."""
    if cursor.mark_delete_offset >= end_offset:
        return f"markDelete {cursor.mark_delete_offset} at or beyond the log end {end_offset}"
    ranges = cursor.individually_acked
    if ranges and ranges[-1][1] > end_offset:
        return f"acknowledged range {list(ranges[-1])} beyond the log end {end_offset}"
    return ""


def recover_cursor(topic: str, stored: StoredCursor, start_offset: int, end_offset: int,
                   end_proven: bool) -> tuple[ManagedCursor | None, bool]:
    """Step 1 for one subscription: ``(its cursor, whether it must be saved again)``; the cursor is None when
    its name is unknown (no copy to give back)."""
    reasons = [f"{copy.file}: {copy.damage}" for copy in stored.damaged]
    candidates = [(copy.file, copy.cursor) for copy in stored.usable if copy.cursor is not None]  # newest first
    chosen: ManagedCursor | None = None
    for file, cursor in candidates:
        why = _impossible(cursor, end_offset) if end_proven else ""
        if not why:
            chosen = cursor
            break
        reasons.append(f"{file}: {why}")
    if not reasons:
        return chosen, False
    reason = "; ".join(reasons)
    if chosen is not None and chosen is candidates[0][1] and not stored.newest_lost:
        log.warning("event=cursor_copy_damaged topic=%s subscription=%s reason=%r detail=%r", topic,
                    stored.name, reason, "an older copy; the newest is intact and used, nothing is lost")
        return chosen, True
    if stored.name is None:
        log.error("event=cursor_lost topic=%s files=%s reason=%r detail=%r", topic, ",".join(stored.files),
                  reason, "no copy of this cursor is usable and its subscription's name (hashed in the file name)"
                  " cannot be read: the files are renamed *.damaged; a consumer subscribing under that name"
                  " starts at its initial position")
        return None, False
    if chosen is not None:
        source = "last_good"
        if chosen.mark_delete_offset < start_offset - 1:  # retention went past it after it was saved
            chosen.ack_cumulative(start_offset - 1)
        lost = "the acknowledgments saved after the last good copy cannot be known"
    else:
        source = "log_start"
        chosen = ManagedCursor(stored.name, start_offset - 1)
        lost = "no good copy is left: every acknowledgment after the log's first offset is lost"
    redeliver_from = chosen.next_unacked(chosen.mark_delete_offset + 1)
    log.error("event=cursor_recovered topic=%s subscription=%s from=%s mark_delete_offset=%d redeliver_from=%d"
              " reason=%r detail=%r", topic, stored.name, source, chosen.mark_delete_offset, redeliver_from,
              reason, f"{lost}: the subscription may see redeliveries from offset {redeliver_from}")
    return chosen, True


def load_cursors(topic: str, store: CursorStore, managed_log: ManagedLog) -> dict[str, ManagedCursor]:
    """Step 1: every durable cursor of the partition, each damaged one recovered and saved again."""
    cursors: dict[str, ManagedCursor] = {}
    for stored in store.load():
        cursor, save = recover_cursor(topic, stored, managed_log.start_offset, managed_log.end_offset,
                                      managed_log.end_proven)
        try:
            if cursor is None:
                store.set_aside(stored)
            elif save:
                store.rewrite(cursor)
        except OSError as exc:  # the recovery holds in memory; the next save (or load) writes it again
            log.error("event=cursor_save_failed topic=%s subscription=%s error=%r", topic, stored.name, exc)
        if cursor is not None:
            cursors[cursor.name] = cursor
    return cursors


def next_offset_after_recovery(topic: str, start_offset: int, end_offset: int,
                               cursors: Iterable[ManagedCursor], snapshot_offset: int | None) -> tuple[int, bool]:
    """Steps 2-5: returns ``(the offset the log must continue at, whether the dedup snapshot must go)``."""
    high = end_offset
    for cursor in cursors:
        lost, position = _acked_at_or_after(cursor, end_offset)
        high = max(high, position)
        if lost:
            log.error("event=acknowledged_messages_lost topic=%s subscription=%s lost=%d from_offset=%d"
                      " to_offset=%d detail=%r", topic, cursor.name, lost, end_offset, position - 1,
                      "the subscription acknowledged messages the log no longer holds; new messages get"
                      " offsets after them")
        first_unacked = cursor.next_unacked(cursor.mark_delete_offset + 1)
        if first_unacked < start_offset:
            log.error("event=unacknowledged_messages_lost topic=%s subscription=%s from_offset=%d"
                      " to_offset=%d detail=%r", topic, cursor.name, first_unacked, start_offset - 1,
                      "messages the subscription had not acknowledged are no longer stored")
    stale = snapshot_offset is not None and snapshot_offset > end_offset
    if stale:
        high = max(high, snapshot_offset)  # type: ignore[type-var]
        log.error("event=dedup_snapshot_discarded topic=%s snapshot_offset=%d log_end_offset=%d detail=%r",
                  topic, snapshot_offset, end_offset, "the snapshot covers entries the log lost; deduplication"
                  " state is rebuilt from the log")
    if high > end_offset:
        log.error("event=log_end_moved topic=%s recovered_end_offset=%d next_offset=%d detail=%r", topic,
                  end_offset, high, "offsets that were handed out before the loss are not reused")
    return high, stale


def open_log(topic: str, directory: Path, config: BrokerConfig, clock: Clock,
             files: FileBudget) -> tuple[ManagedLog, CursorStore, dict[str, ManagedCursor]]:
    """Open the partition stored in ``directory``: its log (recovered, and moved past every offset handed
    out before, steps 2-5) and its durable cursors (step 1); a stale deduplication snapshot is discarded
    (step 4)."""
    managed_log = ManagedLog(
        directory,
        max_segment_bytes=config.managedLedgerMaxSizePerLedgerMbytes << 20,
        max_segment_age_ms=config.managedLedgerMaxLedgerRolloverTimeMinutes * 60_000,
        cache_bytes=config.managedLedgerCacheSizeMB << 20,
        max_entry_bytes=config.maxMessageSize + FRAME_PADDING + 64,
        clock=clock,
        max_segment_entries=config.managedLedgerMaxEntriesPerLedger,
        files=files,
        name=topic,
    )
    cursor_store = CursorStore(directory / "cursors")
    cursors = load_cursors(topic, cursor_store, managed_log)
    next_offset, stale_snapshot = next_offset_after_recovery(
        topic, managed_log.start_offset, managed_log.end_offset, cursors.values(),
        stored_snapshot_offset(directory))
    if stale_snapshot:
        discard_snapshot(directory)
    managed_log.skip_to(next_offset)
    return managed_log, cursor_store, cursors
