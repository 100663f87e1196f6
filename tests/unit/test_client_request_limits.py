"""The producer never builds a request above what the broker reads (its maxMessageSize plus a margin): entries
are packed into requests of at most max_message_size bytes, and an entry the broker would refuse fails alone
with MessageTooBig instead of ending the stream for every send."""
from __future__ import annotations

from broker_core.errors import MessageTooBig
from broker_core.protocol import broker_pb2
from broker_core.protocol.entry_limits import FRAME_PADDING
from connector.client.producer.callbacks import SyncWaiter
from connector.client.transport.grpc.streams import pack_within
from tests.unit import producer_fakes as fakes

LIMIT = 1000


def test_queued_entries_are_packed_into_requests_of_at_most_max_message_size() -> None:
    close = broker_pb2.ProduceRequest(close=broker_pb2.CloseProducer())
    items = [(i, i, 1, bytes([i % 256]) * (1 + i % 90)) for i in range(300)]  # small entries: framing counts
    entries = [fakes.entry(*item) for item in items]
    requests = pack_within([*entries[:150], close, *entries[150:]], LIMIT)
    assert all(r.ByteSize() <= LIMIT + 16 for r in requests)  # + the request's own tag and length
    kinds = [r.WhichOneof("request") for r in requests]
    assert kinds.count("close") == 1 and len(requests) > 3
    sent = [(e.sequence_id, e.highest_sequence_id, e.num_messages, e.data)
            for r in requests if r.WhichOneof("request") == "send" for e in r.send.entries]
    assert sent == items


def test_an_entry_above_max_message_size_but_within_the_framing_goes_alone() -> None:
    big = fakes.entry(1, 1, 1, b"x" * (LIMIT + FRAME_PADDING))
    requests = pack_within([fakes.entry(0, 0, 1, b"a"), big, fakes.entry(2, 2, 1, b"b")], LIMIT)
    assert [[e.sequence_id for e in r.send.entries] for r in requests] == [[0], [1], [2]]


def test_an_entry_the_broker_would_refuse_fails_alone_and_the_producer_goes_on(monkeypatch) -> None:
    producer, (part,) = fakes.make_producer(monkeypatch, max_message_size=LIMIT, batching_max_messages=100,
                                            batching_max_bytes=1 << 20)
    results: list = []
    for _ in range(40):  # one batch of 40 x 300 bytes: above maxMessageSize + FRAME_PADDING
        producer.send_async(b"y" * 300, lambda result, msg_id: results.append(result))
    part.flush_batch()
    fakes.timer(part).fire_all()
    assert len(results) == 40 and all(r.name == "MessageTooBig" for r in results)
    assert fakes.stream(part).sent == [] and part._pending_messages == 0
    producer.send_async(b"small", None)
    part.flush_batch()
    assert len(fakes.stream(part).sent) == 1  # the next batch goes out as usual


def test_the_refusal_says_what_to_change(monkeypatch) -> None:
    _, (part,) = fakes.make_producer(monkeypatch, max_message_size=LIMIT)
    waiter = SyncWaiter()  # what a blocking send waits on
    part.add(b"x", waiter, {"note": "n" * (LIMIT + FRAME_PADDING)}, None, None, None, 0, None, True)
    fakes.timer(part).fire_all()
    assert waiter.wait(0)
    error = waiter.error
    assert isinstance(error, MessageTooBig) and error.limit == LIMIT and error.size > LIMIT + FRAME_PADDING
    assert "properties" in error.message and "batching_max_allowed_size_in_bytes" in error.message
