"""``Consumer`` (pulsar-client's API): one :class:`~connector.client.consumer.partition.PartitionConsumer` per
topic partition, one merged receive queue, acks routed to the partition the message came from.

``receive()`` is a lock-free ``deque.popleft()`` when messages are buffered, plus the permit accounting of
:mod:`connector.client.consumer.permits` (one ``next()`` and a comparison); only an empty queue takes the condition.
A message that must not reach the application any more (its entry is being redelivered, its stream
reconnected or sought) is skipped there; an entry that could not be decoded raises its
``MessageDecodeError`` once (acknowledging it) and the next call returns the next message; a
``message_listener`` consumer logs it instead.

Redelivery (negative acks, ack timeout, rewinds): :class:`~connector.client.consumer.redelivery.Redelivery`;
dead letters and retries: :class:`~connector.client.consumer.dead_letter.DeadLetters`; pattern discovery:
:class:`~connector.client.consumer.pattern.PatternWatcher`. Each is built here and given what it needs. Partitions
added to a topic are subscribed by :meth:`Consumer.update_partitions`, which the client calls
(:mod:`connector.client.partition_updates`).
"""
from __future__ import annotations

import datetime
import logging
import threading
import time
from typing import Any, Callable

from broker_core import errors
from broker_core.types import TopicName

from connector.client.consumer.redelivery import SHARED_TYPES, Redelivery
from connector.client.consumer.dead_letter import DeadLetters, EntryKey, LetterOptions, ProducerFactory
from connector.client.enums import ConsumerType
from connector.client.consumer.listener import MessageListener
from connector.client.lookup import Lookup
from connector.client.message import Message
from connector.client.message_id import MessageId
from connector.client.opening import Deadline
from connector.client.consumer.partition import PartitionConsumer, PartitionOpener
from connector.client.consumer.partitions import ConsumerPartitions
from connector.client.consumer.pattern import PatternWatcher, TopicsPattern
from connector.client.consumer.permits import Skipped
from connector.client.policies import ConsumerBatchReceivePolicy, RedeliveryOptions
from connector.client.consumer.positions import ReadPositions
from connector.client.consumer.receive_queue import ReceiveQueue
from connector.client.timer import TimerThread

log = logging.getLogger(__name__)


class Consumer:
    """Receives messages of one subscription over one or more topics (and their partitions)."""

    def __init__(self, topic: str | list[str], subscription_name: str, consumer_type: ConsumerType,
                 opener: PartitionOpener, topics: list[str], lookup: Lookup, timer: TimerThread,
                 redelivery: RedeliveryOptions, on_close: Callable[["Consumer"], None], *,
                 create_producer: ProducerFactory | None = None, letters: LetterOptions | None = None,
                 message_listener: Callable[[Any, Message], None] | None = None,
                 batch_receive_policy: ConsumerBatchReceivePolicy | None = None,
                 positions: ReadPositions | None = None, pattern: TopicsPattern | None = None,
                 pattern_topics: list[str] | None = None, pattern_auto_discovery_period: int = 60,
                 clock: Callable[[], float] | None = None, deadline: Deadline | None = None) -> None:
        """``clock``: milliseconds for the redelivery trackers (tests move a fake one); ``deadline``: the
        subscribe call's (:mod:`connector.client.opening`): every partition is opened within it, or none is
        kept."""
        self._topic = topic
        self._subscription = subscription_name
        self._consumer_type = consumer_type
        self._opener = opener
        self._lookup = lookup
        self._on_close = on_close
        self._positions = positions
        self._batch_policy = batch_receive_policy or ConsumerBatchReceivePolicy()
        self._closed = False
        self._request_ids = 0
        self._queue = ReceiveQueue(self._check_usable)
        self._popleft = self._queue.items.popleft
        self._dead_letters: DeadLetters | None = None
        if letters is not None:
            assert create_producer is not None
            self._dead_letters = DeadLetters(letters, create_producer, lookup, acknowledge=self._acknowledge_quietly,
                                             redeliver=self._redeliver_letters, consumer_name=self.consumer_name)
        self._redelivery = Redelivery(timer, consumer_type, subscription_name, self._queue, redelivery,
                                      self._dead_letters, **({"clock": clock} if clock is not None else {}))
        hooks = [hook for hook in (self._redelivery.track if self._redelivery.unacked is not None else None,
                                   positions.taken if positions is not None else None) if hook is not None]
        self._on_taken: Callable[[Message], None] | None = _all_of(hooks)
        """Runs for each message handed out, when something needs it (ack timeout, a reader's position)."""
        self._partitions = ConsumerPartitions()
        self._partitions.add(self._open(topics, deadline=deadline))
        self._topics_lock = threading.Lock()
        """Serializes the two that change the topics: pattern discovery and :meth:`update_partitions`."""
        self._bases = [t for t in topics if TopicName.parse(t).partition_index < 0]
        """The whole topics subscribed (not single partitions named as such): their partitions may grow."""
        self._redelivery.start()
        self._listener: MessageListener | None = None
        if message_listener is not None:
            self.start_listener(message_listener, self)
        self._watcher: PatternWatcher | None = None
        if pattern is not None:
            self._watcher = PatternWatcher(pattern, pattern_auto_discovery_period, pattern_topics or [],
                                           lambda: lookup.list_topics(pattern.namespace), self._topics_changed)
            self._watcher.start()

    def _open(self, topics: list[str], from_earliest: bool = False,
              deadline: Deadline | None = None) -> list[PartitionConsumer]:
        return self._opener.open(topics, self._queue, self._redelivery.redeliver_later, self._dead_letters,
                                 from_earliest=from_earliest, deadline=deadline, shown=self.topic())

    def start_listener(self, listener: Callable[[Any, Message], None], owner: Any) -> None:
        """Call ``listener(owner, msg)`` for every message, on a thread of its own (a Reader passes itself)."""
        self._listener = MessageListener(self._subscription, listener, owner, self._take)
        self._listener.start()

    # --- receiving ------------------------------------------------------------------------------------
    def receive(self, timeout_millis: int | None = None) -> Message:
        """The next message; raises ``Timeout`` after ``timeout_millis`` (None: wait forever)."""
        if self._listener is not None:
            raise errors.InvalidConfiguration("receive() cannot be used with a message_listener")
        try:
            msg = self._popleft()
        except IndexError:
            return self._take(timeout_millis)
        taker = msg._entry.taker
        if next(taker.counter) >= taker.threshold:  # the permit accounting, inlined: it runs per message
            try:
                taker.refill()
            except Skipped:  # its entry is being redelivered (or its stream reconnected): the next one
                return self._take(timeout_millis)
        if self._on_taken is not None:
            self._on_taken(msg)
        return msg

    def _take(self, timeout_millis: int | None) -> Message:
        """:meth:`receive` without the listener check (the listener's and ``batch_receive``'s way)."""
        deadline = None if timeout_millis is None else time.monotonic() + timeout_millis / 1000.0
        while True:
            msg = self._queue.pop_waiting(deadline, timeout_millis)
            taker = msg._entry.taker
            if next(taker.counter) >= taker.threshold:
                try:
                    taker.refill()
                except Skipped:
                    continue
            if self._on_taken is not None:
                self._on_taken(msg)
            return msg

    def receive_ready(self) -> Message | None:
        """The next message if one is buffered now, else None: never waits (an asyncio receiver's step,
        :mod:`pulsarlike.asyncio`, which waits with :meth:`ring_when_ready`). Raises what :meth:`receive`
        raises for a closed or failed consumer."""
        if self._listener is not None:
            raise errors.InvalidConfiguration("receive() cannot be used with a message_listener")
        if not self._queue.items:
            self._check_usable()
            return None
        try:
            return self._take(0)
        except errors.Timeout:  # what was buffered was skipped (redelivered meanwhile)
            return None

    def ring_when_ready(self, bell: Any) -> None:
        """Call ``bell.release()`` (once) when messages arrive or the consumer closes or fails; call
        :meth:`receive_ready` after this, and :meth:`forget_bell` when done waiting."""
        self._queue.ring_later(bell)

    def forget_bell(self, bell: Any) -> None:
        self._queue.forget(bell)

    def batch_receive(self) -> list[Message]:
        """Messages as ``batch_receive_policy`` says: as many as are there or arrive within its
        ``timeout_ms``, up to its ``max_num_messages`` and ``max_num_bytes`` (an empty list when none came)."""
        if self._listener is not None:
            raise errors.InvalidConfiguration("batch_receive() cannot be used with a message_listener")
        policy = self._batch_policy
        # a limit <= 0 is none (pulsar-client's); no timeout waits for the count or size limit
        deadline = None if policy.timeout_ms <= 0 else time.monotonic() + policy.timeout_ms / 1000.0
        messages: list[Message] = []
        size = 0
        while (policy.max_num_messages <= 0 or len(messages) < policy.max_num_messages) and \
                (policy.max_num_bytes <= 0 or size < policy.max_num_bytes):
            wait_ms = None if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
            try:
                msg = self._take(wait_ms)
            except errors.Timeout:
                break
            messages.append(msg)
            size += len(msg.data())
        return messages

    def _check_usable(self) -> None:
        if self._closed:
            raise errors.AlreadyClosed(f"the consumer of {self._subscription!r} is closed")
        subs = self._partitions.all
        failed = [sub.error for sub in subs if sub.error is not None]
        if failed and len(failed) == len(subs):
            raise failed[0]

    def pause_message_listener(self) -> None:
        """Stop calling the ``message_listener`` until :meth:`resume_message_listener`."""
        if self._listener is None:
            raise errors.InvalidConfiguration("pause_message_listener() needs a consumer with a message_listener")
        self._listener.pause()

    def resume_message_listener(self) -> None:
        if self._listener is None:
            raise errors.InvalidConfiguration("resume_message_listener() needs a consumer with a message_listener")
        self._listener.resume()

    # --- acknowledging --------------------------------------------------------------------------------
    def _target(self, message: Message | MessageId) -> tuple[PartitionConsumer, int, int, int]:
        """``(partition consumer, entry id, index in batch or -1, batch size or 0)`` of a message or id."""
        if self._closed:
            raise errors.AlreadyClosed(f"the consumer of {self._subscription!r} is closed")
        if isinstance(message, Message):
            entry = message._entry
            if entry.sub in self._partitions:
                return entry.sub, entry.entry_id, message._index, entry.num_messages if entry.batched else 0
            message = message.message_id()
        if not isinstance(message, MessageId):
            raise TypeError(f"expected a Message or MessageId, not {type(message).__name__}")
        sub = self._partitions.of_message_id(message)
        index = message.batch_index()  # the entry's first position: the message's, less its index
        return sub, sub.positions.position(message) - max(index, 0), index, message.batch_size()

    @staticmethod
    def _from_a_left_cluster(message: Message | MessageId) -> bool:
        """A message received on a cluster this consumer has since left (failover): on the new cluster its
        position names another message, so its acks are not sent (pulsar-client's name nothing there)."""
        if not isinstance(message, Message):
            return False
        entry = message._entry
        return entry.cluster != getattr(entry.sub, "cluster", entry.cluster)  # sub None: a MessageBatch's

    def acknowledge(self, message: Message | MessageId) -> None:
        """Acknowledge one message (acks are grouped for a few ms into one request; the acks of a batch's
        messages are held until the whole batch is acknowledged unless ``batch_index_ack_enabled``)."""
        if self._from_a_left_cluster(message):
            return
        sub, entry_id, index, size = self._target(message)
        self._redelivery.acknowledged(sub, entry_id, index)
        sub.acknowledge(entry_id, index, size)

    def _acknowledge_quietly(self, message: Message) -> None:
        """Acknowledge a dead-lettered or retried message (on a worker thread: log, do not raise)."""
        try:
            self.acknowledge(message)
        except errors.PulsarLikeError as exc:
            log.warning("event=letter_ack_failed subscription=%s message_id=%s error=%r", self._subscription,
                        message.message_id(), exc)

    def _redeliver_letters(self, keys: list[EntryKey]) -> None:
        """Entries whose dead letters could not be written: the broker sends them again."""
        self._redelivery.redeliver_entries(keys)

    def acknowledge_cumulative(self, message: Message | MessageId) -> None:
        """Acknowledge every message up to this one on its partition. Raises ``InvalidMessage`` when
        this consumer never received it."""
        if self._consumer_type in SHARED_TYPES:
            raise errors.CumulativeAcknowledgementNotAllowedError(
                "cumulative acknowledgement is not allowed on Shared and Key_Shared subscriptions")
        if self._from_a_left_cluster(message):
            return
        sub, entry_id, index, _ = self._target(message)
        offset = entry_id + max(index, 0)
        sub.acknowledge_cumulative(offset)
        self._redelivery.acknowledged_cumulative(sub, offset)

    def negative_acknowledge(self, message: Message | MessageId) -> None:
        """Have the message redelivered after ``negative_ack_redelivery_delay_ms`` (or the backoff's delay
        for its redelivery count). Shared and Key_Shared redeliver its entry (a batch comes whole); Exclusive
        and Failover rewind to the first unacknowledged message, as in Pulsar."""
        if self._from_a_left_cluster(message):
            return
        sub, entry_id, index, _ = self._target(message)
        sub.stream.check_usable()
        count = message.redelivery_count() if isinstance(message, Message) else 0
        self._redelivery.negative_acknowledge(sub, entry_id, index, count)

    def redeliver_unacknowledged_messages(self) -> None:
        """Drop what is buffered and have the broker redeliver every unacknowledged message (Shared: to any
        consumer of the subscription)."""
        if self._closed:
            raise errors.AlreadyClosed(f"the consumer of {self._subscription!r} is closed")
        for sub in self._partitions.all:
            self._redelivery.rewind(sub)

    def reconsume_later(self, message: Message, delay_ms: int | datetime.timedelta,
                        properties: dict[str, str] | None = None) -> None:
        """Store ``message`` on the retry letter topic, to be consumed again after ``delay_ms`` (with
        ``properties`` added), and acknowledge it; after ``max_redeliver_count`` reconsumes it goes to the
        dead letter topic instead. Needs ``retry_enable=True``."""
        dead = self._dead_letters
        if dead is None or not dead.retry_enable:
            raise errors.InvalidConfiguration("reconsume_later() needs a consumer subscribed with "
                                              "retry_enable=True")
        if isinstance(delay_ms, datetime.timedelta):
            delay_ms = int(delay_ms.total_seconds() * 1000)
        if isinstance(delay_ms, bool) or not isinstance(delay_ms, (int, float)) or delay_ms < 0:
            raise ValueError(f"delay_ms={delay_ms!r} is not valid; use a number of milliseconds >= 0")
        if not isinstance(message, Message):
            raise TypeError(f"reconsume_later() takes a received Message, not {type(message).__name__}")
        if properties is not None and not all(isinstance(k, str) and isinstance(v, str)
                                              for k, v in properties.items()):
            raise ValueError("properties must map str to str")
        self._target(message)[0].stream.check_usable()
        dead.reconsume_later(message, int(delay_ms), dict(properties) if properties else None)

    # --- seeking --------------------------------------------------------------------------------------
    def seek(self, messageid: MessageId | int) -> None:
        """Move the subscription to a message id (its partition only, unless earliest/latest) or to a
        publish time in ms (every partition); buffered messages are dropped."""
        if not isinstance(messageid, MessageId) and (isinstance(messageid, bool) or not isinstance(messageid, int)):
            raise ValueError(f"invalid seek_arg type {type(messageid)}: seek takes a MessageId or a publish time "
                             "in ms since the epoch (int)")
        if self._closed:
            raise errors.AlreadyClosed(f"the consumer of {self._subscription!r} is closed")
        if isinstance(messageid, MessageId) and not (messageid.is_earliest() or messageid.is_latest()) \
                and len(self._partitions.all) > 1:
            subs = [self._partitions.of_message_id(messageid)]
        else:
            subs = list(self._partitions.all)
        for sub in subs:
            sub.start_seek(messageid)
            self._redelivery.forget_partition(sub)
        for sub in subs:
            sub.finish_seek(self._lookup.operation_timeout_s)

    # --- topics (pattern discovery, partitions added) -------------------------------------------------
    def _topics_changed(self, added: list[str], removed: list[str]) -> None:
        """Subscribe to topics that now match the pattern; close the consumers of those gone."""
        with self._topics_lock:
            self._change_topics(added, removed)

    def _change_topics(self, added: list[str], removed: list[str]) -> None:
        if self._closed:
            return
        if removed:
            self._bases = [t for t in self._bases if t not in removed]
            for sub in self._partitions.remove(removed):
                self._redelivery.discard_queued(sub, None)
                self._redelivery.forget_partition(sub)
                sub.close()
            log.info("event=pattern_topics_gone subscription=%s topics=%s", self._subscription, ",".join(removed))
        if added:
            if not self._adopt(self._open(added)):
                return
            self._bases = self._bases + added
            log.info("event=pattern_topics_added subscription=%s topics=%s", self._subscription, ",".join(added))

    def _adopt(self, subs: list[PartitionConsumer]) -> bool:
        """Add partition consumers opened on a background thread; False (and closed) when this consumer was
        closed meanwhile -- checked after adding too, as :meth:`close` does not wait for that thread."""
        if not self._closed:
            self._partitions.add(subs)
            if not self._closed:
                return True
        for sub in subs:
            sub.close()
        return False

    def update_partitions(self) -> None:
        """Subscribe to the partitions added to this consumer's partitioned topics since it looked last (the
        client's :class:`~connector.client.partition_updates.PartitionsUpdater` calls this every
        ``partitions_update_interval_seconds``); each is read from its first message."""
        with self._topics_lock:
            if self._closed:
                return
            missing: list[str] = []
            deadline = Deadline(self._lookup.operation_timeout_s)
            for base, open_topics in self._partitions.partitions_of(self._bases).items():
                parsed = TopicName.parse(base)
                names = [str(parsed.partition(i)) for i in range(self._lookup.partitions(base, deadline))]
                missing.extend(name for name in names if name not in open_topics)
            if not missing:
                return
            if not self._adopt(self._open(missing, from_earliest=True, deadline=deadline)):
                return
        log.info("event=consumer_partitions_added subscription=%s topics=%s", self._subscription, ",".join(missing))

    # --- lifecycle ------------------------------------------------------------------------------------
    def unsubscribe(self) -> None:
        """Remove the subscription (raises the broker's error, e.g. when other consumers are on it)
        and close this consumer."""
        if self._closed:
            raise errors.AlreadyClosed(f"the consumer of {self._subscription!r} is closed")
        for sub in self._partitions.all:
            self._request_ids += 1
            sub.stream.unsubscribe(self._request_ids, self._lookup.operation_timeout_s)
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        if self._watcher is not None:
            self._watcher.stop()
        if self._dead_letters is not None:
            self._dead_letters.close()  # letters in progress still acknowledge their messages
        self._closed = True
        self._redelivery.close()
        for sub in self._partitions.all:
            try:
                sub.close()
            except Exception:
                log.exception("closing the consumer on %s failed", sub.topic)
        self._queue.wake()
        if self._listener is not None:
            self._listener.stop()
        self._on_close(self)

    def is_connected(self) -> bool:
        return not self._closed and all(sub.is_connected() for sub in self._partitions.all)

    def is_open(self) -> bool:
        return not self._closed

    def has_reached_end_of_topic(self) -> bool:
        """True once every topic (partition) is terminated and each of its messages was received: the broker
        said so and nothing is left buffered (pulsar-client's ``has_reached_end_of_topic``)."""
        subs = self._partitions.all
        return bool(subs) and all(sub.reached_end_of_topic for sub in subs) and not len(self._queue)

    def topic(self) -> str:
        return self._topic if isinstance(self._topic, str) else ",".join(self._topic)

    def subscription_name(self) -> str:
        return self._subscription

    def consumer_name(self) -> str:
        subs = self._partitions.all
        return subs[0].consumer_name if subs else ""

    def partition_topics(self) -> list[str]:
        """The topic partitions this consumer reads."""
        return [sub.topic for sub in self._partitions.all]

    def buffered(self) -> int:
        """Messages received and not yet taken (some may be skipped when taken)."""
        return len(self._queue)

    def has_buffered_live(self) -> bool:
        """True when a buffered message is of the current stream generation (not skipped when taken as one
        from before a seek or a reconnection is)."""
        if not self._queue.items:
            return False
        return any(not msg._entry.taker.stale for msg in self._queue.snapshot())

    def get_last_message_id(self) -> MessageId:
        """The id of the last message stored on the (first) topic partition (of its compacted view for a
        consumer reading compacted)."""
        sub = self._partitions.all[0]
        last = self._lookup.last_message(sub.topic, read_compacted=self._opener.read_compacted)
        return MessageId.of(last.ledger_id, last.entry_id, sub.partition, last.batch_index, topic=sub.topic)

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _all_of(hooks: list[Callable[[Message], None]]) -> Callable[[Message], None] | None:
    if not hooks:
        return None
    if len(hooks) == 1:
        return hooks[0]

    def run_all(msg: Message) -> None:
        for hook in hooks:
            hook(msg)
    return run_all

