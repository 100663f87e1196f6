"""The files of a metadata map (:mod:`broker_core.core.metadata_log`) and how they are read, changing nothing:
the broker's start and ``pulsarlike repair`` read them through here.

The files of the map ``policies`` in the metadata folder, after a few compactions::

    policies.00000007.json       a snapshot: the map after every change of generation 7 and before
    policies.00000004.json       the snapshot before it, kept until the next compaction succeeds
    policies.00000005.changes    changes of generations 5 to 7: in the newest snapshot already, kept so
    policies.00000006.changes    that the snapshot before it plus them still make the map
    policies.00000007.changes
    policies.00000008.changes    the changes since the newest snapshot (appends go here)
    policies.json                the newest snapshot under the name earlier versions used (a second name of
                                 the same file); the only snapshot of a folder from before generations

A change file is a line per change, ``{"k": key, "v": value}`` (``"v": null`` removes the key). Every
generation after a snapshot has its change file, made when appends move there even if it stays empty, so a
missing one is damage, not a quiet generation.

Reading (:func:`read_map`) gives the map as it was acknowledged, or says it cannot:

1. List the snapshots and change files; other names (temp files ``.*.tmp``, files a repair set aside) are
   not read. Without a generation-named snapshot, ``<name>.json`` is the snapshot, of generation -1: every
   change file is replayed on it, as earlier versions did. Without either, the map starts empty.
2. Take the newest snapshot and read it whole: UTF-8 JSON, the owner's shape, every entry passing the
   owner's check (:class:`MapCodec`). An empty file, a parse error or a wrong type is damage at its byte:
   go to the next older snapshot and do step 2 again. After the oldest comes the empty map, when generation
   0's change file is still there (no compaction has removed a change file yet, so they hold every change).
   With none left, the map cannot be read.
3. The change files of the generations after the snapshot's must all be there up to the newest one; a
   missing one is damage (not after a generation -1 snapshot, or none at all: those folders come from
   versions that made a change file only for its first change).
4. Replay their lines in order. A line that is not JSON, lacks ``k`` or ``v``, or fails the owner's check
   is damage at the byte where the line starts.
5. The end of the newest change file after its last newline is a torn append (a crash mid-write: the change
   was never acknowledged) when it is the beginning of a change line, possibly followed by zeros, or only
   zeros: reported as ``torn`` for the loader to cut off. Anything else there is damage.
6. Damage in steps 3 to 5 means the map cannot be read: an older snapshot would need the same changes, so
   nothing provable remains (the broker refuses to start and names the file, the byte and ``pulsarlike
   repair``). Damage only in step 2, with an older snapshot (or the empty map) whose steps 3 to 5 are
   clean, gives the map exactly: every acknowledged change is in that snapshot or in the change files after
   it, and a change already in it sets what it holds. ``damage`` then lists the newer snapshots passed over
   and ``recovered_from`` names what was used.

What is not found: damage that still parses, of the right types (a digit changed inside a number, a role
name changed into another valid one), and a change file removed or emptied whole at the end of the chain.
Lines carry no checksum (a JSON line per change, as before generations).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Protocol

from broker_core.errors import PulsarLikeError

ENTRY_ERRORS = (ValueError, TypeError, KeyError, AttributeError, PulsarLikeError)
"""What a :class:`MapCodec` raises for a document or an entry that is not one the store writes."""
_TORN_START = b'{"k":'
_KEY = re.compile(rb'\{"k":("(?:[^"\\]|\\.){0,2000}")')
EXCERPT = 160
"""Bytes of a damaged line (or around a snapshot's damaged byte) kept for a person to see."""


class MapCodec(Protocol):
    """How a store's map is checked; both raise one of :data:`ENTRY_ERRORS` for what it never writes."""

    def entries(self, document: Any) -> Iterable[tuple[str, Any]]:
        """The snapshot document's ``(key, value)`` pairs, keys as the change lines spell them."""

    def check(self, key: str, value: Any) -> Any:
        """The entry as the store keeps it (``value`` None: the key removed, only the key is checked)."""


@dataclass(frozen=True)
class Damage:
    """A place where the files do not say what the broker wrote."""

    path: Path
    position: int
    """The byte where it starts: a change line's first byte, a parse error's byte, 0 for a missing file."""
    problem: str
    key: str | None = None
    """The map key it concerns, when it can still be told (a damaged change line often still names it)."""
    excerpt: bytes = b""
    """The damaged line, the bytes around a snapshot's damaged byte, or a damaged entry's value as JSON."""


@dataclass
class SnapshotRead:
    entries: dict[str, Any] | None
    """The entries that passed the owner's check; None when the file is not JSON of the owner's shape."""
    damage: list[Damage]


@dataclass(frozen=True)
class Change:
    key: str
    value: Any
    path: Path
    position: int


@dataclass
class ChangesRead:
    changes: list[Change]
    """The lines that passed, in order."""
    damage: list[Damage]
    torn: int | None = None
    """Where a torn last append starts (step 5), None without one."""


@dataclass
class MapFiles:
    """The files of one map (step 1): ``snapshots`` and ``changes`` by generation; ``legacy`` the snapshot
    of a folder from before generations (None when generation-named snapshots exist or it is absent)."""

    directory: Path
    name: str
    snapshots: dict[int, Path]
    changes: dict[int, Path]
    legacy: Path | None

    @classmethod
    def scan(cls, directory: Path, name: str) -> "MapFiles":
        pattern = re.compile(re.escape(name) + r"\.(\d{8})\.(json|changes)$")
        snapshots, changes = {}, {}
        for path in directory.iterdir() if directory.is_dir() else ():
            match = pattern.match(path.name)
            if match:
                (snapshots if match.group(2) == "json" else changes)[int(match.group(1))] = path
        legacy = directory / f"{name}.json"
        return cls(directory, name, snapshots, changes, legacy if not snapshots and legacy.exists() else None)

    def snapshot_path(self, generation: int) -> Path:
        return self.directory / f"{self.name}.{generation:08d}.json"

    def changes_path(self, generation: int) -> Path:
        return self.directory / f"{self.name}.{generation:08d}.changes"

    def bases(self) -> list[tuple[int | None, Path | None, bool]]:
        """What the map can be read from, newest first: ``(generation, snapshot, contiguous)`` -- each
        snapshot (-1: the legacy one), then the empty map (generation None, no snapshot) when every change
        file ever written may still be there; ``contiguous``: whether the change files after it must all be
        there (step 3)."""
        if not self.snapshots:
            return [(-1, self.legacy, False)] if self.legacy else [(None, None, False)]
        # the empty map plus every change file is the map as long as none was ever removed: generation 0's
        # is there (the first compaction that removes change files removes it)
        return [*((g, self.snapshots[g], True) for g in sorted(self.snapshots, reverse=True)), (None, None, True)]

    def after(self, generation: int | None, contiguous: bool = True) -> tuple[list[Path], list[Damage]]:
        """The change files to replay on a snapshot of ``generation`` (None: the empty map), and the missing
        ones when they must all be there (step 3)."""
        start = -1 if generation is None else generation
        found = sorted(g for g in self.changes if g > start)
        missing = []
        if contiguous and (found or generation is None):
            missing = [Damage(self.changes_path(g), 0, "change file missing: the changes of its generation"
                              " are lost") for g in range(start + 1, found[-1] if found else 1)
                       if g not in self.changes]
        return [self.changes[g] for g in found], missing

    def next_generation(self) -> int:
        """Where appends go: the newest change file, unless a snapshot is as new (then the one after it)."""
        return max([0, *self.changes, *(g + 1 for g in self.snapshots)])


def read_snapshot(path: Path, codec: MapCodec) -> SnapshotRead:
    """Step 2 for one file: its entries that pass, and what does not."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
        document = json.loads(text)
        pairs = list(codec.entries(document))
    except UnicodeDecodeError as exc:
        return SnapshotRead(None, [_snapshot_damage(path, data, exc.start, f"not UTF-8 text ({exc.reason})")])
    except json.JSONDecodeError as exc:
        at = len(text[:exc.pos].encode())
        problem = "empty file" if not data.strip() else f"not JSON: {exc.msg}"
        return SnapshotRead(None, [_snapshot_damage(path, data, at, problem)])
    except ENTRY_ERRORS as exc:
        return SnapshotRead(None, [_snapshot_damage(path, data, 0, f"not a snapshot of this map: {_reason(exc)}")])
    entries, damage = {}, []
    for key, value in pairs:
        try:
            entries[key] = codec.check(key, value)
        except ENTRY_ERRORS as exc:
            at = max(0, data.find(json.dumps(key.rsplit("\t", 1)[-1]).encode()))
            damage.append(Damage(path, at, f"entry {key.replace(chr(9), ' ')!r} is wrong: {_reason(exc)}", key,
                                 json.dumps(value)[:EXCERPT].encode()))
    return SnapshotRead(entries, damage)


def read_changes(path: Path, codec: MapCodec, *, last: bool) -> ChangesRead:
    """Steps 4 and 5 for one file (``last``: the newest, whose end may be a torn append)."""
    data = path.read_bytes()
    read = ChangesRead([], [])
    at = 0
    while at < len(data):
        end = data.find(b"\n", at)
        if end < 0:
            if last and _torn(data[at:]):
                read.torn = at
                break
            read.damage.append(Damage(path, at, "the file ends inside a line that is not a torn append",
                                      key_of(data[at:]), data[at:at + EXCERPT]))
            break
        line = data[at:end]
        try:
            record = json.loads(line)
            if not isinstance(record, dict) or set(record) != {"k", "v"} or not isinstance(record["k"], str):
                raise ValueError('not {"k": key, "v": value}')
            read.changes.append(Change(record["k"], codec.check(record["k"], record["v"]), path, at))
        except ENTRY_ERRORS as exc:
            read.damage.append(Damage(path, at, f"change line damaged: {_reason(exc)}", key_of(line),
                                      line[:EXCERPT]))
        at = end + 1
    return read


@dataclass
class MapReading:
    """What :func:`read_map` found."""

    files: MapFiles
    entries: dict[str, Any] | None
    """The map; None when it cannot be read (``damage[0]`` says first where)."""
    damage: list[Damage] = field(default_factory=list)
    base_generation: int | None = None
    """The generation of the snapshot the map was read from (-1 legacy, None none)."""
    recovered_from: str | None = None
    """The older snapshot's name (or "the empty map") used because the newer ones (in ``damage``) were
    damaged."""
    torn: tuple[Path, int] | None = None
    lines: int = 0
    """Change lines replayed."""


def read_map(directory: Path, name: str, codec: MapCodec) -> MapReading:
    """Steps 1 to 6 of the module docstring."""
    files = MapFiles.scan(directory, name)
    passed_over: list[Damage] = []
    for generation, path, contiguous in files.bases():
        entries: dict[str, Any] = {}
        if path is not None:
            snapshot = read_snapshot(path, codec)
            if snapshot.entries is None or snapshot.damage:
                passed_over += snapshot.damage
                continue
            entries = snapshot.entries
        paths, missing = files.after(generation, contiguous)
        if path is None and passed_over and missing:
            break  # change files were removed since generation 0: the empty map is no starting point
        start = path.name if path is not None else "the empty map"
        reading = MapReading(files, entries, passed_over + missing, generation, start if passed_over else None)
        for index, change_path in enumerate(paths):
            read = read_changes(change_path, codec, last=index == len(paths) - 1)
            reading.damage += read.damage
            if read.torn is not None:
                reading.torn = (change_path, read.torn)
            for change in read.changes:
                if change.value is None:
                    entries.pop(change.key, None)
                else:
                    entries[change.key] = change.value
            reading.lines += len(read.changes)
        if len(reading.damage) > len(passed_over):
            reading.entries = reading.recovered_from = None
        return reading
    return MapReading(files, None, passed_over)


def key_of(line: bytes) -> str | None:
    """The key a change line names, when its start is intact (``{"k":"..."``)."""
    match = _KEY.match(line)
    if match is None:
        return None
    try:
        key = json.loads(match.group(1))
    except ValueError:
        return None
    return key if isinstance(key, str) else None


def _torn(tail: bytes) -> bool:
    kept = tail.rstrip(b"\0")
    return b"\0" not in kept and (kept.startswith(_TORN_START) or _TORN_START.startswith(kept))


def _snapshot_damage(path: Path, data: bytes, at: int, problem: str) -> Damage:
    start = max(0, at - EXCERPT // 2)
    return Damage(path, at, problem, None, data[start:start + EXCERPT])


def _reason(exc: BaseException) -> str:
    text = exc.message if isinstance(exc, PulsarLikeError) else str(exc) or type(exc).__name__
    return text[:200]
