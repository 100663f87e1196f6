"""The data dir's exclusive lock: one broker per data dir.

Two brokers serving one data dir would append to the same segments and overwrite each other's cursors.
A broker takes ``fcntl.flock(LOCK_EX | LOCK_NB)`` on ``<data dir>/broker.lock`` before it opens anything
else there, writes its pid into the file, and keeps the file open until it stops. ``flock`` locks belong
to the open file, so a second broker is refused whether it is another process or another ``Broker`` in
the same process; the kernel drops the lock when the holder dies, so a killed broker leaves nothing to
clean up. The file itself is never deleted: unlinking it while another broker waits to open it would let
two brokers lock two different files.
"""
from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path

from broker_core.errors import DataDirLocked

log = logging.getLogger(__name__)

LOCK_FILE = "broker.lock"


class DataDirLock:
    """``acquire()`` or ``DataDirLocked(pid=<holder>)``; ``release()`` is idempotent."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            holder = f"pid {pid}" if pid else "a process whose pid could not be read"
            raise DataDirLocked(f"data dir {self.path.parent} is in use by another broker ({holder}): stop that"
                                " broker first, or start this one with another data dir", pid=pid) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        log.info("event=data_dir_locked path=%s pid=%d", self.path, os.getpid())

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        os.ftruncate(fd, 0)  # still held: no one reads a stale pid after this
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        log.info("event=data_dir_unlocked path=%s", self.path)


def _read_pid(fd: int) -> int:
    """The holder's pid, or 0 when the file is empty (the holder is between flock and writing it)."""
    try:
        return int(os.pread(fd, 32, 0).decode().strip() or 0)
    except (OSError, ValueError):
        return 0
