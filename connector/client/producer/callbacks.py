"""What a pending send completes: a blocking ``send``'s :class:`SyncWaiter`, a ``send_async`` callback
(``callback(Result, MessageId)`` as pulsar-client calls it), or one chunk of a chunked message
(:class:`ChunkPart`, which completes its message's own callback once)."""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from connector.client.enums import result_of
from connector.client.message_id import MessageId

log = logging.getLogger(__name__)


class SyncWaiter:
    """What a blocking ``send`` waits on: a lock held until the receipt (or error) releases it --
    cheaper to make, release and wake from than a ``threading.Event``, on the latency path."""

    __slots__ = ("_pending", "error", "message_id")

    def __init__(self) -> None:
        self._pending = threading.Lock()
        self._pending.acquire()
        self.error: BaseException | None = None
        self.message_id: MessageId | None = None

    def complete(self, error: BaseException | None, message_id: MessageId | None) -> None:
        self.error = error
        self.message_id = message_id
        if self._pending.locked():  # a repeated completion is harmless, as Event.set was
            self._pending.release()

    def wait(self, timeout_s: float | None) -> bool:
        """True once completed; False after ``timeout_s`` seconds (None: no limit)."""
        return self._pending.acquire(timeout=-1 if timeout_s is None else timeout_s)


class ChunkedSend:
    """The send of one chunked message: its callback completes once -- with the last chunk's
    MessageId when every chunk is stored, or with the first chunk error (a failed chunk fails the
    message; the chunks already stored are left for the consumer to expire, as in Pulsar)."""

    __slots__ = ("callback", "done")

    def __init__(self, callback: Any) -> None:
        self.callback = callback
        self.done = False

    def part(self, last: bool) -> "ChunkPart":
        return ChunkPart(self, last)


class ChunkPart:
    """The callback of one chunk's pending entry."""

    __slots__ = ("send", "last")

    def __init__(self, send: ChunkedSend, last: bool) -> None:
        self.send = send
        self.last = last

    def complete(self, error: BaseException | None, message_id: MessageId | None) -> None:
        send = self.send
        if send.done or (error is None and not self.last):
            return
        send.done = True
        complete_callbacks([send.callback], error,
                           lambda i: message_id)  # type: ignore[arg-type,return-value]


def complete_callbacks(callbacks: list[Any], error: BaseException | None,
                       ids: Callable[[int], MessageId] | None = None) -> None:
    """Complete each callback with ``error``, or with ``ids(i)`` -- the i-th message's id -- on success."""
    result = result_of(error)
    for i, callback in enumerate(callbacks):
        mid = ids(i) if ids is not None and error is None else None
        try:
            kind = type(callback)
            if kind is SyncWaiter or kind is ChunkPart:
                callback.complete(error, mid)
            elif callback is not None:
                callback(result, mid)
        except Exception:  # a user callback must not break the producer
            log.exception("send callback failed")
