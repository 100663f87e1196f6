"""One timer thread per client: batch publish delays, ack grouping, send timeouts, delayed nacks."""
from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Any, Callable

log = logging.getLogger(__name__)


class TimerThread:
    """``call_later(delay_s, fn, *args)`` runs ``fn(*args)`` on this thread after ``delay_s``."""

    def __init__(self, name: str = "pulsarlike-timer") -> None:
        self._heap: list[tuple[float, int, Callable[..., Any], tuple[Any, ...]]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def call_later(self, delay_s: float, fn: Callable[..., Any], *args: Any) -> None:
        deadline = time.monotonic() + delay_s
        with self._cond:
            if self._stopped:
                return
            heapq.heappush(self._heap, (deadline, next(self._seq), fn, args))
            if self._heap[0][0] == deadline:
                self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._heap.clear()
            self._cond.notify()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stopped:
                        return
                    if self._heap:
                        wait = self._heap[0][0] - time.monotonic()
                        if wait <= 0:
                            _, _, fn, args = heapq.heappop(self._heap)
                            break
                        self._cond.wait(wait)
                    else:
                        self._cond.wait()
            try:
                fn(*args)
            except Exception:  # a failing task must not stop the others
                log.exception("timer task %r failed", fn)
