"""``Client`` (pulsar-client's API): the entry point that creates producers, consumers and readers.

The client is the composition root of its children: one transport (:mod:`connector.client.transport.choice`:
gRPC's :class:`~connector.client.transport.grpc.connection.Connection` or Pulsar's binary protocol, each reconnecting after a
broker restart), one timer thread, one :class:`~connector.client.lookup.Lookup`; every producer and consumer
gets what it uses in its constructor.
"""
from __future__ import annotations

import functools
import logging
import re
import threading
import uuid
from typing import Any, Callable, Mapping, TypeVar

from broker_core import errors
from broker_core.types import TopicName

from connector.client.arg_checks import check_number, check_number_or_none, check_type, check_type_or_none
from connector.client.security.authentication import Authentication
from connector.client.consumer import Consumer
from connector.client.consumer.dead_letter import LetterOptions
from connector.client.enums import (
    BatchingType, CompressionType, ConsumerType, HashingScheme, InitialPosition,
    KeySharedMode, PartitionsRoutingMode, ProducerAccessMode, RegexSubscriptionMode, SubscriptionMode,
    check_enum)
from connector.client.transport.events import ConsumerSpec, KeySharedSpec
from connector.client.loggers import LogRoute
from connector.client.lookup import DEFAULT_MAX_PARTITIONS, Lookup
from connector.client.security.message_crypto import (
    ConsumerCrypto, ConsumerCryptoFailureAction, ProducerCrypto, check_key_reader, failure_action)
from connector.client.message_id import MessageId
from connector.client.opening import Deadline
from connector.client.consumer.partition import ConsumerSettings, PartitionOpener
from connector.client.producer.partition import PartitionProducer, open_producers
from connector.client.partition_updates import DEFAULT_INTERVAL_S, PartitionsUpdater
from connector.client.consumer.pattern import TopicsPattern
from connector.client.policies import (
    HASH_RANGE_SIZE, ConsumerBatchReceivePolicy, ConsumerDeadLetterPolicy, ConsumerKeySharedPolicy, RedeliveryBackoff,
    RedeliveryOptions, check_backoff)
from connector.client.consumer.positions import ReadPositions
from connector.client.producer import Producer, initial_partition
from connector.client.producer.conf import ProducerConf, check_sequence_id
from connector.client.reader import Reader, start_position
from connector.client.consumer.trackers import MIN_ACK_TIMEOUT_MS, MIN_TICK_MS
from connector.client.producer.routing import Router
from connector.client.schema.binding import SchemaBinding, bind
from connector.client.security import Security, is_tls_url
from connector.client.failover import PROBE_TIMEOUT_S, FailoverProbe, SwitchingTransport
from connector.client.service_info import AutoClusterFailover, ServiceInfo, ServiceInfoProvider
from connector.client.table_view import TableView
from connector.client.timer import TimerThread
from connector.client.transport import DENSE
from connector.client.transport.choice import check_transport, open_transport
from connector.client.unclosed import children_of, watch

log = logging.getLogger(__name__)

_Child = TypeVar("_Child", Producer, Consumer)


class Client:
    """A connection to one broker: ``Client("pulsar://localhost:6650")``."""

    def __init__(self, service_url: str | AutoClusterFailover | ServiceInfoProvider, authentication: Any = None,
                 operation_timeout_seconds: float = 30, io_threads: int = 1,
                 message_listener_threads: int = 1, concurrent_lookup_requests: int = 50000,
                 log_conf_file_path: str | None = None, stats_interval_in_seconds: int = 600,
                 use_tls: bool = False, tls_trust_certs_file_path: str | None = None,
                 tls_allow_insecure_connection: bool = False, tls_validate_hostname: bool = False,
                 logger: Any = None, connection_timeout_ms: int = 10000,
                 listener_name: str | None = None, tls_private_key_file_path: str | None = None,
                 tls_certificate_file_path: str | None = None,
                 partitions_update_interval_seconds: float = DEFAULT_INTERVAL_S,
                 transport: str = "auto", max_partitions_per_topic: int = DEFAULT_MAX_PARTITIONS) -> None:
        """``authentication``: ``AuthenticationToken(token or function)`` or ``AuthenticationTLS(cert, key)``;
        a ``pulsar+ssl://`` URL (or ``use_tls``) connects to the broker's TLS port, with the ``tls_*`` options
        of pulsar-client (docs/security.md). ``logger``: a ``logging.Logger``, ``ConsoleLogger`` or ``FileLogger``
        (:mod:`connector.client.loggers`); without it the client logs under the ``connector`` logger. Arguments
        pulsarlike cannot honour raise ``NotSupported`` naming them instead of being ignored:
        ``log_conf_file_path`` (a log4cxx file of the C++ core). ``listener_name``: the broker's advertised
        listener every lookup asks for (``advertisedListeners``; one the broker has not fails the lookup), over
        the binary protocol. ``service_url`` may be the web service's ``http(s)://host:port``, as with
        pulsar-client: the first topic's broker is looked up over HTTP, then reached over the binary protocol
        (:mod:`connector.client.transport.http_lookup`).

        ``partitions_update_interval_seconds`` (the C++ client's ``partitionsUpdateInterval``, which
        pulsar-client's Python API does not expose; 0 turns it off): how often producers and consumers of
        partitioned topics look for partitions added to them (:mod:`connector.client.partition_updates`).

        ``transport`` (pulsarlike's own option): ``"grpc"`` (pulsarlike's gRPC service), ``"binary"`` (Pulsar's
        binary protocol, any Pulsar broker) or ``"auto"``: at first use, one binary ``CONNECT`` tells whose
        broker it is; against pulsarlike the faster transport, against any other broker the binary protocol
        (:mod:`connector.client.transport.choice`). Every public API behaves the same over both.

        ``operation_timeout_seconds`` bounds each ``create_producer``, ``subscribe`` and ``create_reader`` as a
        whole: the lookups and the opening of every partition share one deadline (:mod:`connector.client.opening`).
        ``max_partitions_per_topic`` (pulsarlike's own, 10,000 by default): a topic the broker says has more
        partitions is refused with ``NotSupported`` before anything is opened (:mod:`connector.client.lookup`).

        ``service_url`` may also be an ``AutoClusterFailover`` or a ``ServiceInfoProvider`` (pulsar-client 3.13):
        the client starts on its first ``ServiceInfo`` (whose authentication and trust file it uses: the
        ``authentication`` and ``tls_trust_certs_file_path`` arguments are a ``ValueError`` then) and switches
        service when the provider says so, producers and consumers reconnecting to the new one over the binary
        protocol (:mod:`connector.client.failover`); ``get_service_info()`` names the current one."""
        provider = _provider_of(service_url, authentication, tls_trust_certs_file_path, connection_timeout_ms)
        _check_client_arguments(locals())
        first: ServiceInfo | None = None
        if provider is not None:
            first = _checked_service_info(provider.initial_service_info())
            service_url, authentication = first.service_url, first.authentication
            tls_trust_certs_file_path = first.tls_trust_certs_file_path
        _refuse_unsupported("Client", log_conf_file_path=log_conf_file_path)
        if listener_name is not None and not isinstance(listener_name, str):
            raise ValueError(f"listener_name must be a str, not {type(listener_name).__name__}")
        if operation_timeout_seconds <= 0 or connection_timeout_ms <= 0:
            raise ValueError("operation_timeout_seconds and connection_timeout_ms must be > 0")
        interval = partitions_update_interval_seconds
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not interval >= 0:
            raise ValueError(f"partitions_update_interval_seconds={interval!r} is not valid; use seconds >= 0 "
                             "(0: off)")
        check_transport(transport)
        if isinstance(max_partitions_per_topic, bool) or not isinstance(max_partitions_per_topic, int) \
                or max_partitions_per_topic < 1:
            raise ValueError(f"max_partitions_per_topic={max_partitions_per_topic!r} is not valid; use an int >= 1")
        tls = (use_tls, tls_allow_insecure_connection, tls_validate_hostname, tls_certificate_file_path,
               tls_private_key_file_path)
        security = Security.of(service_url, authentication, use_tls, tls_trust_certs_file_path,
                               tls_allow_insecure_connection, tls_validate_hostname, tls_certificate_file_path,
                               tls_private_key_file_path) if first is None else _security_for(first, *tls)
        self._service_info = first or ServiceInfo(service_url, authentication, tls_trust_certs_file_path)
        self._provider = provider
        self._log_route = LogRoute.of(logger)
        timeouts = (float(operation_timeout_seconds), connection_timeout_ms / 1000.0)
        try:
            if provider is None:
                self._connection = open_transport(transport, service_url, *timeouts, security, listener_name or None)
            else:
                if transport == "grpc":
                    raise errors.NotSupported("a ServiceInfoProvider / AutoClusterFailover client reconnects over "
                                              "Pulsar's binary protocol: use transport='binary' or 'auto'")
                self._connection = SwitchingTransport(first, lambda info: open_transport(  # type: ignore[arg-type]
                    "binary", info.service_url, *timeouts, _security_for(info, *tls), listener_name or None))
        except BaseException:
            if self._log_route is not None:
                self._log_route.close()
            raise
        self._lookup = Lookup(self._connection, max_partitions_per_topic)
        self._timer = TimerThread()
        self._lock = threading.Lock()
        self._children: list[Producer | Consumer] = []
        self._closed = False
        self._partitions_updater = PartitionsUpdater(interval, children_of(self))  # it must not hold the client
        # dropped without close(): its threads stop when it is collected (connector.client.unclosed)
        self._unclosed = watch(self, self._children, self._partitions_updater, self._timer, self._connection,
                               self._log_route)
        if provider is not None:
            try:
                provider.initialize(self._switch_service)
            except BaseException:
                self.close()
                raise

    # --- producers ------------------------------------------------------------------------------------
    def create_producer(self, topic: str, producer_name: str | None = None, schema: Any = None,
                        initial_sequence_id: int | None = None, send_timeout_millis: int = 30000,
                        compression_type: CompressionType = CompressionType.NONE,
                        max_pending_messages: int = 1000,
                        max_pending_messages_across_partitions: int = 50000,
                        block_if_queue_full: bool = False, batching_enabled: bool = False,
                        batching_max_messages: int = 1000,
                        batching_max_allowed_size_in_bytes: int = 128 * 1024,
                        batching_max_publish_delay_ms: int = 10, chunking_enabled: bool = False,
                        message_routing_mode: PartitionsRoutingMode =
                        PartitionsRoutingMode.RoundRobinDistribution,
                        lazy_start_partitioned_producers: bool = False,
                        properties: Mapping[str, str] | None = None,
                        batching_type: BatchingType = BatchingType.Default,
                        encryption_key: Any = None, crypto_key_reader: Any = None,
                        access_mode: ProducerAccessMode = ProducerAccessMode.Shared,
                        message_router: Callable[[Any, int], int] | None = None,
                        hashing_scheme: HashingScheme = HashingScheme.JavaStringHash,
                        encryption_keys: list[str] | None = None) -> Producer:
        """A producer; batching is off by default, as in pulsar-client (turn it on for throughput). While the
        broker cannot be reached (a restart), sends wait to be sent again and fail only at
        ``send_timeout_millis``.

        ``encryption_key`` (a public key's name) with ``crypto_key_reader`` encrypts every entry end to end,
        as pulsar-client (:mod:`connector.client.security.message_crypto`); ``encryption_keys`` (pulsarlike's, as the
        Java client's repeated ``addEncryptionKey``) names several, the data key wrapped with each."""
        self._check_open()
        _check_producer_arguments(locals())
        deadline = Deadline(self._connection.operation_timeout_s)
        binding = bind(schema, self._connection)
        compression = check_enum("compression_type", compression_type, CompressionType)
        routing = check_enum("message_routing_mode", message_routing_mode, PartitionsRoutingMode)
        batching = check_enum("batching_type", batching_type, BatchingType)
        access = check_enum("access_mode", access_mode, ProducerAccessMode)
        scheme = check_enum("hashing_scheme", hashing_scheme, HashingScheme)
        name = _qualified(topic)
        if chunking_enabled and batching_enabled:  # pulsar-client's ValueError, its message first
            raise ValueError(
                "Batching and chunking of messages can't be enabled together: chunking_enabled=True needs "
                "batching_enabled=False (a chunk is never part of a batch)")
        if chunking_enabled and TopicName.parse(name).domain != "persistent":
            raise errors.InvalidConfiguration(f"chunking_enabled=True needs a persistent topic; {name} "
                                              "is non-persistent")
        crypto = _producer_crypto(name, encryption_key, encryption_keys, crypto_key_reader)
        if initial_sequence_id is not None:
            check_sequence_id("initial_sequence_id", initial_sequence_id)
        for option, value in (("send_timeout_millis", send_timeout_millis),
                              ("max_pending_messages", max_pending_messages),
                              ("batching_max_publish_delay_ms", batching_max_publish_delay_ms)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{option}={value!r} is not valid; use an int >= 0")
        for option, value in (("batching_max_messages", batching_max_messages),
                              ("batching_max_allowed_size_in_bytes", batching_max_allowed_size_in_bytes)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{option}={value!r} is not valid; use an int >= 1")
        conf = ProducerConf(
            producer_name=producer_name, initial_sequence_id=initial_sequence_id,
            send_timeout_ms=send_timeout_millis, compression=int(compression),
            max_pending_messages=max_pending_messages, block_if_queue_full=block_if_queue_full,
            batching_enabled=batching_enabled, batching_max_messages=batching_max_messages,
            batching_max_bytes=batching_max_allowed_size_in_bytes,
            batching_max_publish_delay_ms=batching_max_publish_delay_ms,
            key_based_batching=batching == BatchingType.KeyBased, properties=dict(properties or {}),
            access_mode=access,
            chunking_enabled=bool(chunking_enabled), crypto=crypto)
        num = self._lookup.partitions(name, deadline)
        router = Router(max(num, 1), routing, scheme, message_router,  # type: ignore[arg-type]
                        start=initial_partition(num))
        # WaitForExclusive waits its turn however long it takes (the lookups above are bounded all the same)
        opening = None if access == ProducerAccessMode.WaitForExclusive else deadline
        producers = open_producers(self._connection, self._timer, name, range(num) if num else [-1], conf, opening)
        try:
            # registered once the producers are open: the topic exists then (the registry wants it to)
            version = binding.register(name) if binding is not None else b""
            for producer in producers:
                producer.use_schema_version(version)
        except BaseException:
            for producer in producers:
                producer.close(timeout_s=1)
            raise
        if not num:
            return self._adopt(_typed(Producer(name, producers, router, send_timeout_millis, self._forget),
                                      binding))
        parsed, producer_name = TopicName.parse(name), producers[0].producer_name

        def open_partition(index: int) -> PartitionProducer:
            opened = PartitionProducer(self._connection, self._timer, str(parsed.partition(index)), index, conf,
                                       producer_name)
            opened.use_schema_version(version)
            return opened
        return self._adopt(_typed(Producer(name, producers, router, send_timeout_millis, self._forget,
                                           count_partitions=lambda: self._lookup.partitions(name),
                                           open_partition=open_partition), binding))

    # --- consumers ------------------------------------------------------------------------------------
    def subscribe(self, topic: str | list[str] | re.Pattern[str], subscription_name: str,
                  consumer_type: ConsumerType = ConsumerType.Exclusive, schema: Any = None,
                  message_listener: Callable[[Consumer, Any], None] | None = None,
                  receiver_queue_size: int = 1000, max_total_receiver_queue_size_across_partitions:
                  int = 50000, consumer_name: str | None = None,
                  unacked_messages_timeout_ms: int | None = None, broker_consumer_stats_cache_time_ms:
                  int = 30000, negative_ack_redelivery_delay_ms: int = 60000,
                  is_read_compacted: bool = False, properties: Mapping[str, str] | None = None,
                  pattern_auto_discovery_period: int = 60,
                  initial_position: InitialPosition = InitialPosition.Latest,
                  crypto_key_reader: Any = None, replicate_subscription_state_enabled: bool = False,
                  max_pending_chunked_message: int = 10,
                  auto_ack_oldest_chunked_message_on_queue_full: bool = False,
                  start_message_id_inclusive: bool = False,
                  batch_receive_policy: ConsumerBatchReceivePolicy | None = None,
                  key_shared_policy: ConsumerKeySharedPolicy | None = None,
                  batch_index_ack_enabled: bool = False,
                  regex_subscription_mode: RegexSubscriptionMode | None = None,
                  dead_letter_policy: ConsumerDeadLetterPolicy | None = None,
                  crypto_failure_action: Any = ConsumerCryptoFailureAction.FAIL, is_pattern_topic: bool = False,
                  subscription_mode: SubscriptionMode = SubscriptionMode.Durable,
                  priority_level: int | None = None, retry_enable: bool = False,
                  expire_time_of_incomplete_chunked_message_ms: int = 60000,
                  negative_ack_redelivery_backoff: RedeliveryBackoff | None = None,
                  ack_timeout_tick_time_ms: int = 1000,
                  ack_timeout_redelivery_backoff: RedeliveryBackoff | None = None) -> Consumer:
        """Subscribe to a topic, a list of topics, or the topics of a namespace matching a pattern.

        Beyond pulsar-client's options, from the Java client (the issue names them):
        ``negative_ack_redelivery_backoff`` / ``ack_timeout_redelivery_backoff``
        (``MultiplierRedeliveryBackoff``), ``ack_timeout_tick_time_ms`` (>= 100), ``retry_enable`` and
        ``reconsume_later``; ``unacked_messages_timeout_ms`` takes 0/None (off) or >= 1000 ms, as the Java
        client (pulsar-client's C++ core wants >= 10 s).

        A broker restart is ridden through: the consumer subscribes again (same name, type and
        subscription), drops what it had buffered and not handed out, and the broker redelivers every
        unacknowledged message (at least once, as in Pulsar).
        """
        self._check_open()
        _check_consumer_arguments(locals())
        deadline = Deadline(self._connection.operation_timeout_s)
        _refuse_unsupported(
            "subscribe", replicate_subscription_state_enabled=replicate_subscription_state_enabled)
        crypto = _consumer_crypto(f"subscribe({subscription_name})", crypto_key_reader, crypto_failure_action)
        binding = bind(schema, self._connection)
        if batch_receive_policy is not None and not isinstance(batch_receive_policy, ConsumerBatchReceivePolicy):
            raise ValueError(f"batch_receive_policy={batch_receive_policy!r} is not valid; use "
                             "ConsumerBatchReceivePolicy(max_num_message, max_num_bytes, timeout_ms)")
        ctype = ConsumerType(check_enum("consumer_type", consumer_type, ConsumerType))
        position = check_enum("initial_position", initial_position, InitialPosition)
        mode = check_enum("subscription_mode", subscription_mode, SubscriptionMode)
        if not subscription_name or not isinstance(subscription_name, str):
            raise ValueError(f"subscription_name={subscription_name!r} is not valid; use a non-empty str")
        for option, value, least in (
                ("max_pending_chunked_message", max_pending_chunked_message, 1),
                ("expire_time_of_incomplete_chunked_message_ms",
                 expire_time_of_incomplete_chunked_message_ms, 0),
                ("negative_ack_redelivery_delay_ms", negative_ack_redelivery_delay_ms, 0),
                ("ack_timeout_tick_time_ms", ack_timeout_tick_time_ms, MIN_TICK_MS),
                ("pattern_auto_discovery_period", pattern_auto_discovery_period, 0)):
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"{option}={value!r} is not valid; use an int >= {least}")
        ack_timeout = unacked_messages_timeout_ms or 0
        if isinstance(ack_timeout, bool) or not isinstance(ack_timeout, int) \
                or 0 < ack_timeout < MIN_ACK_TIMEOUT_MS or ack_timeout < 0:
            raise ValueError(f"unacked_messages_timeout_ms={unacked_messages_timeout_ms!r} is not valid; use "
                             f"0 or None (off) or an int >= {MIN_ACK_TIMEOUT_MS}")
        redelivery = RedeliveryOptions(
            negative_ack_redelivery_delay_ms,
            check_backoff("negative_ack_redelivery_backoff", negative_ack_redelivery_backoff), ack_timeout,
            ack_timeout_tick_time_ms, check_backoff("ack_timeout_redelivery_backoff", ack_timeout_redelivery_backoff))
        key_shared = _key_shared_meta(key_shared_policy, ctype)
        if dead_letter_policy is not None and not isinstance(dead_letter_policy, ConsumerDeadLetterPolicy):
            raise ValueError(f"dead_letter_policy={dead_letter_policy!r} is not valid; use "
                             "ConsumerDeadLetterPolicy(max_redeliver_count, ...)")
        pattern = None
        if isinstance(topic, re.Pattern) or is_pattern_topic:
            pattern = TopicsPattern.parse(topic, regex_subscription_mode)  # type: ignore[arg-type]
            topics = pattern.select(self._lookup.list_topics(pattern.namespace, deadline))
            shown: str | list[str] = pattern.text
        elif isinstance(topic, (list, tuple)):
            topics = [_qualified(t) for t in topic]
            shown = topics
        else:
            topics = [_qualified(topic)]
            shown = topics[0]
        if is_read_compacted:
            _check_read_compacted(topics, ctype)
        matched = topics
        letters = None
        if dead_letter_policy is not None or retry_enable:
            letters = LetterOptions.parse(subscription_name, dead_letter_policy,
                                          None if pattern is not None else topics[0], ctype, bool(retry_enable))
            if letters.retry_letter_topic is not None and letters.retry_letter_topic not in topics:
                topics = topics + [letters.retry_letter_topic]
        template = ConsumerSpec(
            subscription=subscription_name, sub_type=ctype, consumer_name=consumer_name or "",
            initial_position=position, priority_level=priority_level or 0,
            durable=mode == SubscriptionMode.Durable, multi_topic=len(topics) > 1 or pattern is not None,
            key_shared=key_shared, read_compacted=bool(is_read_compacted))
        settings = ConsumerSettings(
            receiver_queue_size, not batch_index_ack_enabled, max_pending_chunked_message,
            bool(auto_ack_oldest_chunked_message_on_queue_full), expire_time_of_incomplete_chunked_message_ms,
            values=binding, start_inclusive=start_message_id_inclusive, crypto=crypto,
            crypto_redelivery_ms=ack_timeout)
        # A non-durable subscription resumes after a reconnection where the application is.
        positions = ReadPositions() if mode == SubscriptionMode.NonDurable else None
        opener = PartitionOpener(self._connection, self._timer, self._lookup, template, settings, positions)
        consumer = Consumer(shown, subscription_name, ctype, opener, topics, self._lookup, self._timer, redelivery,
                            self._forget, create_producer=self.create_producer, letters=letters,
                            message_listener=message_listener, batch_receive_policy=batch_receive_policy,
                            positions=positions, pattern=pattern, pattern_topics=matched,
                            pattern_auto_discovery_period=pattern_auto_discovery_period, deadline=deadline)
        _check_consumer_schema(consumer, binding, matched)
        return self._adopt(consumer)

    def create_reader(self, topic: str, start_message_id: MessageId, schema: Any = None,
                      reader_listener: Callable[[Reader, Any], None] | None = None,
                      receiver_queue_size: int = 1000, reader_name: str | None = None,
                      subscription_role_prefix: str | None = None, is_read_compacted: bool = False,
                      crypto_key_reader: Any = None, start_message_id_inclusive: bool = False,
                      crypto_failure_action: Any = ConsumerCryptoFailureAction.FAIL) -> Reader:
        """Read ``topic`` from ``start_message_id`` (``MessageId.earliest``/``latest`` or an id). After a
        broker restart the reader resumes after the last message it returned."""
        self._check_open()
        check_type(str, topic, "topic")
        if not isinstance(start_message_id, MessageId):
            raise ValueError("Argument start_message_id is expected to be of type 'MessageId' (e.g. "
                             f"MessageId.earliest) and not '{type(start_message_id).__name__}'")
        check_number(receiver_queue_size, "receiver_queue_size")
        check_type_or_none(str, reader_name, "reader_name")
        check_type_or_none(str, subscription_role_prefix, "subscription_role_prefix")
        check_type(bool, is_read_compacted, "is_read_compacted")
        check_type(bool, start_message_id_inclusive, "start_message_id_inclusive")
        deadline = Deadline(self._connection.operation_timeout_s)
        crypto = _consumer_crypto("create_reader", crypto_key_reader, crypto_failure_action)
        binding = bind(schema, self._connection)
        name = _qualified(topic)
        targets = self._lookup.expand([name], deadline)
        specific = not (start_message_id.is_earliest() or start_message_id.is_latest())
        if specific and len(targets) > 1:
            raise errors.InvalidConfiguration(
                "a reader on a partitioned topic starts at MessageId.earliest or MessageId.latest; "
                "read one partition topic to start at a message id")
        subscription = reader_name or f"{subscription_role_prefix or 'reader'}-{uuid.uuid4().hex[:10]}"
        # a message id becomes a position the transport's way (another broker's ids are not offsets)
        numbering = self._connection.positions if specific else DENSE
        template = ConsumerSpec(
            subscription=subscription, sub_type=ConsumerType.Exclusive, consumer_name=reader_name or "",
            durable=False, start=start_position(start_message_id, start_message_id_inclusive,
                                                None if len(targets) > 1 else functools.partial(
                                                    self._last_offset, name, bool(is_read_compacted), deadline),
                                                numbering),
            start_inclusive=start_message_id_inclusive, read_compacted=bool(is_read_compacted))
        positions = ReadPositions()
        opener = PartitionOpener(self._connection, self._timer, self._lookup, template,
                                 ConsumerSettings(receiver_queue_size, values=binding,
                                                  start_inclusive=start_message_id_inclusive, crypto=crypto),
                                 positions, call="create_reader")
        consumer = Consumer(name, subscription, ConsumerType.Exclusive, opener, [name], self._lookup, self._timer,
                            RedeliveryOptions(), self._forget, positions=positions, deadline=deadline)
        _check_consumer_schema(consumer, binding, [name])
        try:
            reader = Reader(consumer, self._lookup, name, positions, start_message_id, start_message_id_inclusive,
                            read_compacted=bool(is_read_compacted), numbering=self._connection.positions,
                            deadline=deadline)
        except BaseException:
            consumer.close()
            raise
        if reader_listener is not None:
            consumer.start_listener(reader_listener, reader)  # called as reader_listener(reader, msg)
        self._adopt(consumer)
        return reader

    def create_table_view(self, topic: str, subscription_name: str | None = None,
                          schema: Any = None) -> TableView:
        """The latest value per key of ``topic`` (every partition), read to its end before this returns, then
        kept up to date (:mod:`connector.client.table_view`). ``subscription_name`` names its reader (a
        random one by default), as pulsar-client's."""
        self._check_open()
        if not isinstance(topic, str):
            raise TypeError(f"topic must be a str, not {type(topic).__name__}")
        if subscription_name is not None and (not isinstance(subscription_name, str) or not subscription_name):
            raise ValueError(f"subscription_name={subscription_name!r} is not valid; use a non-empty str or None")
        if TopicName.parse(_qualified(topic)).domain != "persistent":
            raise errors.NotAllowedError(f"a table view reads a compacted topic; {topic} is non-persistent")
        reader = self.create_reader(topic, MessageId.earliest, schema=schema, reader_name=subscription_name,
                                    is_read_compacted=True)
        view = TableView(reader, _qualified(topic), subscription_name,
                         catch_up_timeout_ms=int(self._connection.operation_timeout_s * 1000))
        try:
            return view.start()
        except BaseException:
            view.close()
            raise

    # --- lookups --------------------------------------------------------------------------------------
    def get_service_info(self) -> ServiceInfo:
        """The endpoint this client uses now (pulsar-client 3.13's: it changes when the client's
        ``ServiceInfoProvider`` or ``AutoClusterFailover`` switches service)."""
        return self._service_info

    def _switch_service(self, info: ServiceInfo) -> None:
        """The provider's callback: use ``info``'s service from now on (:mod:`connector.client.failover`)."""
        info = _checked_service_info(info)
        if self._closed:
            return
        self._connection.switch(info)  # type: ignore[attr-defined]
        self._service_info = info

    def get_topic_partitions(self, topic: str) -> list[str]:
        """The partition topics of ``topic`` (itself when not partitioned)."""
        return [t for t, _ in self._lookup.expand([_qualified(topic)])]

    def _last_offset(self, topic: str, read_compacted: bool, deadline: Deadline | None = None) -> int:
        """The topic partition's last stored offset (of its compacted view), -1 when none or no topic yet."""
        try:
            return self._lookup.last_message(topic, read_compacted=read_compacted, deadline=deadline).last_offset
        except errors.TopicNotFound:
            return -1

    # --- lifecycle ------------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise errors.AlreadyClosed("the client is closed")

    def _adopt(self, child: _Child) -> _Child:
        with self._lock:
            self._children.append(child)
        return child

    def _children_now(self) -> list[Producer | Consumer]:
        with self._lock:
            return list(self._children)

    def _forget(self, child: Producer | Consumer) -> None:
        with self._lock:
            if child in self._children:
                self._children.remove(child)

    def close(self) -> None:
        """Close every producer (flushing it), consumer and reader, then the connection."""
        if self._closed:
            return
        self._closed = True
        self._unclosed.detach()
        if self._provider is not None:
            try:
                self._provider.close()
            except Exception:
                log.exception("closing the service info provider %r failed", self._provider)
        self._partitions_updater.stop()
        for child in self._children_now():
            try:
                child.close()
            except Exception:
                log.exception("closing %r failed", child)
        self._timer.stop()
        self._connection.close()
        if self._log_route is not None:
            self._log_route.close()

    def shutdown(self) -> None:
        self.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _key_shared_meta(policy: ConsumerKeySharedPolicy | None, ctype: ConsumerType) -> KeySharedSpec | None:
    """The subscription's Key_Shared hash ranges (None for the other types)."""
    if policy is not None and not isinstance(policy, ConsumerKeySharedPolicy):
        raise ValueError(f"key_shared_policy={policy!r} is not valid; use ConsumerKeySharedPolicy(...)")
    if ctype != ConsumerType.KeyShared:
        if policy is not None:
            raise errors.InvalidConfiguration("key_shared_policy needs consumer_type=ConsumerType.KeyShared")
        return None
    policy = policy or ConsumerKeySharedPolicy()
    sticky = policy.key_shared_mode == KeySharedMode.Sticky
    ranges = tuple((s, e) for s, e in policy.sticky_ranges) if sticky else ()
    _check_sticky_ranges(ranges)
    return KeySharedSpec(sticky, policy.allow_out_of_order_delivery, ranges)


class InvalidStickyRanges(errors.ConsumerAssignError, ValueError):
    """Sticky ranges wrong in themselves (outside ``0..65535``, reversed, overlapping each other), refused by
    the client before subscribing, as pulsar-client refuses them (a ValueError) and as the broker would
    (``ConsumerAssignError``); ranges overlapping another consumer's are the broker's to refuse."""


def _check_sticky_ranges(ranges: tuple[tuple[int, int], ...]) -> None:
    last_end = -1
    for start, end in sorted(ranges):
        if not 0 <= start <= end <= HASH_RANGE_SIZE - 1:
            raise InvalidStickyRanges(f"sticky range [{start}, {end}] is not valid: ranges are inclusive, "
                                      f"0 <= start <= end <= {HASH_RANGE_SIZE - 1}")
        if start <= last_end:
            raise InvalidStickyRanges(f"sticky ranges overlap at [{start}, {end}]: each hash belongs to one range")
        last_end = end


def _check_read_compacted(topics: list[str], ctype: ConsumerType) -> None:
    """pulsar-client's rule, checked before asking the broker (which refuses the same)."""
    if ctype not in (ConsumerType.Exclusive, ConsumerType.Failover) or any(
            TopicName.parse(t).domain != "persistent" for t in topics):
        raise errors.InvalidConfiguration("Read compacted can only be used with exclusive or failover persistent"
                                          f" subscriptions (consumer_type={ctype.name})")


def _typed(producer: Producer, binding: SchemaBinding | None) -> Producer:
    """The producer sending values of its schema (bytes as they are without one)."""
    producer.schema = binding
    return producer


def _check_consumer_schema(consumer: Consumer, binding: SchemaBinding | None, topics: list[str]) -> None:
    """A consumer's or reader's schema checked against each topic's (registered on a topic without one), once
    subscribed (the topics exist then); the consumer is closed when the registry refuses it."""
    if binding is None:
        return
    try:
        for topic in topics:
            binding.register(topic, consumer=True)
    except BaseException:
        consumer.close()
        raise


def _check_client_arguments(given: dict[str, Any]) -> None:
    """pulsar-client's type checks of ``Client``'s arguments (:mod:`connector.client.arg_checks`)."""
    authentication = given["authentication"]
    if authentication is not None and not isinstance(authentication, Authentication):
        raise ValueError(f"Argument authentication is expected to be either None or of type 'Authentication' "
                         f"(AuthenticationToken, AuthenticationBasic, AuthenticationTLS, ...), not "
                         f"'{type(authentication).__name__}'")
    for name in ("operation_timeout_seconds", "connection_timeout_ms", "io_threads", "message_listener_threads",
                 "concurrent_lookup_requests", "stats_interval_in_seconds"):
        check_number(given[name], name)
    for name in ("use_tls", "tls_allow_insecure_connection", "tls_validate_hostname"):
        check_type(bool, given[name], name)
    for name in ("log_conf_file_path", "tls_trust_certs_file_path", "listener_name", "tls_private_key_file_path",
                 "tls_certificate_file_path"):
        check_type_or_none(str, given[name], name)


def _check_producer_arguments(given: dict[str, Any]) -> None:
    """pulsar-client's type checks of ``create_producer``'s arguments."""
    check_type(str, given["topic"], "topic")
    check_type_or_none(str, given["producer_name"], "producer_name")
    for name in ("send_timeout_millis", "max_pending_messages", "max_pending_messages_across_partitions",
                 "batching_max_messages", "batching_max_allowed_size_in_bytes", "batching_max_publish_delay_ms"):
        check_number(given[name], name)
    check_type(CompressionType, given["compression_type"], "compression_type")
    for name in ("block_if_queue_full", "batching_enabled", "chunking_enabled", "lazy_start_partitioned_producers"):
        check_type(bool, given[name], name)
    check_type_or_none(Mapping, given["properties"], "properties")


def _check_consumer_arguments(given: dict[str, Any]) -> None:
    """pulsar-client's type checks of ``subscribe``'s arguments (a topic may also be a list or a pattern)."""
    check_type((str, list, re.Pattern), given["topic"], "topic")
    check_type(str, given["subscription_name"], "subscription_name")
    check_type(ConsumerType, given["consumer_type"], "consumer_type")
    for name in ("receiver_queue_size", "max_total_receiver_queue_size_across_partitions",
                 "broker_consumer_stats_cache_time_ms", "negative_ack_redelivery_delay_ms",
                 "pattern_auto_discovery_period", "max_pending_chunked_message"):
        check_number(given[name], name)
    check_number_or_none(given["unacked_messages_timeout_ms"], "unacked_messages_timeout_ms")
    check_type_or_none(str, given["consumer_name"], "consumer_name")
    for name in ("is_read_compacted", "auto_ack_oldest_chunked_message_on_queue_full", "start_message_id_inclusive",
                 "batch_index_ack_enabled"):
        check_type(bool, given[name], name)
    check_type_or_none(Mapping, given["properties"], "properties")


def _provider_of(service_url: Any, authentication: Any, tls_trust_certs_file_path: Any,
                 connection_timeout_ms: Any) -> Any:
    """None for a URL string; the provider of an ``AutoClusterFailover`` (:class:`FailoverProbe`) or a
    ``ServiceInfoProvider``; anything else, or ``authentication`` / ``tls_trust_certs_file_path`` given with a
    provider, is pulsar-client's ``ValueError``."""
    if isinstance(service_url, str):
        return None
    if not isinstance(service_url, (AutoClusterFailover, ServiceInfoProvider)):
        raise ValueError("Argument service_url is expected to be of type 'str', 'AutoClusterFailover' or "
                         "'ServiceInfoProvider'")
    if authentication is not None:
        raise ValueError("Argument authentication is not supported when service_url is an AutoClusterFailover or "
                         "ServiceInfoProvider; set authentication on each ServiceInfo instead")
    if tls_trust_certs_file_path is not None:
        raise ValueError("Argument tls_trust_certs_file_path is not supported when service_url is an "
                         "AutoClusterFailover or ServiceInfoProvider; set tls_trust_certs_file_path on each "
                         "ServiceInfo instead")
    if isinstance(service_url, AutoClusterFailover):
        timeout_s = connection_timeout_ms / 1000.0 if isinstance(connection_timeout_ms, (int, float)) \
            and connection_timeout_ms > 0 else PROBE_TIMEOUT_S
        return FailoverProbe(service_url, probe_timeout_s=min(PROBE_TIMEOUT_S, timeout_s))
    return service_url


def _checked_service_info(info: Any) -> ServiceInfo:
    if not isinstance(info, ServiceInfo):
        raise ValueError("Expected a pulsar.ServiceInfo or _pulsar.ServiceInfo instance")
    return info


def _security_for(info: ServiceInfo, use_tls: bool, allow_insecure: bool, validate_hostname: bool,
                  cert: str | None, key: str | None) -> Security:
    """One service's security: its authentication and trust file, the client's other TLS options when its URL
    is a TLS one."""
    if not (use_tls or is_tls_url(info.service_url)):
        return Security.of(info.service_url, info.authentication)
    return Security.of(info.service_url, info.authentication, use_tls, info.tls_trust_certs_file_path,
                       allow_insecure, validate_hostname, cert, key)


def _producer_crypto(topic: str, key: Any, keys: Any, reader: Any) -> ProducerCrypto | None:
    """The producer's encryption (None without keys); pulsar-client's ValueErrors for wrong types. Keys without a
    key reader are refused (pulsar-client would send them unencrypted without a word)."""
    check_type_or_none(str, key, "encryption_key")
    check_key_reader(reader)
    if keys is not None and (isinstance(keys, str) or not all(isinstance(k, str) for k in keys)):
        raise ValueError(f"encryption_keys={keys!r} is not valid; use a list of key names (str)")
    names = ([key] if key else []) + list(keys or [])
    if not names:
        return None
    if reader is None:
        raise errors.InvalidConfiguration(f"create_producer: encryption_key {names!r} needs crypto_key_reader (a "
                                          "CryptoKeyReader that reads the public key); the messages would go out "
                                          "unencrypted")
    return ProducerCrypto(names, reader, label=topic)


def _consumer_crypto(where: str, reader: Any, action: Any) -> ConsumerCrypto:
    """A consumer's or reader's decryption (``crypto_key_reader``, ``crypto_failure_action``)."""
    check_key_reader(reader)
    return ConsumerCrypto(reader, failure_action(action), label=where)


def _refuse_unsupported(where: str, **options: Any) -> None:
    """An option that pulsarlike does not implement fails loudly (``NotSupported``, an
    ``InvalidConfiguration``) instead of being ignored."""
    used = sorted(name for name, value in options.items() if value)
    if used:
        raise errors.NotSupported(f"{where}: {', '.join(used)}: not supported by pulsarlike yet; leave "
                                          f"{'it' if len(used) == 1 else 'them'} unset")


def _qualified(topic: str) -> str:
    return str(TopicName.parse(topic))
