"""The source on a broker without dense offsets (Apache Pulsar, pulsar-lite): which broker it is, and the
driver's broker calls there, through the client's public API over Pulsar's binary protocol.

pulsarlike numbers a partition's messages densely, and its gRPC service answers the admin calls the source
makes (offset bounds, a subscription created at an offset, acknowledge-up-to): :mod:`connector.spark.
source_admin`. Another broker has neither, so there the source uses what any Pulsar client has:

- topic partitions: ``Client.get_topic_partitions`` (PARTITIONED_METADATA);
- a partition's last message id: GET_LAST_MESSAGE_ID on the query's durable subscription, or for a batch
  read on a short-lived non-durable reader;
- the query's durable subscription: per partition a consumer held open on the driver that never takes a
  message (:class:`connector.client.broker_kind.DriverSubscriptions`), created at the start's message id (subscribed at
  earliest, then acknowledged cumulatively up to the start), and acknowledged cumulatively up to each
  committed end (whole entries). It pins retention as on pulsarlike: the broker keeps every message the
  query has not committed.

No REST admin call is needed (so ``admin.url`` is not either). Not available there (a clear ``NotSupported``
when asked): ``topicsPattern``, ``startingOffsets=subscription``, ``startingTime``/``endingTime``,
``readCompacted`` and typed columns of registered schemas (the read is ``value`` as bytes); data lost to
retention is not detected (message ids have gaps), which the query's subscription prevents.
"""
from __future__ import annotations

import logging
import uuid
from typing import Any, Callable

from broker_core import errors

from broker_core.types import TopicName

from connector.spark.auth_options import ClientSecurity
from connector.spark.message_id_offsets import EARLIEST, IdOffset, of_message_id
from connector.spark.offsets import TopicPartition
from connector.spark.options import SourceOptions, TopicSpec

log = logging.getLogger(__name__)

SUBSCRIPTION_QUEUE = 1
"""Receive queue of a test client's subscription consumers (they only acknowledge)."""


def dense_offsets(service_url: str, timeout_ms: int, security: ClientSecurity) -> bool:
    """Whether the broker numbers messages densely (pulsarlike): one binary CONNECT decides
    (:func:`connector.client.broker_kind.is_pulsarlike`)."""
    from connector.client.broker_kind import is_pulsarlike

    return is_pulsarlike(service_url, timeout_ms / 1000.0, security.connection_security(service_url))


def open_client(service_url: str, timeout_ms: int, security: ClientSecurity) -> Any:
    """Our client over Pulsar's binary protocol (the only one another broker speaks)."""
    from connector.client import Client

    return Client(service_url, operation_timeout_seconds=timeout_ms / 1000.0, connection_timeout_ms=timeout_ms,
                  transport="binary", **security.client_kwargs(service_url))


def client_kit() -> Any:
    """The module of our client's public names (``MessageId``, ``ConsumerType``, ``InitialPosition``)."""
    import connector.client

    return connector.client


def check_supported(opts: SourceOptions) -> None:
    """Options a broker without dense offsets cannot honour: ``NotSupported`` naming them and why."""
    refused = []
    if opts.spec.pattern is not None:
        refused.append("topicsPattern (list the topics with topic/topics)")
    if opts.starting == "subscription":
        refused.append("startingOffsets=subscription")
    if opts.starting == "time":
        refused.append("a start by publish time (startingTime / startingTimestamp / startingOffsetsByTimestamp)")
    if getattr(opts, "ending", None) == "time":
        refused.append("an end by publish time (endingTime / endingTimestamp / endingOffsetsByTimestamp)")
    if opts.read_compacted:
        refused.append("readCompacted")
    if refused:
        raise errors.NotSupported(
            f"on a broker without dense offsets (not pulsarlike) the source cannot honour {', '.join(refused)}: "
            "it reads by message id through the binary protocol only (docs/spark.md, 'Offsets on any broker')")


class IdSourceCalls:
    """The driver's calls on a broker without dense offsets (module docstring). Picklable: the client opens
    on first use. ``client_factory`` and ``kit`` (the module holding ``MessageId``, ``ConsumerType`` and
    ``InitialPosition``; ``connector.client`` by default) let tests use pulsar-client instead."""

    def __init__(self, service_url: str, timeout_ms: int, security: ClientSecurity | None = None,
                 client_factory: Callable[[], Any] | None = None, kit: Any = None) -> None:
        self.service_url = service_url
        self.timeout_ms = timeout_ms
        self.security = security or ClientSecurity()
        self._client_factory = client_factory
        self.kit = kit or client_kit()
        self._client: Any = None
        self._subscriptions: Any = None
        self._held: set[tuple[TopicPartition, str]] = set()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.kit = client_kit()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.update(_client=None, _subscriptions=None, _held=set(), _client_factory=None, kit=None)
        return state

    @property
    def client(self) -> Any:
        if self._client is None:
            factory = self._client_factory or (lambda: open_client(self.service_url, self.timeout_ms, self.security))
            self._client = factory()
        return self._client

    @property
    def subscriptions(self) -> Any:
        """Where the query's subscription is held: :class:`BinarySubscriptions`, or a test client's consumers
        (:class:`ClientSubscriptions`)."""
        if self._subscriptions is None:
            if self._client_factory is not None:
                self._subscriptions = ClientSubscriptions(self.client, self.kit)
            else:
                self._subscriptions = BinarySubscriptions(self.service_url, self.timeout_ms, self.security)
        return self._subscriptions

    def message_id(self, tp: TopicPartition, offset: IdOffset) -> Any:
        """The client's ``MessageId`` of a boundary (``earliest`` for :data:`EARLIEST`)."""
        kind = self.kit.MessageId
        if offset.is_earliest:
            return kind.earliest
        return kind(max(tp.partition, -1), offset.ledger, offset.entry, offset.batch)

    def reader_after(self, tp: TopicPartition, after: IdOffset, receiver_queue_size: int | None = None,
                     key_reader: Any = None) -> Any:
        """A reader of ``tp`` from after ``after`` (exclusive): where a range ``after -> end`` is read or
        counted from; ``receiver_queue_size``: the client's default when None; ``key_reader``: what decrypts
        end-to-end encrypted messages. A message that cannot be decrypted is delivered as stored (CONSUME):
        the source applies its ``cryptoFailureAction`` itself (:mod:`connector.spark.encrypted_rows`) -- a
        reader told to FAIL would never deliver it, and the range would wait for it until ``pollTimeoutMs``."""
        kwargs: dict[str, Any] = {} if receiver_queue_size is None else {"receiver_queue_size": receiver_queue_size}
        from connector.client.security.message_crypto import ConsumerCryptoFailureAction

        kwargs["crypto_failure_action"] = getattr(self.kit, "ConsumerCryptoFailureAction",
                                                  ConsumerCryptoFailureAction).CONSUME
        if key_reader is not None:
            kwargs["crypto_key_reader"] = key_reader
        return self.client.create_reader(tp.internal_name, self.message_id(tp, after),
                                         start_message_id_inclusive=False, **kwargs)

    # --- topics ---------------------------------------------------------------------------------------
    def discover(self, spec: TopicSpec) -> list[TopicPartition]:
        """The partitions of the topics the spec names (a topic not created yet is read as non-partitioned)."""
        found: set[TopicPartition] = set()
        for topic in spec.topics:
            names = self.client.get_topic_partitions(topic)
            if len(names) == 1 and names[0] == topic:
                found.add(TopicPartition(topic, -1))
            else:
                found.update(TopicPartition(topic, int(n.rsplit("-partition-", 1)[1])) for n in names)
        return sorted(found)

    def last_ids(self, partitions: list[TopicPartition], subscription: str | None = None) -> dict[TopicPartition, IdOffset]:
        """Each partition's last message id (:data:`EARLIEST` when it holds none), asked on the query's
        subscription (a batch read: on a short-lived reader)."""
        out: dict[TopicPartition, IdOffset] = {}
        for tp in partitions:
            if subscription is not None:
                self.hold(tp, subscription)
            out[tp] = self.subscriptions.last_id(tp.internal_name, subscription)
        return out

    # --- the query's durable subscription -------------------------------------------------------------
    def hold(self, tp: TopicPartition, subscription: str, start: IdOffset = EARLIEST) -> None:
        """Hold the subscription on ``tp`` (once); a subscription new to the broker starts after ``start``
        (acknowledging up to an older position moves nothing: the broker never moves it back)."""
        key = (tp, subscription)
        if key in self._held:
            return
        self.subscriptions.open(tp.internal_name, subscription)
        self._held.add(key)
        self.acknowledge(tp, subscription, start)

    def acknowledge(self, tp: TopicPartition, subscription: str, upto: IdOffset) -> None:
        """Acknowledge every whole entry up to ``upto`` (the broker never moves back): a boundary inside a
        batched entry acknowledges up to the entry before it, since a broker without batch-index acks would
        acknowledge the whole entry, uncommitted messages too (they are read again from the checkpoint)."""
        ackable = upto if upto.batch < 0 else IdOffset(upto.ledger, upto.entry - 1, -1)
        if ackable.is_earliest or ackable.entry < 0:
            return
        self.subscriptions.acknowledge(tp.internal_name, subscription, ackable)

    def close(self) -> None:
        self._held.clear()
        if self._subscriptions is not None:
            self._subscriptions.close()
            self._subscriptions = None
        if self._client is not None:
            self._client.close()
            self._client = None


class BinarySubscriptions:
    """The query's subscription held by consumers that take no message, on a binary transport of its own
    (:class:`connector.client.broker_kind.DriverSubscriptions`)."""

    def __init__(self, service_url: str, timeout_ms: int, security: ClientSecurity) -> None:
        from connector.client.broker_kind import DriverSubscriptions

        self._held = DriverSubscriptions(service_url, timeout_ms / 1000.0, security.connection_security(service_url))

    def open(self, topic: str, subscription: str) -> None:
        self._held.open(topic, subscription)

    def acknowledge(self, topic: str, subscription: str, upto: IdOffset) -> None:
        self._held.acknowledge(topic, subscription, upto.ledger, upto.entry)

    def last_id(self, topic: str, subscription: str | None) -> IdOffset:
        last = self._held.last_id(topic, subscription)
        return EARLIEST if last is None else IdOffset(*last)

    def close(self) -> None:
        self._held.close()


class ClientSubscriptions:
    """The query's subscription held by a client's consumers (pulsar-client's API: it acknowledges
    cumulatively up to any id); the interface of :class:`BinarySubscriptions`."""

    def __init__(self, client: Any, kit: Any) -> None:
        self.client = client
        self.kit = kit
        self._consumers: dict[tuple[str, str], Any] = {}

    def open(self, topic: str, subscription: str) -> Any:
        found = self._consumers.get((topic, subscription))
        if found is None:
            found = self._consumers[(topic, subscription)] = self.client.subscribe(
                topic, subscription, receiver_queue_size=SUBSCRIPTION_QUEUE,
                consumer_type=self.kit.ConsumerType.Failover, initial_position=self.kit.InitialPosition.Earliest)
        return found

    def acknowledge(self, topic: str, subscription: str, upto: IdOffset) -> None:
        partition = TopicName.parse(topic).partition_index
        self.open(topic, subscription).acknowledge_cumulative(
            self.kit.MessageId(partition, upto.ledger, upto.entry, upto.batch))

    def last_id(self, topic: str, subscription: str | None) -> IdOffset:
        if subscription is not None:
            return _last_of(self.open(topic, subscription))
        probe = self.client.subscribe(topic, f"spark-probe-{uuid.uuid4().hex[:12]}",
                                      receiver_queue_size=SUBSCRIPTION_QUEUE)
        try:
            return _last_of(probe)
        finally:
            probe.unsubscribe()

    def close(self) -> None:
        for consumer in self._consumers.values():
            consumer.close()
        self._consumers.clear()


def _last_of(consumer: Any) -> IdOffset:
    """The consumer's topic's last message id; :data:`EARLIEST` for a topic with none (a broker that answers
    an empty topic with an error, as pulsar-lite 0.2 does, is asked nothing more)."""
    try:
        last = consumer.get_last_message_id()
    except Exception as exc:
        # pulsarlike's typed UnknownError, or pulsar-client's (tests) of that name
        if not isinstance(exc, errors.UnknownError) and type(exc).__name__ != "UnknownError":
            raise
        log.info("event=last_message_id_unknown topic=%s error=%r: read as empty", consumer.topic(), exc)
        return EARLIEST
    if last.entry_id() < 0 or last.ledger_id() < 0:
        return EARLIEST
    return of_message_id(last)
