"""CursorStore: two copies ("slots") of each durable subscription's cursor, replaced atomically in turn.

File layout (big-endian, declared once as :data:`CURSOR_HEADER`)::

     0        4                 12       16       20       24
     +--------+-----------------+--------+--------+--------+------------------------------------
     | magic  | generation      | length | crc32c | hcrc   | state (length bytes: ManagedCursor.to_bytes(), JSON)
     +--------+-----------------+--------+--------+--------+------------------------------------

``generation`` numbers the cursor's saves; ``crc32c`` covers the state and ``hcrc`` the 20 header bytes
before it, so a copy whose state is damaged still proves which save it was. Files of the first version
(magic ``PLC1``, :data:`CURSOR_HEADER_V1`: magic, length, crc32c, state) are still read, as generation 0.

Slot 0 is ``<file>.cursor`` (the first version's one file), slot 1 ``<file>.cursor.1``; ``<file>`` is
``quote(name, safe="")``, or ``"~" + sha256(name)`` for names too long for the file system
(:func:`cursor_file_name`). The name itself is stored in the state, so loading never depends on decoding
a file name.

Saving writes the slot that does *not* hold the state loaded or saved last, with the next generation:
temp file (``*.tmp``) in the same folder, flush, fsync, ``os.replace``, fsync the folder: two fsyncs, as
with one copy. So the other slot always holds the last good state, and a crash leaves the old or
the new copy of the slot being written, plus perhaps a temp file that :meth:`CursorStore.load` removes.

Loading (:meth:`CursorStore.load`), per subscription:

1. Each slot is read. A copy is usable when its header and state verify, the state is possible in itself
   (:meth:`ManagedCursor.from_bytes`) and it names this file's subscription; any other (a file that cannot
   even be read too) is damaged, and keeps the generation its header proves, if any.
2. The usable copies, newest generation first, are the candidates: the topic takes the first one that is
   also possible against its log (:mod:`broker_core.core.persistent.recovery`).
3. A damaged copy whose generation is not proven lower than the newest usable one may have held a newer
   state (:attr:`StoredCursor.newest_lost`): the topic recovers that subscription, and says so.
4. The name comes from a usable copy, else from the file name, else from a damaged copy's bytes if it maps
   to the file name (a hashed one); else it is unknown (:attr:`StoredCursor.name` is None).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote, unquote

import google_crc32c

from broker_core.storage.atomic import atomic_write, fsync_directory
from broker_core.storage.cursor import ManagedCursor

CURSOR_HEADER = struct.Struct(
    ">"
    "I"  # magic: CURSOR_MAGIC
    "Q"  # generation: the save this copy holds (of a cursor's two copies, the higher is the newer)
    "I"  # length: bytes of state after the header
    "I"  # crc32c: of the state bytes
    "I"  # hcrc: crc32c of the header bytes before it (magic .. crc32c)
)
CURSOR_MAGIC = 0x504C4332  # b"PLC2"
CURSOR_HEADER_V1 = struct.Struct(
    ">"
    "I"  # magic: CURSOR_MAGIC_V1
    "I"  # length: bytes of state after the header
    "I"  # crc32c: of the state bytes
)
CURSOR_MAGIC_V1 = 0x504C4331  # b"PLC1": one file per cursor, no generation (read as generation 0)
SUFFIX = ".cursor"
SLOT_SUFFIXES = (SUFFIX, SUFFIX + ".1")
"""The file name endings of slot 0 and slot 1."""
SET_ASIDE_SUFFIX = ".damaged"
MAX_GENERATION = 1 << 62  # saves; far beyond any cursor's life, so the next one always fits the header
_MAX_NAME_BYTES = 200
_HASHED = re.compile(r"~[0-9a-f]{64}")
_NAME_FIELD = re.compile(rb'"name":("(?:[^"\\]|\\.)*")')


def cursor_file_name(name: str) -> str:
    """Slot 0's file name for cursor ``name`` (slot 1's adds ``.1``)."""
    quoted = quote(name, safe="")
    if len(quoted.encode()) > _MAX_NAME_BYTES:
        quoted = "~" + hashlib.sha256(name.encode()).hexdigest()
    return quoted + SUFFIX


def encode_copy(state: bytes, generation: int) -> bytes:
    """One copy's bytes: the header for ``state`` as save number ``generation``, then ``state``."""
    head = CURSOR_HEADER.pack(CURSOR_MAGIC, generation, len(state), google_crc32c.value(state), 0)
    head = head[:-4] + struct.pack(">I", google_crc32c.value(head[:-4]))
    return head + state


class CursorCopy(NamedTuple):
    """One slot's file as read."""

    slot: int
    """0 (``.cursor``) or 1 (``.cursor.1``)"""
    file: str
    """the file's name (never a server path: it goes into log lines)"""
    generation: int | None
    """the save it holds, when proven (its header verifies; a ``PLC1`` file that verifies whole: 0)"""
    cursor: ManagedCursor | None
    """its state; None when the copy is damaged"""
    damage: str
    """why the copy cannot be used ("" when it can)"""


def read_copy(path: Path, slot: int, expected_file: str | None = None) -> CursorCopy:
    """Read one copy (step 1); ``expected_file``: slot 0's file name the state's name must map to."""

    def damaged(reason: str, generation: int | None = None) -> CursorCopy:
        return CursorCopy(slot, path.name, generation, None, reason)

    try:
        raw = path.read_bytes()
    except OSError as exc:
        return damaged(f"unreadable: {exc.strerror or exc}")
    if not raw:
        return damaged("empty file")
    magic = struct.unpack_from(">I", raw)[0] if len(raw) >= 4 else None
    if magic == CURSOR_MAGIC:
        if len(raw) < CURSOR_HEADER.size:
            return damaged("truncated header")
        _, generation, length, crc, hcrc = CURSOR_HEADER.unpack_from(raw)
        if google_crc32c.value(raw[:CURSOR_HEADER.size - 4]) != hcrc:
            return damaged("header CRC mismatch")
        if generation > MAX_GENERATION:
            return damaged(f"generation {generation}")
        state = raw[CURSOR_HEADER.size:]
    elif magic == CURSOR_MAGIC_V1:
        if len(raw) < CURSOR_HEADER_V1.size:
            return damaged("truncated header")
        _, length, crc = CURSOR_HEADER_V1.unpack_from(raw)
        generation, state = None, raw[CURSOR_HEADER_V1.size:]  # proven only once the whole file verifies
    else:
        return damaged("truncated header" if len(raw) < 4 else "bad magic")
    if length != len(state):
        return damaged(f"{len(state)} bytes of state where {length} were written", generation)
    if google_crc32c.value(state) != crc:
        return damaged("CRC mismatch", generation)
    generation = 0 if generation is None else generation
    try:
        name = json.loads(state)["name"]
        if not isinstance(name, str):
            raise ValueError(f"name={name!r}")
        cursor = ManagedCursor.from_bytes(name, state)
    except (ValueError, KeyError, TypeError) as exc:
        return damaged(str(exc), generation)
    if expected_file is not None and cursor_file_name(name) != expected_file:
        return damaged(f"the state names subscription {name!r}, whose file is not this one", generation)
    return CursorCopy(slot, path.name, generation, cursor, "")


@dataclass(frozen=True)
class StoredCursor:
    """What the copies of one subscription's cursor hold (:meth:`CursorStore.load`)."""

    name: str | None
    """the subscription; None when no copy is usable and the file name is a hash (step 4)"""
    usable: tuple[CursorCopy, ...]
    """the copies that verify, newest first"""
    damaged: tuple[CursorCopy, ...]
    """the copies that do not"""

    @property
    def newest_lost(self) -> bool:
        """A damaged copy may hold a newer state than the newest usable one (step 3)."""
        newest = _generation(self.usable[0]) if self.usable else -1
        return any(c.generation is None or c.generation > newest for c in self.damaged)

    @property
    def files(self) -> list[str]:
        """The names of the copies' files."""
        return sorted(c.file for c in (*self.usable, *self.damaged))


class CursorStore:
    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._kept: dict[str, tuple[int, int]] = {}
        """name -> (the slot holding the state loaded or saved last, the highest generation seen)"""

    def path_of(self, name: str, slot: int = 0) -> Path:
        return self.directory / (cursor_file_name(name) + SLOT_SUFFIXES[slot][len(SUFFIX):])

    def save(self, cursor: ManagedCursor) -> None:
        """Persist atomically into the slot not holding the last saved state, and clear ``dirty``."""
        kept, generation = self._kept.get(cursor.name) or self._probe(cursor.name)
        slot = 1 - kept
        atomic_write(self.path_of(cursor.name, slot), encode_copy(cursor.to_bytes(), generation + 1))
        self._kept[cursor.name] = (slot, generation + 1)
        cursor.dirty = False

    def rewrite(self, cursor: ManagedCursor) -> None:
        """Replace both copies with ``cursor`` (after a recovery: no damaged or rejected copy stays behind)."""
        self.save(cursor)
        self.save(cursor)

    def saved_at_ms(self, name: str) -> int:
        """When the cursor ``name`` was last saved (its newest copy's modification time, ms since the epoch)."""
        kept, _ = self._kept.get(name) or self._probe(name)
        return self.path_of(name, kept).stat().st_mtime_ns // 1_000_000

    def load(self) -> list[StoredCursor]:
        """Every stored cursor's copies, as read (steps 1-4); leftover temp files are removed."""
        slots: dict[str, dict[int, Path]] = {}
        for path in sorted(self.directory.iterdir()):
            if path.name.endswith(".tmp"):
                path.unlink(missing_ok=True)
                continue
            for slot, suffix in enumerate(SLOT_SUFFIXES):
                if path.name.endswith(suffix):
                    slots.setdefault(path.name[:-len(suffix)], {})[slot] = path
        return [self._read(base, paths) for base, paths in slots.items()]

    def load_all(self) -> dict[str, ManagedCursor]:
        """The newest state of every cursor whose newest state is known (:meth:`load` tells the others:
        a topic's load recovers them); leftover temp files are removed."""
        return {stored.name: stored.usable[0].cursor for stored in self.load()  # type: ignore[misc]
                if stored.name is not None and stored.usable and not stored.newest_lost}

    def set_aside(self, stored: StoredCursor) -> None:
        """Rename the copies of a cursor nobody can be given back (its name is unknown) to ``*.damaged``."""
        for file in stored.files:
            os.replace(self.directory / file, self.directory / (file + SET_ASIDE_SUFFIX))
        fsync_directory(self.directory)

    def delete(self, name: str) -> None:
        """Forget a cursor (unsubscribe), both copies, the older first; missing files are fine."""
        kept, _ = self._kept.pop(name, None) or self._probe(name)
        removed = False
        for slot in (1 - kept, kept):
            path = self.path_of(name, slot)
            if path.exists():
                path.unlink()
                removed = True
        if removed:
            fsync_directory(self.directory)

    def _read(self, base: str, paths: dict[int, Path]) -> StoredCursor:
        copies = [read_copy(path, slot, base + SUFFIX) for slot, path in sorted(paths.items())]
        usable = _newest_first(copies)
        newest = usable[0].cursor if usable else None
        name = newest.name if newest is not None else _name_from_files(base, list(paths.values()))
        if name is not None:
            self._kept[name] = _kept(copies)
        return StoredCursor(name, usable, tuple(c for c in copies if c.cursor is None))

    def _probe(self, name: str) -> tuple[int, int]:
        """``(kept slot, highest generation)`` of a cursor this store has not loaded or saved yet."""
        paths = [(slot, self.path_of(name, slot)) for slot in (0, 1)]
        return _kept([read_copy(path, slot, cursor_file_name(name)) for slot, path in paths if path.exists()])


def _generation(copy: CursorCopy) -> int:
    return -1 if copy.generation is None else copy.generation


def _newest_first(copies: list[CursorCopy]) -> tuple[CursorCopy, ...]:
    """The usable ``copies``, the highest generation first."""
    return tuple(sorted((c for c in copies if c.cursor is not None), key=_generation, reverse=True))


def _kept(copies: list[CursorCopy]) -> tuple[int, int]:
    """``(the slot a save must not overwrite, the highest generation proven)``: the newest usable copy's slot
    (none usable: slot 1, so a save writes slot 0 first)."""
    usable = _newest_first(copies)
    return (usable[0].slot if usable else 1), max([0, *(_generation(c) for c in copies)])


def _name_from_files(base: str, paths: list[Path]) -> str | None:
    """Step 4 for a cursor with no usable copy: its file name decoded, or a name its bytes hold that maps to
    the file name (the copies' CRCs failed, so the name must prove itself)."""
    if not _HASHED.fullmatch(base):
        try:
            name = unquote(base, errors="strict")
        except UnicodeDecodeError:
            return None
        return name if cursor_file_name(name) == base + SUFFIX else None
    for path in paths:
        try:
            raw = path.read_bytes()
        except OSError:
            continue
        for match in _NAME_FIELD.finditer(raw):
            try:
                name = json.loads(match.group(1))
            except ValueError:
                continue
            if isinstance(name, str) and cursor_file_name(name) == base + SUFFIX:
                return name
    return None
