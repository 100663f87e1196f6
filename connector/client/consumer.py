"""``Consumer`` (pulsar-client's API): one :class:`PartitionConsumer` per topic partition, one merged
receive queue, acks routed to the partition the message came from.

``receive()`` is a lock-free ``deque.popleft()`` when messages are buffered; only an empty queue
takes the condition. An entry that could not be decoded sits in the queue as a ``DecodeFailure``:
``receive()`` raises its ``MessageDecodeError`` (once, acknowledging the entry; the failure raises it from
the permit accounting, so real messages pay no test for it) and the next call returns the next message;
a ``message_listener`` consumer logs it instead.
"""
from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Any, Callable

from broker_core import errors
from broker_core.protocol import broker_pb2
from broker_core.types import MessageId

from connector.client.enums import ConsumerType
from connector.client.message import DecodeFailure, Message
from connector.client.partition_consumer import PartitionConsumer

log = logging.getLogger(__name__)


def _sub_of(item: Message | DecodeFailure) -> PartitionConsumer:
    """The partition consumer a queued message or failure came from."""
    return item.consumer if item.__class__ is DecodeFailure else item._entry.sub  # type: ignore[union-attr]


class Consumer:
    """Receives messages of one subscription over one or more topics (and their partitions)."""

    def __init__(self, client: Any, topic: str | list[str], subscription_name: str,
                 consumer_type: ConsumerType, message_listener: Callable[[Any, Message], None] | None,
                 negative_ack_redelivery_delay_ms: int, *, max_pending_chunked_message: int = 10,
                 auto_ack_oldest_chunked_message_on_queue_full: bool = False,
                 expire_time_of_incomplete_chunked_message_ms: int = 60000) -> None:
        self._client = client
        self._max_pending_chunked = max_pending_chunked_message
        self._auto_ack_oldest_chunked = auto_ack_oldest_chunked_message_on_queue_full
        self._chunk_expiry_ms = expire_time_of_incomplete_chunked_message_ms
        self._topic = topic
        self._subscription = subscription_name
        self._consumer_type = consumer_type
        self._listener = message_listener
        self._nack_delay_s = max(0, negative_ack_redelivery_delay_ms) / 1000.0
        self._queue: collections.deque[Message | DecodeFailure] = collections.deque()
        self._cond = threading.Condition()
        self._waiting = 0
        self._subs: list[PartitionConsumer] = []
        self._by_topic: dict[str, PartitionConsumer] = {}
        self._nack_scheduled: set[int] = set()
        self._closed = False
        self._request_ids = 0
        self._listener_thread: threading.Thread | None = None
        self._listener_owner: Any = self

    def _attach(self, subs: list[PartitionConsumer]) -> None:
        self._subs = subs
        self._by_topic = {sub.topic: sub for sub in subs}
        self._start_listener()

    def _start_listener(self) -> None:
        if self._listener is not None and self._listener_thread is None:
            self._listener_thread = threading.Thread(target=self._run_listener, daemon=True,
                                                     name=f"pulsarlike-listener-{self._subscription}")
            self._listener_thread.start()

    # --- called by partition consumers ------------------------------------------------------------------
    def _deliver(self, messages: list[Message | DecodeFailure]) -> None:
        if _sub_of(messages[0])._seeking:
            return
        self._queue.extend(messages)
        if self._waiting:
            with self._cond:
                self._cond.notify_all()

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    # --- receiving ------------------------------------------------------------------------------------
    def receive(self, timeout_millis: int | None = None) -> Message:
        """The next message; raises ``Timeout`` after ``timeout_millis`` (None: wait forever)."""
        if self._listener is not None:
            raise errors.InvalidConfiguration("receive() cannot be used with a message_listener")
        try:
            msg = self._queue.popleft()
        except IndexError:
            msg = self._receive_slow(timeout_millis)
        sub = msg._entry.sub
        # sub.on_taken(), inlined: it runs per message (and raises for a DecodeFailure)
        if next(sub._taken) >= sub._next_refill_raw:
            sub._refill()
        return msg  # type: ignore[return-value]

    def _receive_slow(self, timeout_millis: int | None) -> Message | DecodeFailure:
        deadline = None if timeout_millis is None else time.monotonic() + timeout_millis / 1000.0
        with self._cond:
            self._waiting += 1
            try:
                while True:
                    try:
                        return self._queue.popleft()
                    except IndexError:
                        pass
                    self._check_usable()
                    if deadline is None:
                        self._cond.wait()
                        continue
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise errors.Timeout(f"no message within {timeout_millis} ms")
                    self._cond.wait(remaining)
            finally:
                self._waiting -= 1

    def _check_usable(self) -> None:
        if self._closed:
            raise errors.AlreadyClosed(f"the consumer of {self._subscription!r} is closed")
        failed = [sub.error for sub in self._subs if sub.error is not None]
        if failed and len(failed) == len(self._subs):
            raise failed[0]

    def _run_listener(self) -> None:
        listener = self._listener
        assert listener is not None
        while not self._closed:
            try:
                msg = self._receive_slow(200)
            except errors.Timeout:
                continue
            except errors.PulsarLikeError:
                return
            try:
                msg._entry.sub.on_taken()
            except errors.MessageDecodeError as exc:
                log.error("message_listener consumer of %r skips a message: %s", self._subscription, exc)
                continue
            try:
                listener(self._listener_owner, msg)
            except Exception:  # the listener's bug must not stop delivery
                log.exception("message_listener failed")

    # --- acknowledging --------------------------------------------------------------------------------
    def _target(self, message: Message | MessageId) -> tuple[PartitionConsumer, int]:
        if isinstance(message, Message):
            sub = message._entry.sub
            if sub.owner is self:
                return sub, message._entry.entry_id + max(message._index, 0)
            message = message.message_id()
        if not isinstance(message, MessageId):
            raise TypeError(f"expected a Message or MessageId, not {type(message).__name__}")
        if len(self._subs) == 1:
            return self._subs[0], message.offset
        if message.topic and message.topic in self._by_topic:
            return self._by_topic[message.topic], message.offset
        matches = [s for s in self._subs if s.partition == message.partition]
        if len(matches) != 1:
            raise errors.InvalidMessage(f"{message} does not belong to a topic of this consumer")
        return matches[0], message.offset

    def _open_sub(self, message: Message | MessageId) -> tuple[PartitionConsumer, int]:
        if self._closed:
            raise errors.AlreadyClosed(f"the consumer of {self._subscription!r} is closed")
        sub, offset = self._target(message)
        sub.check_open()
        return sub, offset

    def acknowledge(self, message: Message | MessageId) -> None:
        """Acknowledge one message (acks are grouped for a few ms into one request)."""
        sub, offset = self._open_sub(message)
        sub.ack(offset)

    def acknowledge_cumulative(self, message: Message | MessageId) -> None:
        """Acknowledge every message up to this one on its partition. Raises ``InvalidMessage`` when
        this consumer never received it."""
        if self._consumer_type in (ConsumerType.Shared, ConsumerType.KeyShared):
            raise errors.CumulativeAcknowledgementNotAllowedError(
                "cumulative acknowledgement is not allowed on Shared and Key_Shared subscriptions")
        sub, offset = self._open_sub(message)
        sub.ack_cumulative(offset)

    def negative_acknowledge(self, message: Message | MessageId) -> None:
        """Ask for redelivery after ``negative_ack_redelivery_delay_ms``."""
        sub, _ = self._open_sub(message)
        self._redeliver_later(sub)

    def _redeliver_later(self, sub: PartitionConsumer) -> None:
        """Have ``sub``'s unacknowledged messages redelivered after ``negative_ack_redelivery_delay_ms``."""
        key = id(sub)
        if key not in self._nack_scheduled:
            self._nack_scheduled.add(key)
            self._client._timer.call_later(self._nack_delay_s, self._redeliver_after_nack, sub)

    def _redeliver_after_nack(self, sub: PartitionConsumer) -> None:
        self._nack_scheduled.discard(id(sub))
        if not self._closed and not sub.closed:
            self._redeliver([sub])

    def redeliver_unacknowledged_messages(self) -> None:
        """Drop what is buffered and have the broker redeliver every unacknowledged message."""
        if self._closed:
            raise errors.AlreadyClosed(f"the consumer of {self._subscription!r} is closed")
        self._redeliver(self._subs)

    def _redeliver(self, subs: list[PartitionConsumer]) -> None:
        dropped = self._drop_buffered(subs)
        for sub in subs:
            sub.redeliver()
            sub.drop_buffered(dropped.get(id(sub), 0))  # after the rewind: the room is for redeliveries

    def _drop_buffered(self, subs: list[PartitionConsumer]) -> collections.Counter[int]:
        """Remove ``subs``' messages from the queue; how many per ``id(sub)``."""
        chosen = set(map(id, subs))
        with self._cond:
            kept = [m for m in self._queue if id(_sub_of(m)) not in chosen]
            dropped: collections.Counter[int] = collections.Counter(
                id(_sub_of(m)) for m in self._queue if id(_sub_of(m)) in chosen)
            self._queue.clear()
            self._queue.extend(kept)
        return dropped

    # --- seeking --------------------------------------------------------------------------------------
    def seek(self, target: MessageId | int) -> None:
        """Move the subscription to a message id (its partition only, unless earliest/latest) or to a
        publish time in ms (every partition); buffered messages are dropped."""
        if self._closed:
            raise errors.AlreadyClosed(f"the consumer of {self._subscription!r} is closed")
        if isinstance(target, MessageId) and not (target.is_earliest() or target.is_latest()) \
                and len(self._subs) > 1:
            subs = [self._target(target)[0]]
        else:
            subs = list(self._subs)
        for sub in subs:
            sub.start_seek(target)
        with self._cond:
            chosen = set(map(id, subs))
            kept = [m for m in self._queue if id(_sub_of(m)) not in chosen]
            self._queue.clear()
            self._queue.extend(kept)
        timeout = self._client._connection.operation_timeout_s
        for sub in subs:
            sub.finish_seek(timeout)

    # --- lifecycle ------------------------------------------------------------------------------------
    def unsubscribe(self) -> None:
        """Remove the subscription (raises the broker's error, e.g. when other consumers are on it)
        and close this consumer."""
        if self._closed:
            raise errors.AlreadyClosed(f"the consumer of {self._subscription!r} is closed")
        timeout = self._client._connection.operation_timeout_s
        for sub in self._subs:
            self._request_ids += 1
            sub.unsubscribe(self._request_ids, timeout)
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for sub in self._subs:
            try:
                sub.close()
            except Exception:
                log.exception("closing the consumer on %s failed", sub.topic)
        self._wake()
        if self._listener_thread is not None and threading.current_thread() is not self._listener_thread:
            self._listener_thread.join(timeout=5)
        self._client._forget(self)

    def is_connected(self) -> bool:
        return not self._closed and all(sub.is_connected() for sub in self._subs)

    def topic(self) -> str:
        return self._topic if isinstance(self._topic, str) else ",".join(self._topic)

    def subscription_name(self) -> str:
        return self._subscription

    def consumer_name(self) -> str:
        return self._subs[0].consumer_name if self._subs else ""

    def get_last_message_id(self) -> MessageId:
        """The id of the last message stored on the (first) topic partition."""
        sub = self._subs[0]
        last = self._client._connection.unary("GetLastMessageId", broker_pb2.TopicRequest(topic=sub.topic))
        return MessageId(last.ledger_id, last.entry_id, sub.partition, last.batch_index, topic=sub.topic)

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
