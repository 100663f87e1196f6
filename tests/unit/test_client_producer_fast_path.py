"""The producer's payload-only fast path builds exactly the entries the general path builds."""
from __future__ import annotations

import pytest

from broker_core.protocol import broker_pb2, codec
from connector.client.producer import batching
from connector.client.transport.grpc import streams as grpc_streams
from connector.client.producer.callbacks import SyncWaiter
from connector.client.producer.batching import BatchContainer
from connector.client.producer.partition import PartitionProducer
from connector.client.producer import Producer
from tests.unit import producer_fakes as fakes


@pytest.fixture
def make_producer(monkeypatch):
    def make(**overrides) -> tuple[Producer, PartitionProducer]:
        producer, (part,) = fakes.make_producer(monkeypatch, **overrides)
        return producer, part
    return make


def _entries(part: PartitionProducer) -> list[broker_pb2.SendEntry]:
    (request,) = grpc_streams.pack_requests(fakes.stream(part).sent)
    assert request.WhichOneof("request") == "send"
    return list(request.send.entries)


def _expected(payloads: list[bytes], first_sequence_id: int) -> bytes:
    container = BatchContainer(max_messages=len(payloads), max_bytes=1 << 30)
    for i, payload in enumerate(payloads):
        container.add(payload, first_sequence_id + i, None)
    return container.build("prod", 0).data


def _payload_of(data: bytes) -> tuple[int, bytes]:
    meta, payload = codec.decode_entry(data)
    return meta.num_messages_in_batch, bytes(payload)


def test_payload_only_messages_batch_as_the_general_path_does(make_producer):
    producer, part = make_producer(batching_max_messages=4)
    payloads = [b"a" * n for n in (1, 200, 3, 4095, 5, 6, 7)]
    for payload in payloads:
        producer.send_async(payload, None)
    part.flush_batch()
    entries = _entries(part)
    assert [(e.sequence_id, e.highest_sequence_id, e.num_messages) for e in entries] == \
        [(0, 3, 4), (4, 6, 3)]
    assert _payload_of(entries[0].data) == _payload_of(_expected(payloads[:4], 0))
    assert _payload_of(entries[1].data) == _payload_of(_expected(payloads[4:], 4))


def test_the_byte_limit_closes_a_batch_on_the_fast_path(make_producer):
    producer, part = make_producer(batching_max_messages=1000, batching_max_bytes=350)
    for _ in range(5):
        producer.send_async(b"x" * 100, None)
    part.flush_batch()
    # Three 106-byte framed messages fill 318 bytes; a fourth would not fit.
    assert [e.num_messages for e in _entries(part)] == [3, 2]


def test_large_payloads_leave_the_fast_path_with_the_same_bytes(make_producer):
    producer, part = make_producer()
    payloads = [b"s", b"L" * 5000, b"t"]
    for payload in payloads:
        producer.send_async(payload, None)
    part.flush_batch()
    (entry,) = _entries(part)
    assert _payload_of(entry.data) == _payload_of(_expected(payloads, 0))


def test_an_explicit_sequence_id_is_written_and_does_not_move_the_next_one(make_producer):
    producer, part = make_producer()
    producer.send_async(b"a", None)
    producer.send_async(b"b", None, sequence_id=50)
    producer.send_async(b"c", None)
    part.flush_batch()
    (entry,) = _entries(part)
    _, payload = codec.decode_entry(entry.data)
    metas = [m for m, _ in codec.decode_batch(payload, 3)]
    assert [m.sequence_id for m in metas] == [None, 50, 1]  # as add() always did


def test_callbacks_keep_their_order(make_producer):
    producer, part = make_producer()
    for name in "abcde":
        producer.send_async(name.encode(), name)
    assert part._container.callbacks == list("abcde")


def test_a_full_queue_is_reported_on_the_fast_path_too(make_producer):
    producer, part = make_producer(max_pending_messages=2)
    results = []
    for _ in range(3):
        producer.send_async(b"x", lambda result, msg_id: results.append(result))
    assert [r.name for r in results] == ["ProducerQueueIsFull"]
    assert part._pending_messages == 2


def test_a_closed_producer_refuses_payload_only_messages(make_producer):
    from broker_core import errors

    producer, part = make_producer()
    producer.send_async(b"x", None)
    part.fail(errors.ConnectError("gone"))
    with pytest.raises(errors.ConnectError):
        producer.send_async(b"y", None)


_receipt = fakes.receipt


def _fields(mid):
    return (mid.ledger_id(), mid.entry_id(), mid.partition(), mid.batch_index(), mid.batch_size(), mid.topic_name())


def test_a_batch_receipt_gives_each_callback_ok_and_its_own_message_id(make_producer):
    from connector import MessageId, Result

    producer, part = make_producer()
    got = []
    for i in range(3):
        producer.send_async(b"m", lambda result, mid, i=i: got.append((i, result, mid)))
    producer.send_async(b"m", None)  # no callback: nothing to call
    part.flush_batch()
    (entry,) = _entries(part)
    fakes.respond(part, _receipt(entry))
    topic = "persistent://public/default/t"
    assert [(i, r) for i, r, _ in got] == [(0, Result.Ok), (1, Result.Ok), (2, Result.Ok)]
    assert [_fields(mid) for _, _, mid in got] == \
        [_fields(MessageId.of(7, 100, -1, i, 4, topic)) for i in range(3)]
    assert got[1][2] == MessageId(-1, 7, 100, 1) and not fakes.pending(part)


def test_a_failing_send_callback_does_not_stop_the_next_ones(make_producer):
    producer, part = make_producer()
    got = []

    def failing(result, mid):
        raise RuntimeError("user bug")
    producer.send_async(b"a", failing)
    producer.send_async(b"b", lambda result, mid: got.append(mid.batch_index()))
    part.flush_batch()
    fakes.respond(part, _receipt(_entries(part)[0]))
    assert got == [1]


def test_a_blocking_send_behind_async_messages_gets_its_id_from_the_same_receipt(make_producer):
    import threading

    producer, part = make_producer()
    got = []
    producer.send_async(b"a", lambda result, mid: got.append(mid.batch_index()))
    ids = []
    sender = threading.Thread(target=lambda: ids.append(producer.send(b"b")))
    sender.start()
    while not _entries(part):
        threading.Event().wait(0.001)
    fakes.respond(part, _receipt(_entries(part)[0]))
    sender.join(5)
    assert got == [0] and _fields(ids[0])[:5] == (7, 100, -1, 1, 2)


def test_queued_entries_are_packed_into_one_send_batch_per_run():
    close = broker_pb2.ProduceRequest(close=broker_pb2.CloseProducer())
    requests = grpc_streams.pack_requests(
        [fakes.entry(0, 9, 10, b"e0"), fakes.entry(10, 10, 1, b"e1"), close, fakes.entry(11, 12, 2, b"e2")])
    assert [r.WhichOneof("request") for r in requests] == ["send", "close", "send"]
    assert [(e.sequence_id, e.highest_sequence_id, e.num_messages, e.data)
            for e in requests[0].send.entries] == [(0, 9, 10, b"e0"), (10, 10, 1, b"e1")]
    assert [e.data for e in requests[2].send.entries] == [b"e2"]


def test_one_publish_delay_timer_serves_batch_after_batch(make_producer, monkeypatch):
    clock = fakes.use_clock(monkeypatch)
    producer, part = make_producer(batching_max_messages=2, batching_max_publish_delay_ms=10)
    timer = fakes.timer(part)
    for _ in range(5):  # two full batches and an open one
        producer.send_async(b"x", None)
    assert len(timer.calls) == 1 and timer.calls[0][0] == pytest.approx(0.010)
    clock.now += 0.004  # the timer was armed by the first batch; the open one is 4 ms old
    fakes.timer(part).calls.pop()[1]()
    (rearmed,) = timer.calls
    assert rearmed[0] == pytest.approx(0.006) and len(_flushed(part)) == 2
    clock.now += 0.006
    timer.calls.pop()[1]()
    assert len(_flushed(part)) == 3 and not timer.calls  # nothing open: the next batch arms it


def test_the_timer_finding_no_open_batch_lets_the_next_one_arm_it(make_producer, monkeypatch):
    clock = fakes.use_clock(monkeypatch)
    producer, part = make_producer(batching_max_messages=2)
    producer.send_async(b"x", None)
    producer.send_async(b"y", None)  # full: sent at once
    clock.now += 0.010
    fakes.timer(part).calls.pop()[1]()
    producer.send_async(b"z", None)
    assert len(fakes.timer(part).calls) == 1


def _flushed(part: PartitionProducer) -> list:
    return [item for item in fakes.stream(part).sent if type(item) is batching.PendingEntry]


def test_a_sync_waiter_times_out_until_completed_and_tolerates_a_second_completion():
    waiter = SyncWaiter()
    assert not waiter.wait(0.001)
    waiter.complete(None, "id-1")
    assert waiter.wait(None) and waiter.message_id == "id-1" and waiter.error is None
    waiter.complete(None, "id-1")  # as Event.set, a repeated completion does not raise


def test_send_batch_requests_are_capped_in_bytes(monkeypatch):
    monkeypatch.setattr(grpc_streams, "MAX_REQUEST_BYTES", 10)
    requests = grpc_streams.pack_requests([fakes.entry(0, 0, 1, b"1234"), fakes.entry(1, 1, 1, b"5678"),
                                       fakes.entry(2, 2, 1, b"90"), fakes.entry(3, 3, 1, b"x" * 25),
                                       fakes.entry(4, 4, 1, b"y")])
    assert [[e.data for e in r.send.entries] for r in requests] == \
        [[b"1234", b"5678", b"90"], [b"x" * 25], [b"y"]]  # an entry above the cap goes alone
