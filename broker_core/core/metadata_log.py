"""A JSON metadata map kept as a snapshot plus an append-only change log, so that one change costs one small
append and one ``fdatasync`` however large the map has grown (rewriting and fsyncing the whole file on
every change made creating the 3,000th partitioned topic 5x slower than the first, on the event loop).

The files, and how they are read at start, are in :mod:`broker_core.core.metadata_files`: snapshots named
by the generation of changes they hold (``partitioned-topics.00000003.json``), one change file per
generation (``partitioned-topics.00000004.changes``, a JSON line per change: ``{"k": key, "v": value}``,
``"v": null`` removing the key), and ``partitioned-topics.json``, the newest snapshot under its old name.

A change is durable when :meth:`MapLog.put` returns (written and ``fdatasync``-ed before the caller
acknowledges anything). Once the change files hold more lines than ``max(compact_after, len(map))``, the map
is compacted:

1. Appends move to the next generation at once; its change file is made (and its folder synced) now, on the
   caller's thread, so that every generation after a snapshot has its file.
2. On ``executor`` (off the event loop): the snapshot of the map as it was is written atomically, named by
   the generation it covers, and ``<name>.json`` made a second name of it.
3. What nothing needs any more goes: every snapshot but the new one and the fallback (the one the map was
   last read from or compacted to), and the change files the fallback already holds. The change files
   since the fallback stay until the next compaction succeeds: up to twice the lines on disk.

A crash at any step loses nothing and keeps nothing removed: the newest snapshot plus the change files after
it always make the map. So does the one before it plus the change files after *it*, which is what lets a
start recover exactly from a damaged newest snapshot (one ERROR line, ``event=metadata_snapshot_damaged``).

At start (:meth:`MapLog.load`), a last line cut short by a crash was never acknowledged: it is dropped and the
file cut back to its last whole line. Any other damage, and a damaged snapshot without a clean one before it,
is :class:`CorruptLog` naming the file, the byte and ``pulsarlike repair --data-dir DIR``
(:mod:`broker_core.core.metadata_repair`): dropping a change could grant or remove access, so the broker
does not start on a guess.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, Callable, Iterable

from broker_core.core.metadata_files import Damage, MapCodec, MapFiles, read_map
from broker_core.errors import CorruptLog
from broker_core.storage.atomic import atomic_write, fsync_directory

log = logging.getLogger(__name__)

COMPACT_AFTER = 1024
"""Change lines kept at least before a compaction (more when the map is larger: the snapshot's cost, one
write of the whole map, is spread over as many changes as the map has keys)."""


class AnyEntries:
    """The codec of a map whose snapshot is a JSON object and whose entries are not checked."""

    def entries(self, document: Any) -> Iterable[tuple[str, Any]]:
        if not isinstance(document, dict):
            raise ValueError(f"a JSON object expected, not {type(document).__name__}")
        return document.items()

    def check(self, key: str, value: Any) -> Any:
        return value


class MapLog:
    """The change log of the map ``name`` in ``directory``. ``encode()`` (given to :meth:`put`) is the
    snapshot document of the map (the owner's file format), checked on loading by the owner's codec."""

    def __init__(self, directory: Path, name: str, executor: Executor | None = None,
                 compact_after: int = COMPACT_AFTER, what: str = "") -> None:
        """``what``: the map in a person's words, for the refusal at start (``the policies``)."""
        self.snapshot_path = directory / f"{name}.json"
        self._directory = directory
        self._name = name
        self._what = what or f"the metadata map {name}"
        self._executor = executor
        self._compact_after = compact_after
        self._lines = 0
        self._fd: int | None = None
        self._generation = 0
        self._base: int | None = None
        """The generation of the snapshot the map was read from or last compacted to (-1: the legacy one)."""
        self._compacting: asyncio.Future | None = None

    # ------------------------------------------------------------------ reading
    def load(self, codec: MapCodec = AnyEntries()) -> dict[str, Any]:
        """The map (the entries as ``codec`` checked them); ``CorruptLog`` when it cannot be read exactly."""
        reading = read_map(self._directory, self._name, codec)
        if reading.entries is None:
            raise refusal(reading.damage[0], self._what)
        if reading.damage:
            first = reading.damage[0]
            log.error("event=metadata_snapshot_damaged map=%s path=%s position=%d problem=%r damaged_snapshots=%d"
                      " recovered_from=%r changes_replayed=%d: read exactly from there and every change since;"
                      " `%s` rewrites the snapshot", self._name, first.path, first.position, first.problem,
                      len(reading.damage), reading.recovered_from, reading.lines, repair_command(self._directory))
        if reading.torn is not None:
            path, at = reading.torn
            log.warning("event=metadata_change_dropped path=%s position=%d reason=torn_append", path, at)
            with open(path, "r+b") as f:
                f.truncate(at)
                os.fsync(f.fileno())
        self._generation = reading.files.next_generation()
        self._base = reading.base_generation
        self._lines = reading.lines
        return reading.entries

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

    def _next_generation(self) -> int:
        """Step 1 of a compaction: appends move on, the new generation's file made now."""
        covered = self._generation
        self.close()
        self._generation += 1
        self._lines = 0
        self._open()
        return covered

    def _compact(self, document: Any) -> None:
        """Compaction steps 1 to 3 (the module docstring), 2 and 3 on the executor when a loop runs.
        ``document`` is encoded here, on the owner's thread: the owner goes on changing the map meanwhile."""
        data = _encode(document)
        covered = self._next_generation()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._write_snapshot(data, covered, self._base)
            self._base = covered
            return
        self._compacting = loop.run_in_executor(self._executor, self._write_snapshot, data, covered, self._base)
        self._compacting.add_done_callback(lambda future: self._compacted(future, covered))

    def _write_snapshot(self, data: bytes, covered: int, base: int | None) -> None:
        """Steps 2 and 3; ``base`` is the snapshot kept as the fallback."""
        files = MapFiles.scan(self._directory, self._name)
        write_snapshot(files, covered, data)
        for generation, path in files.snapshots.items():
            if generation not in (covered, base):
                path.unlink(missing_ok=True)
        for generation, path in files.changes.items():
            if base is not None and generation <= base:
                path.unlink(missing_ok=True)
        fsync_directory(self._directory)

    def _compacted(self, future: asyncio.Future, covered: int) -> None:
        if future.cancelled():
            return
        if future.exception() is not None:  # the change files still hold it all; the fallback stays the same
            log.error("event=metadata_compaction_failed name=%s error=%r", self._name, future.exception())
            return
        self._base = covered

    def rewrite(self, document: Any) -> None:
        """Replace everything with ``document`` now, on this thread (a store's first write, or a migration)."""
        covered = self._next_generation()
        self._write_snapshot(_encode(document), covered, self._base)
        self._base = covered

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def write_snapshot(files: MapFiles, generation: int, data: bytes) -> Path:
    """Write the snapshot of ``generation`` atomically and make ``<name>.json`` a second name of it (a copy
    where the file system has no hard links)."""
    path = files.snapshot_path(generation)
    atomic_write(path, data)
    legacy = files.directory / f"{files.name}.json"
    temp = files.directory / f".{os.urandom(6).hex()}.tmp"
    try:
        os.link(path, temp)
        os.replace(temp, legacy)
    except OSError:
        temp.unlink(missing_ok=True)
        atomic_write(legacy, data)
    fsync_directory(files.directory)
    return path


def write_fresh(directory: Path, name: str, document: Any) -> list[Path]:
    """The repair's write: ``document`` as the snapshot of a generation after every file of the map (and
    that generation's successor's empty change file); returns the map's earlier snapshots and change files,
    no longer read, for the caller to set aside."""
    files = MapFiles.scan(directory, name)
    generation = max([-1, *files.snapshots, *files.changes]) + 1
    changes = files.changes_path(generation + 1)
    os.close(os.open(changes, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    fsync_directory(directory)
    write_snapshot(files, generation, _encode(document))
    return [*files.snapshots.values(), *files.changes.values()]


def refusal(damage: Damage, what: str) -> CorruptLog:
    """The broker's refusal to start on damaged metadata: the file, the byte and the repair command."""
    command = repair_command(damage.path.parent)
    return CorruptLog(f"{what} cannot be read: {damage.path} is damaged at byte {damage.position}"
                      f" ({damage.problem}); the broker does not start on a guess (what is lost could change who may"
                      f" do what, a policy or a topic's partitions): run: {command} (it shows what it would drop;"
                      " add --yes to do it)", path=str(damage.path), position=damage.position, repair=command)


def repair_command(metadata_dir: Path) -> str:
    """``pulsarlike repair --data-dir DIR`` for the data dir whose ``metadata/`` folder is ``metadata_dir``."""
    return f"pulsarlike repair --data-dir {metadata_dir.absolute().parent}"


def _encode(document: Any) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
