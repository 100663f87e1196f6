"""The sink's options and input columns, checked once on the driver before anything is written.

Spark hands a data source its options with lower-cased keys; options are matched without regard to case
and named in errors as documented (``batchingMaxMessages``, not ``batchingmaxmessages``). Every mistake
raises ``ValueError`` naming the option or column and the fix; an unknown option names the closest known
one, and a source-only option (``startingOffsets``, ...) says it is one.

==========================  ==========================  ================================================
column                      Spark type                  what the sink does with it
==========================  ==========================  ================================================
``value`` (required)        binary or string            the payload (a string is sent as UTF-8); never null
``__key``                   binary or string            the key (routing, Key_Shared); null: none. Binary:
                                                        sent as bytes (base64 text flagged
                                                        ``partition_key_b64_encoded``, Java's ``keyBytes``);
                                                        string: the key as it is
``__topic``                 string                      the row's topic when option ``topic`` is unset
``__eventTime``             timestamp or long (ms)      the event time; null: none
``__messageProperties``     map<string,string>          the properties (entries with a null value dropped)
``__partition``             int, long, short or byte    the partition of a partitioned topic; null or -1:
                                                        routed by key hash, or round robin without a key
==========================  ==========================  ================================================

Any other column is ignored -- so rows read from the ``pulsarlike`` source (with ``__offset``,
``__messageId``, ... which the broker assigns) can be written as they are -- except an unknown column whose
name starts with ``__``, which is refused as a likely typo. Typed writes (no ``value`` column, or option
``topicSchema``) take the columns not starting with ``__`` as a record's fields instead
(:mod:`connector.spark.sink_records`, :mod:`connector.spark.sink_schema`).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from broker_core.errors import InvalidTopicName
from broker_core.types import TopicName

from connector.client.security import parse_service_url
from connector.spark.auth_options import SECURITY_OPTIONS, ClientSecurity, split_security
from connector.spark.crypto_options import SINK_CRYPTO_OPTIONS, SinkCrypto, split_sink_crypto
from connector.client.enums import CompressionType

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

SINK_OPTIONS = ("service.url", "topic", "topicSchema", "effectivelyOnce", "writeId", "compressionType",
                "batchingMaxMessages", "batchingMaxBytes", "maxPendingMessages", "sendTimeoutMs",
                "operationTimeoutMs", "transport", "admin.url")
_CANONICAL = {name.lower(): name for name in SINK_OPTIONS}
SPARK_OPTIONS = ("checkpointLocation",)
"""Options Spark itself passes along with the user's (``writeStream.option("checkpointLocation", ...)``)."""
SOURCE_ONLY = ("topics", "topicsPattern", "startingOffsets", "endingOffsets", "startingTime", "endingTime",
               "failOnDataLoss", "subscriptionName", "pollTimeoutMs", "maxMessagesPerTrigger",
               "minMessagesPerTrigger", "maxTriggerDelay", "maxBytesPerTrigger", "maxMessagesPerPartition")

TOPIC_SCHEMAS = ("AVRO", "JSON")
"""Values of option ``topicSchema``: the kinds of record schema the sink derives from a DataFrame."""

MAX_BATCH_ID = (1 << 31) - 1
"""Sequence ids are ``batch_id * 2**32 + row_index`` and must stay below 2**63."""
ROWS_PER_TASK = 1 << 32
"""At most this many rows per Spark partition and micro-batch (the low 32 bits of a sequence id)."""

_COMPRESSION = {"none": CompressionType.NONE, "lz4": CompressionType.LZ4, "zlib": CompressionType.ZLib,
                "zstd": CompressionType.ZSTD, "snappy": CompressionType.SNAPPY}
READ_ONLY_COLUMNS = ("__offset", "__messageId", "__publishTime", "__producerName", "__sequenceId")
"""Columns of the source's schema that the broker assigns: ignored by the sink."""
SINK_COLUMNS = ("value", "__key", "__topic", "__eventTime", "__messageProperties", "__partition")


@dataclass(frozen=True)
class SinkOptions:
    """What ``df.write`` / ``df.writeStream`` ``.format("pulsarlike")`` was given, parsed once."""

    service_url: str
    """``service.url``: ``pulsar://host:port`` of the broker (required)."""
    topic: str | None
    """``topic``, fully qualified; when set it wins over a ``__topic`` column (as Spark's Kafka sink)."""
    topic_schema: str | None = None
    """``topicSchema`` (``AVRO`` or ``JSON``, upper-cased): derive a record schema from the DataFrame's
    columns, register it, and write records of it (:mod:`connector.spark.sink_schema`). None: as before."""
    effectively_once: bool = True
    """``effectivelyOnce`` (default true): stable producer names, sequence ids from (batch id, row
    position), broker deduplication on the target topics. false: at-least-once, plain producers."""
    write_id: str | None = None
    """``writeId`` (batch writes only): the identity of a batch write; a rerun with the same id stores only
    what the earlier run did not. None: a random id per write (reruns are not deduplicated)."""
    compression_type: CompressionType = CompressionType.NONE
    batching_max_messages: int = 1000
    batching_max_bytes: int = 1024 * 1024
    max_pending_messages: int = 100_000
    send_timeout_ms: int = 30_000
    operation_timeout_ms: int = 30_000
    """Connecting, opening producers, admin calls: how long before the task fails with a clear error."""
    security: ClientSecurity = ClientSecurity()
    """``authPluginClassName``, ``authParams`` and the TLS options (:mod:`connector.spark.auth_options`)."""
    transport: str = "auto"
    """``transport``: ``auto`` (one binary CONNECT tells pulsarlike from another Pulsar broker), ``grpc``
    (pulsarlike's gRPC service and admin calls) or ``binary`` (Pulsar's binary protocol only, as on any
    other broker: partitions from the client's lookup, deduplication checked only through ``admin.url``)."""
    admin_url: str | None = None
    """``admin.url``: the broker's admin REST API (``http(s)://host:port``). On a broker other than pulsarlike
    (or with ``transport=binary``) the sink checks and turns on topic deduplication through it; without it
    effectively-once rests on deduplication being enabled on the broker, which the sink cannot ask."""
    crypto: SinkCrypto = SinkCrypto()
    """``encryptionKeys`` with ``cryptoPublicKey`` or ``cryptoKeyReaderClassName``: every message encrypted end
    to end (:mod:`connector.spark.crypto_options`)."""


def parse_sink_options(options: Mapping[str, str], streaming: bool) -> SinkOptions:
    """Parse the sink's options; ValueError naming the option and the fix on any mistake. pulsar-spark's
    ``pulsar.producer.*`` / ``pulsar.client.*`` keys: :mod:`connector.spark.pulsar_spark_sink_options`."""
    from connector.spark.pulsar_spark_sink_options import split_pulsar_spark_sink

    options, crypto = split_sink_crypto(options)
    options, security = split_security(split_pulsar_spark_sink(options), "sink")
    given = _canonical_names(options)
    if "service.url" not in given:
        raise ValueError("option service.url is required: the broker's address, e.g. "
                         ".option('service.url', 'pulsar://127.0.0.1:6650')")
    try:
        parse_service_url(given["service.url"])
    except ValueError as exc:
        raise ValueError(f"option service.url: {exc}") from None
    topic = None
    if "topic" in given:
        topic = qualified_topic(given["topic"], "option topic")
    write_id = given.get("writeId")
    if write_id is not None:
        if streaming:
            raise ValueError("option writeId applies to batch writes (df.write) only; a streaming sink's "
                             "identity is its query id, kept in the checkpoint (a new checkpoint starts "
                             "batch ids at 0 again, so reusing an old identity would drop its rows as "
                             "duplicates): remove the option")
        if not write_id.strip():
            raise ValueError("option writeId is empty; give a stable name for this write (e.g. "
                             "'backfill-2024-05-01') or leave it unset")
    topic_schema = given.get("topicSchema")
    if topic_schema is not None and topic_schema.strip().upper() not in TOPIC_SCHEMAS:
        raise ValueError(f"option topicSchema={topic_schema!r} is not valid; use avro or json (a record schema "
                         "derived from the DataFrame's columns), or leave it unset")
    compression = given.get("compressionType", "NONE")
    if compression.lower() not in _COMPRESSION:
        raise ValueError(f"option compressionType={compression!r} is not valid; use one of NONE, LZ4, "
                         "ZLIB, ZSTD, SNAPPY")
    parsed = SinkOptions(
        service_url=given["service.url"].strip(), topic=topic,
        topic_schema=None if topic_schema is None else topic_schema.strip().upper(),
        effectively_once=_boolean(given, "effectivelyOnce", True), write_id=write_id,
        compression_type=_COMPRESSION[compression.lower()],
        batching_max_messages=_integer(given, "batchingMaxMessages", 1000, 1),
        batching_max_bytes=_integer(given, "batchingMaxBytes", 1024 * 1024, 4096),
        max_pending_messages=_integer(given, "maxPendingMessages", 100_000, 1),
        send_timeout_ms=_integer(given, "sendTimeoutMs", 30_000, 0),
        operation_timeout_ms=_integer(given, "operationTimeoutMs", 30_000, 1), security=security,
        transport=_transport(given), admin_url=_admin_url(given), crypto=crypto)
    if parsed.max_pending_messages < parsed.batching_max_messages:
        raise ValueError(f"option maxPendingMessages={parsed.max_pending_messages} is below "
                         f"batchingMaxMessages={parsed.batching_max_messages}: a batch could never fill; raise "
                         "maxPendingMessages or lower batchingMaxMessages")
    return parsed


def qualified_topic(name: str, what: str) -> str:
    """``name`` fully qualified (a bare name is ``persistent://public/default/<name>``)."""
    try:
        return str(TopicName.parse(name.strip()))
    except InvalidTopicName as exc:
        raise ValueError(f"{what}: {exc.message}") from None


def _canonical_names(options: Mapping[str, str]) -> dict[str, str]:
    given: dict[str, str] = {}
    for key, value in options.items():
        lower = key.lower()
        if lower in _CANONICAL:
            given[_CANONICAL[lower]] = value
        elif lower in (name.lower() for name in SPARK_OPTIONS):
            continue
        elif lower == "path":
            raise ValueError("the pulsarlike sink takes no path (save(path) / start(path)); name the topic "
                             "with .option('topic', ...) or a __topic column")
        elif lower in (name.lower() for name in SOURCE_ONLY):
            source_name = next(name for name in SOURCE_ONLY if name.lower() == lower)
            raise ValueError(f"option {source_name} is a source option (spark.read/readStream); the sink "
                             f"does not take it: remove it. Sink options: {', '.join(SINK_OPTIONS)}")
        else:
            known = {**_CANONICAL, **{name.lower(): name for name in SINK_CRYPTO_OPTIONS}}
            close = difflib.get_close_matches(lower, list(known), n=1, cutoff=0.6)
            hint = f"did you mean {known[close[0]]}? " if close else ""
            raise ValueError(f"unknown option {key!r} for the pulsarlike sink; {hint}"
                             f"the sink takes: {', '.join(SINK_OPTIONS + SECURITY_OPTIONS + SINK_CRYPTO_OPTIONS)}")
    return given


def _transport(given: Mapping[str, str]) -> str:
    from connector.spark.options import transport_option  # one validation for the source's option and this

    return transport_option(given)


def _admin_url(given: Mapping[str, str]) -> str | None:
    value = given.get("admin.url")
    if value is None:
        return None
    from urllib.parse import urlparse

    url = value.strip()
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(f"option admin.url={value!r} is not valid; use the broker's admin REST URL, e.g. "
                         "http://127.0.0.1:8080 (pulsar-admin's --admin-url)")
    return url


def _boolean(given: Mapping[str, str], name: str, default: bool) -> bool:
    value = given.get(name)
    if value is None:
        return default
    if value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"option {name}={value!r} is not valid; use true or false")


def _integer(given: Mapping[str, str], name: str, default: int, minimum: int) -> int:
    value = given.get(name)
    if value is None:
        return default
    try:
        number = int(value.strip())
    except ValueError:
        number = minimum - 1
    if number < minimum:
        raise ValueError(f"option {name}={value!r} is not valid; use an integer >= {minimum}")
    return number


class SinkSchemaError(ValueError):
    """A column the sink cannot write: names it, what it is, and what to do."""

    def __init__(self, message: str, column: str) -> None:
        super().__init__(message)
        self.column = column


@dataclass(frozen=True)
class SinkColumns:
    """Where the sink's columns are in the input (indices into each Arrow record batch; -1: absent)."""

    value: int
    value_is_string: bool
    key: int = -1
    topic: int = -1
    event_time: int = -1
    event_time_is_timestamp: bool = True
    """A timestamp column (microseconds in Arrow); False: a long of milliseconds."""
    properties: int = -1
    partition: int = -1
    record: Any = None
    """A typed write (no value column; the topic's record schema): ``sink_records.RecordColumns``."""


def plan_columns(schema: "StructType", options: SinkOptions) -> SinkColumns:
    """Check the input schema against the sink's columns; SinkSchemaError naming the first problem."""
    from pyspark.sql import types as T

    found: dict[str, tuple[int, Any]] = {}
    for index, field in enumerate(schema.fields):
        lower = field.name.lower()
        if lower in found:
            raise SinkSchemaError(f"columns {schema.fields[found[lower][0]].name!r} and {field.name!r} differ "
                                  "only in case; rename or drop one", field.name)
        found[lower] = (index, field.dataType)
    known = {name.lower() for name in SINK_COLUMNS + READ_ONLY_COLUMNS}
    for field in schema.fields:
        if field.name.startswith("__") and field.name.lower() not in known:
            close = difflib.get_close_matches(field.name.lower(), [c.lower() for c in SINK_COLUMNS], n=1)
            hint = f"did you mean {next(c for c in SINK_COLUMNS if c.lower() == close[0])}? " if close else ""
            raise SinkSchemaError(
                f"column {field.name!r} is not one the pulsarlike sink knows; {hint}the sink writes "
                f"{', '.join(SINK_COLUMNS)} (other names starting with __ are refused as likely typos: rename "
                "or drop it)", field.name)
    if "value" not in found:
        raise SinkSchemaError(
            "the pulsarlike sink needs a 'value' column (binary or string) holding each message's payload; "
            f"the input has {', '.join(schema.fieldNames()) or 'no columns'}: e.g. "
            "df.selectExpr('to_json(struct(*)) AS value') or .withColumnRenamed('payload', 'value')", "value")

    def check(name: str, allowed: tuple[type, ...], expected: str, fix: str) -> tuple[int, Any]:
        if name.lower() not in found:
            return -1, None
        index, data_type = found[name.lower()]
        if not isinstance(data_type, allowed):
            raise SinkSchemaError(f"column {name} has type {data_type.simpleString()}; the sink needs "
                                  f"{expected}: {fix}", name)
        return index, data_type

    value, value_type = check("value", (T.BinaryType, T.StringType), "binary or string",
                              "e.g. col('value').cast('string') or to_json(...)")
    key, _ = check("__key", (T.BinaryType, T.StringType), "binary or string",
                   "e.g. col('__key').cast('string')")
    topic, _ = check("__topic", (T.StringType,), "string (a topic name)", "e.g. col('__topic').cast('string')")
    event_time, time_type = check("__eventTime", (T.TimestampType, T.TimestampNTZType, T.LongType),
                                  "timestamp or long (milliseconds since the epoch)",
                                  "e.g. col('__eventTime').cast('timestamp')")
    properties, properties_type = check("__messageProperties", (T.MapType,), "map<string,string>",
                                        "e.g. create_map(lit('k'), col('v').cast('string'))")
    if properties >= 0 and not (isinstance(properties_type.keyType, T.StringType)
                                and isinstance(properties_type.valueType, T.StringType)):
        raise SinkSchemaError(f"column __messageProperties has type {properties_type.simpleString()}; the sink "
                              "needs map<string,string>: e.g. transform_values(col, (k, v) -> "
                              "cast(v as string))", "__messageProperties")
    partition, _ = check("__partition", (T.IntegerType, T.LongType, T.ShortType, T.ByteType),
                         "an integer type", "e.g. col('__partition').cast('int')")
    if topic < 0 and options.topic is None:
        raise ValueError("the pulsarlike sink has no topic to write to: set .option('topic', "
                         "'persistent://tenant/ns/name') or give the rows a __topic column (string)")
    return SinkColumns(value=value, value_is_string=isinstance(value_type, T.StringType), key=key,
                       topic=topic if options.topic is None else -1, event_time=event_time,
                       event_time_is_timestamp=not isinstance(time_type, T.LongType),
                       properties=properties, partition=partition)
