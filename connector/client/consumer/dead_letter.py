"""Dead letter and retry letter topics, done by the consumer as in Pulsar (seed: "Dead letter topic",
"Retry letter topic").

Dead letters. A message whose ``redelivery_count()`` reached ``max_redeliver_count`` is still handed to the
application once more; the consumer keeps its entry's messages (:meth:`DeadLetters.received`). When that entry
is then due for redelivery -- a negative ack or an ack timeout -- the consumer does not ask the broker for it:
:meth:`DeadLetters.send` publishes its messages to the dead letter topic and then acknowledges them
(:meth:`DeadLetters.take` sorts them out). An entry delivered *beyond* the count (e.g. it was held by a
consumer that closed) is not handed out at all: it goes to the dead letter topic at once. So with
``max_redeliver_count=3`` the application sees a message 4 times (redelivery counts 0..3) before it is
dead-lettered, as in Pulsar. A batch goes whole, as it is redelivered whole (minus the messages the
application acknowledged).

Retry letters. ``reconsume_later(msg, delay_ms)`` publishes the message to the retry letter topic with
``deliver_after=delay_ms`` and acknowledges the original; the consumer is subscribed to the retry topic too,
so it comes back after the delay (the broker honours delays on Shared and Key_Shared subscriptions only, so
``retry_enable`` needs one of those). The ``RECONSUMETIMES`` property counts the reconsumes; once it would
exceed ``max_redeliver_count`` (16 when no policy is given, Pulsar's ``MAX_RECONSUMETIMES``) the message
goes to the dead letter topic instead.

What a dead or retried message carries: the payload, the partition and ordering keys, the event time, the
properties, plus ``REAL_TOPIC`` (the topic it was first consumed from, a partitioned topic's base name) and
``ORIGIN_MESSAGE_ID`` (its id there, ``ledger:entry:partition[:batch]``), both kept from an earlier hop;
retried ones also ``RECONSUMETIMES`` and ``DELAY_TIME`` (ms).

Names. ``<topic>-<subscription>-DLQ`` and ``<topic>-<subscription>-RETRY`` with the full topic name
(``persistent://public/default/orders-billing-DLQ``). With ``retry_enable`` both come from the first topic
subscribed (as Pulsar's consumer builder does); otherwise the dead letter topic is named after the topic the
message came from -- after the partitioned topic, not the partition (Pulsar's Java client names it after the
partition, ``orders-partition-0-billing-DLQ``, one dead letter topic per partition; the seed's format is
followed here). The dead letter producer is named ``<topic>-<subscription>-<consumer>-<random>-DLQ``.
"""
from __future__ import annotations

import concurrent.futures
import logging
import threading
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

from broker_core import errors
from broker_core.types import TopicName

from connector.client.enums import ConsumerType
from connector.client.lookup import Lookup
from connector.client.message import Message
from connector.client.policies import ConsumerDeadLetterPolicy

if TYPE_CHECKING:
    from connector.client.consumer.partition import PartitionConsumer
    from connector.client.producer import Producer

log = logging.getLogger(__name__)

REAL_TOPIC = "REAL_TOPIC"
ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
RECONSUMETIMES = "RECONSUMETIMES"
DELAY_TIME = "DELAY_TIME"
MAX_RECONSUMETIMES = 16
"""``max_redeliver_count`` of ``retry_enable=True`` without a dead letter policy (Pulsar's)."""
DLQ_SUFFIX = "-DLQ"
RETRY_SUFFIX = "-RETRY"


def base_topic(topic: str) -> str:
    """The full name of ``topic``'s partitioned topic (itself when not a partition)."""
    return str(TopicName.parse(topic).partitioned_base)


def default_topic(topic: str, subscription: str, suffix: str) -> str:
    return f"{base_topic(topic)}-{subscription}{suffix}"


def origin_message_id(msg: Message) -> str:
    """Pulsar's ``MessageId.toString()``: ``ledger:entry:partition``, plus ``:batch`` inside a batch."""
    mid = msg.message_id()
    text = f"{mid.ledger_id()}:{mid.entry_id()}:{mid.partition()}"
    return f"{text}:{mid.batch_index()}" if mid.batch_index() >= 0 else text


class ProducerFactory(Protocol):
    """``Client.create_producer``, as dead letters use it."""

    def __call__(self, topic: str, **options: Any) -> "Producer": ...


EntryKey = tuple["PartitionConsumer", int]
"""``(partition consumer, entry id)``: an entry as the redelivery trackers name it."""


def letter_properties(msg: Message) -> dict[str, str]:
    """``msg``'s properties plus ``REAL_TOPIC`` and ``ORIGIN_MESSAGE_ID`` unless an earlier hop set them."""
    properties = msg.properties()
    properties.setdefault(REAL_TOPIC, base_topic(msg.topic_name()))
    properties.setdefault(ORIGIN_MESSAGE_ID, origin_message_id(msg))
    return properties


@dataclass(frozen=True)
class LetterOptions:
    """subscribe's dead letter and retry options, checked once (:meth:`parse`)."""

    subscription: str
    max_redeliver_count: int
    dead_letter_topic: str | None
    """None: named after the topic each message came from."""
    retry_letter_topic: str | None
    """Set with ``retry_enable``: the consumer subscribes to it too."""
    initial_subscription: str | None
    retry_enable: bool

    @classmethod
    def parse(cls, subscription: str, policy: ConsumerDeadLetterPolicy | None, first_topic: str | None,
              consumer_type: ConsumerType, retry_enable: bool) -> "LetterOptions":
        """``first_topic``: the first topic subscribed (None for a topics pattern)."""
        if consumer_type not in (ConsumerType.Shared, ConsumerType.KeyShared):
            what = "retry_enable=True" if retry_enable else "dead_letter_policy"
            raise errors.InvalidConfiguration(
                f"{what} needs consumer_type=ConsumerType.Shared or ConsumerType.KeyShared: dead letter and "
                "retry topics work on Shared subscriptions in Pulsar (the ordered types redeliver by "
                "rewinding, and the broker honours retry delays only on Shared and Key_Shared)")
        dead = policy.dead_letter_topic if policy else None
        retry = policy.retry_letter_topic if policy else None
        if retry_enable:
            if first_topic is None and not (dead and retry):
                raise errors.InvalidConfiguration(
                    "retry_enable=True with a topics pattern needs the letter topics named: "
                    "dead_letter_policy=ConsumerDeadLetterPolicy(n, dead_letter_topic=..., "
                    "retry_letter_topic=...)")
            dead = dead or default_topic(first_topic, subscription, DLQ_SUFFIX)  # type: ignore[arg-type]
            retry = retry or default_topic(first_topic, subscription, RETRY_SUFFIX)  # type: ignore[arg-type]
        return cls(subscription, policy.max_redeliver_count if policy else MAX_RECONSUMETIMES,
                   str(TopicName.parse(dead)) if dead else None, str(TopicName.parse(retry)) if retry else None,
                   (policy.initial_subscription_name or None) if policy else None, retry_enable)


class DeadLetters:
    """The dead letter and retry letter side of one consumer: kept messages, producers, one worker thread.

    ``acknowledge(message)`` is the consumer's way to acknowledge a message that was dead-lettered or
    retried; ``redeliver(keys)`` asks the broker again for entries whose dead letter could not be written;
    ``consumer_name()`` names the dead letter producers.
    """

    def __init__(self, options: LetterOptions, create_producer: ProducerFactory, lookup: Lookup,
                 acknowledge: Callable[[Message], None], redeliver: Callable[[list[EntryKey]], None],
                 consumer_name: Callable[[], str]) -> None:
        self._create_producer = create_producer
        self._lookup = lookup
        self._acknowledge = acknowledge
        self._redeliver = redeliver
        self._consumer_name = consumer_name
        self._subscription = options.subscription
        self.max_redeliver_count = options.max_redeliver_count
        self.retry_enable = options.retry_enable
        self._dead_letter_topic = options.dead_letter_topic
        self.retry_letter_topic = options.retry_letter_topic
        self._initial_subscription = options.initial_subscription
        self._lock = threading.Lock()
        self._kept: dict[EntryKey, list[Message]] = {}
        """(partition consumer, entry id) -> its messages still to be dead-lettered if it comes back."""
        self._producers: dict[str, "Producer"] = {}
        self._producer_lock = threading.Lock()
        self._worker_lock = threading.Lock()  # not the producer lock: creating a producer may take a while
        self._worker: concurrent.futures.ThreadPoolExecutor | None = None
        self._closed = False

    # --- names ----------------------------------------------------------------------------------------
    def dead_letter_topic(self, source_topic: str) -> str:
        """Where messages from ``source_topic`` go when dead."""
        return self._dead_letter_topic or default_topic(source_topic, self._subscription, DLQ_SUFFIX)

    # --- kept messages --------------------------------------------------------------------------------
    def received(self, sub: "PartitionConsumer", messages: list[Message], redelivery_count: int) -> int:
        """An entry delivered ``redelivery_count`` (>= max) times before: keep its messages, or, beyond the
        max, dead-letter them now; returns how many messages must not be handed out (0 or all)."""
        if not messages:
            return 0
        key = (sub, messages[0]._entry.entry_id)
        if redelivery_count > self.max_redeliver_count:
            self.send(key, messages)
            return len(messages)
        with self._lock:
            self._kept[key] = messages
        return 0

    def acked(self, sub: "PartitionConsumer", entry_id: int, index: int) -> None:
        """The application acknowledged message ``index`` of the entry: it is not dead-lettered with it."""
        kept = self._kept
        if not kept:
            return
        with self._lock:
            messages = kept.get((sub, entry_id))
            if messages is not None:
                messages[:] = [m for m in messages if m._index != index]
                if not messages:
                    del kept[(sub, entry_id)]

    def forget(self, doomed: Callable[[EntryKey], bool]) -> None:
        """Drop kept entries for which ``doomed(key)`` is true (they come back anyway, e.g. a rewind)."""
        with self._lock:
            for key in [key for key in self._kept if doomed(key)]:
                del self._kept[key]

    def take(self, keys: list[EntryKey]) -> list[EntryKey]:
        """Of the entries due for redelivery, dead-letter the kept ones; returns the others."""
        rest = []
        for key in keys:
            with self._lock:
                messages = self._kept.pop(key, None)
            if messages is None:
                rest.append(key)
            else:
                self.send(key, messages)
        return rest

    # --- publishing -----------------------------------------------------------------------------------
    def send(self, key: EntryKey, messages: list[Message]) -> None:
        """Publish ``messages`` (one entry's) to the dead letter topic on the worker thread, then acknowledge
        them; if that fails, have the entry redelivered instead."""
        self._submit(self._send_dead, key, messages)

    def _send_dead(self, key: EntryKey, messages: list[Message]) -> None:
        try:
            for msg in messages:
                self.publish(self.dead_letter_topic(msg.topic_name()), msg, letter_properties(msg))
        except errors.PulsarLikeError as exc:
            log.warning("subscription %s: cannot write %d message(s) to the dead letter topic, they will be "
                        "redelivered: %s", self._subscription, len(messages), exc)
            self._redeliver([key])
            return
        for msg in messages:
            self._acknowledge(msg)

    def reconsume_later(self, msg: Message, delay_ms: int, properties: dict[str, str] | None) -> None:
        """Publish ``msg`` to the retry letter topic, due in ``delay_ms`` (or, past ``max_redeliver_count``
        reconsumes, to the dead letter topic), then acknowledge it. Runs on the caller's thread."""
        letter = letter_properties(msg)
        letter.update(properties or {})
        try:
            times = int(letter.get(RECONSUMETIMES, "0")) + 1
        except ValueError:
            times = 1
        letter[RECONSUMETIMES] = str(times)
        letter[DELAY_TIME] = str(delay_ms)
        if times > self.max_redeliver_count:
            self.publish(self.dead_letter_topic(letter[REAL_TOPIC]), msg, letter)
        else:
            assert self.retry_letter_topic is not None
            self.publish(self.retry_letter_topic, msg, letter, delay_ms)
        self._acknowledge(msg)

    def publish(self, topic: str, msg: Message, properties: dict[str, str],
                deliver_after_ms: int | None = None) -> None:
        """Send ``msg``'s payload, keys and event time with ``properties`` to ``topic`` (and wait)."""
        self._producer(topic, properties[REAL_TOPIC]).send(
            msg.data(), properties=properties,
            partition_key=msg.partition_key() if msg.has_partition_key() else None,
            ordering_key=msg.ordering_key_bytes(), event_timestamp=msg.event_timestamp() or None,
            deliver_after=deliver_after_ms or None)

    def _producer(self, topic: str, source_topic: str) -> "Producer":
        with self._producer_lock:
            producer = self._producers.get(topic)
            if producer is None:
                dead = topic != self.retry_letter_topic
                if dead and self._initial_subscription:
                    self._create_subscription(topic, self._initial_subscription)
                name = (f"{source_topic}-{self._subscription}-{self._consumer_name()}-{uuid.uuid4().hex[:5]}"
                        f"{DLQ_SUFFIX}") if dead else None
                persistent = TopicName.parse(topic).domain == "persistent"
                producer = self._create_producer(
                    topic, producer_name=name, batching_enabled=False, chunking_enabled=persistent,
                    block_if_queue_full=True)
                self._producers[topic] = producer
            return producer

    def _create_subscription(self, topic: str, name: str) -> None:
        if TopicName.parse(topic).domain != "persistent":
            log.warning("initial_subscription_name is ignored for the non-persistent topic %s (it keeps no "
                        "subscription state)", topic)
            return
        self._lookup.ensure_subscription(topic, name)

    def _submit(self, fn: Callable[..., None], *args: Any) -> None:
        with self._worker_lock:
            if self._closed:
                log.warning("subscription %s: the consumer is closed, a dead letter is dropped (its "
                            "message will be redelivered)", self._subscription)
                return
            if self._worker is None:
                self._worker = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix=f"pulsarlike-dlq-{self._subscription}")
            worker = self._worker
        future = worker.submit(fn, *args)
        future.add_done_callback(_log_failure)

    def close(self) -> None:
        """Finish the dead letters in progress, then close the producers."""
        with self._worker_lock:
            worker, self._worker = self._worker, None
            self._closed = True
        if worker is not None:
            worker.shutdown(wait=True)
        with self._producer_lock:
            producers, self._producers = list(self._producers.values()), {}
        for producer in producers:
            try:
                producer.close()
            except errors.PulsarLikeError as exc:
                log.warning("closing a dead letter producer failed: %s", exc)


def _log_failure(future: concurrent.futures.Future) -> None:
    exc = future.exception() if not future.cancelled() else None
    if exc is not None:
        log.error("dead letter task failed", exc_info=exc)
