"""The files of a topic partition's compacted ledger (Pulsar's compacted ledger, see
:mod:`broker_core.core.persistent.compaction`), and :class:`CompactedLedger`, the read side.

In the topic's folder, ``compacted/``::

    HORIZON                      JSON {"horizon", "file", "entries", "bytes", "tombstones",
                                 "tombstones_from"}: the one current state
    <horizon, 20 digits>-<token>.ledger
                                 records, in offset order: header (offset u64, publish time i64,
                                 ledger id u64, messages u32, length u32, CRC32C u32) then the entry bytes

``tombstones`` is how many of the records are tombstones a run kept for compacted readers that may be behind
them, ``tombstones_from`` the offset from which it kept them (the horizon when none; both absent in a file
written before tombstones were kept: none). A run writes its ledger to ``.<token>.tmp`` (fsync), renames it to
its ``.ledger`` name (fsync the folder): :meth:`LedgerWriter.seal`. The broker then decides on its event loop
whether to use it (:meth:`SealedLedger.make_current`: ``HORIZON`` replaced atomically with
:func:`~broker_core.storage.atomic.atomic_write`, and only then the previous ledger removed) or not
(:meth:`SealedLedger.discard`). A SIGKILL anywhere before the ``HORIZON`` replace leaves the previous state;
:func:`load` removes what such a run left (temp files, a ledger ``HORIZON`` does not name).

A ledger is immutable once made; readers read it with ``os.pread`` on any thread. A ledger replaced by a
newer one stays readable (its file is open) until its last reader lets it go.
"""
from __future__ import annotations

import bisect
import json
import logging
import os
import struct
import weakref
from array import array
from pathlib import Path
from typing import BinaryIO

import google_crc32c

from broker_core.errors import CorruptLog
from broker_core.storage.atomic import atomic_write, fsync_directory
from broker_core.storage.stored_entry import StoredEntry

log = logging.getLogger(__name__)

FOLDER = "compacted"
POINTER = "HORIZON"
RECORD = struct.Struct(">QqQIII")
"""offset, publish time, ledger id, messages, length, CRC32C of the entry bytes."""


class CompactedLedger:
    """One topic partition's latest compacted state (immutable once made).

    Raw message offsets below :attr:`horizon` are compacted (read here); those at or above it are read raw.
    Each kept message is one entry carrying its original offset, so offsets have gaps.
    """

    def __init__(self, path: Path | None, horizon: int, offsets: array, positions: array, size: int,
                 last_end: int = 0, tombstones: int = 0, tombstones_from: int | None = None) -> None:
        self.path = path
        self._last_end = last_end  # end offset of the last entry (an unreadable batch is kept as one entry)
        self.horizon = horizon
        self.tombstones = tombstones
        """How many kept entries are tombstones (kept for compacted readers that may be behind them)."""
        self.tombstones_from = horizon if tombstones_from is None else tombstones_from
        """The run kept every tombstone at or after this offset (the horizon: it kept none)."""
        self._offsets = offsets
        self._positions = positions
        self.size_bytes = size
        self._fd = os.open(path, os.O_RDONLY) if path is not None else -1
        if self._fd >= 0:
            self._closer = weakref.finalize(self, os.close, self._fd)

    @classmethod
    def empty(cls, horizon: int = 0) -> "CompactedLedger":
        return cls(None, horizon, array("q"), array("q"), 0)

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def last_offset(self) -> int:
        """Offset of the last kept message, -1 when empty."""
        return self._last_end - 1 if self._offsets else -1

    def read(self, start_offset: int, max_entries: int, max_bytes: int) -> list[StoredEntry]:
        """Compacted entries whose offset is >= ``start_offset``, in offset order: at most ``max_entries``,
        stopping before ``max_bytes`` of data is exceeded (at least one entry when there is one)."""
        out: list[StoredEntry] = []
        total = 0
        i = bisect.bisect_left(self._offsets, start_offset)
        while i < len(self._offsets) and len(out) < max_entries:
            entry = self._record(i)
            if out and total + len(entry.data) > max_bytes:
                break
            out.append(entry)
            total += len(entry.data)
            i += 1
        return out

    def entry_at_or_after(self, offset: int) -> StoredEntry | None:
        found = self.read(offset, 1, 1)
        return found[0] if found else None

    def _record(self, i: int) -> StoredEntry:
        position = self._positions[i]
        head = os.pread(self._fd, RECORD.size, position)
        offset, publish_time, ledger_id, count, length, crc = RECORD.unpack(head)
        data = os.pread(self._fd, length, position + RECORD.size)
        if len(data) != length or google_crc32c.value(data) != crc:
            raise CorruptLog(f"the compacted ledger of this topic is damaged at offset {offset}; compact the"
                             " topic again", offset=offset)
        return StoredEntry(offset, count, publish_time, ledger_id, data)

    def close(self) -> None:
        if self._fd >= 0:
            self._closer()


class LedgerWriter:
    """Writes one new compacted ledger into ``folder``: :meth:`add` records in offset order, then
    :meth:`commit` (durable and current) or :meth:`abort` (nothing left behind)."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self._token = os.urandom(4).hex()
        self._tmp = folder / f".{self._token}.tmp"
        self._file: BinaryIO = open(self._tmp, "wb")
        self._offsets = array("q")
        self._positions = array("q")
        self._size = 0
        self._last_end = 0

    def add(self, entry: StoredEntry) -> None:
        if self._offsets and entry.offset <= self._offsets[-1]:
            raise ValueError(f"compacted entries go in offset order: {entry.offset} after {self._offsets[-1]}")
        self._offsets.append(entry.offset)
        self._positions.append(self._size)
        self._last_end = entry.end_offset
        head = RECORD.pack(entry.offset, entry.publish_time, entry.ledger_id, entry.num_messages, len(entry.data),
                           google_crc32c.value(entry.data))
        self._file.write(head)
        self._file.write(entry.data)
        self._size += len(head) + len(entry.data)

    @property
    def entries(self) -> int:
        return len(self._offsets)

    def seal(self, horizon: int, *, tombstones: int = 0, tombstones_from: int | None = None) -> "SealedLedger":
        """Make the ledger durable under its final name, not yet current (:class:`SealedLedger`)."""
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        path = self.folder / f"{horizon:020d}-{self._token}.ledger"
        os.replace(self._tmp, path)
        fsync_directory(self.folder)
        ledger = CompactedLedger(path, horizon, self._offsets, self._positions, self._size, self._last_end,
                                 tombstones, tombstones_from)
        return SealedLedger(self.folder, ledger)

    def commit(self, horizon: int, *, tombstones: int = 0, tombstones_from: int | None = None) -> CompactedLedger:
        """:meth:`seal`, then make the ledger current at once."""
        return self.seal(horizon, tombstones=tombstones, tombstones_from=tombstones_from).make_current()

    def abort(self) -> None:
        if not self._file.closed:
            self._file.close()
        self._tmp.unlink(missing_ok=True)


class SealedLedger:
    """A new compacted ledger, durable under its final name but not current: :meth:`make_current` or
    :meth:`discard` it (a restart before either removes it, as a killed run's leftover)."""

    def __init__(self, folder: Path, ledger: CompactedLedger) -> None:
        self.folder = folder
        self.ledger = ledger

    def make_current(self) -> CompactedLedger:
        """Replace ``HORIZON`` (atomic, fsynced: a few small writes), then remove the previous ledger's file."""
        ledger = self.ledger
        crash_point("before_horizon")
        previous = _current_name(self.folder)
        atomic_write(self.folder / POINTER, json.dumps(
            {"horizon": ledger.horizon, "file": ledger.path.name, "entries": len(ledger), "bytes": ledger.size_bytes,
             "tombstones": ledger.tombstones, "tombstones_from": ledger.tombstones_from}).encode())
        if previous and previous != ledger.path.name:
            try:
                (self.folder / previous).unlink(missing_ok=True)  # open readers keep reading it until they let go
            except OSError as exc:  # the new state is current: the next load removes the old file
                log.warning("event=compacted_ledger_not_removed file=%s error=%r", previous, exc)
        return ledger

    def discard(self) -> None:
        """Remove the ledger; the current state stays."""
        self.ledger.close()
        self.ledger.path.unlink(missing_ok=True)


def _current_name(folder: Path) -> str | None:
    try:
        return json.loads((folder / POINTER).read_bytes())["file"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def load(folder: Path) -> CompactedLedger | None:
    """The current compacted ledger in ``folder`` (None: never compacted, or its state is unreadable, which
    is logged: reads fall back to the raw log and the next run starts over). Leftovers of a killed run go."""
    if not folder.is_dir():
        return None
    try:
        pointer = json.loads((folder / POINTER).read_bytes())
        name, horizon, size = str(pointer["file"]), int(pointer["horizon"]), int(pointer["bytes"])
        tombstones, tombstones_from = int(pointer.get("tombstones", 0)), int(pointer.get("tombstones_from", horizon))
    except FileNotFoundError:
        pointer = name = None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.error("event=compacted_ledger_unreadable folder=%s error=%r", folder, exc)
        pointer = name = None
    for path in folder.iterdir():  # a killed run's temp file, or ledger renamed but never made current
        if path.name != POINTER and path.name != name and (path.suffix in (".tmp", ".ledger")):
            path.unlink(missing_ok=True)
            log.info("event=compaction_leftover_removed file=%s", path)
    if name is None:
        return None
    path = folder / name
    try:
        offsets, positions, last_end = _scan(path, size)
    except (OSError, CorruptLog) as exc:
        log.error("event=compacted_ledger_unreadable folder=%s error=%r", folder, exc)
        return None
    return CompactedLedger(path, horizon, offsets, positions, size, last_end, tombstones, tombstones_from)


def _scan(path: Path, size: int) -> tuple[array, array, int]:
    """The offsets and record positions of a ledger file (headers only; entries are checked when read)."""
    offsets, positions = array("q"), array("q")
    last_end = 0
    with open(path, "rb", buffering=1 << 20) as f:  # relative seeks within the buffer make no system call
        actual = os.fstat(f.fileno()).st_size
        if actual != size:
            raise CorruptLog(f"{path.name}: {actual} bytes, HORIZON says {size}")
        position = 0
        while position < size:
            head = f.read(RECORD.size)
            if len(head) != RECORD.size:
                raise CorruptLog(f"{path.name}: torn record at byte {position}")
            offset, _, _, count, length, _ = RECORD.unpack(head)
            last_end = offset + count
            offsets.append(offset)
            positions.append(position)
            position += RECORD.size + length
            f.seek(length, os.SEEK_CUR)
        if position != size:
            raise CorruptLog(f"{path.name}: records overrun the file")
    return offsets, positions, last_end


_CRASH_AT = os.environ.get("PULSARLIKE_CRASH_AT_COMPACTION") or ""


def crash_point(name: str) -> None:
    """Test-only (tests/crash): ``PULSARLIKE_CRASH_AT_COMPACTION=<name>`` (read once at import) SIGKILLs the
    process when a compaction reaches the point ``name`` (``mid_write``: half the ledger written, not synced;
    ``before_horizon``: the new ledger durable but not yet current)."""
    if _CRASH_AT == name:
        import signal
        os.kill(os.getpid(), signal.SIGKILL)
