"""The range read's decision on offsets it cannot read (connector.spark.data_loss), without a broker: a damaged
stored range is lost data like deleted messages -- ``failOnDataLoss`` fails naming the offsets in the range
and the fixes; without, it is logged once, counted, and the read goes on at the range's end. A gap the broker
left is told apart by the stored bounds: retention (a loss) or a damaged range the broker skipped itself."""
from __future__ import annotations

import logging

import pytest

from broker_core.errors import DataLost, NotConnected
from connector.spark.data_loss import DataLossError, LostOffsets
from connector.spark.offsets import TopicPartition
from connector.spark.partition_reader import RangePartition, RangeReader, _Deliveries, _Unreadable

TOPIC = "persistent://public/default/lossy"
TP = TopicPartition(TOPIC, 2)


def damage(start: int, end: int) -> DataLost:
    return DataLost(topic=f"{TOPIC}-partition-2", start_offset=start, end_offset=end, path="00000000000000000100.log",
                    position=4644, reason="stored segment 00000000000000000100.log is damaged at byte 4644 (CRC "
                                          "mismatch)")


def test_a_damaged_range_fails_the_read_naming_topic_partition_offsets_why_and_the_fixes():
    with pytest.raises(DataLossError) as err:
        LostOffsets(TP, fail_on_data_loss=True).damaged(damage(150, 200), 150, 300)
    text = str(err.value)
    assert text.startswith(f"messages 150..199 of {TOPIC} partition 2 are not readable: the broker's stored copy "
                           "of them is damaged (stored segment 00000000000000000100.log is damaged at byte 4644 "
                           "(CRC mismatch))")
    for fix in ("set option failOnDataLoss=false", "autoSkipNonRecoverableData=true on the broker",
                "restore the segment from a backup"):
        assert fix in text
    assert (err.value.topic, err.value.partition, err.value.start, err.value.end) == (TOPIC, 2, 150, 200)


def test_without_fail_on_data_loss_a_damaged_range_is_logged_once_counted_and_read_past(caplog):
    losses = LostOffsets(TP, fail_on_data_loss=False)
    with caplog.at_level(logging.WARNING, logger="connector.spark.data_loss"):
        assert losses.damaged(damage(150, 200), 150, 300) == 200
    assert losses.count == 50
    [line] = [r.getMessage() for r in caplog.records]
    assert line.startswith(f"event=data_lost topic={TOPIC} partition=2 first=150 last=199 lost_total=50: ")
    assert line.endswith("skipped (failOnDataLoss=false)")


@pytest.mark.parametrize("position, end, lost, goes_on_at", [
    (175, 300, (175, 200), 200),  # a Spark partition starting inside the damaged range
    (0, 175, (150, 175), 200),  # one ending inside it: done (the read stops at its end)
    (200, 300, None, 200),  # met again by a stream reopened before it: nothing more is lost
    (300, 300, None, 300),  # met past the range's end (completing a chunked message): none of the range's
])
def test_only_the_offsets_of_a_damaged_range_inside_the_planned_range_from_the_next_wanted_are_lost(
        position, end, lost, goes_on_at):
    strict = LostOffsets(TP, fail_on_data_loss=True)
    if lost is None:
        assert strict.damaged(damage(150, 200), position, end) == goes_on_at
    else:
        with pytest.raises(DataLossError) as err:
            strict.damaged(damage(150, 200), position, end)
        assert (err.value.start, err.value.end) == lost
    losses = LostOffsets(TP, fail_on_data_loss=False)
    assert losses.damaged(damage(150, 200), position, end) == goes_on_at
    assert losses.count == (0 if lost is None else lost[1] - lost[0])


def test_the_stream_reports_a_damaged_range_apart_from_an_error_that_ends_it():
    deliveries = _Deliveries()
    deliveries.on_unreadable(damage(3, 4), window=None)
    deliveries.on_failed(NotConnected("gone"))
    met = deliveries.get(0)
    assert isinstance(met, _Unreadable) and (met.lost.start_offset, met.lost.end_offset) == (3, 4)
    assert isinstance(deliveries.get(0), NotConnected)


class StoredFrom:
    """A range's broker calls (:class:`~connector.spark.range_calls.RangeCalls`) on a partition that keeps
    offsets from ``first`` on."""

    def __init__(self, first: int) -> None:
        self.first = first

    def bounds(self, topic: str) -> tuple[int, int]:
        return self.first, 1000

    def stats(self, topic: str) -> dict:
        return {"subscriptions": {}}


def reader(fail_on_data_loss: bool, first_stored: int) -> RangeReader:
    read = RangeReader("pulsar://127.0.0.1:1", RangePartition(TOPIC, 2, 0, 300), 5000, fail_on_data_loss)
    read._calls = StoredFrom(first_stored)  # type: ignore[assignment]
    return read


def test_a_gap_above_the_first_stored_offset_is_a_damaged_range_the_broker_skipped_and_never_fails(caplog):
    read = reader(fail_on_data_loss=True, first_stored=0)
    with caplog.at_level(logging.WARNING, logger="connector.spark.data_loss"):
        read._passed_over(150, 200)
    assert read.lost == 50
    assert "skipped by the broker (a damaged stored range; autoSkipNonRecoverableData=true)" in \
        caplog.records[0].getMessage()


def test_a_gap_below_the_first_stored_offset_was_deleted_by_retention_while_the_range_was_read():
    with pytest.raises(DataLossError) as err:
        reader(fail_on_data_loss=True, first_stored=180)._passed_over(150, 200)
    assert (err.value.start, err.value.end) == (150, 180)
    assert "retention deleted them while the range was read" in str(err.value)
    lenient = reader(fail_on_data_loss=False, first_stored=180)
    lenient._passed_over(150, 200)
    assert lenient.lost == 50  # 30 deleted, 20 damaged and skipped by the broker
