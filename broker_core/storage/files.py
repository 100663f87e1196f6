"""The broker's budget of open segment files: an LRU of file descriptors shared by every topic.

A broker that touched 20,000 topics must not hold 20,000 open segments. Every segment and index file is
a :class:`FileHandle`; using one (``with handle as fd:``) opens it if needed and marks it most recently
used. When more than ``max_open`` handles are open, the least recently used idle ones are closed; a
handle in use (an fsync running on a worker thread, say) is never closed under its user, and one closed
while in use is closed when its last user lets go.

A write handle with appends not yet fsynced is ``dirty``: evicting it fsyncs it first, so an error of
that fsync is not lost with the descriptor (Linux reports a writeback error only to descriptors open when
it happened). The error is kept and raised by the next :meth:`FileHandle.sync`, so the journal fails the
entries it covers instead of confirming them.

Example::

    budget = FileBudget(max_open=2)
    a, b, c = (budget.handle(p, os.O_RDONLY) for p in paths)
    with a as fd: os.pread(fd, 10, 0)     # opens a
    with b as fd: ...                     # opens b
    with c as fd: ...                     # opens c, closes a (least recently used, idle)
"""
from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from pathlib import Path

log = logging.getLogger(__name__)

# Appends only grow a file: fdatasync persists the data and the new size, without the timestamps.
datasync = getattr(os, "fdatasync", os.fsync)


class FileHandle:
    """One file the budget may close while idle and reopens on use."""

    __slots__ = ("path", "flags", "dirty", "_fd", "_users", "_budget", "_retired", "_sync_error")

    def __init__(self, budget: "FileBudget", path: Path, flags: int) -> None:
        self.path = path
        self.flags = flags
        self.dirty = False
        """appended to since the last fsync (write handles)"""
        self._fd: int | None = None
        self._users = 0
        self._budget = budget
        self._retired = False
        self._sync_error: OSError | None = None

    def __enter__(self) -> int:
        return self._budget.use(self)

    def __exit__(self, *exc: object) -> None:
        self._budget.release(self)

    @property
    def is_open(self) -> bool:
        return self._fd is not None

    def sync(self) -> None:
        """fdatasync the file (opening it if it was evicted); raises an error an eviction's fsync met."""
        with self as fd:
            self.sync_held(fd)

    def sync_held(self, fd: int) -> None:
        """:meth:`sync` through ``fd``, a descriptor the caller holds (``fd = handle.__enter__()``)."""
        error, self._sync_error = self._sync_error, None
        if error is not None:
            raise error
        self.dirty = False
        try:
            datasync(fd)
        except OSError:
            self.dirty = True
            raise

    def close(self) -> None:
        """Close for good (the segment is sealed, removed or its log closed); safe while in use."""
        self._budget.retire(self)


class FileBudget:
    """At most ``max_open`` idle descriptors (0: no limit). Thread-safe."""

    def __init__(self, max_open: int = 0) -> None:
        if max_open < 0:
            raise ValueError(f"max_open must be >= 0, got {max_open}")
        self.max_open = max_open
        self._open: OrderedDict[FileHandle, None] = OrderedDict()
        self._lock = threading.Lock()
        self.opens = 0
        """descriptors opened so far (a reopen after an eviction counts again)"""
        self.evictions = 0

    def handle(self, path: Path, flags: int) -> FileHandle:
        """A handle for ``path`` opened with ``flags`` on first use (nothing is opened now)."""
        return FileHandle(self, path, flags)

    @property
    def open_count(self) -> int:
        return len(self._open)

    def use(self, handle: FileHandle) -> int:
        with self._lock:
            if handle._retired:
                raise ValueError(f"file handle {handle.path.name} is closed")
            handle._users += 1
            fd = handle._fd
            if fd is not None:
                self._open.move_to_end(handle)
                return fd
        try:
            fd = os.open(handle.path, handle.flags, 0o644)
        except BaseException:
            with self._lock:
                handle._users -= 1
            raise
        with self._lock:
            if handle._fd is not None:  # another thread opened it meanwhile
                extra, fd = fd, handle._fd
                self._open.move_to_end(handle)
                victims = [(handle, extra, False)]
            else:
                handle._fd = fd
                self._open[handle] = None
                self.opens += 1
                victims = self._victims()
        for victim, victim_fd, dirty in victims:
            self._close_fd(victim, victim_fd, dirty)
        return fd

    def release(self, handle: FileHandle) -> None:
        with self._lock:
            handle._users -= 1
            if handle._users or not handle._retired:
                return
            taken = self._take(handle)
        if taken is not None:
            self._close_fd(handle, *taken)

    def retire(self, handle: FileHandle) -> None:
        with self._lock:
            handle._retired = True
            if handle._users:
                return
            taken = self._take(handle)
        if taken is not None:
            self._close_fd(handle, *taken)

    def _take(self, handle: FileHandle) -> tuple[int, bool] | None:
        """Detach ``handle``'s descriptor (caller holds the lock): the next use opens a new one."""
        fd = handle._fd
        if fd is None:
            return None
        dirty = handle.dirty
        handle._fd, handle.dirty = None, False
        del self._open[handle]
        return fd, dirty

    def _victims(self) -> list[tuple[FileHandle, int, bool]]:
        """Idle handles to close, least recently used first (caller holds the lock)."""
        excess = len(self._open) - self.max_open if self.max_open else 0
        if excess <= 0:
            return []
        idle = []
        for handle in self._open:
            if not handle._users:
                idle.append(handle)
                if len(idle) == excess:
                    break
        self.evictions += len(idle)
        return [(handle, *self._take(handle)) for handle in idle]  # type: ignore[misc]

    @staticmethod
    def _close_fd(handle: FileHandle, fd: int, dirty: bool) -> None:
        try:
            if dirty:
                try:
                    datasync(fd)
                except OSError as exc:  # kept for the journal's next sync, which fails what it covers
                    handle._sync_error = exc
                    log.error("event=evicted_file_sync_failed file=%s error=%r", handle.path.name, exc)
        finally:
            os.close(fd)


UNLIMITED = FileBudget(0)
"""The budget of logs opened outside a broker (tools, tests): no limit."""
