"""``MessageId`` behaves as pulsar-client's: constructor, accessors, text, sentinels, ordering, and the bytes
of ``serialize()`` -- checked against the official ``pulsar-client`` package, both ways."""
from __future__ import annotations

import pytest

from connector import MessageId

pulsar = pytest.importorskip("pulsar")  # the dev extra installs pulsar-client

SAMPLES = [(-1, 5, 6, -1), (0, 5, 6, -1), (3, 5, 6, 0), (2, 0, 0, -1), (1, 2, 3, 4), (7, 2**40, 2**33, 999)]


def _fields(mid) -> tuple[int, int, int, int]:
    return mid.partition(), mid.ledger_id(), mid.entry_id(), mid.batch_index()


def test_the_constructor_takes_pulsar_clients_arguments_in_its_order():
    mid = MessageId(partition=1, ledger_id=2, entry_id=3, batch_index=4)
    assert _fields(mid) == (1, 2, 3, 4) and MessageId(1, 2, 3, 4) == mid


def test_the_accessors_are_methods_as_in_pulsar_client():
    mid = MessageId(1, 2, 3, 4)
    assert (mid.ledger_id(), mid.entry_id(), mid.partition(), mid.batch_index()) == (2, 3, 1, 4)


@pytest.mark.parametrize("args", SAMPLES)
def test_str_is_ledger_entry_partition_batch_as_pulsar_client_prints_it(args):
    assert str(MessageId(*args)) == str(pulsar.MessageId(*args))


def test_earliest_and_latest_are_pulsar_clients_values():
    assert str(MessageId.earliest) == str(pulsar.MessageId.earliest) == "(-1,-1,-1,-1)"
    assert str(MessageId.latest) == str(pulsar.MessageId.latest)
    assert MessageId.earliest.serialize() == pulsar.MessageId.earliest.serialize()
    assert MessageId.latest.serialize() == pulsar.MessageId.latest.serialize()
    assert MessageId() == MessageId.earliest and MessageId.earliest.is_earliest()


@pytest.mark.parametrize("args", SAMPLES)
def test_serialize_writes_the_bytes_pulsar_client_writes(args):
    assert MessageId(*args).serialize() == pulsar.MessageId(*args).serialize()


@pytest.mark.parametrize("args", SAMPLES)
def test_an_id_serialized_here_loads_in_pulsar_client_and_back(args):
    theirs = pulsar.MessageId.deserialize(MessageId(*args).serialize())
    assert _fields(theirs) == args
    assert MessageId.deserialize(theirs.serialize()) == MessageId(*args)


@pytest.mark.parametrize("args", SAMPLES)
def test_an_id_serialized_by_pulsar_client_loads_here_and_back(args):
    ours = MessageId.deserialize(pulsar.MessageId(*args).serialize())
    assert _fields(ours) == args
    assert _fields(pulsar.MessageId.deserialize(ours.serialize())) == args


def test_the_batch_size_of_a_received_message_survives_the_round_trip():
    mid = MessageId.of(7, 8, 2, 1, 5)
    theirs = pulsar.MessageId.deserialize(mid.serialize())
    assert theirs.serialize() == mid.serialize()
    assert MessageId.deserialize(theirs.serialize()).batch_size() == 5


def test_deserialize_takes_the_topic_it_belongs_to():
    mid = MessageId.deserialize(MessageId(0, 1, 2).serialize(), topic="persistent://public/default/t-partition-0")
    assert mid.topic_name() == "persistent://public/default/t-partition-0"


def test_bytes_that_are_not_a_message_id_are_a_value_error():
    with pytest.raises(ValueError, match="not a serialized MessageId"):
        MessageId.deserialize(b"\xff\xff")
    with pytest.raises(ValueError):
        pulsar.MessageId.deserialize(b"\xff\xff")


@pytest.mark.parametrize("a,b", [((0, 1, 2, -1), (0, 1, 2, 0)), ((0, 1, 2, -1), (1, 1, 2, -1)),
                                 ((0, 1, 2, 3), (0, 1, 3, -1)), ((0, 2, 0, 0), (0, 1, 9, 9))])
def test_ids_compare_as_pulsar_clients_do(a, b):
    ours, theirs = (MessageId(*a), MessageId(*b)), (pulsar.MessageId(*a), pulsar.MessageId(*b))
    for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__"):
        assert getattr(ours[0], op)(ours[1]) == getattr(theirs[0], op)(theirs[1]), (op, a, b)


def test_the_offset_is_the_entry_plus_the_batch_index():
    assert MessageId(-1, 0, 100, 7).offset() == 107 and MessageId(-1, 0, 100, -1).offset() == 100


def test_arguments_must_be_ints():
    with pytest.raises(TypeError, match="ledger_id"):
        MessageId(0, "1", 2)  # type: ignore[arg-type]
