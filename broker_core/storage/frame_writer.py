"""Writing frames to the active segment: one ``os.writev`` (no fsync), and on failure the file cut back to
the segment's size, so a partial frame never sits before the next one.

Crash testing: ``PULSARLIKE_CRASH_AT_WRITE=N`` (read once at import) makes the process write only the
first half of the bytes of its N-th frame write, then SIGKILL itself.
"""
from __future__ import annotations

import os
import signal
from collections.abc import Sequence

from broker_core.errors import PersistenceError
from broker_core.log_limits import LogLimiter
from broker_core.storage.segment import Segment

_IOV_MAX = 1024
_CRASH_AT_WRITE = int(os.environ.get("PULSARLIKE_CRASH_AT_WRITE") or 0)
_frame_writes = 0


def _crash_point(fd: int, buffers: Sequence[bytes]) -> None:
    """Test-only: on the N-th frame write, write half of it and die like a power cut would leave it."""
    global _frame_writes
    _frame_writes += 1
    if _frame_writes == _CRASH_AT_WRITE:
        blob = b"".join(buffers)
        os.write(fd, blob[:len(blob) // 2])
        os.kill(os.getpid(), signal.SIGKILL)


def write_frames(seg: Segment, buffers: list[bytes], *, name: str, failures: LogLimiter) -> None:
    """Append ``buffers`` (encoded frames) to the active segment ``seg``; a failure raises
    :class:`PersistenceError` naming the log ``name`` (never a server path), logged through ``failures``."""
    writer = seg.writer
    with writer as fd:
        writer.dirty = True
        try:
            if _CRASH_AT_WRITE:
                _crash_point(fd, buffers)
            write_all(fd, buffers)
        except OSError as exc:
            try:
                os.ftruncate(fd, seg.size)  # never leave a partial frame before the next one
            except OSError as cut:
                failures.error("append_cleanup_failed", "event=log_append_cleanup_failed segment=%s"
                               " error=%r", seg.path, cut)
            failures.error("append_failed", "event=log_append_failed segment=%s error=%r", seg.path, exc)
            raise PersistenceError(f"{name}: cannot store the entry: {exc.strerror or exc}"
                                   " (the broker's disk); the producer may retry once the cause is fixed",
                                   reason=exc.strerror or str(exc)) from None


def write_all(fd: int, buffers: Sequence[bytes]) -> None:
    """``os.writev`` the buffers, resuming after short writes and splitting at IOV_MAX."""
    pending = list(buffers)
    while pending:
        batch = pending[:_IOV_MAX]
        written = os.writev(fd, batch)
        consumed = 0
        while consumed < len(batch) and written >= len(batch[consumed]):
            written -= len(batch[consumed])
            consumed += 1
        pending = pending[consumed:]
        if written:
            pending[0] = memoryview(pending[0])[written:]
