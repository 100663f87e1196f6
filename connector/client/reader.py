"""``Reader`` (pulsar-client's API): a non-durable exclusive subscription that starts at a message id."""
from __future__ import annotations

from typing import Any

from broker_core import errors
from broker_core.protocol import broker_pb2
from broker_core.types import MessageId

from connector.client.consumer import Consumer
from connector.client.message import Message


def start_position(start_message_id: MessageId, inclusive: bool) -> broker_pb2.Position:
    """The wire ``Position`` of a reader start: earliest, latest, or the message's offset
    (+1 unless inclusive)."""
    if start_message_id.is_earliest():
        return broker_pb2.Position(earliest=True)
    if start_message_id.is_latest():
        return broker_pb2.Position(latest=True)
    return broker_pb2.Position(offset=start_message_id.offset + (0 if inclusive else 1))


class Reader:
    """Reads a topic from a start position, without acknowledgements."""

    def __init__(self, consumer: Consumer, topic: str, start_message_id: MessageId,
                 inclusive: bool) -> None:
        self._consumer = consumer
        self._topic = topic
        self._inclusive = inclusive
        self._next_offsets: dict[str, int] = {}
        self._set_start(start_message_id)

    def _set_start(self, start: MessageId | int) -> None:
        """Where the next message is expected, per partition topic (for has_message_available)."""
        self._next_offsets.clear()
        for sub in self._consumer._subs:
            if isinstance(start, int) or start.is_earliest():
                self._next_offsets[sub.topic] = 0
            elif start.is_latest():
                last = self._last(sub.topic).last_offset
                self._next_offsets[sub.topic] = last if self._inclusive else last + 1
            else:
                self._next_offsets[sub.topic] = start.offset + (0 if self._inclusive else 1)

    def _last(self, topic: str) -> broker_pb2.LastMessageId:
        return self._consumer._client._connection.unary(
            "GetLastMessageId", broker_pb2.TopicRequest(topic=topic))

    def topic(self) -> str:
        return self._topic

    def read_next(self, timeout_millis: int | None = None) -> Message:
        """The next message; raises ``Timeout`` after ``timeout_millis`` (None: wait forever), and
        ``MessageDecodeError`` once for an entry that cannot be decoded (reading then goes on after it)."""
        try:
            msg = self._consumer.receive(timeout_millis)
        except errors.MessageDecodeError as exc:
            offsets = getattr(exc, "offsets", None)
            topic = getattr(exc, "topic", None)
            if offsets and topic in self._next_offsets:
                # a range (a poison entry's, maybe 2**31 long) is ascending: max() would walk it
                last = offsets[-1] if isinstance(offsets, range) else max(offsets)
                self._next_offsets[topic] = max(self._next_offsets[topic], last + 1)
            raise
        entry = msg._entry
        self._next_offsets[entry.topic] = entry.entry_id + max(msg._index, 0) + 1
        return msg

    def has_message_available(self) -> bool:
        """True when a message is buffered, or the topic holds one past the last one read."""
        if self._consumer._closed:
            raise errors.AlreadyClosed(f"the reader on {self._topic} is closed")
        if self._consumer._queue:
            return True
        for sub in self._consumer._subs:
            last = self._last(sub.topic)
            if last.last_offset >= 0 and last.last_offset >= max(self._next_offsets.get(sub.topic, 0),
                                                                  last.start_offset):
                return True
        return bool(self._consumer._queue)

    def has_reached_end_of_topic(self) -> bool:
        """True once the topic is terminated and every message of it was read (pulsar-client's name)."""
        return self._consumer.has_reached_end_of_topic()

    def seek(self, target: MessageId | int) -> None:
        """Move to a message id (inclusive of it, as pulsar-client) or a publish time in ms."""
        self._consumer.seek(target)
        if isinstance(target, MessageId) and not (target.is_earliest() or target.is_latest()):
            for sub in self._consumer._subs:
                self._next_offsets[sub.topic] = target.offset
        else:
            self._set_start(target)

    def close(self) -> None:
        self._consumer.close()

    def is_connected(self) -> bool:
        return self._consumer.is_connected()

    def __enter__(self) -> "Reader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
