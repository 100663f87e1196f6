"""CursorStore: one file per durable subscription cursor, replaced atomically.

File layout (big-endian, declared once as :data:`CURSOR_HEADER`)::

     0        4        8        12
     +--------+--------+--------+---------------------------
     | magic  | length | crc32c | state (length bytes: ManagedCursor.to_bytes(), JSON)
     +--------+--------+--------+---------------------------

File names are ``quote(name, safe="") + ".cursor"`` (subscription names may hold any character);
names too long for the file system use ``"~" + sha256(name) + ".cursor"``. The name itself is stored
in the state, so loading never depends on decoding a file name.

Saving: write a temp file (``*.tmp``) in the same folder, flush, fsync, ``os.replace`` over the old
file, fsync the folder. A crash leaves either the old or the new file, plus perhaps a temp file that
:meth:`CursorStore.load_all` removes.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
from pathlib import Path
from urllib.parse import quote

import google_crc32c

from broker_core.errors import CorruptLog
from broker_core.storage.cursor import ManagedCursor
from broker_core.storage.atomic import atomic_write, fsync_directory

CURSOR_HEADER = struct.Struct(
    ">"
    "I"  # magic: CURSOR_MAGIC
    "I"  # length: bytes of state after the header
    "I"  # crc32c: of the state bytes
)
CURSOR_MAGIC = 0x504C4331  # b"PLC1"
SUFFIX = ".cursor"
_MAX_NAME_BYTES = 200

log = logging.getLogger(__name__)


def cursor_file_name(name: str) -> str:
    quoted = quote(name, safe="")
    if len(quoted.encode()) > _MAX_NAME_BYTES:
        quoted = "~" + hashlib.sha256(name.encode()).hexdigest()
    return quoted + SUFFIX


class CursorStore:
    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def path_of(self, name: str) -> Path:
        return self.directory / cursor_file_name(name)

    def save(self, cursor: ManagedCursor) -> None:
        """Persist atomically (temp file, fsync, rename, fsync folder) and clear ``dirty``."""
        state = cursor.to_bytes()
        blob = CURSOR_HEADER.pack(CURSOR_MAGIC, len(state), google_crc32c.value(state)) + state
        atomic_write(self.path_of(cursor.name), blob)
        cursor.dirty = False

    def saved_at_ms(self, name: str) -> int:
        """When the cursor ``name`` was last saved (its file's modification time, ms since the epoch)."""
        return self.path_of(name).stat().st_mtime_ns // 1_000_000

    def load_all(self) -> dict[str, ManagedCursor]:
        """Every saved cursor by name; leftover temp files are removed. A damaged file raises CorruptLog."""
        cursors: dict[str, ManagedCursor] = {}
        for path in sorted(self.directory.iterdir()):
            if path.name.endswith(".tmp"):
                path.unlink(missing_ok=True)
            elif path.name.endswith(SUFFIX):
                cursor = self._load(path)
                cursors[cursor.name] = cursor
        return cursors

    def _load(self, path: Path) -> ManagedCursor:
        raw = path.read_bytes()

        def corrupt(reason: str) -> CorruptLog:
            log.error("event=cursor_file_corrupt path=%s reason=%r", path, reason)
            return CorruptLog(f"the stored cursor {path.name} of this topic is corrupt ({reason}); the broker's"
                              " log names the file: delete it to reset that subscription, or restore it from a"
                              " backup", path=path.name, position=0)

        if len(raw) < CURSOR_HEADER.size:
            raise corrupt("truncated header")
        magic, length, crc = CURSOR_HEADER.unpack_from(raw)
        state = raw[CURSOR_HEADER.size:]
        if magic != CURSOR_MAGIC:
            raise corrupt("bad magic")
        if length != len(state):
            raise corrupt(f"{len(state)} bytes of state where {length} were written")
        if google_crc32c.value(state) != crc:
            raise corrupt("CRC mismatch")
        try:
            name = json.loads(state)["name"]
            cursor = ManagedCursor.from_bytes(name, state)
        except (ValueError, KeyError, TypeError) as exc:
            raise corrupt(str(exc)) from None
        return cursor

    def delete(self, name: str) -> None:
        """Forget a cursor (unsubscribe); a missing file is fine."""
        path = self.path_of(name)
        if path.exists():
            path.unlink()
            fsync_directory(self.directory)
