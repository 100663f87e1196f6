"""Hypothesis strategies for fuzzing the broker's gRPC API (tests/integration/test_fuzz_wire.py).

- names: a mix of the fuzz run's own topics, names that try to leave the data dir (``..``, ``%2e%2e``,
  absolute paths), names over the 255-byte limit, unicode and control characters;
- numbers and entries (:mod:`tests.fuzz_entries`): each integer type's edges; honest and lying entries;
- any request of any RPC, built from the protobuf descriptors (so a new RPC or field is fuzzed without
  touching this file), and scripts of stream requests, some of them raw bytes instead of a message.

Every name drawn is remembered in :data:`SENT_NAMES`: a file that appears outside the data dir under one
of them was put there by the broker for us.
"""
from __future__ import annotations

import json
from typing import Any, Callable, NamedTuple

from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from hypothesis import strategies as st

from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol import codec
from tests.fuzz_entries import (INTEGER_EDGES, entry_data, int32s, int64s, integers_of, millis, uint32s, uint64s,
                                valid_entries)

SERVICE = pb.DESCRIPTOR.services_by_name["PulsarLike"]
UNARY_METHODS = tuple(m for m in SERVICE.methods if not m.client_streaming and not m.server_streaming)
STREAM_METHODS = tuple(m for m in SERVICE.methods if m.client_streaming and m.server_streaming)

NAMESPACE = "public/default"
TOPICS = tuple(f"persistent://{NAMESPACE}/fz-{n}" for n in ("a", "b", "batched"))
PARTITIONED = f"persistent://{NAMESPACE}/fz-part"
NON_PERSISTENT = f"non-persistent://{NAMESPACE}/fz-np"
POOL_TOPICS = (*TOPICS, PARTITIONED, f"{PARTITIONED}-partition-1", f"{PARTITIONED}-partition-9", NON_PERSISTENT,
               "fz-a")
"""Topics the fuzz run fills with messages first, so consumers have something to get, ack and seek."""
SUBSCRIPTIONS = ("fz-s1", "fz-s2", "fz-reader")

SENT_NAMES: set[str] = set()


def _sent(name: str) -> str:
    SENT_NAMES.add(name)
    return name


ESCAPES = ("..", ".", "...", "%2e%2e", "%2E%2E", "%2e", "..%2F..", "%2F", "%2f..%2f", "%00", "%", "%zz", "/",
           "//", "", " ", "\x00", "a\x00b", "\n", "~", "/etc", "/tmp/fz-escape", "../../../../tmp/fz-escape",
           "C:\\fz", "fz\\..\\..", "-partition-0", "fz-partition-", ":::", "=", "_")
LONG = (100, 254, 255, 256, 300, 4096, 20_000, 100_000)
control_text = st.text(alphabet=st.characters(max_codepoint=0x1F), min_size=1, max_size=4)
unicode_text = st.text(alphabet=st.characters(min_codepoint=0x80, exclude_categories=["Cs"]), min_size=1,
                       max_size=12)
component = st.one_of(
    st.sampled_from(("public", "default", "fz-a", "fz-b", "fz-ten", "fz-ns", "fz-s1")),
    st.sampled_from(ESCAPES),
    st.sampled_from(LONG).map(lambda n: "x" * n),
    st.text(max_size=16), control_text, unicode_text,
).map(_sent)
domains = st.sampled_from(("persistent", "non-persistent", "", "http", "PERSISTENT", "persistent:/"))

partition_names = st.builds("{}-partition-{}".format, st.sampled_from((PARTITIONED, *TOPICS)), st.one_of(
    st.integers(-3, 12), st.sampled_from((2**31 - 1, 2**31, 2**32, 2**63, 10**30, "01", "+1", " 1", "1.0", ""))))
"""Partition names with indexes past the partition count, at the integer types' edges, or not numbers."""
topics = st.one_of(
    st.sampled_from(POOL_TOPICS), st.sampled_from(POOL_TOPICS), partition_names,
    st.builds("persistent://public/default/{}".format, component),
    st.builds("{}://{}/{}/{}".format, domains, component, component, component),
    st.builds("{}://{}/{}".format, domains, component, component),
    component,
)
namespaces = st.one_of(st.sampled_from((NAMESPACE, "fz-ten/fz-ns", "public/fz-ns")),
                       st.builds("{}/{}".format, component, component),
                       st.builds("{}/{}/{}".format, component, component, component), component)
tenants = st.one_of(st.sampled_from(("public", "fz-ten")), component)
subscriptions = st.one_of(st.sampled_from(SUBSCRIPTIONS), st.sampled_from(SUBSCRIPTIONS), component)
pool_topics = st.one_of(st.sampled_from(TOPICS), st.sampled_from(POOL_TOPICS))
opened_topics = st.one_of(pool_topics, pool_topics, pool_topics, partition_names)
"""Topics for openings meant to succeed: mostly the pool's, some partitions at the edges."""

# Policy keys the broker knows (broker_core.core.policies) and values of every JSON shape.
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False), st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=24), inner, max_size=3)),
    max_leaves=6)
policy_keys = st.one_of(st.sampled_from(("deduplicationEnabled", "retention", "messageTTLInSeconds",
                                         "maxProducersPerTopic", "maxConsumersPerTopic")), st.text(max_size=20))
policy_values = st.one_of(
    json_values.map(json.dumps),
    st.fixed_dictionaries({"retentionTimeInMinutes": json_values, "retentionSizeInMB": json_values})
    .map(json.dumps),
    st.text(max_size=20))

# ---------------------------------------------------------------------------------------------------
# Any message, from its descriptor.
FIELD_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "topic": topics, "namespace": namespaces, "tenant": tenants, "subscription": subscriptions,
    "producer_name": st.one_of(st.sampled_from(("fz-p", "raw")), component),
    "consumer_name": st.one_of(st.just("fz-c"), component),
    "key": policy_keys, "value_json": policy_values, "data": entry_data,
    "publish_time_ms": millis(),
}
"""Fields drawn from a domain strategy rather than by their protobuf type alone."""


def _scalar(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    if field.name in FIELD_STRATEGIES:
        return FIELD_STRATEGIES[field.name]
    if field.type in INTEGER_EDGES:
        return integers_of(field.type)
    if field.type == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if field.type == FieldDescriptor.TYPE_STRING:
        return st.one_of(st.text(max_size=24), component)
    if field.type == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=64)
    if field.type == FieldDescriptor.TYPE_ENUM:  # proto3 enums are open: unknown numbers reach the broker
        return st.one_of(st.sampled_from([v.number for v in field.enum_type.values]),
                         st.sampled_from((-1, 4, 99, 2**31 - 1)))
    raise AssertionError(f"no strategy for {field.full_name} of type {field.type}")


def messages(descriptor: Descriptor, depth: int = 0) -> st.SearchStrategy[Any]:
    """Any instance of ``descriptor``'s message: each field set or not, one member of each oneof at most,
    repeated and map fields of a few items, nested messages built the same way."""
    cls = message_factory.GetMessageClass(descriptor)

    @st.composite
    def build(draw: Callable) -> Any:
        message = cls()
        chosen = {oneof.name: draw(st.sampled_from([None, *oneof.fields])) for oneof in descriptor.oneofs}
        for field in descriptor.fields:
            oneof = field.containing_oneof
            if oneof is not None and chosen[oneof.name] is not field:
                continue
            if oneof is None and not draw(st.booleans()):
                continue
            _fill(draw, message, field, depth)
        return message
    return build()


def _fill(draw: Callable, message: Any, field: FieldDescriptor, depth: int) -> None:
    name = field.name
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        entry = field.message_type
        if entry.GetOptions().map_entry:
            key, value = entry.fields_by_name["key"], entry.fields_by_name["value"]
            getattr(message, name).update(draw(st.dictionaries(_scalar(key), _scalar(value), max_size=3)))
        elif field.is_repeated:
            for item in draw(st.lists(messages(entry, depth + 1), max_size=4 if depth < 3 else 0)):
                getattr(message, name).add().CopyFrom(item)
        else:
            getattr(message, name).SetInParent()
            if depth < 3:
                getattr(message, name).CopyFrom(draw(messages(entry, depth + 1)))
    elif field.is_repeated:
        getattr(message, name).extend(draw(st.lists(_scalar(field), max_size=5)))
    else:
        setattr(message, name, draw(_scalar(field)))


# ---------------------------------------------------------------------------------------------------
# Bytes on the wire: serialized, cut, flipped or random.
@st.composite
def wire_bytes(draw: Callable, message: Any) -> bytes:
    """``message`` serialized, usually as it is; sometimes cut short, flipped, or replaced by random bytes
    (a truncated protobuf, a length prefix pointing past the end, a wrong wire type)."""
    data = message.SerializeToString()
    how = draw(st.integers(0, 9))
    if how == 0 and data:
        return data[:draw(st.integers(0, len(data) - 1))]
    if how == 1 and data:
        flipped = bytearray(data)
        flipped[draw(st.integers(0, len(data) - 1))] ^= draw(st.integers(1, 255))
        return bytes(flipped)
    if how == 2:
        return draw(st.one_of(st.binary(max_size=64), st.sampled_from((b"\x0a\xff\xff\xff\xff\x0f", b"\xff",
                                                                        b"\x0a\x05ab", b"\x12\x80\x80\x80"))))
    return data


class UnaryCall(NamedTuple):
    method: str
    request: Any
    data: bytes


@st.composite
def unary_calls(draw: Callable, methods: tuple = UNARY_METHODS) -> UnaryCall:
    method = draw(st.sampled_from(methods))
    request = draw(messages(method.input_type))
    return UnaryCall(method.name, request, draw(wire_bytes(request)))


def _chaotic_opening(kind: str) -> st.SearchStrategy[Any]:
    """An open or subscribe with any field values (unknown enum numbers, odd names)."""
    if kind == "Produce":
        return st.builds(lambda open_, topic: _with(open_, "open", topic),
                         messages(pb.ProducerOpen.DESCRIPTOR), st.one_of(pool_topics, topics))
    return st.builds(lambda subscribe, topic, sub: _with(subscribe, "subscribe", topic, sub),
                     messages(pb.Subscribe.DESCRIPTOR), st.one_of(pool_topics, topics),
                     st.one_of(st.sampled_from(SUBSCRIPTIONS), subscriptions))


def _with(inner: Any, kind: str, topic: str, subscription: str | None = None) -> Any:
    inner.topic = topic
    if subscription is not None:
        inner.subscription = subscription
    request = pb.ProduceRequest() if kind == "open" else pb.ConsumeRequest()
    getattr(request, kind).CopyFrom(inner)
    return request


def _enum(enum: Any) -> st.SearchStrategy[int]:
    return st.sampled_from([v.number for v in enum.DESCRIPTOR.values])


offsets = st.one_of(st.integers(0, 120), uint64s)
"""Offsets near the pool topics' messages (so acks, seeks and redeliveries meet real ones) and anywhere."""
permits = st.one_of(st.integers(0, 50), uint32s)
ranges = st.lists(st.builds(pb.OffsetRange, start=offsets, end=offsets), max_size=4)
positions = st.one_of(st.builds(pb.Position, offset=offsets), st.just(pb.Position(earliest=True)),
                      st.just(pb.Position(latest=True)), st.just(pb.Position()))
hash_ranges = st.lists(st.builds(pb.HashRange, start=st.one_of(st.integers(-2, 65537), int32s),
                                 end=st.one_of(st.integers(-2, 65537), int32s)), max_size=3)

_OPENINGS = {
    "Produce": st.builds(
        lambda topic, name, mode, seq: pb.ProduceRequest(open=pb.ProducerOpen(
            topic=topic, producer_name=name, access_mode=mode, initial_sequence_id=seq)),
        opened_topics, st.sampled_from(("", "", "fz-p", "fz-q")),
        st.one_of(st.just(pb.SHARED), _enum(pb.ProducerAccessMode)), st.one_of(st.just(-1), int64s)),
    "Consume": st.builds(
        lambda topic, sub, kind, durable, start, permits_, key_shared, priority: pb.ConsumeRequest(
            subscribe=pb.Subscribe(topic=topic, subscription=sub, sub_type=kind, durable=durable, start=start,
                                   initial_permits=permits_, key_shared=key_shared, priority_level=priority,
                                   initial_position=pb.EARLIEST, partition_index=-1)),
        opened_topics, st.sampled_from(SUBSCRIPTIONS), _enum(pb.SubscriptionType), st.booleans(), positions, permits,
        st.builds(pb.KeySharedMeta, mode=_enum(pb.KeySharedMode), allow_out_of_order_delivery=st.booleans(),
                  ranges=hash_ranges),
        st.one_of(st.just(0), int32s)),
}
"""Openings that succeed (pool topics and subscriptions, known enums), so what follows reaches deep."""

@st.composite
def send_entries(draw: Callable) -> pb.SendEntry:
    """Mostly an honest entry with the counts and sequence ids its metadata states; else any entry data
    with any counts."""
    if draw(st.integers(0, 2)):
        meta, payload = draw(valid_entries())
        count = meta.num_messages_in_batch if meta.HasField("num_messages_in_batch") else 1
        return pb.SendEntry(sequence_id=meta.sequence_id, highest_sequence_id=meta.sequence_id + count - 1,
                            num_messages=count, data=codec.encode_entry(meta, payload))
    return pb.SendEntry(sequence_id=draw(st.one_of(st.integers(0, 50), uint64s)),
                        highest_sequence_id=draw(st.one_of(st.integers(0, 50), uint64s)),
                        num_messages=draw(st.one_of(st.integers(1, 8), int32s)), data=draw(entry_data))


_SENDS = st.builds(lambda entries: pb.ProduceRequest(send=pb.SendBatch(entries=entries)),
                   st.lists(send_entries(), min_size=1, max_size=4))
_CONSUMER_REQUESTS = st.one_of(
    st.builds(lambda n: pb.ConsumeRequest(flow=pb.Flow(permits=n)), permits),
    st.builds(lambda r: pb.ConsumeRequest(ack=pb.Ack(ack_type=pb.INDIVIDUAL, ranges=r)), ranges),
    st.builds(lambda o: pb.ConsumeRequest(ack=pb.Ack(ack_type=pb.CUMULATIVE, offset=o)), offsets),
    st.builds(lambda i, p: pb.ConsumeRequest(seek=pb.Seek(seek_id=i, position=p)), offsets, positions),
    st.builds(lambda i, t: pb.ConsumeRequest(seek=pb.Seek(seek_id=i, publish_time_ms=t)), offsets, millis()),
    st.builds(lambda r: pb.ConsumeRequest(redeliver=pb.RedeliverUnacknowledged(ranges=r)), ranges),
)
_FOLLOWING = {
    "Produce": st.one_of(_SENDS, _SENDS, _SENDS, st.just(pb.ProduceRequest(close=pb.CloseProducer())),
                         messages(pb.ProduceRequest.DESCRIPTOR)),
    "Consume": st.one_of(_CONSUMER_REQUESTS, _CONSUMER_REQUESTS, _CONSUMER_REQUESTS,
                         st.just(pb.ConsumeRequest(close=pb.CloseConsumer())),
                         st.builds(lambda i: pb.ConsumeRequest(unsubscribe=pb.Unsubscribe(request_id=i)), offsets),
                         messages(pb.ConsumeRequest.DESCRIPTOR)),
}


class StreamScript(NamedTuple):
    """What one stream sends (``data``, the requests as bytes) and when the client gives up: after
    ``cancel_after`` responses (None: it reads until the broker ends the stream)."""

    method: str
    requests: list
    data: list
    cancel_after: int | None


@st.composite
def stream_scripts(draw: Callable, method: str) -> StreamScript:
    """A Produce or Consume stream. Mostly deep: an opening that succeeds, then well-formed requests whose
    contents lie (entries, offsets, permits, ranges). Else chaotic: any opening or none, any requests, some
    sent as damaged bytes. Either may be cut short by a close or the client cancelling."""
    deep = draw(st.integers(0, 9)) < 7
    if deep:
        requests = [draw(_OPENINGS[method])]
    else:
        requests = [draw(_chaotic_opening(method))] if draw(st.booleans()) else []
    requests += draw(st.lists(_FOLLOWING[method], max_size=8))
    damage = 0 if deep else 4
    data = [draw(wire_bytes(r)) if damage and draw(st.integers(0, damage)) == 0 else r.SerializeToString()
            for r in requests]
    cancel_after = draw(st.one_of(st.none(), st.none(), st.none(), st.integers(0, 3)))
    return StreamScript(method, requests, data, cancel_after)
