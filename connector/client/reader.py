"""``Reader`` (pulsar-client's API): a non-durable exclusive subscription that starts at a message id.

A reader is a :class:`~connector.client.consumer.Consumer` that never acknowledges, plus where it is on each
partition (:class:`~connector.client.consumer.positions.ReadPositions`): after a broker restart it resumes after the
last message it returned, and ``has_message_available`` compares that with the partition's last message --
for a compacted reader (``is_read_compacted``) the compacted view's, which may be older than the topic's when
its newest messages were compacted away (tombstones). A compacted reader does acknowledge, cumulatively, what
it has returned (:mod:`connector.client.consumer.read_progress`, as pulsar-client's readers do): the broker keeps the
tombstones it may still have to read from there on.
"""
from __future__ import annotations

from typing import Any, Callable

from broker_core import errors

from connector.client.consumer import Consumer
from connector.client.transport.events import EARLIEST, LATEST, Position
from connector.client.lookup import Lookup
from connector.client.message import Message
from connector.client.message_id import MessageId
from connector.client.opening import Deadline
from connector.client.consumer.positions import ReadPositions
from connector.client.consumer.read_progress import ReadProgress
from connector.client.transport import DENSE, Positions


def start_position(start_message_id: MessageId, inclusive: bool,
                   last_offset: Callable[[], int] | None = None, numbering: Positions = DENSE) -> Position:
    """Where a reader starts: earliest, latest, or the message's position (``numbering``:
    the transport's; +1 unless inclusive). Latest inclusive is the last message's position when
    ``last_offset`` finds one: the broker starts at the entry holding it, and the partition consumer drops
    the batch's earlier messages (pulsar-client reads only the last message)."""
    if start_message_id.is_earliest():
        return EARLIEST
    if start_message_id.is_latest():
        last = last_offset() if inclusive and last_offset is not None else -1
        return Position.at(last) if last >= 0 else LATEST
    return Position.at(numbering.position(start_message_id) + (0 if inclusive else 1))


class Reader:
    """Reads a topic from a start position, without acknowledgements (but a compacted reader's progress)."""

    def __init__(self, consumer: Consumer, lookup: Lookup, topic: str, positions: ReadPositions,
                 start_message_id: MessageId, inclusive: bool, *, read_compacted: bool = False,
                 numbering: Positions = DENSE, deadline: Deadline | None = None) -> None:
        """``deadline``: create_reader's (:mod:`connector.client.opening`), for the last messages a start at
        the latest message looks up."""
        self._consumer = consumer
        self._numbering = numbering
        """The transport's positions (the message ids of another broker are not offsets)."""
        self._read_compacted = read_compacted
        self._lookup = lookup
        self._topic = topic
        self._positions = positions
        self._inclusive = inclusive
        self._progress = ReadProgress(consumer.acknowledge_cumulative) if read_compacted else None
        self._set_start(start_message_id, deadline)

    def _set_start(self, start: MessageId | int, deadline: Deadline | None = None) -> None:
        """Where the next message is expected, per partition topic (unknown for earliest or a time)."""
        for topic in self._consumer.partition_topics():
            if isinstance(start, int) or start.is_earliest():
                self._positions.forget(topic)
            elif start.is_latest():
                last = self._lookup.last_message(topic, read_compacted=self._read_compacted,
                                                 deadline=deadline).last_offset
                self._positions.set(topic, last if self._inclusive else last + 1)
            else:
                self._positions.set(topic, self._numbering.position(start) + (0 if self._inclusive else 1))

    def topic(self) -> str:
        return self._topic

    def read_next(self, timeout_millis: int | None = None) -> Message:
        """The next message; raises ``Timeout`` after ``timeout_millis`` (None: wait forever), and
        ``MessageDecodeError`` once for an entry that cannot be decoded (reading then goes on after it)."""
        progress = self._progress
        try:
            msg = self._consumer.receive(timeout_millis)
        except errors.MessageDecodeError as exc:
            self._positions.skipped(exc)
            raise
        except errors.Timeout:
            if progress is not None:
                progress.flush()  # nothing more to return now: the broker learns where the reader is
            raise
        if progress is not None:
            progress.returned(msg)
        return msg

    def read_ready(self) -> Message | None:
        """:meth:`read_next` without waiting: the next message if one is buffered now, else None (an asyncio
        reader's step; it waits with :meth:`ring_when_ready`)."""
        try:
            msg = self._consumer.receive_ready()
        except errors.MessageDecodeError as exc:
            self._positions.skipped(exc)
            raise
        if self._progress is not None:
            if msg is None:
                self._progress.flush()  # nothing more to return now, as read_next's timeout
            else:
                self._progress.returned(msg)
        return msg

    def ring_when_ready(self, bell: Any) -> None:
        """See :meth:`Consumer.ring_when_ready`."""
        self._consumer.ring_when_ready(bell)

    def forget_bell(self, bell: Any) -> None:
        self._consumer.forget_bell(bell)

    def has_message_available(self) -> bool:
        """True when a message is buffered, or the topic holds one past the last one read."""
        if not self._consumer.is_open():
            raise errors.AlreadyClosed(f"the reader on {self._topic} is closed")
        if self._consumer.has_buffered_live():
            return True
        if self._progress is not None:
            self._progress.flush()
        for topic in self._consumer.partition_topics():
            last = self._lookup.last_message(topic, read_compacted=self._read_compacted)
            expected = self._positions.next_offset(topic) or 0
            if last.last_offset >= 0 and last.last_offset >= max(expected, last.start_offset):
                return True
        return self._consumer.has_buffered_live()

    def has_reached_end_of_topic(self) -> bool:
        """True once the topic is terminated and every message of it was read (pulsar-client's name)."""
        return self._consumer.has_reached_end_of_topic()

    def seek(self, messageid: MessageId | int) -> None:
        """Move to a message id (the next read is that message when the reader is ``start_message_id_inclusive``,
        else the one after it, as pulsar-client) or a publish time in ms."""
        if self._progress is not None:
            self._progress.forget()
        self._consumer.seek(messageid)
        if isinstance(messageid, MessageId) and not (messageid.is_earliest() or messageid.is_latest()):
            for topic in self._consumer.partition_topics():
                self._positions.set(topic, self._numbering.position(messageid) + (0 if self._inclusive else 1))
        else:
            self._set_start(messageid)

    def close(self) -> None:
        self._consumer.close()

    def is_connected(self) -> bool:
        return self._consumer.is_connected()

    def __enter__(self) -> "Reader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
