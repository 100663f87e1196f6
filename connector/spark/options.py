"""The source's options, parsed once into a frozen :class:`SourceOptions`.

Spark hands a data source its options with lower-cased keys; every option here is matched without regard
to case and named in errors as documented (``startingOffsets``, not ``startingoffsets``). Each bad option
raises ``ValueError`` naming the option and what to write instead; an unknown option names the closest
known one. The Kafka source's names of the same options are accepted as aliases (:data:`KAFKA_ALIASES`),
its other options with their Kafka meaning (:mod:`connector.spark.kafka_options`; ``assign`` is refused,
saying why).
"""
from __future__ import annotations

import difflib
import hashlib
import logging
import re
import secrets
from dataclasses import dataclass
from typing import Mapping

from broker_core.errors import InvalidTopicName
from broker_core.types import TopicName

from connector.client.security import parse_service_url
from connector.client.transport.choice import TRANSPORTS
from connector.spark.auth_options import SECURITY_OPTIONS, ClientSecurity, split_security
from connector.spark.crypto_options import SOURCE_CRYPTO_OPTIONS, SourceCrypto, split_source_crypto
from connector.spark.kafka_options import REFUSED as KAFKA_REFUSED, parse_kafka_options
from connector.spark.offsets import Offsets, TopicPartition, parse_user_offsets
from connector.spark.pulsar_spark_options import PulsarSparkOptions, split_pulsar_spark
from connector.spark.schema import KEY_TYPES
from connector.spark.typed_values import BYTES, TopicSchema

log = logging.getLogger(__name__)

DEFAULT_POLL_TIMEOUT_MS = 120_000
DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000
DEFAULT_MAX_MESSAGES_PER_PARTITION = 1_000_000

COMMON = ("service.url", "topic", "topics", "topicsPattern", "startingOffsets", "startingTime",
          "failOnDataLoss", "subscriptionName", "pollTimeoutMs", "maxMessagesPerPartition", "readCompacted",
          "keyType", "transport", "startingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy",
          "minPartitions", "includeHeaders", "waitingForNonExistedTopic", "allowDifferentTopicSchemas",
          "topicColumn")
STREAM_ONLY = ("maxMessagesPerTrigger", "minMessagesPerTrigger", "maxTriggerDelay", "maxBytesPerTrigger")
BATCH_ONLY = ("endingOffsets", "endingTime", "endingOffsetsByTimestamp")
SOURCE_OPTIONS = COMMON + STREAM_ONLY + BATCH_ONLY
_CANONICAL = {name.lower(): name for name in SOURCE_OPTIONS}
KAFKA_ALIASES = {"maxOffsetsPerTrigger": "maxMessagesPerTrigger", "minOffsetsPerTrigger": "minMessagesPerTrigger",
                 "subscribe": "topics", "subscribePattern": "topicsPattern", "startingTimestamp": "startingTime",
                 "endingTimestamp": "endingTime", "kafka.group.id": "subscriptionName"}
"""Spark's Kafka source names of options that mean the same here (offsets are message offsets here too;
``kafka.group.id`` names the query's durable subscription, as it names the Kafka consumer group; Kafka's
``groupIdPrefix`` is pulsar-spark's ``subscriptionPrefix``: :mod:`connector.spark.pulsar_spark_options`)."""
PULSAR_SPARK_ALIASES = {"predefinedSubscription": "subscriptionName"}
"""StreamNative pulsar-spark's names of options that mean the same here (its other options:
:mod:`connector.spark.pulsar_spark_options`)."""
_ALIASES = {alias.lower(): name for alias, name in {**KAFKA_ALIASES, **PULSAR_SPARK_ALIASES}.items()}

TOPIC_COLUMNS = ("partition", "topic")
"""Values of option ``topicColumn``: what ``__topic`` holds for a partitioned topic's messages."""

_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h|d)?\s*$", re.IGNORECASE)
_DURATION_MS = {None: 1, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_NAMESPACE = re.compile(r"^[A-Za-z0-9\-=:._]+/[A-Za-z0-9\-=:._]+$")


@dataclass(frozen=True)
class TopicSpec:
    """Which topics to read: a fixed list, or every topic of a namespace whose name matches a pattern."""

    topics: tuple[str, ...] = ()
    """Fully qualified topic names (``topic`` / ``topics``)."""
    pattern: str | None = None
    """``topicsPattern``, fully qualified (``persistent://tenant/ns/<regex>``)."""

    @property
    def namespace(self) -> str:
        """``tenant/namespace`` of the pattern."""
        assert self.pattern is not None
        return "/".join(self.pattern.split("://", 1)[1].split("/")[:2])

    def matches(self, topic: str) -> bool:
        """Whether a fully qualified topic (not a partition's name) is read."""
        if self.pattern is None:
            return topic in self.topics
        return re.fullmatch(self.pattern, topic) is not None

    def describe(self) -> str:
        return f"topicsPattern={self.pattern}" if self.pattern else "topics=" + ",".join(self.topics)


@dataclass(frozen=True)
class SourceOptions:
    service_url: str
    spec: TopicSpec
    starting: str
    """``earliest``, ``latest``, ``subscription``, ``offsets`` (JSON given) or ``time``."""
    starting_offsets: tuple[tuple[TopicPartition, int], ...] = ()
    starting_time_ms: int | None = None
    ending: str = "latest"
    """``latest``, ``offsets`` or ``time`` (batch reads)."""
    ending_offsets: tuple[tuple[TopicPartition, int], ...] = ()
    ending_time_ms: int | None = None
    max_messages_per_trigger: int | None = None
    min_messages_per_trigger: int | None = None
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS
    max_bytes_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    subscription_name: str = ""
    """Option ``subscriptionName``; empty when not given (a stream then creates one per query)."""
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS
    max_messages_per_partition: int = DEFAULT_MAX_MESSAGES_PER_PARTITION
    read_compacted: bool = False
    """Option ``readCompacted``: read each partition's compacted view (Pulsar's compacted reader). A batch read
    is then a snapshot: the latest value per key (see :mod:`connector.spark.compacted`)."""
    key_type: str = "binary"
    """Option ``keyType``: ``__key`` as the key's bytes (``binary``, pulsar-spark's type) or as stored
    (``string``, pulsarlike 0.1's column: the alias for programs written against it)."""
    topic_column: str = "partition"
    """Option ``topicColumn``: ``__topic`` as pulsar-spark gives it, the message's topic with a partitioned
    topic's ``-partition-<i>`` (``partition``), or the topic without it (``topic``, pulsarlike 0.1's)."""
    transport: str = "auto"
    """Option ``transport``: how a task reads a partition's messages from pulsarlike -- ``grpc``, ``binary``
    (Pulsar's binary protocol) or ``auto`` (the faster: :data:`connector.spark.partition_reader.
    FASTER_READ_ON_PULSARLIKE`); the offset bounds are asked over gRPC either way. Another Pulsar broker is
    read over the binary protocol (``grpc`` speaks to pulsarlike only)."""
    security: ClientSecurity = ClientSecurity()
    """``authPluginClassName``, ``authParams`` and the TLS options (:mod:`connector.spark.auth_options`)."""
    starting_times: tuple[tuple[TopicPartition, int], ...] = ()
    """``startingOffsetsByTimestamp``: a publish time per partition (``starting`` is then ``time``)."""
    ending_times: tuple[tuple[TopicPartition, int], ...] = ()
    """``endingOffsetsByTimestamp`` (``ending`` is then ``time``)."""
    timestamp_strategy: str = "latest"
    """``startingOffsetsByTimestampStrategy``: ``error`` or ``latest`` when a partition has no message at or
    after its start time (Kafka's default ``error`` with Kafka's names, ``latest`` with ``startingTime``)."""
    min_partitions: int | None = None
    """``minPartitions``: at least this many Spark partitions per batch (dense offsets)."""
    include_headers: bool = False
    """``includeHeaders``: a ``headers`` column as Kafka's (:mod:`connector.spark.headers`)."""
    wait_for_topics: bool = False
    """pulsar-spark's ``waitingForNonExistedTopic``: a batch read waits for its topics to exist."""
    allow_different_schemas: bool = False
    """pulsar-spark's ``allowDifferentTopicSchemas``: topics with different schemas read as ``value`` bytes."""
    pulsar_spark: PulsarSparkOptions = PulsarSparkOptions()
    """pulsar-spark's ``admin.url``, ``subscriptionPrefix``, ``pulsar.reader.*`` (its module)."""
    crypto: SourceCrypto = SourceCrypto()
    """End-to-end decryption: ``cryptoPrivateKey``/``cryptoKeyReaderClassName``, ``cryptoFailureAction``
    (:mod:`connector.spark.crypto_options`)."""
    topic_schema: TopicSchema = BYTES
    """The topics' schema in the registry, found when the read is set up (:mod:`connector.spark.source`)."""

    def starting_offsets_map(self) -> Offsets:
        return dict(self.starting_offsets)

    def ending_offsets_map(self) -> Offsets:
        return dict(self.ending_offsets)


def parse_source_options(options: Mapping[str, str], streaming: bool, warn: bool = True) -> SourceOptions:
    """Validate and parse a read's options (``streaming``: ``readStream`` rather than ``read``; ``warn``: log
    options this kind of read ignores -- not while Spark only asks for the schema, before it says which)."""
    options, security = split_security(options, "source")
    options, crypto = split_source_crypto(options)
    options, pulsar_spark = split_pulsar_spark(options)
    given = _canonical_names(options)
    if streaming:
        for name in BATCH_ONLY:
            if name in given:
                raise ValueError(f"option {name} applies to batch reads (spark.read) only; a streaming "
                                 "query runs until stopped: remove it, or use trigger(availableNow=True)")
    else:
        for name in STREAM_ONLY:
            if name in given and warn:
                log.warning("option %s applies to streaming reads only; this batch read ignores it", name)
    url = _required(given, "service.url", "the broker's address, e.g. pulsar://127.0.0.1:6650")
    try:
        parse_service_url(url)
    except ValueError as exc:
        raise ValueError(f"option service.url: {exc}") from None
    spec = _topic_spec(given)
    kafka = parse_kafka_options(given)
    starting, starting_offsets, starting_time = _starting(given, spec, streaming)
    ending, ending_offsets, ending_time = _ending(given, spec)
    for option, times in (("startingOffsetsByTimestamp", kafka.starting_times),
                          ("endingOffsetsByTimestamp", kafka.ending_times)):
        _check_offset_topics(option, dict(times), spec)
    if kafka.ending_times:
        ending = "time"
    strategy = kafka.strategy or ("latest" if "startingTime" in given and not _kafka_spelt(options) else "error")
    if starting_time is not None and ending_time is not None and ending_time < starting_time:
        raise ValueError(f"option endingTime={ending_time} is before startingTime={starting_time}; "
                         "endingTime must be >= startingTime")
    max_messages = _positive_int(given, "maxMessagesPerTrigger")
    min_messages = _positive_int(given, "minMessagesPerTrigger")
    if max_messages is not None and min_messages is not None and min_messages > max_messages:
        raise ValueError(f"option minMessagesPerTrigger={min_messages} is larger than "
                         f"maxMessagesPerTrigger={max_messages}; make it <= maxMessagesPerTrigger")
    if "maxTriggerDelay" in given and min_messages is None:
        raise ValueError("option maxTriggerDelay only applies with minMessagesPerTrigger; set "
                         "minMessagesPerTrigger too, or remove maxTriggerDelay")
    return SourceOptions(
        service_url=url, spec=spec, starting=starting,
        starting_offsets=tuple(sorted(starting_offsets.items())), starting_time_ms=starting_time,
        ending=ending, ending_offsets=tuple(sorted(ending_offsets.items())), ending_time_ms=ending_time,
        max_messages_per_trigger=max_messages, min_messages_per_trigger=min_messages,
        max_trigger_delay_ms=_duration_ms(given, "maxTriggerDelay", DEFAULT_MAX_TRIGGER_DELAY_MS),
        max_bytes_per_trigger=_positive_int(given, "maxBytesPerTrigger"),
        fail_on_data_loss=_bool(given, "failOnDataLoss", True),
        read_compacted=_bool(given, "readCompacted", False), key_type=_key_type(given),
        topic_column=_topic_column(given),
        transport=transport_option(given),
        subscription_name=_subscription_name(given, starting),
        poll_timeout_ms=_positive_int(given, "pollTimeoutMs") or DEFAULT_POLL_TIMEOUT_MS,
        max_messages_per_partition=(_positive_int(given, "maxMessagesPerPartition")
                                    or DEFAULT_MAX_MESSAGES_PER_PARTITION),
        starting_times=kafka.starting_times, ending_times=kafka.ending_times, timestamp_strategy=strategy,
        min_partitions=kafka.min_partitions, include_headers=kafka.include_headers,
        wait_for_topics=_bool(given, "waitingForNonExistedTopic", False),
        allow_different_schemas=_bool(given, "allowDifferentTopicSchemas", False),
        security=security, pulsar_spark=pulsar_spark, crypto=crypto)


def _kafka_spelt(options: Mapping[str, str]) -> bool:
    """Whether the start by time was given with Kafka's name (``startingTimestamp``)."""
    return any(key.lower() == "startingtimestamp" for key in options)


def new_subscription_name(prefix: str = "spark-pulsarlike") -> str:
    """A fresh query's own subscription: ``spark-pulsarlike-`` (option ``subscriptionPrefix``) + 16 random
    hex digits. Random, so two queries on the same topics never share one (one's acknowledgements would let
    retention delete what the other has not read); the checkpoint carries it, so the query's restarts keep it."""
    return f"{prefix}-" + secrets.token_hex(8)


def legacy_subscription_name(spec: TopicSpec) -> str:
    """The name every query on the same topics used before names travelled in the checkpoint:
    ``spark-pulsarlike-`` + 16 hex digits of SHA-256 over the topic option (qualified topic names sorted and
    comma-joined, or the qualified pattern). A query restarted from such a checkpoint keeps using it."""
    what = f"pattern:{spec.pattern}" if spec.pattern else "topics:" + ",".join(sorted(spec.topics))
    return "spark-pulsarlike-" + hashlib.sha256(what.encode()).hexdigest()[:16]


PULSAR_SPARK_NAMES = ("admin.url", "predefinedSubscription", "subscriptionPrefix", "pulsar.client.*",
                      "pulsar.reader.*", "pulsar.admin.*")


def closest_option(name: str, known: tuple[str, ...] = SOURCE_OPTIONS + PULSAR_SPARK_NAMES[:3]
                   + SOURCE_CRYPTO_OPTIONS) -> str | None:
    lowered = {k.lower(): k for k in known}
    match = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.5)
    return lowered[match[0]] if match else None


def _canonical_names(options: Mapping[str, str]) -> dict[str, str]:
    given: dict[str, str] = {}
    written: dict[str, str] = {}
    for key, value in options.items():
        lowered = key.lower()
        name = _CANONICAL.get(lowered) or _ALIASES.get(lowered)
        if name is None:
            if lowered == "path":
                raise ValueError("the pulsarlike source takes no path; name the topic with "
                                 "option('topic', ...) instead of load(path)")
            if lowered in KAFKA_REFUSED:
                raise ValueError(f"option {key!r} is the Kafka source's and is not served by the pulsarlike "
                                 f"source: {KAFKA_REFUSED[lowered]}")
            hint = closest_option(key)
            raise ValueError(f"unknown option {key!r} for the pulsarlike source"
                             + (f"; did you mean {hint!r}?" if hint else "")
                             + " Known options: " + ", ".join(SOURCE_OPTIONS + SECURITY_OPTIONS
                                                               + SOURCE_CRYPTO_OPTIONS)
                             + " (and the Kafka source's " + ", ".join(KAFKA_ALIASES) + "; pulsar-spark's "
                             + ", ".join(PULSAR_SPARK_NAMES) + ")")
        if name in written:
            raise ValueError(f"options {written[name]} and {key} name the same option ({name}); set only one")
        written[name] = key
        given[name] = value
    return given


def _subscription_name(given: Mapping[str, str], starting: str) -> str:
    name = (given.get("subscriptionName") or "").strip()
    if "subscriptionName" in given and not name:
        raise ValueError("option subscriptionName is empty; name the subscription, or remove the option to "
                         "let each query create its own")
    if starting == "subscription" and not name:
        raise ValueError("option startingOffsets=subscription needs option subscriptionName: the "
                         "subscription whose position the query starts from")
    return name


def _key_type(given: Mapping[str, str]) -> str:
    value = str(given.get("keyType", "binary")).strip().lower()
    if value not in KEY_TYPES:
        raise ValueError(f"option keyType={given['keyType']!r} is not valid; use 'binary' (the default: __key "
                         "holds the key's bytes, as in pulsar-spark) or 'string' (pulsarlike 0.1's string "
                         "column)")
    return value


def _topic_column(given: Mapping[str, str]) -> str:
    value = str(given.get("topicColumn", "partition")).strip().lower()
    if value not in TOPIC_COLUMNS:
        raise ValueError(f"option topicColumn={given['topicColumn']!r} is not valid; use 'partition' (the "
                         "default: __topic is the message's topic, with a partitioned topic's -partition-<i>, as in "
                         "pulsar-spark) or 'topic' (the topic without it, pulsarlike 0.1's column)")
    return value


def transport_option(given: Mapping[str, str]) -> str:
    """Option ``transport`` of the source or the sink (``given`` keyed by canonical names): ``auto`` when not
    given; a ValueError naming the valid values otherwise."""
    value = str(given.get("transport", "auto")).strip().lower()
    if value not in TRANSPORTS:
        raise ValueError(f"option transport={given['transport']!r} is not valid; use auto (the default), grpc "
                         "(pulsarlike only) or binary (Pulsar's binary protocol, any Pulsar broker)")
    return value


def _required(given: Mapping[str, str], name: str, what: str) -> str:
    value = (given.get(name) or "").strip()
    if not value:
        raise ValueError(f"option {name} is required: {what}")
    return value


def _topic_spec(given: Mapping[str, str]) -> TopicSpec:
    chosen = [name for name in ("topic", "topics", "topicsPattern") if name in given]
    if len(chosen) != 1:
        what = "none was given" if not chosen else f"{' and '.join(chosen)} were given"
        raise ValueError(f"set exactly one of the options topic, topics, topicsPattern ({what}); e.g. "
                         "option('topic', 'my-topic') or option('topicsPattern', 'persistent://public/default/"
                         "orders-.*')")
    name = chosen[0]
    value = given[name].strip()
    if name == "topicsPattern":
        return TopicSpec(pattern=_pattern(value))
    raw = [t.strip() for t in value.split(",")] if name == "topics" else [value]
    if not all(raw):
        raise ValueError(f"option {name}={value!r} has an empty topic name; use comma-separated names, "
                         "e.g. 'a,b,persistent://public/default/c'")
    topics = []
    for topic in raw:
        try:
            parsed = TopicName.parse(topic)
        except InvalidTopicName as exc:
            raise ValueError(f"option {name}: {exc.message}") from None
        _check_persistent(name, str(parsed), parsed.persistent)
        if parsed.partition_index >= 0:
            raise ValueError(f"option {name}: {topic!r} is a partition's name; name the partitioned topic "
                             f"{str(parsed.partitioned_base)!r} (the source reads all its partitions)")
        topics.append(str(parsed))
    return TopicSpec(topics=tuple(sorted(set(topics))))


def _pattern(value: str) -> str:
    if "://" in value:
        pattern = value
    elif value.count("/") in (0, 2):  # <regex> or tenant/namespace/<regex>, the short forms of Pulsar's TopicName
        pattern = f"persistent://{value}" if "/" in value else f"persistent://public/default/{value}"
    else:
        raise ValueError(f"option topicsPattern={value!r}: a short pattern is <regex> (in public/default) or "
                         "tenant/namespace/<regex>, e.g. 'acme/orders/orders-.*'")
    domain, _, rest = pattern.partition("://")
    _check_persistent("topicsPattern", pattern, domain == "persistent")
    namespace = "/".join(rest.split("/")[:2])
    if rest.count("/") < 2 or not _NAMESPACE.match(namespace):
        raise ValueError(f"option topicsPattern={value!r}: the tenant and namespace must be literal, e.g. "
                         "'persistent://public/default/orders-.*' (the pattern applies to the topic's name)")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"option topicsPattern={value!r} is not a valid regular expression: {exc}") from None
    return pattern


def _check_persistent(option: str, topic: str, persistent: bool) -> None:
    if not persistent:
        raise ValueError(f"option {option}: {topic} is non-persistent; non-persistent topics keep no "
                         "offsets a Spark query could replay: read a persistent:// topic")


def _one_of(given: Mapping[str, str], names: tuple[str, ...]) -> None:
    chosen = [name for name in names if name in given]
    if len(chosen) > 1:
        raise ValueError(f"options {' and '.join(chosen)} conflict; set only one of them (each says where the "
                         "read starts or ends)")


def _starting(given: Mapping[str, str], spec: TopicSpec, streaming: bool,
              ) -> tuple[str, Offsets, int | None]:
    _one_of(given, ("startingOffsets", "startingTime", "startingOffsetsByTimestamp"))
    if "startingTime" in given:
        return "time", {}, _timestamp(given, "startingTime")
    if "startingOffsetsByTimestamp" in given:
        return "time", {}, None
    value = given.get("startingOffsets", "latest" if streaming else "earliest").strip()
    lowered = value.lower()
    if lowered in ("earliest", "latest", "subscription"):
        if lowered == "latest" and not streaming:
            raise ValueError("option startingOffsets=latest makes an empty batch read; use 'earliest' or "
                             "JSON offsets for spark.read")
        return lowered, {}, None
    if not value.startswith("{"):
        raise ValueError(f"option startingOffsets={value!r} is not valid; use 'earliest', 'latest', "
                         "'subscription' or JSON offsets like {\"my-topic\": {\"-1\": 0}}")
    offsets = parse_user_offsets("startingOffsets", value)
    _check_offset_topics("startingOffsets", offsets, spec)
    return "offsets", offsets, None


def _ending(given: Mapping[str, str], spec: TopicSpec) -> tuple[str, Offsets, int | None]:
    _one_of(given, ("endingOffsets", "endingTime", "endingOffsetsByTimestamp"))
    if "endingTime" in given:
        return "time", {}, _timestamp(given, "endingTime")
    value = given.get("endingOffsets", "latest").strip()
    if value.lower() == "latest":
        return "latest", {}, None
    if not value.startswith("{"):
        raise ValueError(f"option endingOffsets={value!r} is not valid; use 'latest' or JSON offsets like "
                         "{\"my-topic\": {\"-1\": 100}} (-1 = latest)")
    offsets = parse_user_offsets("endingOffsets", value, allow_earliest=False)
    _check_offset_topics("endingOffsets", offsets, spec)
    return "offsets", offsets, None


def _check_offset_topics(option: str, offsets: Offsets, spec: TopicSpec) -> None:
    outside = sorted({tp.topic for tp in offsets if not spec.matches(tp.topic)})
    if outside:
        raise ValueError(f"option {option} names {', '.join(outside)}, which the query does not read "
                         f"({spec.describe()}); name only topics it reads")


def _positive_int(given: Mapping[str, str], name: str) -> int | None:
    if name not in given:
        return None
    try:
        value = int(str(given[name]).strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise ValueError(f"option {name}={given[name]!r} is not valid; use a whole number > 0")
    return value


def _timestamp(given: Mapping[str, str], name: str) -> int:
    try:
        value = int(str(given[name]).strip())
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"option {name}={given[name]!r} is not valid; use a publish time in milliseconds "
                         "since the epoch (a whole number >= 0)")
    return value


def _bool(given: Mapping[str, str], name: str, default: bool) -> bool:
    if name not in given:
        return default
    value = str(given[name]).strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"option {name}={given[name]!r} is not valid; use 'true' or 'false'")
    return value == "true"


def _duration_ms(given: Mapping[str, str], name: str, default: int) -> int:
    if name not in given:
        return default
    match = _DURATION.match(str(given[name]))
    if not match:
        raise ValueError(f"option {name}={given[name]!r} is not valid; use a duration like '500ms', '30s', "
                         "'15m' or '1h' (a bare number is milliseconds)")
    unit = match.group(2).lower() if match.group(2) else None
    return int(match.group(1)) * _DURATION_MS[unit]

