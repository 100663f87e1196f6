from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProducerAccessMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SHARED: _ClassVar[ProducerAccessMode]
    EXCLUSIVE: _ClassVar[ProducerAccessMode]
    EXCLUSIVE_WITH_FENCING: _ClassVar[ProducerAccessMode]
    WAIT_FOR_EXCLUSIVE: _ClassVar[ProducerAccessMode]

class SubscriptionType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EXCLUSIVE_SUB: _ClassVar[SubscriptionType]
    SHARED_SUB: _ClassVar[SubscriptionType]
    FAILOVER_SUB: _ClassVar[SubscriptionType]
    KEY_SHARED_SUB: _ClassVar[SubscriptionType]

class InitialPosition(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LATEST: _ClassVar[InitialPosition]
    EARLIEST: _ClassVar[InitialPosition]

class KeySharedMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AUTO_SPLIT: _ClassVar[KeySharedMode]
    STICKY: _ClassVar[KeySharedMode]

class AckType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INDIVIDUAL: _ClassVar[AckType]
    CUMULATIVE: _ClassVar[AckType]
SHARED: ProducerAccessMode
EXCLUSIVE: ProducerAccessMode
EXCLUSIVE_WITH_FENCING: ProducerAccessMode
WAIT_FOR_EXCLUSIVE: ProducerAccessMode
EXCLUSIVE_SUB: SubscriptionType
SHARED_SUB: SubscriptionType
FAILOVER_SUB: SubscriptionType
KEY_SHARED_SUB: SubscriptionType
LATEST: InitialPosition
EARLIEST: InitialPosition
AUTO_SPLIT: KeySharedMode
STICKY: KeySharedMode
INDIVIDUAL: AckType
CUMULATIVE: AckType

class Error(_message.Message):
    __slots__ = ("code", "message", "fields_json")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FIELDS_JSON_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    fields_json: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., fields_json: _Optional[str] = ...) -> None: ...

class ProducerOpen(_message.Message):
    __slots__ = ("topic", "producer_name", "access_mode", "properties", "initial_sequence_id")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_NAME_FIELD_NUMBER: _ClassVar[int]
    ACCESS_MODE_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    INITIAL_SEQUENCE_ID_FIELD_NUMBER: _ClassVar[int]
    topic: str
    producer_name: str
    access_mode: ProducerAccessMode
    properties: _containers.ScalarMap[str, str]
    initial_sequence_id: int
    def __init__(self, topic: _Optional[str] = ..., producer_name: _Optional[str] = ..., access_mode: _Optional[_Union[ProducerAccessMode, str]] = ..., properties: _Optional[_Mapping[str, str]] = ..., initial_sequence_id: _Optional[int] = ...) -> None: ...

class SendEntry(_message.Message):
    __slots__ = ("sequence_id", "highest_sequence_id", "num_messages", "data")
    SEQUENCE_ID_FIELD_NUMBER: _ClassVar[int]
    HIGHEST_SEQUENCE_ID_FIELD_NUMBER: _ClassVar[int]
    NUM_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    sequence_id: int
    highest_sequence_id: int
    num_messages: int
    data: bytes
    def __init__(self, sequence_id: _Optional[int] = ..., highest_sequence_id: _Optional[int] = ..., num_messages: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class ProduceRequest(_message.Message):
    __slots__ = ("open", "send", "close")
    OPEN_FIELD_NUMBER: _ClassVar[int]
    SEND_FIELD_NUMBER: _ClassVar[int]
    CLOSE_FIELD_NUMBER: _ClassVar[int]
    open: ProducerOpen
    send: SendBatch
    close: CloseProducer
    def __init__(self, open: _Optional[_Union[ProducerOpen, _Mapping]] = ..., send: _Optional[_Union[SendBatch, _Mapping]] = ..., close: _Optional[_Union[CloseProducer, _Mapping]] = ...) -> None: ...

class SendBatch(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[SendEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[SendEntry, _Mapping]]] = ...) -> None: ...

class CloseProducer(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ProducerOpened(_message.Message):
    __slots__ = ("producer_name", "last_sequence_id", "max_message_size", "topic")
    PRODUCER_NAME_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQUENCE_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    producer_name: str
    last_sequence_id: int
    max_message_size: int
    topic: str
    def __init__(self, producer_name: _Optional[str] = ..., last_sequence_id: _Optional[int] = ..., max_message_size: _Optional[int] = ..., topic: _Optional[str] = ...) -> None: ...

class SendReceipt(_message.Message):
    __slots__ = ("sequence_id", "highest_sequence_id", "ledger_id", "entry_id", "duplicate")
    SEQUENCE_ID_FIELD_NUMBER: _ClassVar[int]
    HIGHEST_SEQUENCE_ID_FIELD_NUMBER: _ClassVar[int]
    LEDGER_ID_FIELD_NUMBER: _ClassVar[int]
    ENTRY_ID_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    sequence_id: int
    highest_sequence_id: int
    ledger_id: int
    entry_id: int
    duplicate: bool
    def __init__(self, sequence_id: _Optional[int] = ..., highest_sequence_id: _Optional[int] = ..., ledger_id: _Optional[int] = ..., entry_id: _Optional[int] = ..., duplicate: _Optional[bool] = ...) -> None: ...

class SendFailure(_message.Message):
    __slots__ = ("sequence_id", "error")
    SEQUENCE_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    sequence_id: int
    error: Error
    def __init__(self, sequence_id: _Optional[int] = ..., error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class ProduceResponse(_message.Message):
    __slots__ = ("opened", "receipts", "failure", "error")
    OPENED_FIELD_NUMBER: _ClassVar[int]
    RECEIPTS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    opened: ProducerOpened
    receipts: Receipts
    failure: SendFailure
    error: Error
    def __init__(self, opened: _Optional[_Union[ProducerOpened, _Mapping]] = ..., receipts: _Optional[_Union[Receipts, _Mapping]] = ..., failure: _Optional[_Union[SendFailure, _Mapping]] = ..., error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class Receipts(_message.Message):
    __slots__ = ("receipts",)
    RECEIPTS_FIELD_NUMBER: _ClassVar[int]
    receipts: _containers.RepeatedCompositeFieldContainer[SendReceipt]
    def __init__(self, receipts: _Optional[_Iterable[_Union[SendReceipt, _Mapping]]] = ...) -> None: ...

class Position(_message.Message):
    __slots__ = ("offset", "earliest", "latest")
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    EARLIEST_FIELD_NUMBER: _ClassVar[int]
    LATEST_FIELD_NUMBER: _ClassVar[int]
    offset: int
    earliest: bool
    latest: bool
    def __init__(self, offset: _Optional[int] = ..., earliest: _Optional[bool] = ..., latest: _Optional[bool] = ...) -> None: ...

class Subscribe(_message.Message):
    __slots__ = ("topic", "subscription", "sub_type", "consumer_name", "initial_position", "priority_level", "durable", "start", "start_inclusive", "partition_index", "multi_topic", "key_shared", "initial_permits", "read_compacted")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    SUB_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_NAME_FIELD_NUMBER: _ClassVar[int]
    INITIAL_POSITION_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_LEVEL_FIELD_NUMBER: _ClassVar[int]
    DURABLE_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    START_INCLUSIVE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    MULTI_TOPIC_FIELD_NUMBER: _ClassVar[int]
    KEY_SHARED_FIELD_NUMBER: _ClassVar[int]
    INITIAL_PERMITS_FIELD_NUMBER: _ClassVar[int]
    READ_COMPACTED_FIELD_NUMBER: _ClassVar[int]
    topic: str
    subscription: str
    sub_type: SubscriptionType
    consumer_name: str
    initial_position: InitialPosition
    priority_level: int
    durable: bool
    start: Position
    start_inclusive: bool
    partition_index: int
    multi_topic: bool
    key_shared: KeySharedMeta
    initial_permits: int
    read_compacted: bool
    def __init__(self, topic: _Optional[str] = ..., subscription: _Optional[str] = ..., sub_type: _Optional[_Union[SubscriptionType, str]] = ..., consumer_name: _Optional[str] = ..., initial_position: _Optional[_Union[InitialPosition, str]] = ..., priority_level: _Optional[int] = ..., durable: _Optional[bool] = ..., start: _Optional[_Union[Position, _Mapping]] = ..., start_inclusive: _Optional[bool] = ..., partition_index: _Optional[int] = ..., multi_topic: _Optional[bool] = ..., key_shared: _Optional[_Union[KeySharedMeta, _Mapping]] = ..., initial_permits: _Optional[int] = ..., read_compacted: _Optional[bool] = ...) -> None: ...

class HashRange(_message.Message):
    __slots__ = ("start", "end")
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    start: int
    end: int
    def __init__(self, start: _Optional[int] = ..., end: _Optional[int] = ...) -> None: ...

class KeySharedMeta(_message.Message):
    __slots__ = ("mode", "allow_out_of_order_delivery", "ranges")
    MODE_FIELD_NUMBER: _ClassVar[int]
    ALLOW_OUT_OF_ORDER_DELIVERY_FIELD_NUMBER: _ClassVar[int]
    RANGES_FIELD_NUMBER: _ClassVar[int]
    mode: KeySharedMode
    allow_out_of_order_delivery: bool
    ranges: _containers.RepeatedCompositeFieldContainer[HashRange]
    def __init__(self, mode: _Optional[_Union[KeySharedMode, str]] = ..., allow_out_of_order_delivery: _Optional[bool] = ..., ranges: _Optional[_Iterable[_Union[HashRange, _Mapping]]] = ...) -> None: ...

class Flow(_message.Message):
    __slots__ = ("permits",)
    PERMITS_FIELD_NUMBER: _ClassVar[int]
    permits: int
    def __init__(self, permits: _Optional[int] = ...) -> None: ...

class OffsetRange(_message.Message):
    __slots__ = ("start", "end")
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    start: int
    end: int
    def __init__(self, start: _Optional[int] = ..., end: _Optional[int] = ...) -> None: ...

class Ack(_message.Message):
    __slots__ = ("ack_type", "ranges", "offset")
    ACK_TYPE_FIELD_NUMBER: _ClassVar[int]
    RANGES_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    ack_type: AckType
    ranges: _containers.RepeatedCompositeFieldContainer[OffsetRange]
    offset: int
    def __init__(self, ack_type: _Optional[_Union[AckType, str]] = ..., ranges: _Optional[_Iterable[_Union[OffsetRange, _Mapping]]] = ..., offset: _Optional[int] = ...) -> None: ...

class Seek(_message.Message):
    __slots__ = ("seek_id", "position", "publish_time_ms")
    SEEK_ID_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    PUBLISH_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    seek_id: int
    position: Position
    publish_time_ms: int
    def __init__(self, seek_id: _Optional[int] = ..., position: _Optional[_Union[Position, _Mapping]] = ..., publish_time_ms: _Optional[int] = ...) -> None: ...

class Unsubscribe(_message.Message):
    __slots__ = ("request_id",)
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    def __init__(self, request_id: _Optional[int] = ...) -> None: ...

class CloseConsumer(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RedeliverUnacknowledged(_message.Message):
    __slots__ = ("ranges",)
    RANGES_FIELD_NUMBER: _ClassVar[int]
    ranges: _containers.RepeatedCompositeFieldContainer[OffsetRange]
    def __init__(self, ranges: _Optional[_Iterable[_Union[OffsetRange, _Mapping]]] = ...) -> None: ...

class ConsumeRequest(_message.Message):
    __slots__ = ("subscribe", "flow", "ack", "seek", "unsubscribe", "close", "redeliver")
    SUBSCRIBE_FIELD_NUMBER: _ClassVar[int]
    FLOW_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    SEEK_FIELD_NUMBER: _ClassVar[int]
    UNSUBSCRIBE_FIELD_NUMBER: _ClassVar[int]
    CLOSE_FIELD_NUMBER: _ClassVar[int]
    REDELIVER_FIELD_NUMBER: _ClassVar[int]
    subscribe: Subscribe
    flow: Flow
    ack: Ack
    seek: Seek
    unsubscribe: Unsubscribe
    close: CloseConsumer
    redeliver: RedeliverUnacknowledged
    def __init__(self, subscribe: _Optional[_Union[Subscribe, _Mapping]] = ..., flow: _Optional[_Union[Flow, _Mapping]] = ..., ack: _Optional[_Union[Ack, _Mapping]] = ..., seek: _Optional[_Union[Seek, _Mapping]] = ..., unsubscribe: _Optional[_Union[Unsubscribe, _Mapping]] = ..., close: _Optional[_Union[CloseConsumer, _Mapping]] = ..., redeliver: _Optional[_Union[RedeliverUnacknowledged, _Mapping]] = ...) -> None: ...

class Subscribed(_message.Message):
    __slots__ = ("topic", "consumer_name", "partition_index")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_NAME_FIELD_NUMBER: _ClassVar[int]
    PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    topic: str
    consumer_name: str
    partition_index: int
    def __init__(self, topic: _Optional[str] = ..., consumer_name: _Optional[str] = ..., partition_index: _Optional[int] = ...) -> None: ...

class DeliveredEntry(_message.Message):
    __slots__ = ("data", "ledger_id", "entry_id", "num_messages", "redelivery_count", "ack_set")
    DATA_FIELD_NUMBER: _ClassVar[int]
    LEDGER_ID_FIELD_NUMBER: _ClassVar[int]
    ENTRY_ID_FIELD_NUMBER: _ClassVar[int]
    NUM_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    REDELIVERY_COUNT_FIELD_NUMBER: _ClassVar[int]
    ACK_SET_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    ledger_id: int
    entry_id: int
    num_messages: int
    redelivery_count: int
    ack_set: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, data: _Optional[bytes] = ..., ledger_id: _Optional[int] = ..., entry_id: _Optional[int] = ..., num_messages: _Optional[int] = ..., redelivery_count: _Optional[int] = ..., ack_set: _Optional[_Iterable[int]] = ...) -> None: ...

class Deliveries(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[DeliveredEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[DeliveredEntry, _Mapping]]] = ...) -> None: ...

class ActiveConsumerChange(_message.Message):
    __slots__ = ("is_active",)
    IS_ACTIVE_FIELD_NUMBER: _ClassVar[int]
    is_active: bool
    def __init__(self, is_active: _Optional[bool] = ...) -> None: ...

class ReachedEndOfTopic(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SeekDone(_message.Message):
    __slots__ = ("seek_id", "error")
    SEEK_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    seek_id: int
    error: Error
    def __init__(self, seek_id: _Optional[int] = ..., error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class UnsubscribeDone(_message.Message):
    __slots__ = ("request_id", "error")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    error: Error
    def __init__(self, request_id: _Optional[int] = ..., error: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class ConsumeResponse(_message.Message):
    __slots__ = ("subscribed", "deliveries", "active_change", "seek_done", "unsubscribed", "error", "warning", "end_of_topic", "unreadable")
    SUBSCRIBED_FIELD_NUMBER: _ClassVar[int]
    DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_CHANGE_FIELD_NUMBER: _ClassVar[int]
    SEEK_DONE_FIELD_NUMBER: _ClassVar[int]
    UNSUBSCRIBED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    WARNING_FIELD_NUMBER: _ClassVar[int]
    END_OF_TOPIC_FIELD_NUMBER: _ClassVar[int]
    UNREADABLE_FIELD_NUMBER: _ClassVar[int]
    subscribed: Subscribed
    deliveries: Deliveries
    active_change: ActiveConsumerChange
    seek_done: SeekDone
    unsubscribed: UnsubscribeDone
    error: Error
    warning: Error
    end_of_topic: ReachedEndOfTopic
    unreadable: Error
    def __init__(self, subscribed: _Optional[_Union[Subscribed, _Mapping]] = ..., deliveries: _Optional[_Union[Deliveries, _Mapping]] = ..., active_change: _Optional[_Union[ActiveConsumerChange, _Mapping]] = ..., seek_done: _Optional[_Union[SeekDone, _Mapping]] = ..., unsubscribed: _Optional[_Union[UnsubscribeDone, _Mapping]] = ..., error: _Optional[_Union[Error, _Mapping]] = ..., warning: _Optional[_Union[Error, _Mapping]] = ..., end_of_topic: _Optional[_Union[ReachedEndOfTopic, _Mapping]] = ..., unreadable: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class TopicRequest(_message.Message):
    __slots__ = ("topic", "read_compacted", "stats")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    READ_COMPACTED_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    read_compacted: bool
    stats: StatsOptions
    def __init__(self, topic: _Optional[str] = ..., read_compacted: _Optional[bool] = ..., stats: _Optional[_Union[StatsOptions, _Mapping]] = ...) -> None: ...

class StatsOptions(_message.Message):
    __slots__ = ("get_precise_backlog", "subscription_backlog_size", "get_earliest_time_in_backlog")
    GET_PRECISE_BACKLOG_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_BACKLOG_SIZE_FIELD_NUMBER: _ClassVar[int]
    GET_EARLIEST_TIME_IN_BACKLOG_FIELD_NUMBER: _ClassVar[int]
    get_precise_backlog: bool
    subscription_backlog_size: bool
    get_earliest_time_in_backlog: bool
    def __init__(self, get_precise_backlog: _Optional[bool] = ..., subscription_backlog_size: _Optional[bool] = ..., get_earliest_time_in_backlog: _Optional[bool] = ...) -> None: ...

class CreatePartitionedTopicRequest(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: int
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[int] = ...) -> None: ...

class PartitionedTopicMetadata(_message.Message):
    __slots__ = ("partitions",)
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    partitions: int
    def __init__(self, partitions: _Optional[int] = ...) -> None: ...

class ListTopicsRequest(_message.Message):
    __slots__ = ("namespace",)
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    def __init__(self, namespace: _Optional[str] = ...) -> None: ...

class TopicList(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, topics: _Optional[_Iterable[str]] = ...) -> None: ...

class DeleteTopicRequest(_message.Message):
    __slots__ = ("topic", "force")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    topic: str
    force: bool
    def __init__(self, topic: _Optional[str] = ..., force: _Optional[bool] = ...) -> None: ...

class Empty(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class JsonResponse(_message.Message):
    __slots__ = ("json",)
    JSON_FIELD_NUMBER: _ClassVar[int]
    json: str
    def __init__(self, json: _Optional[str] = ...) -> None: ...

class LastMessageId(_message.Message):
    __slots__ = ("ledger_id", "entry_id", "batch_index", "last_offset", "start_offset")
    LEDGER_ID_FIELD_NUMBER: _ClassVar[int]
    ENTRY_ID_FIELD_NUMBER: _ClassVar[int]
    BATCH_INDEX_FIELD_NUMBER: _ClassVar[int]
    LAST_OFFSET_FIELD_NUMBER: _ClassVar[int]
    START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    ledger_id: int
    entry_id: int
    batch_index: int
    last_offset: int
    start_offset: int
    def __init__(self, ledger_id: _Optional[int] = ..., entry_id: _Optional[int] = ..., batch_index: _Optional[int] = ..., last_offset: _Optional[int] = ..., start_offset: _Optional[int] = ...) -> None: ...

class UnsubscribeRequest(_message.Message):
    __slots__ = ("topic", "subscription", "force")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    topic: str
    subscription: str
    force: bool
    def __init__(self, topic: _Optional[str] = ..., subscription: _Optional[str] = ..., force: _Optional[bool] = ...) -> None: ...

class SubscriptionRequest(_message.Message):
    __slots__ = ("topic", "subscription", "position", "publish_time_ms", "end_offset", "count")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    PUBLISH_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    topic: str
    subscription: str
    position: Position
    publish_time_ms: int
    end_offset: int
    count: int
    def __init__(self, topic: _Optional[str] = ..., subscription: _Optional[str] = ..., position: _Optional[_Union[Position, _Mapping]] = ..., publish_time_ms: _Optional[int] = ..., end_offset: _Optional[int] = ..., count: _Optional[int] = ...) -> None: ...

class SubscriptionPosition(_message.Message):
    __slots__ = ("next_offset", "acknowledged")
    NEXT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    ACKNOWLEDGED_FIELD_NUMBER: _ClassVar[int]
    next_offset: int
    acknowledged: int
    def __init__(self, next_offset: _Optional[int] = ..., acknowledged: _Optional[int] = ...) -> None: ...

class TimestampRequest(_message.Message):
    __slots__ = ("topic", "publish_time_ms")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PUBLISH_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    publish_time_ms: int
    def __init__(self, topic: _Optional[str] = ..., publish_time_ms: _Optional[int] = ...) -> None: ...

class PeekedEntries(_message.Message):
    __slots__ = ("entries", "count")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[DeliveredEntry]
    count: int
    def __init__(self, entries: _Optional[_Iterable[_Union[DeliveredEntry, _Mapping]]] = ..., count: _Optional[int] = ...) -> None: ...

class PolicyScope(_message.Message):
    __slots__ = ("namespace", "topic", "applied")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    topic: str
    applied: bool
    def __init__(self, namespace: _Optional[str] = ..., topic: _Optional[str] = ..., applied: _Optional[bool] = ...) -> None: ...

class PolicyRequest(_message.Message):
    __slots__ = ("scope", "key", "value_json")
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_JSON_FIELD_NUMBER: _ClassVar[int]
    scope: PolicyScope
    key: str
    value_json: str
    def __init__(self, scope: _Optional[_Union[PolicyScope, _Mapping]] = ..., key: _Optional[str] = ..., value_json: _Optional[str] = ...) -> None: ...

class PermissionRequest(_message.Message):
    __slots__ = ("scope", "role", "actions")
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    scope: PolicyScope
    role: str
    actions: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, scope: _Optional[_Union[PolicyScope, _Mapping]] = ..., role: _Optional[str] = ..., actions: _Optional[_Iterable[str]] = ...) -> None: ...

class TenantRequest(_message.Message):
    __slots__ = ("tenant",)
    TENANT_FIELD_NUMBER: _ClassVar[int]
    tenant: str
    def __init__(self, tenant: _Optional[str] = ...) -> None: ...

class TenantInfo(_message.Message):
    __slots__ = ("tenant", "admin_roles", "allowed_clusters")
    TENANT_FIELD_NUMBER: _ClassVar[int]
    ADMIN_ROLES_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    tenant: str
    admin_roles: _containers.RepeatedScalarFieldContainer[str]
    allowed_clusters: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, tenant: _Optional[str] = ..., admin_roles: _Optional[_Iterable[str]] = ..., allowed_clusters: _Optional[_Iterable[str]] = ...) -> None: ...

class UpdateTenantRequest(_message.Message):
    __slots__ = ("info", "set_admin_roles", "set_allowed_clusters")
    INFO_FIELD_NUMBER: _ClassVar[int]
    SET_ADMIN_ROLES_FIELD_NUMBER: _ClassVar[int]
    SET_ALLOWED_CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    info: TenantInfo
    set_admin_roles: bool
    set_allowed_clusters: bool
    def __init__(self, info: _Optional[_Union[TenantInfo, _Mapping]] = ..., set_admin_roles: _Optional[bool] = ..., set_allowed_clusters: _Optional[bool] = ...) -> None: ...

class DeleteTenantRequest(_message.Message):
    __slots__ = ("tenant", "force")
    TENANT_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    tenant: str
    force: bool
    def __init__(self, tenant: _Optional[str] = ..., force: _Optional[bool] = ...) -> None: ...

class NamespaceRequest(_message.Message):
    __slots__ = ("namespace",)
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    def __init__(self, namespace: _Optional[str] = ...) -> None: ...

class NamespacePropertiesRequest(_message.Message):
    __slots__ = ("namespace", "properties")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    properties: _containers.ScalarMap[str, str]
    def __init__(self, namespace: _Optional[str] = ..., properties: _Optional[_Mapping[str, str]] = ...) -> None: ...

class NamespacePropertyRequest(_message.Message):
    __slots__ = ("namespace", "key", "value")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    key: str
    value: str
    def __init__(self, namespace: _Optional[str] = ..., key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class SubscriptionPermissionRequest(_message.Message):
    __slots__ = ("namespace", "subscription", "roles")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    subscription: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, namespace: _Optional[str] = ..., subscription: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ...) -> None: ...

class DeleteNamespaceRequest(_message.Message):
    __slots__ = ("namespace", "force")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    force: bool
    def __init__(self, namespace: _Optional[str] = ..., force: _Optional[bool] = ...) -> None: ...

class NameList(_message.Message):
    __slots__ = ("names",)
    NAMES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, names: _Optional[_Iterable[str]] = ...) -> None: ...

class ExamineMessageRequest(_message.Message):
    __slots__ = ("topic", "latest", "position")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    LATEST_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    topic: str
    latest: bool
    position: int
    def __init__(self, topic: _Optional[str] = ..., latest: _Optional[bool] = ..., position: _Optional[int] = ...) -> None: ...

class LookupResult(_message.Message):
    __slots__ = ("broker_url", "http_url")
    BROKER_URL_FIELD_NUMBER: _ClassVar[int]
    HTTP_URL_FIELD_NUMBER: _ClassVar[int]
    broker_url: str
    http_url: str
    def __init__(self, broker_url: _Optional[str] = ..., http_url: _Optional[str] = ...) -> None: ...

class ExpireMessagesRequest(_message.Message):
    __slots__ = ("topic", "subscription", "all_subscriptions", "expire_time_seconds", "position")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    ALL_SUBSCRIPTIONS_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_SECONDS_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    topic: str
    subscription: str
    all_subscriptions: bool
    expire_time_seconds: int
    position: Position
    def __init__(self, topic: _Optional[str] = ..., subscription: _Optional[str] = ..., all_subscriptions: _Optional[bool] = ..., expire_time_seconds: _Optional[int] = ..., position: _Optional[_Union[Position, _Mapping]] = ...) -> None: ...

class NamespaceSubscriptionRequest(_message.Message):
    __slots__ = ("namespace", "subscription")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    subscription: str
    def __init__(self, namespace: _Optional[str] = ..., subscription: _Optional[str] = ...) -> None: ...

class CompactionStatusReply(_message.Message):
    __slots__ = ("status", "last_error")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    status: str
    last_error: str
    def __init__(self, status: _Optional[str] = ..., last_error: _Optional[str] = ...) -> None: ...

class SchemaRequest(_message.Message):
    __slots__ = ("topic", "type", "data", "name", "properties", "version", "check_only")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CHECK_ONLY_FIELD_NUMBER: _ClassVar[int]
    topic: str
    type: str
    data: bytes
    name: str
    properties: _containers.ScalarMap[str, str]
    version: int
    check_only: bool
    def __init__(self, topic: _Optional[str] = ..., type: _Optional[str] = ..., data: _Optional[bytes] = ..., name: _Optional[str] = ..., properties: _Optional[_Mapping[str, str]] = ..., version: _Optional[int] = ..., check_only: _Optional[bool] = ...) -> None: ...

class SchemaReply(_message.Message):
    __slots__ = ("version", "type", "data", "name", "properties")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    VERSION_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    version: int
    type: str
    data: bytes
    name: str
    properties: _containers.ScalarMap[str, str]
    def __init__(self, version: _Optional[int] = ..., type: _Optional[str] = ..., data: _Optional[bytes] = ..., name: _Optional[str] = ..., properties: _Optional[_Mapping[str, str]] = ...) -> None: ...

class MessageByIdRequest(_message.Message):
    __slots__ = ("topic", "ledger_id", "entry_id")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    LEDGER_ID_FIELD_NUMBER: _ClassVar[int]
    ENTRY_ID_FIELD_NUMBER: _ClassVar[int]
    topic: str
    ledger_id: int
    entry_id: int
    def __init__(self, topic: _Optional[str] = ..., ledger_id: _Optional[int] = ..., entry_id: _Optional[int] = ...) -> None: ...

class MessageIndexRequest(_message.Message):
    __slots__ = ("topic", "index")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    topic: str
    index: int
    def __init__(self, topic: _Optional[str] = ..., index: _Optional[int] = ...) -> None: ...

class PropertiesRequest(_message.Message):
    __slots__ = ("topic", "subscription", "properties")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    topic: str
    subscription: str
    properties: _containers.ScalarMap[str, str]
    def __init__(self, topic: _Optional[str] = ..., subscription: _Optional[str] = ..., properties: _Optional[_Mapping[str, str]] = ...) -> None: ...

class PropertyKeyRequest(_message.Message):
    __slots__ = ("topic", "key")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    topic: str
    key: str
    def __init__(self, topic: _Optional[str] = ..., key: _Optional[str] = ...) -> None: ...

class SchemaAdminRequest(_message.Message):
    __slots__ = ("topic", "version", "payload")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    topic: str
    version: int
    payload: str
    def __init__(self, topic: _Optional[str] = ..., version: _Optional[int] = ..., payload: _Optional[str] = ...) -> None: ...

class SchemaAdminReply(_message.Message):
    __slots__ = ("answer",)
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    answer: str
    def __init__(self, answer: _Optional[str] = ...) -> None: ...
