"""A consumer meeting a poison entry, without a broker: one failure in its place, nothing built per claimed
message, its permits returned and its offsets acknowledged as one range."""
from __future__ import annotations

import tracemalloc

import pytest

from broker_core.errors import MessageDecodeError
from connector.client.transport.events import Entry

from tests.poison import INT32_MAX, huge_count_entry, plain
from tests.unit.consumer_fakes import Harness


def entries(*triples):
    """Delivered entries of (entry bytes, entry_id, num_messages) triples."""
    return [Entry(data, 0, entry_id, num)
            for data, entry_id, num in triples]


def _acked_ranges(h):
    h.sub.stream.flush_acks()
    return [r for ack in h.sent("ack") for r in ack.ranges]


def test_entry_claiming_int32_max_messages_becomes_one_failure_without_building_per_message():
    h = Harness()
    tracemalloc.start()
    try:
        h.deliver(*entries((huge_count_entry(1), 5, INT32_MAX)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert h.consumer.buffered() == 1
    with pytest.raises(MessageDecodeError) as info:
        h.consumer.receive(0)
    assert info.value.offsets == range(5, 5 + INT32_MAX)
    assert f"offsets 5..{4 + INT32_MAX}" in str(info.value)
    assert peak < 1 << 20


def test_the_permits_of_a_poison_entry_come_back_at_once():
    h = Harness(queue_size=10)
    h.deliver(*entries((huge_count_entry(1), 0, INT32_MAX)))
    assert h.flows() == [INT32_MAX - 1]  # every claimed message but the failure the application takes


def test_permits_beyond_a_uint32_go_out_in_several_flows():
    h = Harness(queue_size=10)
    h.deliver(*entries((huge_count_entry(1), 0, INT32_MAX), (huge_count_entry(2), INT32_MAX, INT32_MAX),
                       (huge_count_entry(3), 2 * INT32_MAX, INT32_MAX)))
    flows = h.flows()
    assert sum(flows) == 3 * (INT32_MAX - 1) and max(flows) <= 0xFFFF_FFFF


def test_taking_the_failure_acknowledges_its_offsets_as_one_range():
    h = Harness()
    h.deliver(*entries((huge_count_entry(1), 7, INT32_MAX)))
    with pytest.raises(MessageDecodeError):
        h.consumer.receive(0)
    assert _acked_ranges(h) == [(7, 7 + INT32_MAX)]


def test_messages_after_a_poison_entry_in_the_same_delivery_still_arrive():
    h = Harness()
    h.deliver(*entries((huge_count_entry(1), 0, INT32_MAX), (plain(2, b"after"), INT32_MAX, 1)))
    with pytest.raises(MessageDecodeError):
        h.consumer.receive(0)
    assert h.consumer.receive(0).data() == b"after"


def test_a_small_undecodable_entry_still_lists_its_offsets_in_a_tuple():
    h = Harness()
    h.deliver(*entries((plain(1, b"x")[:-1] + b"y", 3, 1)))  # CRC mismatch
    with pytest.raises(MessageDecodeError) as info:
        h.consumer.receive(0)
    assert info.value.offsets == (3,)
