"""A client dropped without ``close()``: what it started stops when it is garbage collected.

pulsar-client's threads are the C++ core's, which Python does not count: a program (or test) that makes a
client, uses it and lets it go sees ``threading.active_count()`` back where it was. Ours are Python threads
(the timer, the partitions updater, a binary connection's reader), so the client must not be kept alive by
them -- the updater reaches the client through a weak reference (:func:`children_of`) -- and its collection
stops them (:func:`watch`, a ``weakref.finalize``), as ``close()`` does. A client whose producers, consumers
or readers are still open is left alone: they hold it, so it is collected only with them, and closing the
connection under one that did not would break it.

Only a client whose last reference goes is stopped so; one the cycle collector frees (a client in a
reference cycle, e.g. held by a traceback's frames) is left as before: the collector runs finalizers wherever
it happens to run, inside any C code that allocates, and stopping threads there broke CPython 3.11's
``ast.parse`` ("AST constructor recursion depth mismatch" while pytest rendered a traceback).
"""
from __future__ import annotations

import gc
import logging
import weakref
from typing import Any, Callable

log = logging.getLogger(__name__)


def children_of(client: Any) -> Callable[[], list[Any]]:
    """``client._children_now`` through a weak reference (no children once the client is gone)."""
    ref = weakref.ref(client)

    def children() -> list[Any]:
        alive = ref()
        return alive._children_now() if alive is not None else []
    return children


def watch(client: Any, children: list[Any], *parts: Any) -> weakref.finalize:
    """On ``client``'s collection, stop or close each of ``parts`` (objects with ``stop()`` or ``close()``;
    None skipped), in order, unless ``children`` (the client's list of open children) is not empty.
    ``close()`` detaches the returned finalizer."""
    return weakref.finalize(client, _release, children, parts)


_collecting = False
"""True while the cycle collector runs (set by :func:`_track_collections`)."""


def _track_collections(phase: str, info: dict) -> None:
    global _collecting
    _collecting = phase == "start"


gc.callbacks.append(_track_collections)


def _release(children: list[Any], parts: tuple[Any, ...]) -> None:
    if children or _collecting:
        return
    log.debug("event=client_collected_unclosed")
    for part in parts:
        if part is None:
            continue
        try:
            (getattr(part, "stop", None) or part.close)()
        except Exception:
            log.exception("stopping %r of a client collected without close() failed", part)
