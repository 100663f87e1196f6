"""Packed positions (a broker without dense offsets) and the message ids of the binary transport's commands."""
from __future__ import annotations

import threading

import pytest

from broker_core import errors
from broker_core.protocol.ack_set import from_words
from connector.client.transport.binary.positions import (BATCH_BITS, ENTRY_BITS, ENTRY_STRIDE, LEDGER_BITS,
                                                         LEDGERS_BELOW, MAX_BATCH_SIZE, EntryMemory, PackedPositions,
                                                         WireIds)
from connector.client.message_id import MessageId
from connector.client.transport import DENSE

TOPIC = "persistent://public/default/t"
BASE = 123_456_789


def packed() -> PackedPositions:
    return PackedPositions(base_ledger=BASE)


def test_the_layout_fits_a_signed_64_bit_field():
    assert LEDGER_BITS + ENTRY_BITS + BATCH_BITS == 63
    positions = packed()
    top = positions.pack(BASE + (1 << LEDGER_BITS) - LEDGERS_BELOW - 1, (1 << ENTRY_BITS) - 1, (1 << BATCH_BITS) - 1)
    assert top == (1 << 63) - 1


def test_positions_order_as_message_ids_do():
    positions = packed()
    ids = [(ledger, entry, index) for ledger in (BASE - 5, BASE, BASE + 1, BASE + 70_000)
           for entry in (0, 1, 49_999, 50_000) for index in (0, 1, 999)]
    packed_ids = [positions.pack(*triple) for triple in ids]
    assert packed_ids == sorted(packed_ids)
    assert len(set(packed_ids)) == len(ids)


def test_the_messages_of_an_entry_have_consecutive_positions_and_one_past_the_last_is_before_the_next_entry():
    positions = packed()
    first = positions.pack(BASE, 7, 0)
    assert [positions.pack(BASE, 7, i) for i in range(5)] == list(range(first, first + 5))
    assert first + 5 < positions.pack(BASE, 8, 0) == first + ENTRY_STRIDE


@pytest.mark.parametrize("ledger,entry,index", [(BASE, 0, 0), (BASE - LEDGERS_BELOW, 5, 3), (BASE + 1, 50_000, 999),
                                                (BASE + 3_000_000, (1 << 24) - 1, 131_071)])
def test_entry_of_gives_the_real_ids_back(ledger, entry, index):
    positions = packed()
    assert positions.entry_of(positions.pack(ledger, entry, index)) == (ledger, entry, index)


def test_message_id_is_the_brokers_real_id_and_position_its_inverse():
    positions = packed()
    first = positions.pack(BASE + 2, 41, 0)
    mid = positions.message_id(BASE + 2, first, 3, batch_index=2, batch_size=5, topic=TOPIC)
    assert (mid.ledger_id(), mid.entry_id(), mid.partition(), mid.batch_index(), mid.batch_size()) == \
        (BASE + 2, 41, 3, 2, 5)
    assert mid.topic_name() == TOPIC
    assert positions.position(mid) == first + 2
    assert positions.position(MessageId.deserialize(mid.serialize())) == first + 2


def test_the_first_ledger_seen_fixes_the_base():
    positions = PackedPositions()
    assert positions.base_ledger is None
    positions.position(MessageId(0, 987_654, 3, -1))
    assert positions.base_ledger == 987_654
    assert positions.entry_of(positions.pack(987_000, 1, 0)) == (987_000, 1, 0)  # an older topic's ledger fits


def test_earliest_and_latest_are_numbered_as_dense_ones():
    assert packed().position(MessageId.earliest) == DENSE.position(MessageId.earliest) == -1
    assert packed().position(MessageId.latest) == DENSE.position(MessageId.latest)


def test_the_limits_are_the_documented_ones():
    """Module docstring: ~1M older and ~3.1M newer ledgers, 16.7M entries per ledger, 131,072 messages per batch."""
    assert (LEDGERS_BELOW, (1 << LEDGER_BITS) - LEDGERS_BELOW) == (1_048_576, 3_145_728)
    assert (1 << ENTRY_BITS, MAX_BATCH_SIZE) == (16_777_216, 131_072)


@pytest.mark.parametrize("ledger,entry,index,words,field,value,limit", [
    (BASE - LEDGERS_BELOW - 1, 0, 0, "ledger", "ledger_id", BASE - LEDGERS_BELOW - 1,
     BASE + (1 << LEDGER_BITS) - LEDGERS_BELOW - 1),
    (BASE + (1 << LEDGER_BITS), 0, 0, "ledger", "ledger_id", BASE + (1 << LEDGER_BITS),
     BASE + (1 << LEDGER_BITS) - LEDGERS_BELOW - 1),
    (BASE, 1 << ENTRY_BITS, 0, "entry id", "entry_id", 1 << ENTRY_BITS, (1 << ENTRY_BITS) - 1),
    (BASE, -1, 0, "entry id", "entry_id", -1, (1 << ENTRY_BITS) - 1),
    (BASE, 0, 1 << BATCH_BITS, "batch index", "batch_index", 1 << BATCH_BITS, (1 << BATCH_BITS) - 1),
])
def test_an_id_beyond_the_limits_is_refused_naming_the_field_its_value_and_the_limit(ledger, entry, index, words,
                                                                                    field, value, limit):
    with pytest.raises(errors.NotSupported, match=words) as refused:
        packed().pack(ledger, entry, index)
    assert (refused.value.field, refused.value.value, refused.value.limit) == (field, value, limit)


def test_a_batch_of_70_000_messages_fits_and_its_last_position_stays_before_the_next_entry():
    ids = wire()
    first = ids.delivered(BASE, 10, 70_000)
    assert ids.positions.entry_of(first + 69_999) == (BASE, 10, 69_999)
    assert first + 70_000 < ids.positions.pack(BASE, 11, 0)
    assert triples(ids.individual([(first + 69_999, first + 70_000)]))[0][:2] == (BASE, 10)


def test_a_batch_too_large_for_the_layout_is_refused():
    with pytest.raises(errors.NotSupported, match="at most 131072 messages") as refused:
        packed().check_batch_size(BASE, 0, 131_073)
    assert (refused.value.field, refused.value.value, refused.value.limit) == ("num_messages_in_batch", 131_073,
                                                                               131_072)
    packed().check_batch_size(BASE, 0, 131_072)


def test_a_position_this_client_did_not_make_is_refused():
    with pytest.raises(errors.NotSupported):
        PackedPositions().entry_of(5)


# --- message ids of commands ------------------------------------------------------------------------------
def wire(positions=None) -> WireIds:
    return WireIds(positions or packed(), EntryMemory(), TOPIC, 2)


def triples(ids):
    return [(m.ledgerId, m.entryId, m.batch_index, from_words(m.ack_set) if m.ack_set else None) for m in ids]


def test_a_whole_entry_is_acknowledged_by_its_id_and_part_of_a_batch_with_an_ack_set():
    ids = wire()
    batch = ids.delivered(BASE, 10, 4)
    single = ids.delivered(BASE, 11, 1)
    acks = ids.individual([(batch, batch + 4), (single, single + 1)])
    assert triples(acks) == [(BASE, 10, -1, None), (BASE, 11, -1, None)]
    partial = ids.individual([(batch + 1, batch + 3)])
    assert triples(partial) == [(BASE, 10, -1, 0b1001)]  # set bits: messages 0 and 3 still unacknowledged
    assert partial[0].partition == 2


def test_acks_of_an_entry_delivered_on_an_earlier_stream_still_name_it():
    memory = EntryMemory()
    positions = packed()
    first = WireIds(positions, memory, TOPIC, 2).delivered(BASE, 10, 4)
    later = WireIds(positions, memory, TOPIC, 2)
    assert triples(later.individual([(first + 3, first + 4)])) == [(BASE, 10, -1, 0b0111)]


def test_part_of_a_forgotten_batch_is_left_unacknowledged_rather_than_acknowledging_all_of_it():
    ids = wire()
    first = ids.positions.pack(BASE, 10, 0)
    assert ids.individual([(first + 2, first + 3)]) == []
    assert triples(ids.individual([(first, first + 1)])) == [(BASE, 10, -1, None)]  # an unbatched message


def test_a_cumulative_ack_inside_a_batch_covers_only_the_entries_before_it():
    ids = wire()
    first = ids.delivered(BASE, 10, 4)
    assert triples([ids.cumulative(first + 3)]) == [(BASE, 10, -1, None)]
    assert triples([ids.cumulative(first + 1)]) == [(BASE, 9, -1, None)]
    single = ids.delivered(BASE, 11, 1)
    assert triples([ids.cumulative(single)]) == [(BASE, 11, -1, None)]


def test_a_redelivery_names_each_entry_its_ranges_touch_once():
    ids = wire()
    a = ids.delivered(BASE, 10, 4)
    b = ids.delivered(BASE + 1, 0, 1)
    assert triples(ids.redeliver([(a + 1, a + 2), (a + 3, a + 4), (b, b + 1)])) == \
        [(BASE, 10, -1, None), (BASE + 1, 0, -1, None)]


def test_a_start_inside_a_batch_names_its_entry_and_index():
    ids = wire()
    first = ids.positions.pack(BASE, 10, 0)
    assert triples([ids.start(first + 2)]) == [(BASE, 10, 2, None)]
    assert triples([ids.start(first)]) == [(BASE, 10, -1, None)]


def test_dense_ids_name_offsets_as_our_broker_reads_them():
    ids = wire(DENSE)
    batch = ids.delivered(7, 100, 3)  # segment 7, offsets 100..102
    assert batch == 100
    assert triples(ids.individual([(100, 103)])) == [(0, 100, -1, None)]
    assert triples(ids.individual([(101, 102)])) == [(0, 101, -1, None)]  # inside an entry: that message alone
    assert triples(ids.individual([(100, 101)])) == [(0, 100, -1, 0b110)]
    assert triples([ids.cumulative(100)]) == [(0, 100, 0, None)]  # its first message, not the whole entry
    assert triples([ids.start(101)]) == [(0, 101, -1, None)]


def test_an_absurd_range_names_a_bounded_number_of_ids():
    ids = wire(DENSE)
    assert len(ids.individual([(0, 1 << 31)])) == 10_000


def test_the_memory_of_delivered_entries_is_bounded_per_topic():
    memory = EntryMemory(limit=3)
    sizes, other = memory.of(TOPIC), memory.of(TOPIC + "-2")
    for entry in range(5):
        memory.add(sizes, entry, 2)
    memory.add(other, 0, 1)
    assert len(memory) == 4
    assert sizes.get(0) is None and sizes.get(4) == 2 and memory.of(TOPIC) is sizes


def test_packing_is_thread_safe_about_the_base():
    positions = PackedPositions()
    barrier = threading.Barrier(4)
    seen = []

    def pack(ledger):
        barrier.wait()
        seen.append(positions.pack(ledger, 0, 0))

    threads = [threading.Thread(target=pack, args=(BASE + i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    base = positions.base_ledger
    assert base in {BASE + i for i in range(4)}
    assert sorted(positions.entry_of(p)[0] for p in seen) == [BASE + i for i in range(4)]
