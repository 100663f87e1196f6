"""Atomic small-file writes: the one way metadata (cursors, partitioned topics) reaches the disk."""
from __future__ import annotations

import os
from pathlib import Path


def fsync_directory(directory: Path) -> None:
    """Make a rename or unlink inside ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new content, never a mix:
    temp file in the same folder, write, flush, fsync, ``os.replace``, fsync the folder. A leftover
    temp file (``.*.tmp``) can only remain after a crash; readers ignore it."""
    while True:  # tempfile.mkstemp's way, without importing tempfile (shutil, bz2, lzma, random) at start
        tmp = str(path.parent / f".{os.urandom(6).hex()}.tmp")
        try:
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)
