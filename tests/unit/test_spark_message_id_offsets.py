"""Source offsets on a broker without dense offsets: message id boundaries in the checkpoint and in users'
JSON offsets (connector/spark/message_id_offsets.py, offsets.py), and sharing a read limit (planning.py)."""
from __future__ import annotations

import json

import pytest

from connector.client.message_id import MessageId
from connector.spark import offsets as off
from connector.spark.message_id_offsets import (
    EARLIEST, IdOffset, from_json, holds_messages, is_after, is_within, of_message_id)
from connector.spark.offsets import TopicPartition
from connector.spark.planning import share_out

ORDERS = "persistent://public/default/orders"


def test_a_checkpoint_with_message_id_offsets_round_trips_as_canonical_json():
    offsets = {TopicPartition(ORDERS, 1): IdOffset(7, 41, -1), TopicPartition(ORDERS, 0): IdOffset(7, 3, 2)}
    stored = off.encode_source_offset(offsets, "spark-pulsarlike-1")
    text = json.dumps(stored)
    assert text == json.dumps(stored, sort_keys=True)  # Spark compares offsets as JSON strings
    assert '"0": {"batch": 2, "entry": 3, "ledger": 7}' in text
    decoded = off.decode_source_offset(json.loads(text))
    assert decoded.offsets == offsets and decoded.subscription == "spark-pulsarlike-1"


def test_dense_offsets_are_stored_as_before():
    stored = off.encode_source_offset({TopicPartition(ORDERS, -1): 12}, "s")
    assert stored["offsets"] == {ORDERS: {"-1": 12}}
    assert off.decode_source_offset(stored).offsets == {TopicPartition(ORDERS, -1): 12}


def test_users_may_give_a_message_id_as_an_object_or_as_pulsar_sparks_serialized_bytes():
    serialized = list(MessageId(-1, 9, 300, 4).serialize())
    signed = [b - 256 if b > 127 else b for b in serialized]  # Java's bytes, as pulsar-spark writes them
    text = json.dumps({"orders": {"0": {"ledger": 9, "entry": 5}, "1": signed, "2": 7}})
    given = off.parse_user_offsets("startingOffsets", text)
    assert given[TopicPartition(ORDERS, 0)] == IdOffset(9, 5, -1)
    assert given[TopicPartition(ORDERS, 1)] == IdOffset(9, 300, 4)
    assert given[TopicPartition(ORDERS, 2)] == 7


@pytest.mark.parametrize("value, says", [({"ledger": 1}, "lacks 'entry'"), ({"ledger": "1", "entry": 2}, "integers"),
                                         ([1, 2, 999], "byte array"), ([0x08], "not a serialized MessageId")])
def test_a_bad_message_id_names_the_option_and_the_expected_shape(value, says):
    with pytest.raises(ValueError, match="option startingOffsets") as raised:
        off.parse_user_offsets("startingOffsets", json.dumps({"orders": {"0": value}}))
    assert says in str(raised.value)


def test_a_range_holds_the_messages_after_its_start_up_to_and_including_its_end():
    start, end = IdOffset(5, 1, 1), IdOffset(5, 3, -1)
    inside = [MessageId(-1, 5, 1, 2), MessageId(-1, 5, 2, -1), MessageId(-1, 5, 3, 0), MessageId(-1, 5, 3, 9)]
    before = [MessageId(-1, 5, 1, 1), MessageId(-1, 5, 1, 0), MessageId(-1, 4, 99, -1)]
    after = [MessageId(-1, 5, 4, -1), MessageId(-1, 6, 0, 0)]
    assert all(is_after(m, start) and is_within(m, end) for m in inside)
    assert not any(is_after(m, start) for m in before)
    assert not any(is_within(m, end) for m in after)
    assert all(is_after(m, EARLIEST) for m in inside + before + after)


def test_the_whole_entry_sorts_after_its_batch_indexes():
    assert holds_messages(IdOffset(5, 3, 2), IdOffset(5, 3, -1))
    assert not holds_messages(IdOffset(5, 3, -1), IdOffset(5, 3, 7))
    assert not holds_messages(IdOffset(5, 3, -1), IdOffset(5, 3, -1))
    assert holds_messages(EARLIEST, IdOffset(0, 0, 0))


def test_the_last_message_of_a_batch_names_its_whole_entry_like_the_brokers_last_message_id():
    assert of_message_id(MessageId.of(5, 3, 0, batch_index=3, batch_size=4)) == IdOffset(5, 3, -1)
    assert of_message_id(MessageId.of(5, 3, 0, batch_index=2, batch_size=4)) == IdOffset(5, 3, 2)
    assert of_message_id(MessageId(-1, 5, 3, 2)) == IdOffset(5, 3, 2)  # batch size unknown: as given


def test_a_read_limit_is_shared_in_proportion_to_what_each_partition_has_waiting():
    a, b, c = (TopicPartition(ORDERS, i) for i in range(3))
    assert share_out({a: 90, b: 10}, 20) == {a: 18, b: 2}
    assert share_out({a: 5, b: 5, c: 5}, 10) == {a: 4, b: 3, c: 3}
    assert share_out({a: 3, b: 0}, 10) == {a: 3, b: 0}
    assert from_json({"ledger": 1, "entry": 2, "batch": 3}) == IdOffset(1, 2, 3)


def test_on_pulsarlike_a_users_message_id_starts_after_the_message_it_names():
    from connector.spark.planning import resolve_user_offsets
    from connector.spark.source_admin import Bounds

    tp = TopicPartition(ORDERS, 0)
    given = {tp: IdOffset(0, 40, 2)}  # pulsarlike's id of offset 42 (entry at 40, batch index 2)
    assert resolve_user_offsets("startingOffsets", given, {tp: Bounds(0, 100)}, True) == {tp: 43}


def test_a_dense_offset_given_for_a_broker_without_them_is_refused_naming_it():
    from connector.spark.offset_kinds import Bounds, IdKind

    resolve_id_offsets = IdKind.resolve
    tp = TopicPartition(ORDERS, 0)
    last = {tp: Bounds(EARLIEST, IdOffset(3, 9, -1)), TopicPartition(ORDERS, 1): Bounds(EARLIEST, IdOffset(3, 4, -1))}
    resolved = resolve_id_offsets("startingOffsets", {tp: off.LATEST}, last, True)
    assert resolved == {tp: IdOffset(3, 9, -1), TopicPartition(ORDERS, 1): EARLIEST}
    with pytest.raises(ValueError, match="offset 7 of .*orders partition 0 is a dense offset"):
        resolve_id_offsets("startingOffsets", {tp: 7}, last, True)


def test_options_a_broker_without_dense_offsets_cannot_honour_are_refused_naming_them():
    from broker_core.errors import NotSupported
    from connector.spark.any_broker import check_supported
    from connector.spark.options import parse_source_options

    opts = parse_source_options({"service.url": "pulsar://127.0.0.1:6650", "topicsPattern": "orders-.*",
                                 "readCompacted": "true"}, streaming=True)
    with pytest.raises(NotSupported, match="topicsPattern .*readCompacted"):
        check_supported(opts)


def test_a_checkpoint_of_the_other_kind_of_broker_is_refused_asking_for_a_new_checkpoint():
    from broker_core.errors import NotSupported
    from connector.spark.offset_kinds import IdKind
    from connector.spark.options import parse_source_options
    from connector.spark.stream_reader import PulsarLikeStreamReader

    opts = parse_source_options({"service.url": "pulsar://127.0.0.1:6650", "topic": "orders"}, streaming=True)
    with_ids = off.encode_source_offset({TopicPartition(ORDERS, -1): IdOffset(3, 4, -1)}, "s")
    dense = off.encode_source_offset({TopicPartition(ORDERS, -1): 12}, "s")
    with pytest.raises(NotSupported, match="message id offsets .*new checkpoint location"):
        PulsarLikeStreamReader(opts, calls=object()).commit(with_ids)
    with pytest.raises(NotSupported, match="dense offsets .*new checkpoint location"):
        PulsarLikeStreamReader(opts, kind=IdKind(opts, calls=object())).commit(dense)
