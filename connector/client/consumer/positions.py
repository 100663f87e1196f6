"""Where a non-durable subscription (a reader) is, per topic partition: the offset of the next message it
expects. A reconnection resumes there -- after the last message handed to the application -- and
``Reader.has_message_available`` compares it with the partition's last stored offset."""
from __future__ import annotations

import threading

from broker_core import errors

from connector.client.transport.events import Position
from connector.client.message import Message


class ReadPositions:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next: dict[str, int] = {}

    def taken(self, msg: Message) -> None:
        """``msg`` was handed to the application: the next one of its partition comes after it."""
        self._next[msg.topic_name()] = msg.offset() + 1

    def skipped(self, error: errors.MessageDecodeError) -> None:
        """An undecodable entry was passed over: reading goes on after it."""
        offsets = getattr(error, "offsets", None)
        topic = getattr(error, "topic", None)
        if offsets and topic:
            # a range (a poison entry's, maybe 2**31 long) is ascending: max() would walk it
            last = offsets[-1] if isinstance(offsets, range) else max(offsets)
            with self._lock:
                self._next[topic] = max(self._next.get(topic, 0), last + 1)

    def set(self, topic: str, offset: int) -> None:
        self._next[topic] = offset

    def forget(self, topic: str) -> None:
        self._next.pop(topic, None)

    def restart(self, topic: str, start: Position | None) -> None:
        """Back to the start (the reader moved to another cluster): the start's position when it names one,
        else not known (the start -- earliest, latest, a subscription's initial position -- decides)."""
        if start is not None and not start.latest and start.offset >= 0:
            self.set(topic, start.offset)
        else:
            self.forget(topic)

    def next_offset(self, topic: str) -> int | None:
        """The offset of the next message expected on ``topic`` (None: not known, the start decides)."""
        return self._next.get(topic)
