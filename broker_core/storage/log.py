"""ManagedLog: the segmented, append-only log of one topic partition.

Files in the log's directory: ``<base offset, 20 digits>.log`` segments of frames
(:mod:`broker_core.storage.format`) and their sparse ``.index`` (:mod:`broker_core.storage.index`).
Appends go to the last (active) segment with one ``os.writev`` and no fsync; :meth:`ManagedLog.sync`
makes them durable (the broker's group commit calls it from a worker thread). A segment is rolled by
size, entry count or age, and the old one is fsynced before it is closed, so only the last segment can
be torn.

Retention removes whole segments from the front only (never the active one), in two steps whose
crash safety :mod:`broker_core.storage.log_retention` describes: :meth:`ManagedLog.detach_segments_before`
on the owner thread, then :meth:`ManagedLog.remove_segments` on any thread.

Recovery (run by the constructor) is the numbered procedure in :mod:`broker_core.storage.recovery`.
Frames are written by :mod:`broker_core.storage.frame_writer` (its crash point is how tests/crash tears a
write) and read from disk by :mod:`broker_core.storage.log_reads`: garbage never yields an entry.
"""
from __future__ import annotations

import bisect
import logging
import threading
from collections.abc import Sequence
from pathlib import Path

from broker_core.clock import SYSTEM_CLOCK, Clock
from broker_core.errors import AlreadyClosed, CorruptLog, MessageTooBig, PersistenceError
from broker_core.log_limits import LogLimiter
from broker_core.storage import log_reads, log_retention
from broker_core.storage.cache import TailCache
from broker_core.storage.files import UNLIMITED, FileBudget
from broker_core.storage.frame_writer import write_frames
from broker_core.storage.format import HEADER_SIZE, MAX_FRAME_DATA, FrameHeader, encode_header
from broker_core.storage.paths import remove_tree
from broker_core.storage.log_retention import SegmentView
from broker_core.storage.damage import DamagedRange
from broker_core.storage.recovery import (  # noqa: F401  (START_OFFSET_FILE, CLEAN_CLOSE_FILE: re-exported)
    CLEAN_CLOSE_FILE, START_OFFSET_FILE, record_clean_close, recover_segments)
from broker_core.storage.segment import READ_CHUNK, Segment
from broker_core.storage.segment_repair import scan_counts
from broker_core.storage.stored_entry import StoredEntry

log = logging.getLogger(__name__)

VERIFY_BEFORE_APPEND_MAX_BYTES = 512 << 10
"""A last segment reloaded through the clean-close shortcut is verified before the first append lands in it
when it is at most this big (a scan of 10 ms for 100-byte entries, 50 ms for the smallest). A bigger one
takes appends at once and is verified on a worker thread (:meth:`ManagedLog.background_check`, which the topic
runs when it loads): a scan on the event loop would stall every client (2.3 s for 40 MB of 100-byte entries),
and sealing it instead would hand its messages to retention at every restart (a topic without subscriptions
lost them). Damage found there fences the segment (it rolls at the next append); a read reaching it first
finds it as reads find damage in sealed segments."""


class ManagedLog:
    """A topic partition's log. Owned by one thread; :meth:`sync` may run on another."""

    def __init__(self, directory: str | Path, *, max_segment_bytes: int = 256 << 20,
                 max_segment_age_ms: int = 4 * 3600_000, cache_bytes: int = 64 << 20,
                 max_entry_bytes: int = 64 << 20, clock: Clock = SYSTEM_CLOCK,
                 max_segment_entries: int = 0, files: FileBudget = UNLIMITED, name: str = "") -> None:
        """``files``: the broker's budget of open files; ``name`` names the log in errors sent to clients
        (the topic; never a server path)."""
        if not 0 < max_entry_bytes <= MAX_FRAME_DATA:
            raise ValueError(f"max_entry_bytes must be in 1..{MAX_FRAME_DATA}, got {max_entry_bytes}")
        if max_segment_bytes <= 0 or max_segment_age_ms <= 0 or max_segment_entries < 0:
            raise ValueError("max_segment_bytes and max_segment_age_ms must be positive, max_segment_entries"
                             " >= 0 (0: no limit)")
        self.directory = Path(directory)
        self.max_segment_bytes = max_segment_bytes
        self.max_segment_entries = max_segment_entries
        self.max_segment_age_ms = max_segment_age_ms
        self.max_entry_bytes = max_entry_bytes
        self._clock = clock
        self._files = files
        self.name = name or self.directory.name
        self._lock = threading.Lock()  # guards the active segment's fd, end_offset and rolls
        self._cache: TailCache[StoredEntry] = TailCache(cache_bytes)
        self._segments: list[Segment] = []
        self._bases: list[int] = []
        self._closed = False
        self._failures = LogLimiter(log, clock=clock)  # a full disk fails every append: one line per interval
        self.directory.mkdir(parents=True, exist_ok=True)
        self._recover()

    def _recover(self) -> None:
        segments, self.end_proven = recover_segments(self.directory, self._clock.now_ms(), self._files, self.name)
        """Whether recovery proved that no offset at or beyond ``end_offset`` was ever handed out (see
        :class:`~broker_core.storage.recovery.Recovered`): a cursor beyond it is then impossible."""
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self.start_offset = segments[0].base_offset  # step 6
        self.end_offset = segments[-1].end_offset
        self.durable_end_offset = self.end_offset

    # -- appends ---------------------------------------------------------------------------------
    @property
    def _active(self) -> Segment:
        return self._segments[-1]

    def _check(self, data: bytes, num_messages: int) -> bytes:
        if self._closed:
            raise AlreadyClosed(f"{self.name}: the topic is closed (unloading, deleted or the broker stopping); retry")
        if len(data) > self.max_entry_bytes:
            raise MessageTooBig(size=len(data), limit=self.max_entry_bytes)
        if num_messages < 1:
            raise ValueError(f"num_messages must be >= 1, got {num_messages}")
        return data if isinstance(data, bytes) else bytes(data)

    def append(self, data: bytes, num_messages: int, publish_time: int) -> StoredEntry:
        """Append one entry (no fsync); its offset is the current ``end_offset``."""
        return self.append_many([(data, num_messages, publish_time)])[0]

    def append_many(self, items: Sequence[tuple[bytes, int, int]]) -> list[StoredEntry]:
        """Append entries with a single ``os.writev`` (no fsync)."""
        checked = [(self._check(d, n), n, t) for d, n, t in items]
        if not checked:
            return []
        with self._lock:
            self._maybe_roll(sum(HEADER_SIZE + len(d) for d, _, _ in checked), len(checked))
            seg, offset = self._active, self.end_offset
            # track the newest publish time only when it is known for the whole segment (retention, seek)
            track = seg.max_publish_time is not None or seg.size == 0
            newest = seg.max_publish_time
            buffers, headers = [], []
            for data, count, publish_time in checked:
                header = encode_header(data, offset, count, publish_time)
                buffers += (header, data)
                headers.append(FrameHeader(len(data), offset, count, publish_time, 0))
                offset += count
            self._write(seg, buffers)
            entries = []
            for header, (data, _, _) in zip(headers, checked):
                seg.appended(header)
                if track and (newest is None or header.publish_time > newest):
                    newest = header.publish_time
                entry = StoredEntry(header.offset, header.count, header.publish_time,
                                    seg.base_offset, data)
                self._cache.push(entry)
                entries.append(entry)
            if track:
                seg.max_publish_time = newest
            self.end_offset = offset
        return entries

    def _write(self, seg: Segment, buffers: list[bytes]) -> None:
        write_frames(seg, buffers, name=self.name, failures=self._failures)

    def skip_to(self, offset: int) -> None:
        """Move the end to ``offset`` with a gap frame, fsynced: offsets below it that the log does not
        hold are never handed out (recovery found that cursors or deduplication had seen them)."""
        with self._lock:
            if offset <= self.end_offset:
                return
            self._maybe_roll(HEADER_SIZE)
            seg = self._active
            start = self.end_offset
            header = encode_header(b"", start, offset - start, 0)
            self._write(seg, [header])
            seg.appended(FrameHeader(0, start, offset - start, 0, 0))
            self.end_offset = offset
            self._cache.clear()  # the cache holds a contiguous run of entries: it starts after the gap
        self.sync()

    def rollback_to(self, offset: int) -> int:
        """Remove the appended entries at and after ``offset`` that are not durable yet (their fsync
        failed): the active segment is cut back and fsynced. Sealed segments were fsynced when they
        rolled, so the cut never goes below the active segment's base. Returns the new end offset."""
        with self._lock:
            seg = self._active
            offset = max(offset, seg.base_offset, self.durable_end_offset)
            if offset >= self.end_offset:
                return self.end_offset
            position = seg.locate(offset)
            _, _, count = scan_counts(seg, position)
            seg.truncate(position, offset, count)
            self.end_offset = offset
            self._cache.truncate_from(offset)
            self._failures.error("rolled_back", "event=log_rolled_back segment=%s end_offset=%d"
                                 " reason=sync_failed", seg.path, offset)
            return offset

    def background_check(self) -> BackgroundCheck | None:
        """Recovery step 3 for a last segment reloaded through the clean-close shortcut and too big to verify
        before its first append: the check to run off the owner thread (None: there is none to run). Once
        taken, appends no longer wait for it."""
        seg = self._active
        if seg.verified or seg.size <= VERIFY_BEFORE_APPEND_MAX_BYTES:
            return None
        seg.verified = True
        return BackgroundCheck(self, seg)

    def _merge_damage(self, seg: Segment, found: list[DamagedRange]) -> None:
        with self._lock:
            if found and not self._closed and seg in self._segments:
                seg.add_damage(found)

    def _maybe_roll(self, incoming: int, entries: int = 1) -> None:
        seg, now = self._active, self._clock.now_ms()
        if not seg.verified:  # recovery step 3, shortcut
            if seg.size <= VERIFY_BEFORE_APPEND_MAX_BYTES:
                seg.verify()
            else:
                seg.verified = True  # too big to scan here: verified lazily by reads
        if seg.size == 0:
            return
        too_many = (self.max_segment_entries and seg.entry_count is not None
                    and seg.entry_count + entries > self.max_segment_entries)
        if (not too_many and not seg.damage and seg.size + incoming <= self.max_segment_bytes
                and now - seg.created_ms < self.max_segment_age_ms):
            return
        seg.seal()  # fsync before closing: only the last segment can ever be torn
        self.durable_end_offset = max(self.durable_end_offset, seg.end_offset)
        new = Segment.create(self.directory, self.end_offset, now, files=self._files, label=self.name)
        self._segments.append(new)
        self._bases.append(new.base_offset)

    def sync(self) -> int:
        """fsync everything appended so far; returns the durable end offset. Thread-safe."""
        with self._lock:
            if self._closed:
                return self.durable_end_offset
            target = self.end_offset
            writer = self._active.writer
            fd = writer.__enter__()  # held: a roll may seal the segment meanwhile; it closes after us
        try:
            writer.sync_held(fd)
        except OSError as exc:
            raise PersistenceError(f"{self.name}: cannot make entries durable: {exc.strerror or exc}",
                                   reason=exc.strerror or str(exc)) from None
        finally:
            writer.__exit__()
        with self._lock:
            self.durable_end_offset = max(self.durable_end_offset, target)
            return self.durable_end_offset

    # -- reads -----------------------------------------------------------------------------------
    def read(self, start_offset: int, max_entries: int = 100, max_bytes: int = 8 << 20,
             end_offset: int | None = None) -> list[StoredEntry]:
        """Entries from the one containing ``start_offset``, below ``end_offset`` (default: durable).

        At most ``max_entries``; stops before exceeding ``max_bytes`` of data, but returns at least one
        entry when there is one. Recent entries come from the tail cache.
        """
        limit = self.durable_end_offset if end_offset is None else min(end_offset, self.end_offset)
        start_offset = max(start_offset, self.start_offset)
        if start_offset >= limit or max_entries <= 0:
            return []
        i = self._cache.index_of(start_offset)
        source = (self._cache.entries_from(i) if i is not None
                  else log_reads.disk_entries(self._segments, self._bases, start_offset,
                                              min(READ_CHUNK, max(max_bytes, 4096))))
        out: list[StoredEntry] = []
        total = 0
        try:
            for entry in source:
                if entry.offset >= limit or len(out) >= max_entries:
                    break
                if out and total + len(entry.data) > max_bytes:
                    break
                out.append(entry)
                total += len(entry.data)
        except CorruptLog:
            if not out:
                raise
            # the entries before a damaged range are intact: they are returned, the next read fails
        return out

    def segment_base(self, offset: int) -> int:
        """The base offset (ledger id) of the segment holding ``offset``."""
        return self._bases[max(0, bisect.bisect_right(self._bases, offset) - 1)]

    def damaged_ranges(self) -> list[tuple[int, DamagedRange]]:
        """``(segment base, range)`` of every damaged range known so far, oldest first (reads find more as
        they go: a sealed segment is verified lazily)."""
        return [(seg.base_offset, found) for seg in self._segments for found in seg.damage]

    @property
    def damaged_messages(self) -> int:
        """Messages lost in the damaged ranges known so far."""
        return sum(seg.damage.messages for seg in self._segments)

    def entry_containing(self, offset: int) -> StoredEntry | None:
        """The stored entry holding message ``offset`` (appended, not necessarily durable)."""
        if not self.start_offset <= offset < self.end_offset:
            return None
        found = self.read(offset, 1, end_offset=self.end_offset)
        return found[0] if found and found[0].offset <= offset < found[0].end_offset else None

    def offset_for_timestamp(self, publish_time_ms: int, from_offset: int = 0) -> int:
        """Offset of the first entry with ``publish_time >= publish_time_ms`` (``end_offset`` if none),
        looking only at the entries from the one containing ``from_offset`` on (message expiry starts at
        the slowest cursor). Sealed segments whose newest message is older are skipped unread; within a
        segment the search starts where its index bisects to (:meth:`Segment.time_search_start`)."""
        return log_reads.offset_for_timestamp(self._segments, self._bases, publish_time_ms, from_offset,
                                              self.end_offset)

    # -- retention and stats ----------------------------------------------------------------------
    def delete_segments_before(self, offset: int) -> int:
        """Delete whole segments whose every offset is below ``offset``; returns bytes freed.

        The active segment is never deleted.
        """
        return self.remove_segments(self.detach_segments_before(offset))

    def detach_segments_before(self, offset: int) -> list[Segment]:
        """Retention, step 1 (owner thread): take the whole segments below ``offset`` out of the log
        (never the active one); ``start_offset`` moves and reads no longer see them. Their files stay
        until :meth:`remove_segments`."""
        detached: list[Segment] = []
        with self._lock:
            while len(self._segments) > 1 and self._segments[1].base_offset <= offset:
                detached.append(self._segments.pop(0))
                self._bases.pop(0)
            self.start_offset = self._segments[0].base_offset
            self._cache.evict_below(self.start_offset)
        return detached

    def remove_segments(self, segments: Sequence[Segment]) -> int:
        """Retention, step 2 (any thread; one call at a time per log): close and unlink detached
        segments oldest first, fsyncing the directory after each; returns bytes freed."""
        return log_retention.remove_segments(self.directory, segments)

    def retention_view(self) -> list[SegmentView]:
        """Every segment, oldest first, as :mod:`broker_core.core.retention_rules` reads them (the newest
        publish time of a sealed segment is read on first use, then cached)."""
        return [SegmentView(seg) for seg in self._segments]

    @property
    def size_bytes(self) -> int:
        return sum(seg.size for seg in self._segments)

    def segments(self) -> list[dict]:
        """Per-segment stats for ``stats-internal``."""
        return [{"ledgerId": seg.base_offset, "entries": seg.count_entries(),
                 "size": seg.size, "firstOffset": seg.base_offset, "lastOffset": seg.end_offset - 1,
                 **({"damaged": [found.as_dict() for found in seg.damage]} if seg.damage else {})}
                for seg in self._segments]

    # -- lifecycle -------------------------------------------------------------------------------
    def close(self) -> None:
        """fsync and close; idempotent."""
        with self._lock:
            if self._closed:
                return
            active = self._active
            try:
                active.fsync()
                self.durable_end_offset = self.end_offset
                if not active.damage and active.entry_count is not None:
                    newest = -1 if active.max_publish_time is None else active.max_publish_time
                    record_clean_close(self.directory, active.base_offset, active.size, active.entry_count, newest,
                                       self.end_offset)
            except OSError as exc:  # the unsynced tail is recovered (or found torn) on the next load
                log.error("event=log_close_sync_failed log=%s error=%r", self.directory, exc)
            for seg in self._segments:
                seg.close()
            self._cache.clear()
            self._closed = True
        self._failures.flush()

    def delete(self) -> None:
        """Close and remove the whole directory."""
        self.close()
        remove_tree(self.directory.parent, self.directory)

    def __repr__(self) -> str:
        return (f"ManagedLog({str(self.directory)!r}, start={self.start_offset}, end={self.end_offset}, "
                f"durable={self.durable_end_offset}, segments={len(self._segments)})")


class BackgroundCheck:
    """A reloaded last segment verified off the owner thread (:meth:`ManagedLog.background_check`): :meth:`scan`
    runs on a worker thread and reads the segment's bytes as they were at the load through a segment object
    of its own (the log's is never touched there); :meth:`merge`, on the owner thread, records what it found:
    one ERROR line per range (``event=log_range_damaged``), and the segment rolls at the next append."""

    def __init__(self, managed_log: ManagedLog, seg: Segment) -> None:
        self._log = managed_log
        self._seg = seg
        # what the worker thread reads, taken here, on the owner thread
        self._path, self._base, self._label = seg.path, seg.base_offset, seg.label
        self._size, self._end_offset = seg.size, seg.end_offset

    def scan(self) -> list[DamagedRange] | None:
        """Worker thread: the segment's damaged ranges (None: the log closed first, or the scan failed)."""
        from broker_core.storage.verify import Stopped, segment_damage  # the offline checker's: not at every load

        try:
            return segment_damage(self._path.parent, self._base, self._size, self._end_offset, label=self._label,
                                  stop=lambda: self._log._closed)
        except Stopped:
            return None
        except Exception:  # the segment stays verified lazily, by the reads that reach it
            log.exception("event=segment_check_failed segment=%s", self._path)
            return None

    def merge(self, found: list[DamagedRange] | None) -> None:
        """Owner thread: record the ranges :meth:`scan` found in the segment (still the log's, the log open)."""
        self._log._merge_damage(self._seg, found or [])


__all__ = ["BackgroundCheck", "ManagedLog", "SegmentView", "StoredEntry"]
