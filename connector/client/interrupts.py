"""Ctrl-C during a blocking call: pulsar-client raises ``pulsar.Interrupted`` from a ``receive()`` that a SIGINT
interrupts; so does pulsarlike.

Python runs signal handlers on the main thread only, between bytecodes. A main thread blocked in a lock wait
runs none until the wait ends, and a signal that another thread raised (``signal.raise_signal`` there, or the
kernel's choice of thread) does not end the wait at all: such a ``receive()`` without a timeout would never
return. So a wait on the main thread is cut into slices of :data:`SLICE_S` (pulsar-client's binding looks for
signals every 100 ms too), after each of which Python runs the pending handlers; the ``KeyboardInterrupt``
that the default SIGINT handler raises becomes :class:`Interrupted`. Other threads wait in one piece.
"""
from __future__ import annotations

import threading
import time
from typing import Any

from broker_core.errors import PulsarLikeError

SLICE_S = 0.1
"""The longest a main-thread wait goes without running signal handlers."""


class Interrupted(PulsarLikeError):
    """A blocking call was interrupted by a signal (Ctrl-C: SIGINT) while it waited; pulsar-client's name
    (``Result.Interrupted``)."""


def wait(lock: Any, timeout_s: float) -> bool:
    """``lock.acquire(timeout=timeout_s)`` (``timeout_s`` < 0: no limit), with signal handlers run every
    :data:`SLICE_S` on the main thread; ``Interrupted`` instead of their ``KeyboardInterrupt``."""
    if threading.current_thread() is not threading.main_thread():
        return lock.acquire(timeout=timeout_s)
    try:
        if timeout_s < 0:
            while not lock.acquire(timeout=SLICE_S):
                pass
            return True
        end = time.monotonic() + timeout_s
        while True:
            left = end - time.monotonic()
            if lock.acquire(timeout=min(max(left, 0.0), SLICE_S)):
                return True
            if left <= SLICE_S:
                return False
    except KeyboardInterrupt:
        raise Interrupted("interrupted by a signal (Ctrl-C) while waiting") from None
