"""One client cannot grow the broker's memory without bound, hold every stream, or fill its log with
tracebacks (issue 10, points 7 and 10): each against a real broker."""
from __future__ import annotations

import threading
import uuid

import grpc
import pytest

from broker_core import Broker
from broker_core.errors import InvalidMessage, MessageTooBig, Timeout, TooManyRequests
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol.status import error_from_proto, error_from_rpc
from broker_core.server import max_request_bytes
from connector import Client, ConsumerType
from tests.broker_watch import memory_mb
from tests.waiting import wait_until

MAX_MESSAGE_SIZE = 5 * 1024 * 1024  # the broker's default
RAW = {"request_serializer": lambda b: b, "response_deserializer": lambda b: b}


def topic_name() -> str:
    return f"persistent://public/default/limits-{uuid.uuid4().hex[:8]}"


def oversized_produce(address: str, topic: str) -> BaseException:
    """Open a producer and send one request just over the broker's read limit; the error it ends with."""
    request = pb.ProduceRequest(send=pb.SendBatch(entries=[pb.SendEntry(
        sequence_id=0, data=b"x" * (max_request_bytes(MAX_MESSAGE_SIZE) + 1024))]))
    with grpc.insecure_channel(address, options=[("grpc.max_send_message_length", -1)]) as channel:
        call = channel.stream_stream("/pulsarlike.v1.PulsarLike/Produce", **RAW)(iter([
            pb.ProduceRequest(open=pb.ProducerOpen(topic=topic)).SerializeToString(),
            request.SerializeToString()]), timeout=60)
        try:
            for _ in call:
                pass
        except grpc.RpcError as exc:
            return error_from_rpc(exc)
    raise AssertionError("the oversized request was accepted")


def round_trip(service_url: str, payload: bytes = b"still serving") -> bytes:
    with Client(service_url) as client:
        topic = topic_name()
        consumer = client.subscribe(topic, "check")
        client.create_producer(topic).send(payload)
        message = consumer.receive(timeout_millis=10_000)
        consumer.acknowledge(message)
        return message.data()


def test_an_oversized_request_is_refused_with_message_too_big(broker_process):
    proc = broker_process()
    error = oversized_produce(proc.address, topic_name())
    assert isinstance(error, MessageTooBig)
    assert error.limit == max_request_bytes(MAX_MESSAGE_SIZE) and error.size > error.limit


def test_sixteen_concurrent_oversized_requests_keep_broker_memory_bounded_and_it_still_serves(broker_process):
    proc = broker_process()
    errors: list[BaseException] = []
    threads = [threading.Thread(target=lambda: errors.append(oversized_produce(proc.address, topic_name())))
               for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(errors) == 16 and all(isinstance(e, MessageTooBig) for e in errors)
    assert memory_mb(proc.proc.pid, "VmHWM") < 300
    assert round_trip(proc.service_url) == b"still serving"


def test_a_consumer_that_never_reads_does_not_grow_broker_memory_and_then_gets_everything_in_order(
        broker_process):
    proc = broker_process()
    topic = topic_name()
    entries, size = 800, 512 * 1024  # 400 MiB sent past a consumer that reads none of it
    stop = threading.Event()

    def consume_requests():
        yield pb.ConsumeRequest(subscribe=pb.Subscribe(
            topic=topic, subscription="idle", sub_type=pb.EXCLUSIVE_SUB, durable=True,
            initial_position=pb.EARLIEST, initial_permits=1_000_000_000)).SerializeToString()
        stop.wait(300)

    with grpc.insecure_channel(proc.address, options=[("grpc.max_receive_message_length", -1)]) as channel:
        responses = channel.stream_stream("/pulsarlike.v1.PulsarLike/Consume", **RAW)(consume_requests())
        before = memory_mb(proc.proc.pid)
        with Client(proc.service_url) as client:
            producer = client.create_producer(topic, batching_enabled=False, max_pending_messages=50,
                                              block_if_queue_full=True)
            for i in range(entries):
                producer.send_async(i.to_bytes(4, "big") + b"x" * (size - 4), None)
            producer.flush()
        grown = memory_mb(proc.proc.pid, "VmHWM") - before
        offsets = []
        for raw in responses:
            response = pb.ConsumeResponse.FromString(raw)
            offsets.extend(e.entry_id for e in response.deliveries.entries)
            if len(offsets) >= entries:
                break
        stop.set()
        responses.cancel()
    # About 140 MiB of it is the same without any consumer (the tail cache, sends in flight); buffering
    # the deliveries would take at least the 400 MiB sent.
    assert grown < 300, f"the broker grew by {grown:.0f} MiB while its consumer read nothing"
    assert offsets == list(range(entries))


def test_garbage_on_streams_and_calls_is_one_warning_line_each_and_no_traceback(broker_process):
    proc = broker_process()
    with grpc.insecure_channel(proc.address) as channel:
        produce = channel.stream_stream("/pulsarlike.v1.PulsarLike/Produce", **RAW)
        consume = channel.stream_stream("/pulsarlike.v1.PulsarLike/Consume", **RAW)
        replies = [
            pb.ProduceResponse.FromString(next(produce(iter([b"\xff\xfe garbage"]), timeout=10))),
            pb.ProduceResponse.FromString(next(produce(iter([b"\x0a\x04\x0a\x02\xff\xfe"]), timeout=10))),
            pb.ConsumeResponse.FromString(next(consume(iter([b"\x0a\x80"]), timeout=10))),
            pb.ConsumeResponse.FromString(next(consume(iter([  # a valid message, not a subscribe
                pb.ConsumeRequest(flow=pb.Flow(permits=1)).SerializeToString()]), timeout=10))),
        ]
        unary = []
        for method in ("/pulsarlike.v1.PulsarLike/ListTopics", "/grpc.health.v1.Health/Check"):
            with pytest.raises(grpc.RpcError) as refused:
                channel.unary_unary(method, **RAW)(b"\xff\xff", timeout=10)
            unary.append(error_from_rpc(refused.value))
    assert all(isinstance(error_from_proto(r.error), InvalidMessage) for r in replies)
    assert all(isinstance(error, InvalidMessage) for error in unary)
    assert round_trip(proc.service_url) == b"still serving"
    assert proc.terminate() == 0
    stderr = proc.proc.stderr.read()
    assert "Traceback" not in stderr and " exc=" not in stderr
    warnings = [line for line in stderr.splitlines() if "event=bad_request" in line]
    assert len(warnings) == 6 and all("level=WARNING" in w and "peer=ipv4:127.0.0.1:" in w for w in warnings)


# -- in-process brokers with small limits --------------------------------------------------------------


@pytest.fixture(scope="module")
def limited_broker(tmp_path_factory):
    with Broker(data_dir=tmp_path_factory.mktemp("limited"), port=0, maxUnackedMessagesPerConsumer=10,
                maxStreamsPerConnection=3) as running:
        yield running


def test_a_shared_consumer_stops_at_max_unacked_messages_and_resumes_after_acks(limited_broker):
    topic = topic_name()
    with Client(limited_broker.service_url) as client:
        consumer = client.subscribe(topic, "capped", consumer_type=ConsumerType.Shared, receiver_queue_size=100)
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(25):
            producer.send(str(i).encode())
        first = [consumer.receive(timeout_millis=10_000) for _ in range(10)]
        with pytest.raises(Timeout):
            consumer.receive(timeout_millis=300)  # the broker holds the 11th back: 10 are unacked
        for message in first:
            consumer.acknowledge(message)
        second = [consumer.receive(timeout_millis=10_000) for _ in range(10)]
        assert [m.data() for m in first + second] == [str(i).encode() for i in range(20)]


def test_an_exclusive_consumer_is_not_capped_by_max_unacked_messages(limited_broker):
    # as in Pulsar, which applies maxUnackedMessagesPerConsumer to Shared and Key_Shared only
    topic = topic_name()
    with Client(limited_broker.service_url) as client:
        consumer = client.subscribe(topic, "free", consumer_type=ConsumerType.Exclusive, receiver_queue_size=100)
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(25):
            producer.send(str(i).encode())
        received = [consumer.receive(timeout_millis=10_000) for _ in range(25)]
        assert [m.data() for m in received] == [str(i).encode() for i in range(25)]


def test_a_client_over_the_stream_limit_gets_too_many_requests_while_other_clients_are_served(limited_broker):
    topic = topic_name()
    with Client(limited_broker.service_url) as greedy, Client(limited_broker.service_url) as other:
        held = [greedy.subscribe(topic, f"s{i}", consumer_type=ConsumerType.Shared) for i in range(3)]
        with pytest.raises(TooManyRequests, match="maxStreamsPerConnection=3") as refused:
            greedy.subscribe(topic, "one-too-many", consumer_type=ConsumerType.Shared)
        assert refused.value.retriable
        assert round_trip(limited_broker.service_url, b"served") == b"served"
        consumer = other.subscribe(topic, "other", consumer_type=ConsumerType.Shared)
        other.create_producer(topic).send(b"to the other client")
        assert consumer.receive(timeout_millis=10_000).data() == b"to the other client"
        held[0].close()

        def subscribed_again():
            try:
                return greedy.subscribe(topic, "after-close", consumer_type=ConsumerType.Shared)
            except TooManyRequests:
                return None
        assert wait_until(subscribed_again) is not None  # the closed stream's place is free again

