"""How far a compacted reader has read, told to the broker: a cumulative acknowledgment of the last message
returned on each partition, at most every :data:`INTERVAL_S` and whenever the reader waits with nothing to
return.

pulsar-client's readers acknowledge cumulatively every message they return (its acknowledgments grouped every
100 ms); a pulsarlike broker keeps, in the compacted view, the tombstones a compacted reader may still have to
read from its first unacknowledged message on (docs/compaction.md), so a compacted reader that never
acknowledged would hold every tombstone after its start for as long as it stays connected. The reader's
subscription is non-durable: a reconnection resumes after the last message returned whatever was
acknowledged, so an acknowledgment that is late or lost costs only tombstones kept a little longer.

Example: messages 0..9 returned within 100 ms acknowledge 0 (the first, at once), then 9 when the reader next
waits with nothing to return (or when the next message is returned 100 ms after 0).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from broker_core import errors

from connector.client.message import Message

log = logging.getLogger(__name__)

INTERVAL_S = 0.1
"""Acknowledge at most this often while messages are being returned (pulsar-client's ack grouping time)."""


class ReadProgress:
    """Acknowledges cumulatively, through ``acknowledge(message)``, the last message returned per partition."""

    def __init__(self, acknowledge: Callable[[Message], None], clock: Callable[[], float] = time.monotonic) -> None:
        self._acknowledge = acknowledge
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: dict[str, Message] = {}  # partition topic -> last message returned, not acknowledged yet
        self._acked_at = float("-inf")

    def returned(self, msg: Message) -> None:
        """``msg`` was handed to the application."""
        with self._lock:
            self._pending[msg.topic_name()] = msg
            due = self._clock() - self._acked_at >= INTERVAL_S
        if due:
            self.flush()

    def flush(self) -> None:
        """Acknowledge what was returned and not acknowledged yet (the reader has nothing more to return now)."""
        with self._lock:
            pending, self._pending = self._pending, {}
            if pending:
                self._acked_at = self._clock()
        for msg in pending.values():
            try:
                self._acknowledge(msg)
            except errors.PulsarLikeError as exc:  # closed or reconnecting: the broker learns it with the next one
                log.debug("event=read_progress_not_acknowledged topic=%s error=%r", msg.topic_name(), exc)

    def forget(self) -> None:
        """A seek: what was returned before it must not be acknowledged after it."""
        with self._lock:
            self._pending.clear()
