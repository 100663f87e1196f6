"""A JSON metadata map kept as a snapshot plus an append-only change log, so that one change costs one small
append and one ``fdatasync`` however large the map has grown (rewriting and fsyncing the whole file on
every change made creating the 3,000th partitioned topic 5x slower than the first, on the event loop).

Files, in the metadata folder, for a map named ``partitioned-topics``::

    partitioned-topics.json                 the snapshot: the whole map, written atomically (as before)
    partitioned-topics.00000003.changes     changes since, one JSON line each: {"k": key, "v": value}
                                            (``"v": null`` removes the key)

A change is durable when :meth:`MapLog.put` returns (written and ``fdatasync``-ed before the caller
acknowledges anything). Once the change files hold more lines than ``max(compact_after, len(map))``, the map
is compacted: appends move to the next generation's file at once, the snapshot of the map as it was is
written atomically on ``executor`` (off the event loop), then the older change files are removed. Loading
reads the snapshot and replays every change file in generation order: a change already in the snapshot
sets what the snapshot holds, so a crash at any step loses nothing and keeps nothing removed.

A last line cut short by a crash (no newline, or not JSON) was never acknowledged: it is dropped and the
file cut back to its last whole line. A damaged line before the last one is :class:`CorruptLog`.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, Callable

from broker_core.errors import CorruptLog
from broker_core.storage.atomic import atomic_write, fsync_directory

log = logging.getLogger(__name__)

COMPACT_AFTER = 1024
"""Change lines kept at least before a compaction (more when the map is larger: the snapshot's cost, one
write of the whole map, is spread over as many changes as the map has keys)."""


class MapLog:
    """The change log of the map stored as ``<directory>/<name>.json``. ``encode(data)`` is the snapshot
    document of the map (the owner's file format); the owner decodes the snapshot itself (:meth:`load`)."""

    def __init__(self, directory: Path, name: str, executor: Executor | None = None,
                 compact_after: int = COMPACT_AFTER) -> None:
        self.snapshot_path = directory / f"{name}.json"
        self._directory = directory
        self._name = name
        self._pattern = re.compile(re.escape(name) + r"\.(\d{8})\.changes$")
        self._executor = executor
        self._compact_after = compact_after
        self._lines = 0
        self._fd: int | None = None
        self._generation = 0
        self._compacting: asyncio.Future | None = None

    # ------------------------------------------------------------------ reading
    def _change_files(self) -> list[tuple[int, Path]]:
        found = []
        for path in self._directory.iterdir():
            match = self._pattern.match(path.name)
            if match:
                found.append((int(match.group(1)), path))
        return sorted(found)

    def load(self) -> tuple[Any, list[tuple[str, Any]]]:
        """The snapshot document (None when there is none) and the changes since, oldest first."""
        snapshot = None
        if self.snapshot_path.exists():
            try:
                snapshot = json.loads(self.snapshot_path.read_bytes())
            except ValueError as exc:
                raise CorruptLog(f"cannot read {self.snapshot_path}: {exc}", path=str(self.snapshot_path),
                                 position=0) from None
        changes: list[tuple[str, Any]] = []
        files = self._change_files()
        for index, (generation, path) in enumerate(files):
            changes += self._read(path, last=index == len(files) - 1)
            self._generation = generation
        self._lines = len(changes)
        return snapshot, changes

    def _read(self, path: Path, *, last: bool) -> list[tuple[str, Any]]:
        data = path.read_bytes()
        changes, at = [], 0
        while at < len(data):
            end = data.find(b"\n", at)
            try:
                if end < 0:
                    raise ValueError("no newline")
                record = json.loads(data[at:end])
                changes.append((str(record["k"]), record["v"]))
            except (ValueError, KeyError, TypeError) as exc:
                if last and (end < 0 or data.find(b"\n", end + 1) < 0):  # the last line, cut by a crash
                    log.warning("event=metadata_change_dropped path=%s position=%d reason=%r", path, at, exc)
                    with open(path, "r+b") as f:
                        f.truncate(at)
                        os.fsync(f.fileno())
                    break
                raise CorruptLog(f"cannot read {path} at byte {at}: {exc!r}", path=str(path), position=at) from None
            at = end + 1
        return changes

    # ------------------------------------------------------------------ writing
    def _open(self) -> int:
        if self._fd is None:
            path = self._directory / f"{self._name}.{self._generation:08d}.changes"
            created = not path.exists()
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            if created:
                fsync_directory(self._directory)
        return self._fd

    def put(self, key: str, value: Any, size: int, encode: Callable[[], Any]) -> None:
        """Record ``key = value`` (None: removed) durably; ``size`` is the map's key count now and
        ``encode()`` its snapshot document, taken if this change starts a compaction."""
        line = json.dumps({"k": key, "v": value}, sort_keys=True, separators=(",", ":")).encode() + b"\n"
        fd = self._open()
        os.write(fd, line)
        os.fdatasync(fd)
        self._lines += 1
        if self._lines > max(self._compact_after, size) and not self.compacting:
            self._compact(encode())

    @property
    def compacting(self) -> bool:
        return self._compacting is not None and not self._compacting.done()

    def _compact(self, document: Any) -> None:
        """Move appends to the next generation, then write ``document`` (the map now) as the snapshot and
        remove the older change files, on the executor when a loop runs. ``document`` is encoded here, on
        the owner's thread: the owner goes on changing the map meanwhile."""
        data = _encode(document)
        covered = self._generation
        self.close()
        self._generation += 1
        self._lines = 0
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._write_snapshot(data, covered)
            return
        self._compacting = loop.run_in_executor(self._executor, self._write_snapshot, data, covered)
        self._compacting.add_done_callback(self._compacted)

    def _write_snapshot(self, data: bytes, covered: int) -> None:
        atomic_write(self.snapshot_path, data)
        for generation, path in self._change_files():
            if generation <= covered:
                path.unlink(missing_ok=True)
        fsync_directory(self._directory)

    def _compacted(self, future: asyncio.Future) -> None:
        if not future.cancelled() and future.exception() is not None:  # the change files still hold it all
            log.error("event=metadata_compaction_failed name=%s error=%r", self._name, future.exception())

    def rewrite(self, document: Any) -> None:
        """Replace everything with ``document`` now, on this thread (a store's first write, or a migration)."""
        covered = self._generation
        self.close()
        self._generation += 1
        self._lines = 0
        self._write_snapshot(_encode(document), covered)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _encode(document: Any) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
