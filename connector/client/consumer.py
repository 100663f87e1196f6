"""``Consumer`` (pulsar-client's API): one :class:`PartitionConsumer` per topic partition, one merged
receive queue, acks routed to the partition the message came from.

``receive()`` is a lock-free ``deque.popleft()`` when messages are buffered; only an empty queue
takes the condition. An entry that could not be decoded sits in the queue as a ``DecodeFailure``:
``receive()`` raises its ``MessageDecodeError`` (once, acknowledging the entry; the failure raises it from
the permit accounting, so real messages pay no test for it) and the next call returns the next message;
a ``message_listener`` consumer logs it instead.

Redelivery, dead letters and retries: :mod:`connector.client.consumer_redelivery`.
"""
from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Any, Callable

from broker_core import errors
from broker_core.protocol import broker_pb2
from broker_core.types import MessageId, TopicName

from connector.client.enums import ConsumerType
from connector.client.consumer_redelivery import SHARED_TYPES, RedeliveryMixin
from connector.client.message import DecodeFailure, Discarded, Message, Skipped
from connector.client.partition_consumer import PartitionConsumer
from connector.client.policies import RedeliveryBackoff
from connector.client.redelivery import NegativeAcksTracker, UnAckedMessageTracker

log = logging.getLogger(__name__)

def _sub_of(item: Message | DecodeFailure) -> PartitionConsumer:
    """The partition consumer a queued message or failure came from."""
    return item.consumer if item.__class__ is DecodeFailure else item._entry.sub.real  # type: ignore


def _now_ms() -> float:
    return time.monotonic() * 1000.0


class Consumer(RedeliveryMixin):
    """Receives messages of one subscription over one or more topics (and their partitions)."""

    def __init__(self, client: Any, topic: str | list[str], subscription_name: str,
                 consumer_type: ConsumerType, message_listener: Callable[[Any, Message], None] | None,
                 negative_ack_redelivery_delay_ms: int, *, max_pending_chunked_message: int = 10,
                 auto_ack_oldest_chunked_message_on_queue_full: bool = False,
                 expire_time_of_incomplete_chunked_message_ms: int = 60000,
                 negative_ack_redelivery_backoff: RedeliveryBackoff | None = None,
                 unacked_messages_timeout_ms: int = 0, ack_timeout_tick_time_ms: int = 1000,
                 ack_timeout_redelivery_backoff: RedeliveryBackoff | None = None,
                 batch_index_ack_enabled: bool = False, dead_letters: Any = None) -> None:
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
        self._hold_batch_acks = not batch_index_ack_enabled
        """Read by the partition consumers: hold a batch's acks until all its messages are acked."""
        self._track_lock = threading.Lock()
        self._nacks = NegativeAcksTracker(_now_ms, negative_ack_redelivery_delay_ms,
                                          negative_ack_redelivery_backoff)
        self._nack_timer_armed = False
        self._unacked: UnAckedMessageTracker | None = None
        if unacked_messages_timeout_ms:
            self._unacked = UnAckedMessageTracker(unacked_messages_timeout_ms, ack_timeout_tick_time_ms,
                                                  _now_ms, ack_timeout_redelivery_backoff)
            self.receive = self._receive_tracked  # type: ignore[method-assign]
        self._dead_letters = dead_letters
        if dead_letters is not None:
            dead_letters.acknowledge = self._acknowledge_quietly
            dead_letters.redeliver = self._redeliver_entries
        self._watcher: Any = None
        self._resubscribe: Callable[[list[str]], list[PartitionConsumer]] | None = None
        """Opens partition consumers for more topics (pattern discovery); set by the client."""

    def _attach(self, subs: list[PartitionConsumer]) -> None:
        self._subs = subs
        self._by_topic = {sub.topic: sub for sub in subs}
        if self._dead_letters is not None:
            self._dead_letters.consumer_name = self.consumer_name()
        if self._unacked is not None:
            self._client._timer.call_later(self._unacked.tick_ms / 1000.0, self._ack_timeout_tick)
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
            try:
                sub._refill()
            except Skipped:  # its entry is being redelivered (or the subscription sought): the next one
                return self._receive_after_skip(timeout_millis)
        return msg  # type: ignore[return-value]

    def _receive_after_skip(self, timeout_millis: int | None) -> Message:
        """:meth:`receive` past discarded messages (a loop: there may be thousands in a row)."""
        while True:
            try:
                msg = self._queue.popleft()
            except IndexError:
                msg = self._receive_slow(timeout_millis)
            sub = msg._entry.sub
            if next(sub._taken) >= sub._next_refill_raw:
                try:
                    sub._refill()
                except Skipped:
                    continue
            return msg  # type: ignore[return-value]

    def _receive_tracked(self, timeout_millis: int | None = None) -> Message:
        """:meth:`receive`, and the message's ack timeout starts (installed when there is one)."""
        msg = Consumer.receive(self, timeout_millis)
        self._track(msg)
        return msg

    def _track(self, msg: Message) -> None:
        entry = msg._entry
        entry_id = entry.entry_id
        with self._track_lock:
            self._unacked.add((entry.sub.real, entry_id, entry_id + max(msg._index, 0)),  # type: ignore
                              entry.redelivery_count)

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
            except Skipped:
                continue
            except errors.MessageDecodeError as exc:
                log.error("message_listener consumer of %r skips a message: %s", self._subscription, exc)
                continue
            if self._unacked is not None:
                self._track(msg)  # type: ignore[arg-type]
            try:
                listener(self._listener_owner, msg)
            except Exception:  # the listener's bug must not stop delivery
                log.exception("message_listener failed")

    # --- acknowledging --------------------------------------------------------------------------------
    def _target(self, message: Message | MessageId) -> tuple[PartitionConsumer, int, int, int]:
        """``(partition consumer, entry id, index in batch or -1, batch size or 0)`` of a message or id."""
        if message.__class__ is Message:
            entry = message._entry  # type: ignore[union-attr]
            sub = entry.sub
            if sub.owner is self:
                if sub.__class__ is Discarded:
                    sub = sub.real
                return sub, entry.entry_id, message._index, (  # type: ignore[union-attr]
                    entry.num_messages if entry.batched else 0)
            message = message.message_id()  # type: ignore[union-attr]
        if not isinstance(message, MessageId):
            raise TypeError(f"expected a Message or MessageId, not {type(message).__name__}")
        if len(self._subs) == 1:
            sub = self._subs[0]
        elif message.topic and message.topic in self._by_topic:
            sub = self._by_topic[message.topic]
        else:
            matches = [s for s in self._subs if s.partition == message.partition]
            if len(matches) != 1:
                raise errors.InvalidMessage(f"{message} does not belong to a topic of this consumer")
            sub = matches[0]
        return sub, message.entry_id, message.batch_index, message.batch_size

    def _open_sub(self, message: Message | MessageId) -> tuple[PartitionConsumer, int, int, int]:
        if self._closed:
            raise errors.AlreadyClosed(f"the consumer of {self._subscription!r} is closed")
        target = self._target(message)
        target[0].check_open()
        return target

    def acknowledge(self, message: Message | MessageId) -> None:
        """Acknowledge one message (acks are grouped for a few ms into one request; the acks of a batch's
        messages are held until the whole batch is acknowledged unless ``batch_index_ack_enabled``)."""
        sub, entry_id, index, size = self._open_sub(message)
        if self._unacked is not None or self._dead_letters is not None:
            self._forget_acked(sub, entry_id, index)
        if size > 1 and self._hold_batch_acks:
            sub.ack_batch_member(entry_id, index, size)
        else:
            sub.ack(entry_id + index if index > 0 else entry_id)

    def _forget_acked(self, sub: PartitionConsumer, entry_id: int, index: int) -> None:
        if self._unacked is not None:
            with self._track_lock:
                self._unacked.remove((sub, entry_id, entry_id + max(index, 0)))
        if self._dead_letters is not None:
            self._dead_letters.acked(sub, entry_id, index)

    def _acknowledge_quietly(self, message: Message) -> None:
        """Acknowledge a dead-lettered or retried message (on a worker thread: log, do not raise)."""
        try:
            self.acknowledge(message)
        except errors.PulsarLikeError as exc:
            log.warning("subscription %s: cannot acknowledge %s after writing it to a letter topic: %s",
                        self._subscription, message.message_id(), exc)

    def acknowledge_cumulative(self, message: Message | MessageId) -> None:
        """Acknowledge every message up to this one on its partition. Raises ``InvalidMessage`` when
        this consumer never received it."""
        if self._consumer_type in SHARED_TYPES:
            raise errors.CumulativeAcknowledgementNotAllowedError(
                "cumulative acknowledgement is not allowed on Shared and Key_Shared subscriptions")
        sub, entry_id, index, _ = self._open_sub(message)
        offset = entry_id + max(index, 0)
        sub.ack_cumulative(offset)
        if self._unacked is not None:
            with self._track_lock:
                self._unacked.remove_if(lambda key: key[0] is sub and key[2] <= offset)

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
        for sub in subs:
            self._discard_queued(sub, None, returns_permit=False)  # the permits start afresh
            self._forget_tracked(lambda key, sub=sub: key[0] is sub)  # type: ignore[misc]
        timeout = self._client._connection.operation_timeout_s
        for sub in subs:
            sub.finish_seek(timeout)

    # --- topics (pattern discovery) -------------------------------------------------------------------
    def _topics_changed(self, added: list[str], removed: list[str]) -> None:
        """Subscribe to topics that now match the pattern; close the consumers of those gone."""
        if self._closed:
            return
        gone = set(removed)
        if gone:
            dropped = [s for s in self._subs if str(TopicName.parse(s.topic).partitioned_base) in gone]
            self._subs = [s for s in self._subs if s not in dropped]
            self._by_topic = {sub.topic: sub for sub in self._subs}
            for sub in dropped:
                self._discard_queued(sub, None, returns_permit=False)
                self._forget_tracked(lambda key, sub=sub: key[0] is sub)  # type: ignore[misc]
                sub.close()
            log.info("subscription %s: topics gone: %s", self._subscription, ", ".join(removed))
        if added and self._resubscribe is not None:
            subs = self._resubscribe(added)
            if self._closed:
                for sub in subs:
                    sub.close()
                return
            self._subs = self._subs + subs
            self._by_topic = {sub.topic: sub for sub in self._subs}
            log.info("subscription %s: new topics: %s", self._subscription, ", ".join(added))

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
        if self._watcher is not None:
            self._watcher.stop()
        if self._dead_letters is not None:
            self._dead_letters.close()  # letters in progress still acknowledge their messages
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

    def has_reached_end_of_topic(self) -> bool:
        """True once every topic (partition) is terminated and each of its messages was received: the broker
        said so and nothing is left buffered (pulsar-client's ``has_reached_end_of_topic``)."""
        return bool(self._subs) and all(sub.reached_end_of_topic for sub in self._subs) and not self._queue

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

