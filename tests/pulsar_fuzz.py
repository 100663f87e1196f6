"""Hypothesis strategies for fuzzing the broker's Pulsar binary protocol front end
(tests/integration/test_fuzz_wire.py): sessions of frames on one connection -- usually CONNECT first, then
any command of ``pulsar_commands.proto`` built from its descriptor (required fields sometimes missing, ids
mostly small so commands meet the producers and consumers opened before them), SEND frames carrying honest
or lying entries (:mod:`tests.fuzz_entries`) -- and the bytes of a session cut short, flipped, or preceded
by a lying frame size. Topic, subscription and namespace fields draw from the gRPC fuzz's names
(:mod:`tests.wire_fuzz`), so they try to leave the data dir too.

:func:`run_session` sends one session and reads every frame the broker answers (a final PING's PONG says it
has handled everything before it); the test checks those answers.
"""
from __future__ import annotations

import socket
import struct
from typing import Any, Callable, NamedTuple

from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from hypothesis import strategies as st

from broker_core.protocol import pulsar_api_pb2 as wire, pulsar_commands_pb2 as cmd
from tests.fuzz_entries import INTEGER_EDGES, entry_data, integers_of, millis
from tests.wire_fuzz import component, namespaces, opened_topics, subscriptions, topics

T = cmd.BaseCommand
HEADER = struct.Struct(">II")
READ_TIMEOUT_S = 10.0
"""Longer than any answer takes: a session still unanswered then is a hang."""
_COMMAND_FIELDS = {f.number: f for f in T.DESCRIPTOR.fields if f.number > 1}

FIELD_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "topic": st.one_of(opened_topics, opened_topics, topics),
    "subscription": subscriptions,
    "namespace": namespaces,
    "producer_name": st.one_of(st.sampled_from(("fz-p", "raw")), component),
    "consumer_name": st.one_of(st.just("fz-c"), component),
    "topics_pattern": st.one_of(st.sampled_from(("persistent://public/default/fz-.*", "(a+)+b", "[", ".*",
                                                 "persistent://public/default/(.|.)*Z", "(f|fz|fz-)*Q",
                                                 "(?=(a*))*b", r"(\w|\d)*$x")),
                                st.text(max_size=24)),
    "message_publish_time": millis(),
    "schema_data": st.one_of(st.sampled_from((b'{"type":"record","name":"U","fields":[]}', b"{", b"")),
                             st.binary(max_size=64)),
}


def _scalar(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    if field.name in FIELD_STRATEGIES:
        return FIELD_STRATEGIES[field.name]
    if field.type in INTEGER_EDGES:
        if field.name.endswith("_id"):  # ids mostly name what the session opened
            return st.one_of(st.integers(0, 3), st.integers(0, 3), integers_of(field.type))
        return integers_of(field.type)
    if field.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return st.floats(allow_nan=False, width=32)
    if field.type == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if field.type == FieldDescriptor.TYPE_STRING:
        return st.one_of(st.text(max_size=24), component)
    if field.type == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=64)
    if field.type == FieldDescriptor.TYPE_ENUM:  # proto2 enums are closed: unknown numbers come as raw bytes
        return st.sampled_from([v.number for v in field.enum_type.values])
    raise AssertionError(f"no strategy for {field.full_name} of type {field.type}")


def messages(descriptor: Descriptor, depth: int = 0) -> st.SearchStrategy[Any]:
    """Any instance of ``descriptor``'s message, each field set or not (required ones usually set)."""
    cls = message_factory.GetMessageClass(descriptor)

    @st.composite
    def build(draw: Callable) -> Any:
        message = cls()
        for field in descriptor.fields:
            wanted = draw(st.integers(0, 9)) > 0 if field.is_required else draw(st.booleans())
            if not wanted:
                continue
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                if depth >= 3:
                    continue
                if field.is_repeated:
                    for item in draw(st.lists(messages(field.message_type, depth + 1), max_size=3)):
                        getattr(message, field.name).add().CopyFrom(item)
                else:
                    getattr(message, field.name).CopyFrom(draw(messages(field.message_type, depth + 1)))
            elif field.is_repeated:
                getattr(message, field.name).extend(draw(st.lists(_scalar(field), max_size=4)))
            else:
                setattr(message, field.name, draw(_scalar(field)))
        return message
    return build()


def frame(body: bytes, payload: bytes = b"") -> bytes:
    return HEADER.pack(4 + len(body) + len(payload), len(body)) + body + payload


@st.composite
def commands(draw: Callable) -> bytes:
    """One frame: a command of any type, its body usually the one its type names."""
    number = draw(st.sampled_from(sorted(_COMMAND_FIELDS)))
    command = T(type=number)
    field = _COMMAND_FIELDS[draw(st.sampled_from(sorted(_COMMAND_FIELDS))) if draw(st.integers(0, 19)) == 0
                           else number]
    getattr(command, field.name).CopyFrom(draw(messages(field.message_type)))
    payload = draw(entry_data) if number == T.SEND or draw(st.integers(0, 29)) == 0 else b""
    return frame(command.SerializePartialToString(), payload)


HEAVY_ITEMS = 6_000
"""Repeated items in a heavy frame: about 60 KiB of command, under the fuzz broker's frame bound (its
64 KiB ``maxMessageSize`` plus 10 KiB)."""


def _ids(draw: Callable, count: int, ack_words: int = 0) -> list[wire.MessageIdData]:
    ledger = draw(st.sampled_from((0, 1, 2**63 - 1)))
    first = draw(st.integers(0, 50))
    return [wire.MessageIdData(ledgerId=ledger, entryId=first + i, ack_set=[-1] * ack_words) for i in range(count)]


@st.composite
def heavy_commands(draw: Callable) -> bytes:
    """One frame as large as the broker takes, of a kind whose handler could cost more than linear time in
    its size: an ACK with a huge ack set or thousands of ids, a redelivery of thousands of ids, a topic
    list with a pattern that backtracks, a subscription with thousands of Key_Shared ranges, a FLOW of
    every permit."""
    kind = draw(st.sampled_from(("ack_set", "ack_ids", "redeliver", "pattern", "ranges", "flow", "properties")))
    consumer_id = draw(st.integers(0, 2))
    if kind == "ack_set":
        ack = cmd.CommandAck(consumer_id=consumer_id, ack_type=draw(st.integers(0, 1)),
                             message_id=_ids(draw, 1, ack_words=HEAVY_ITEMS))
        command = T(type=T.ACK, ack=ack)
    elif kind == "ack_ids":
        command = T(type=T.ACK, ack=cmd.CommandAck(consumer_id=consumer_id, ack_type=0,
                                                   message_id=_ids(draw, HEAVY_ITEMS // 4)))
    elif kind == "redeliver":
        command = T(type=T.REDELIVER_UNACKNOWLEDGED_MESSAGES, redeliverUnacknowledgedMessages=cmd.
                    CommandRedeliverUnacknowledgedMessages(consumer_id=consumer_id,
                                                           message_ids=_ids(draw, HEAVY_ITEMS // 4)))
    elif kind == "pattern":
        pattern = "persistent://public/default/" + "(f|fz)*" * draw(st.integers(1, 200)) + "Q"
        command = T(type=T.GET_TOPICS_OF_NAMESPACE, getTopicsOfNamespace=cmd.CommandGetTopicsOfNamespace(
            request_id=9, namespace="public/default", topics_pattern=pattern))
    elif kind == "ranges":
        ranges = [cmd.IntRange(start=i * 10, end=i * 10 + 9) for i in range(HEAVY_ITEMS // 2)]
        command = T(type=T.SUBSCRIBE, subscribe=cmd.CommandSubscribe(
            topic=draw(opened_topics), subscription=draw(subscriptions), subType=3, consumer_id=7, request_id=9,
            keySharedMeta=cmd.KeySharedMeta(keySharedMode=1, hashRanges=ranges)))
    elif kind == "flow":
        command = T(type=T.FLOW, flow=cmd.CommandFlow(consumer_id=consumer_id, messagePermits=2**32 - 1))
    else:
        properties = [wire.KeyValue(key=f"k{i}", value="v") for i in range(HEAVY_ITEMS // 2)]
        command = T(type=T.PRODUCER, producer=cmd.CommandProducer(topic=draw(opened_topics), producer_id=5,
                                                                  request_id=9, metadata=properties))
    return frame(command.SerializePartialToString())


def connect() -> bytes:
    return frame(T(type=T.CONNECT, connect=cmd.CommandConnect(client_version="fz", protocol_version=20))
                 .SerializeToString())


PING = frame(T(type=T.PING, ping=cmd.CommandPing()).SerializeToString())


def opening(draw: Callable) -> list[bytes]:
    """What a session usually starts with after CONNECT: a producer and a consumer on pool topics."""
    producer = T(type=T.PRODUCER, producer=cmd.CommandProducer(topic=draw(opened_topics), producer_id=1,
                                                              request_id=1))
    consumer = T(type=T.SUBSCRIBE, subscribe=cmd.CommandSubscribe(
        topic=draw(opened_topics), subscription=draw(subscriptions), subType=draw(st.integers(0, 3)),
        consumer_id=1, request_id=2, initialPosition=draw(st.integers(0, 1)), durable=draw(st.booleans())))
    flow = T(type=T.FLOW, flow=cmd.CommandFlow(consumer_id=1, messagePermits=draw(st.integers(0, 100))))
    return [frame(c.SerializePartialToString()) for c in (producer, consumer, flow)]


class Session(NamedTuple):
    frames: list[bytes]
    damage: str
    """How the bytes were damaged: ``none``, ``cut``, ``flip`` or ``oversize``."""

    @property
    def data(self) -> bytes:
        return b"".join(self.frames)


@st.composite
def sessions(draw: Callable) -> Session:
    frames = [connect()] if draw(st.integers(0, 9)) else []
    if frames and draw(st.booleans()):
        frames += opening(draw)
    frames += draw(st.lists(st.one_of(*[commands()] * 5, heavy_commands()), min_size=1, max_size=6))
    damage = draw(st.sampled_from(("none", "none", "none", "cut", "flip", "oversize")))
    data = b"".join(frames)
    if damage == "cut":
        frames = [data[:draw(st.integers(0, len(data) - 1))]]
    elif damage == "flip":
        flipped = bytearray(data)
        flipped[draw(st.integers(0, len(data) - 1))] ^= draw(st.integers(1, 255))
        frames = [bytes(flipped)]
    elif damage == "oversize":
        frames = [*frames[:1], struct.pack(">I", draw(st.sampled_from((2**31, 2**32 - 1, 70 * 1024 + 1)))),
                  *frames[1:]]
    return Session(frames, damage)


def run_session(address: str, session: Session) -> list[cmd.BaseCommand]:
    """Send ``session`` (then a PING, unless it was damaged) and return what the broker sent back until its
    PONG, or until it closed the connection."""
    host, port = address.rsplit(":", 1)
    answers: list[cmd.BaseCommand] = []
    with socket.create_connection((host, int(port)), timeout=READ_TIMEOUT_S) as sock:
        try:
            sock.sendall(session.data + (PING if session.damage == "none" else b""))
        except OSError:
            return answers  # closed on us mid-send: the broker refused what came first
        if session.damage != "none":
            try:
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                return answers  # the broker closed it already: it refused what came first
        buf = b""
        while True:
            try:
                chunk = sock.recv(1 << 16)
            except ConnectionResetError:
                return answers
            if not chunk:
                return answers
            buf += chunk
            while len(buf) >= 8:
                total, size = HEADER.unpack_from(buf)
                if len(buf) < 4 + total:
                    break
                command = cmd.BaseCommand()
                command.ParseFromString(buf[8:8 + size])
                buf = buf[4 + total:]
                if command.type == T.PONG:
                    return answers
                answers.append(command)


def errors_in(command: cmd.BaseCommand) -> list[tuple[int, str]]:
    """``(ServerError code, message)`` of every error an answer carries."""
    found = []
    for name, code, text in (("error", "error", "message"), ("send_error", "error", "message"),
                             ("lookupTopicResponse", "error", "message"),
                             ("partitionMetadataResponse", "error", "message"),
                             ("ackResponse", "error", "message"), ("getSchemaResponse", "error_code", "error_message"),
                             ("getOrCreateSchemaResponse", "error_code", "error_message"),
                             ("consumerStatsResponse", "error_code", "error_message")):
        if command.HasField(name):
            body = getattr(command, name)
            if body.HasField(code):
                found.append((getattr(body, code), getattr(body, text)))
    return found
