"""pulsar-client 3.13's ``pulsar.asyncio`` on pulsarlike's client: ``from pulsarlike.asyncio import Client``.

The same classes (:class:`Client`, :class:`Producer`, :class:`Consumer`, :class:`Reader`), coroutines,
keyword arguments and :class:`PulsarException` (``e.error()`` is the :class:`~connector.client.enums.Result`)
as pulsar-client's, over the synchronous client of :mod:`connector.client`:

- **The data path never takes a thread.** ``send`` queues the message with the producer's ``send_async``; its
  receipt callback (on the client's I/O thread) completes the coroutine's future through
  ``loop.call_soon_threadsafe``. ``receive``/``read_next`` take a buffered message on the loop's own thread;
  with none buffered they register a *bell* on the consumer's receive queue (the same hand-off a waiting
  ``receive()`` thread uses, :mod:`connector.client.consumer.receive_queue`) whose ring wakes the loop, then look again.
  ``acknowledge``/``negative_acknowledge`` only queue the acknowledgement, as the sync calls do.
- **Cancellation loses nothing.** A message leaves the receive queue only on the loop's thread, when the
  coroutine runs: a cancelled (or timed out: ``asyncio.wait_for``, ``asyncio.timeout``) ``receive`` leaves the
  next message for the next ``receive``. A cancelled ``send`` stops waiting; the message stays queued (as in
  pulsar-client). A cancelled ``create_producer``/``subscribe``/``create_reader`` closes what it opened.
- **Control calls** (opening, closing, ``seek``, ``unsubscribe``, ``get_last_message_id``,
  ``has_message_available``, ``get_topic_partitions``) run the synchronous client's call on a small thread
  pool of the client's own (at most four threads, gone with :meth:`Client.close`), so they never block the
  loop; each is bounded by ``operation_timeout_seconds`` as in the sync client.

Errors: pulsarlike's typed errors become ``PulsarException(result, message)`` (the typed error is its
``__cause__``); a bad argument raises ``ValueError``/``TypeError`` at once, as pulsar-client's.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from datetime import timedelta
from typing import Any, Callable, List, Union

from broker_core import errors
from connector.client.client import Client as _SyncClient
from connector.client.enums import (
    BatchingType, CompressionType, ConsumerType, InitialPosition, PartitionsRoutingMode, ProducerAccessMode,
    RegexSubscriptionMode, Result, result_of)
from connector.client.message import Message
from connector.client.message_id import MessageId
from pulsarlike.enums import ConsumerCryptoFailureAction

__all__ = ["Client", "Consumer", "Producer", "PulsarException", "Reader", "BatchingType", "CompressionType",
           "ConsumerCryptoFailureAction", "InitialPosition", "PartitionsRoutingMode", "ProducerAccessMode",
           "RegexSubscriptionMode"]

CONTROL_THREADS = 4
"""The most threads a client's control calls (opening, closing, seeking ...) use at once."""


class PulsarException(Exception):
    """An error of the asyncio API: ``error()`` is its :class:`Result`, ``str()`` ``"<code> <Name>: <message>"``."""

    def __init__(self, result: Result, msg: str | None = None) -> None:
        super().__init__(result, msg)
        self._result = result
        self._msg = msg

    def error(self) -> Result:
        return self._result

    def __str__(self) -> str:
        head = f"{self._result.value} {self._result.name}"
        return f"{head}: {self._msg}" if self._msg else head


def _translated(exc: errors.PulsarLikeError) -> PulsarException:
    error = PulsarException(result_of(exc), str(exc))
    error.__cause__ = exc
    return error


def _set_future(future: asyncio.Future, result: Result, value: Any) -> None:
    """Complete ``future`` from any thread with ``value`` (``result`` Ok) or ``PulsarException(result)``; a
    future already done (cancelled, timed out) is left as it is. pulsar-client's name and arguments."""
    future.get_loop().call_soon_threadsafe(_complete, future, result, value)


def _complete(future: asyncio.Future, result: Result, value: Any) -> None:
    if future.done():
        return
    if result == Result.Ok:
        future.set_result(value)
    else:
        future.set_exception(PulsarException(Result(result)))


class _Waker:
    """A receive queue's bell (:class:`connector.client.consumer.receive_queue.Bell`) that wakes an awaiting coroutine."""

    __slots__ = ("_future",)

    def __init__(self, future: asyncio.Future) -> None:
        self._future = future

    def release(self) -> None:
        self._future.get_loop().call_soon_threadsafe(_wake, self._future)


def _wake(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


async def _next_message(source: Any) -> Message:
    """The next message of a sync Consumer or Reader (``ready()``, ``ring_when_ready``, ``forget_bell``),
    taken on the loop's thread: a cancelled wait takes nothing."""
    ready = source.receive_ready if hasattr(source, "receive_ready") else source.read_ready
    try:
        msg = ready()
        while msg is None:
            future = asyncio.get_running_loop().create_future()
            waker = _Waker(future)
            source.ring_when_ready(waker)
            try:
                msg = ready()  # arrived before the bell was registered
                if msg is None:
                    await future
                    msg = ready()
            finally:
                source.forget_bell(waker)
        return msg
    except errors.PulsarLikeError as exc:
        raise _translated(exc) from exc


class _Control:
    """The client's control calls on its own small thread pool, awaited without blocking the loop."""

    def __init__(self) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(CONTROL_THREADS, thread_name_prefix="pulsarlike-asyncio")

    async def call(self, fn: Callable[..., Any], *args: Any, abandoned: Callable[[Any], None] | None = None,
                   **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` on the pool; when the caller is cancelled meanwhile, ``abandoned(result)``
        runs once the call is done (a producer opened for nobody is closed)."""
        try:
            done = self._pool.submit(functools.partial(fn, *args, **kwargs))
        except RuntimeError:  # the pool is shut down: the client is closed
            raise PulsarException(Result.AlreadyClosed, "the client is closed") from None
        try:
            return await asyncio.wrap_future(done)
        except asyncio.CancelledError:
            if abandoned is not None:
                done.add_done_callback(lambda f: _run_abandoned(f, abandoned))
            raise
        except errors.PulsarLikeError as exc:
            raise _translated(exc) from exc

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False)


def _run_abandoned(done: concurrent.futures.Future, abandoned: Callable[[Any], None]) -> None:
    if not done.cancelled() and done.exception() is None:
        try:
            abandoned(done.result())
        except errors.PulsarLikeError:
            pass


def _already_closed(what: str) -> PulsarException:
    return PulsarException(Result.AlreadyClosed, f"the {what} is closed")


class Producer:
    """Publishes messages on a topic; made by :meth:`Client.create_producer`."""

    def __init__(self, producer: Any, control: _Control) -> None:
        self._producer = producer
        self._control = control
        self._pending: set[asyncio.Future] = set()
        self._closed = False

    async def send(self, content: Any, properties: dict | None = None, partition_key: str | None = None,
                   ordering_key: str | None = None, sequence_id: int | None = None,
                   replication_clusters: List[str] | None = None, disable_replication: bool | None = None,
                   event_timestamp: int | None = None, deliver_at: int | None = None,
                   deliver_after: timedelta | None = None) -> MessageId:
        """Send one message (encoded by the producer's schema) and return its id once the broker stored it."""
        future = asyncio.get_running_loop().create_future()
        try:
            self._producer.send_async(content, functools.partial(_set_future, future), properties, partition_key,
                                      ordering_key, sequence_id, replication_clusters, bool(disable_replication),
                                      event_timestamp, deliver_at, deliver_after)
        except errors.PulsarLikeError as exc:
            raise _translated(exc) from exc
        pending = self._pending
        pending.add(future)
        future.add_done_callback(pending.discard)
        return await future

    async def flush(self) -> None:
        """Send the open batches and wait until every message sent before has its receipt (or failed)."""
        try:
            self._producer.send_open_batches()
        except errors.PulsarLikeError as exc:
            raise _translated(exc) from exc
        if self._pending:
            await asyncio.wait(list(self._pending))  # never cancels the sends' futures

    async def close(self) -> None:
        """Flush, then close; a second close raises ``PulsarException`` (``AlreadyClosed``)."""
        if self._closed:
            raise _already_closed("producer")
        self._closed = True
        await self.flush()
        await self._control.call(self._producer.close)

    def topic(self) -> str:
        return self._producer.topic()

    def producer_name(self) -> str:
        return self._producer.producer_name()

    def last_sequence_id(self) -> int:
        return self._producer.last_sequence_id()

    def is_connected(self) -> bool:
        return self._producer.is_connected()


MessageOrId = Union[Message, MessageId]


class Consumer:
    """Receives a subscription's messages; made by :meth:`Client.subscribe`."""

    def __init__(self, consumer: Any, control: _Control) -> None:
        self._consumer = consumer
        self._control = control
        self._closed = False

    async def receive(self) -> Message:
        """The next message; bound the wait with ``asyncio.wait_for`` (a cancelled receive takes nothing)."""
        return await _next_message(self._consumer)

    async def acknowledge(self, message: MessageOrId) -> None:
        self._queue_call(self._consumer.acknowledge, message)

    async def acknowledge_cumulative(self, message: MessageOrId) -> None:
        self._queue_call(self._consumer.acknowledge_cumulative, message)

    async def negative_acknowledge(self, message: MessageOrId) -> None:
        self._queue_call(self._consumer.negative_acknowledge, message)

    @staticmethod
    def _queue_call(fn: Callable[[Any], None], message: Any) -> None:
        try:
            fn(message)
        except errors.PulsarLikeError as exc:
            raise _translated(exc) from exc

    async def unsubscribe(self) -> None:
        """Remove the subscription (the broker refuses while other consumers use it) and close."""
        await self._control.call(self._consumer.unsubscribe)
        self._closed = True

    async def seek(self, messageid: MessageId | int) -> None:
        """Move the subscription to a message id or a publish time (ms since the epoch)."""
        if isinstance(messageid, bool) or not isinstance(messageid, (MessageId, int)):
            raise ValueError(f"invalid messageid type {type(messageid)}")
        await self._control.call(self._consumer.seek, messageid)

    async def close(self) -> None:
        if self._closed:
            raise _already_closed("consumer")
        self._closed = True
        await self._control.call(self._consumer.close)

    async def get_last_message_id(self) -> MessageId:
        return await self._control.call(self._consumer.get_last_message_id)

    def redeliver_unacknowledged_messages(self) -> None:
        self._consumer.redeliver_unacknowledged_messages()

    def topic(self) -> str:
        return self._consumer.topic()

    def subscription_name(self) -> str:
        return self._consumer.subscription_name()

    def consumer_name(self) -> str:
        return self._consumer.consumer_name()


class Reader:
    """Reads a topic from a start position; made by :meth:`Client.create_reader`."""

    def __init__(self, reader: Any, control: _Control) -> None:
        self._reader = reader
        self._control = control
        self._closed = False

    async def read_next(self) -> Message:
        """The next message; bound the wait with ``asyncio.wait_for`` (a cancelled read takes nothing)."""
        return await _next_message(self._reader)

    async def has_message_available(self) -> bool:
        return await self._control.call(self._reader.has_message_available)

    async def seek(self, messageid: MessageId | int) -> None:
        if isinstance(messageid, bool) or not isinstance(messageid, (MessageId, int)):
            raise ValueError(f"invalid messageid type {type(messageid)}")
        await self._control.call(self._reader.seek, messageid)

    async def close(self) -> None:
        if self._closed:
            raise _already_closed("reader")
        self._closed = True
        await self._control.call(self._reader.close)

    def topic(self) -> str:
        return self._reader.topic()

    def is_connected(self) -> bool:
        return self._reader.is_connected()


def _close_quietly(opened: Any) -> None:
    opened.close()


class Client:
    """pulsar-client's asyncio ``Client``: ``Client(service_url, **kwargs)`` takes what
    :class:`connector.client.Client` takes (``transport=``, ``operation_timeout_seconds=`` ...)."""

    def __init__(self, service_url: str, **kwargs: Any) -> None:
        self._client = _SyncClient(service_url, **kwargs)
        self._control = _Control()
        self._closed = False

    async def create_producer(self, topic: str, producer_name: str | None = None, schema: Any = None,
                              initial_sequence_id: int | None = None, send_timeout_millis: int = 30000,
                              compression_type: CompressionType = CompressionType.NONE,
                              max_pending_messages: int = 1000, max_pending_messages_across_partitions: int = 50000,
                              block_if_queue_full: bool = False, batching_enabled: bool = True,
                              batching_max_messages: int = 1000,
                              batching_max_allowed_size_in_bytes: int = 128 * 1024,
                              batching_max_publish_delay_ms: int = 10, chunking_enabled: bool = False,
                              message_routing_mode: PartitionsRoutingMode =
                              PartitionsRoutingMode.RoundRobinDistribution,
                              lazy_start_partitioned_producers: bool = False, properties: dict | None = None,
                              batching_type: BatchingType = BatchingType.Default, encryption_key: str | None = None,
                              crypto_key_reader: Any = None,
                              access_mode: ProducerAccessMode = ProducerAccessMode.Shared,
                              message_router: Callable[[Any, int], int] | None = None) -> Producer:
        """A producer; batching is on by default here (pulsar-client's asyncio default), unlike the sync API.
        ``block_if_queue_full=True`` would block the loop on a full queue: leave it off."""
        if batching_enabled and chunking_enabled:
            raise ValueError("Batching and chunking of messages can't be enabled together.")
        producer = await self._control.call(
            self._client.create_producer, topic, producer_name=producer_name, schema=schema,
            initial_sequence_id=initial_sequence_id, send_timeout_millis=send_timeout_millis,
            compression_type=compression_type, max_pending_messages=max_pending_messages,
            max_pending_messages_across_partitions=max_pending_messages_across_partitions,
            block_if_queue_full=block_if_queue_full, batching_enabled=batching_enabled,
            batching_max_messages=batching_max_messages,
            batching_max_allowed_size_in_bytes=batching_max_allowed_size_in_bytes,
            batching_max_publish_delay_ms=batching_max_publish_delay_ms, chunking_enabled=chunking_enabled,
            message_routing_mode=message_routing_mode,
            lazy_start_partitioned_producers=lazy_start_partitioned_producers, properties=properties,
            batching_type=batching_type, encryption_key=encryption_key, crypto_key_reader=crypto_key_reader,
            access_mode=access_mode, message_router=message_router, abandoned=_close_quietly)
        return Producer(producer, self._control)

    async def subscribe(self, topic: Union[str, List[str]], subscription_name: str,
                        consumer_type: ConsumerType = ConsumerType.Exclusive, schema: Any = None,
                        receiver_queue_size: int = 1000,
                        max_total_receiver_queue_size_across_partitions: int = 50000,
                        consumer_name: str | None = None, unacked_messages_timeout_ms: int | None = None,
                        broker_consumer_stats_cache_time_ms: int = 30000,
                        negative_ack_redelivery_delay_ms: int = 60000, is_read_compacted: bool = False,
                        properties: dict | None = None, initial_position: InitialPosition = InitialPosition.Latest,
                        crypto_key_reader: Any = None, replicate_subscription_state_enabled: bool = False,
                        max_pending_chunked_message: int = 10,
                        auto_ack_oldest_chunked_message_on_queue_full: bool = False,
                        start_message_id_inclusive: bool = False, batch_receive_policy: Any = None,
                        key_shared_policy: Any = None, batch_index_ack_enabled: bool = False,
                        regex_subscription_mode: RegexSubscriptionMode = RegexSubscriptionMode.PersistentOnly,
                        dead_letter_policy: Any = None,
                        crypto_failure_action: ConsumerCryptoFailureAction = ConsumerCryptoFailureAction.FAIL,
                        is_pattern_topic: bool = False) -> Consumer:
        """Subscribe to a topic, a list of topics, or (``is_pattern_topic=True``) a regex of topics."""
        if isinstance(topic, list):
            if is_pattern_topic:
                raise ValueError("Argument 'topic' must be a string when 'is_pattern_topic' is True; lists of "
                                 "topics do not support pattern subscriptions")
        elif not isinstance(topic, str):
            raise ValueError("Argument 'topic' is expected to be of type 'str' or 'list'")
        consumer = await self._control.call(
            self._client.subscribe, topic, subscription_name, consumer_type=consumer_type, schema=schema,
            receiver_queue_size=receiver_queue_size,
            max_total_receiver_queue_size_across_partitions=max_total_receiver_queue_size_across_partitions,
            consumer_name=consumer_name, unacked_messages_timeout_ms=unacked_messages_timeout_ms,
            broker_consumer_stats_cache_time_ms=broker_consumer_stats_cache_time_ms,
            negative_ack_redelivery_delay_ms=negative_ack_redelivery_delay_ms, is_read_compacted=is_read_compacted,
            properties=properties, initial_position=initial_position, crypto_key_reader=crypto_key_reader,
            replicate_subscription_state_enabled=replicate_subscription_state_enabled,
            max_pending_chunked_message=max_pending_chunked_message,
            auto_ack_oldest_chunked_message_on_queue_full=auto_ack_oldest_chunked_message_on_queue_full,
            start_message_id_inclusive=start_message_id_inclusive, batch_receive_policy=batch_receive_policy,
            key_shared_policy=key_shared_policy, batch_index_ack_enabled=batch_index_ack_enabled,
            regex_subscription_mode=regex_subscription_mode, dead_letter_policy=dead_letter_policy,
            crypto_failure_action=crypto_failure_action, is_pattern_topic=is_pattern_topic,
            abandoned=_close_quietly)
        return Consumer(consumer, self._control)

    async def create_reader(self, topic: str, start_message_id: MessageId, schema: Any = None,
                            receiver_queue_size: int = 1000, reader_name: str | None = None,
                            subscription_role_prefix: str | None = None, is_read_compacted: bool = False,
                            crypto_key_reader: Any = None, start_message_id_inclusive: bool = False,
                            crypto_failure_action: ConsumerCryptoFailureAction =
                            ConsumerCryptoFailureAction.FAIL) -> Reader:
        """A reader from ``start_message_id`` (``MessageId.earliest``, ``MessageId.latest`` or an id)."""
        if not isinstance(start_message_id, MessageId):
            raise ValueError(f"Argument 'start_message_id' is expected to be of type 'MessageId', not "
                             f"{type(start_message_id).__name__}")
        reader = await self._control.call(
            self._client.create_reader, topic, start_message_id, schema=schema,
            receiver_queue_size=receiver_queue_size, reader_name=reader_name,
            subscription_role_prefix=subscription_role_prefix, is_read_compacted=is_read_compacted,
            crypto_key_reader=crypto_key_reader, start_message_id_inclusive=start_message_id_inclusive,
            crypto_failure_action=crypto_failure_action, abandoned=_close_quietly)
        return Reader(reader, self._control)

    async def get_topic_partitions(self, topic: str) -> List[str]:
        """The partition topics of ``topic`` (``[topic]`` when it is not partitioned)."""
        if not isinstance(topic, str):
            raise ValueError(f"Argument 'topic' is expected to be of type 'str', not {type(topic).__name__}")
        return await self._control.call(self._client.get_topic_partitions, topic)

    def shutdown(self) -> None:
        """Close at once, from synchronous code (pulsar-client's ``shutdown``); later calls raise
        ``PulsarException`` (``AlreadyClosed``)."""
        self._closed = True
        self._client.shutdown()
        self._control.shutdown()

    async def close(self) -> None:
        """Close every producer (flushing it), consumer and reader, then the connection (again: nothing)."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._control.call(self._client.close)
        finally:
            self._control.shutdown()
