"""The enums of the ``pulsar-client`` Python API, with the same member names (each transport maps them to its
wire: :mod:`connector.client.transport.grpc.streams`, :mod:`connector.client.transport.binary`)."""
from __future__ import annotations

from enum import IntEnum

from broker_core import errors


class ConsumerType(IntEnum):
    """Subscription type (the values equal ``broker.proto``'s ``SubscriptionType``)."""

    Exclusive = 0
    Shared = 1
    Failover = 2
    KeyShared = 3


class InitialPosition(IntEnum):
    """Where a new durable subscription starts (values equal ``broker.proto``'s ``InitialPosition``)."""

    Latest = 0
    Earliest = 1


class CompressionType(IntEnum):
    """Codec of an entry's payload (values equal ``pulsar_api_pb2.CompressionType``)."""

    NONE = 0
    LZ4 = 1
    ZLib = 2
    ZSTD = 3
    SNAPPY = 4


class PartitionsRoutingMode(IntEnum):
    """Where keyless messages go on a partitioned topic (keyed ones: ``hash(key) % n``); see
    :mod:`connector.client.producer.routing`."""

    UseSinglePartition = 0
    RoundRobinDistribution = 1
    CustomPartition = 2


class BatchingType(IntEnum):
    Default = 0
    KeyBased = 1
    """One open batch per key at once; every batch holds messages of one key (what Key_Shared
    consumers want). See :mod:`connector.client.producer.key_based`."""


class ProducerAccessMode(IntEnum):
    Shared = 0
    Exclusive = 1
    WaitForExclusive = 2
    ExclusiveWithFencing = 3


class HashingScheme(IntEnum):
    """Key hash for partition routing; ``BoostHash`` (C++ client only) is refused."""

    BoostHash = 0
    JavaStringHash = 1
    Murmur3_32Hash = 2


class KeySharedMode(IntEnum):
    """How a Key_Shared consumer gets its hash ranges (values equal ``broker.proto``'s ``KeySharedMode``)."""

    AutoSplit = 0
    Sticky = 1


class RegexSubscriptionMode(IntEnum):
    """Which topics a pattern subscription takes: persistent ones (the default), non-persistent ones, or
    both."""

    PersistentOnly = 0
    NonPersistentOnly = 1
    AllTopics = 2


class SubscriptionMode(IntEnum):
    Durable = 0
    NonDurable = 1


class SchemaType(IntEnum):
    """A schema's type as pulsar-client's binding names and numbers it (``_pulsar.SchemaType``), what
    ``schema_info().schema_type()`` answers; the registry's wire names are :data:`WIRE_SCHEMA_TYPES`'."""

    NONE = 0
    STRING = 1
    JSON = 2
    PROTOBUF = 3
    AVRO = 4
    INT8 = 6
    INT16 = 7
    INT32 = 8
    INT64 = 9
    FLOAT = 10
    DOUBLE = 11
    KEY_VALUE = 15
    PROTOBUF_NATIVE = 20
    BYTES = -1
    AUTO_CONSUME = -3
    AUTO_PUBLISH = -4

    def __str__(self) -> str:  # the binding's (IntEnum's is the number)
        return f"SchemaType.{self.name}"


WIRE_SCHEMA_TYPES = {"None": SchemaType.NONE, "String": SchemaType.STRING, "Json": SchemaType.JSON,
                     "Protobuf": SchemaType.PROTOBUF, "Avro": SchemaType.AVRO, "Int8": SchemaType.INT8,
                     "Int16": SchemaType.INT16, "Int32": SchemaType.INT32, "Int64": SchemaType.INT64,
                     "Float": SchemaType.FLOAT, "Double": SchemaType.DOUBLE, "KeyValue": SchemaType.KEY_VALUE,
                     "ProtobufNative": SchemaType.PROTOBUF_NATIVE}
"""Pulsar's wire ``Schema.Type`` names (the registry's) -> :class:`SchemaType`."""


class Result(IntEnum):
    """Outcome passed to ``send_async`` callbacks; members are named like the exception classes."""

    Ok = 0
    UnknownError = 1
    InvalidConfiguration = 2
    Timeout = 3
    LookupError = 4
    ConnectError = 5
    ReadError = 6
    AuthenticationError = 7
    AuthorizationError = 8
    ErrorGettingAuthenticationData = 9
    BrokerMetadataError = 10
    BrokerPersistenceError = 11
    ChecksumError = 12
    ConsumerBusy = 13
    NotConnected = 14
    AlreadyClosed = 15
    InvalidMessage = 16
    ConsumerNotInitialized = 17
    ProducerNotInitialized = 18
    ProducerBusy = 19
    TooManyLookupRequestException = 20
    InvalidTopicName = 21
    InvalidUrl = 22
    ServiceUnitNotReady = 23
    OperationNotSupported = 24
    ProducerBlockedQuotaExceededError = 25
    ProducerBlockedQuotaExceededException = 26
    ProducerQueueIsFull = 27
    MessageTooBig = 28
    TopicNotFound = 29
    SubscriptionNotFound = 30
    ConsumerNotFound = 31
    UnsupportedVersionError = 32
    TopicTerminated = 33
    CryptoError = 34
    IncompatibleSchema = 35
    ConsumerAssignError = 36
    CumulativeAcknowledgementNotAllowedError = 37
    TransactionCoordinatorNotFoundError = 38
    InvalidTxnStatusError = 39
    NotAllowedError = 40
    TransactionConflict = 41
    TransactionNotFound = 42
    ProducerFenced = 43
    MemoryBufferIsFull = 44
    Interrupted = 45


def result_of(exc: BaseException | None) -> Result:
    """The :class:`Result` for an exception (``Ok`` for None); unknown classes map to UnknownError."""
    if exc is None:
        return Result.Ok
    if isinstance(exc, errors.PulsarLikeError):
        for cls in type(exc).__mro__:
            member = Result.__members__.get(_RESULT_NAMES.get(cls.__name__, cls.__name__))
            if member is not None:
                return member
    return Result.UnknownError


_RESULT_NAMES = {"PersistenceError": "BrokerPersistenceError"}
"""Error classes named as Pulsar's broker names them whose client ``Result`` has another name."""


def check_enum(name: str, value: object, enum: type[IntEnum]) -> IntEnum:
    """``value`` as a member of ``enum``; else ValueError naming the option and the accepted values."""
    try:
        return enum(value)  # type: ignore[call-arg]
    except ValueError:
        accepted = ", ".join(f"{enum.__name__}.{m.name}" for m in enum)
        raise ValueError(f"{name}={value!r} is not valid; use one of {accepted}") from None
