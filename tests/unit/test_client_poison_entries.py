"""A consumer meeting a poison entry, without a broker: one DecodeFailure, nothing built per claimed message,
its permits returned and its offsets acknowledged as one range."""
from __future__ import annotations

import tracemalloc

import pytest

from broker_core.errors import MessageDecodeError
from broker_core.protocol import broker_pb2

from tests.poison import INT32_MAX, huge_count_entry, plain
from tests.unit.test_client_flow import _consumer, _flows


def delivery(*entries):
    """A Deliveries response of (entry bytes, entry_id, num_messages) triples."""
    return broker_pb2.ConsumeResponse(deliveries=broker_pb2.Deliveries(entries=[
        broker_pb2.DeliveredEntry(data=data, ledger_id=0, entry_id=entry_id, num_messages=num)
        for data, entry_id, num in entries]))


def _acked_ranges(sub):
    return [(r.start, r.end) for request in sub._stream.sent if request.WhichOneof("request") == "ack"
            for r in request.ack.ranges]


def test_entry_claiming_int32_max_messages_becomes_one_failure_without_building_per_message():
    sub = _consumer()
    tracemalloc.start()
    try:
        sub._on_response(delivery((huge_count_entry(1), 5, INT32_MAX)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    [failure] = sub.owner.delivered
    assert failure.error.offsets == range(5, 5 + INT32_MAX)
    assert f"offsets 5..{4 + INT32_MAX}" in str(failure.error)
    assert peak < 1 << 20


def test_the_permits_of_a_poison_entry_come_back_at_once():
    sub = _consumer(queue_size=10)
    sub._on_response(delivery((huge_count_entry(1), 0, INT32_MAX)))
    assert _flows(sub) == [INT32_MAX - 1]  # every claimed message but the failure the application takes


def test_permits_beyond_a_uint32_go_out_in_several_flows():
    sub = _consumer(queue_size=10)
    sub._on_response(delivery((huge_count_entry(1), 0, INT32_MAX), (huge_count_entry(2), INT32_MAX, INT32_MAX),
                              (huge_count_entry(3), 2 * INT32_MAX, INT32_MAX)))
    flows = _flows(sub)
    assert sum(flows) == 3 * (INT32_MAX - 1) and max(flows) <= 0xFFFF_FFFF


def test_taking_the_failure_acknowledges_its_offsets_as_one_range():
    sub = _consumer()
    sub._on_response(delivery((huge_count_entry(1), 7, INT32_MAX)))
    with pytest.raises(MessageDecodeError):
        sub.owner.delivered[0]._refill()
    assert _acked_ranges(sub) == [(7, 7 + INT32_MAX)]


def test_messages_after_a_poison_entry_in_the_same_delivery_still_arrive():
    sub = _consumer()
    sub._on_response(delivery((huge_count_entry(1), 0, INT32_MAX), (plain(2, b"after"), INT32_MAX, 1)))
    failure, message = sub.owner.delivered
    assert isinstance(failure.error, MessageDecodeError) and message.data() == b"after"


def test_a_small_undecodable_entry_still_lists_its_offsets_in_a_tuple():
    sub = _consumer()
    sub._on_response(delivery((plain(1, b"x")[:-1] + b"y", 3, 1)))  # CRC mismatch
    assert sub.owner.delivered[0].error.offsets == (3,)
