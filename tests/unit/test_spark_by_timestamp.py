"""Starts and ends by publish time per partition (issue 34), over a fake offset-for-time lookup, and Kafka's
``headers`` column built from the message properties."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from connector.spark.by_timestamp import NoOffsetForTime, end_by_time, start_by_time
from connector.spark.headers import add_headers
from connector.spark.offset_kinds import Bounds
from connector.spark.options import parse_source_options
from connector.spark.planning import OffsetOutOfRange
from connector.spark.offsets import TopicPartition

T = "persistent://public/default/t"
P0, P1 = TopicPartition(T, 0), TopicPartition(T, 1)
BOUNDS = {P0: Bounds(0, 10), P1: Bounds(0, 10)}
PUBLISHED = {P0: [100 + 10 * i for i in range(10)], P1: [200 + 10 * i for i in range(10)]}
"""Publish times of offsets 0..9 of each partition."""


def offset_for_time(tp: TopicPartition, ms: int) -> int:
    return next((i for i, t in enumerate(PUBLISHED[tp]) if t >= ms), len(PUBLISHED[tp]))


def opts(**given: str):
    return parse_source_options({"service.url": "pulsar://h:6650", "topic": "t", **given}, streaming=False)


def test_each_partition_starts_at_its_first_message_at_or_after_its_own_time():
    o = opts(startingOffsetsByTimestamp=json.dumps({"t": {"0": 125, "1": 200}}))
    assert start_by_time(o, offset_for_time, BOUNDS) == {P0: 3, P1: 0}


def test_no_message_after_the_time_fails_with_error_and_starts_at_the_end_with_latest():
    late = json.dumps({"t": {"0": 125, "1": 999}})
    with pytest.raises(NoOffsetForTime, match="partition 1 has no message published at or after 999"):
        start_by_time(opts(startingOffsetsByTimestamp=late), offset_for_time, BOUNDS)
    assert start_by_time(opts(startingOffsetsByTimestamp=late, startingOffsetsByTimestampStrategy="latest"),
                         offset_for_time, BOUNDS) == {P0: 3, P1: 10}
    with pytest.raises(NoOffsetForTime):
        start_by_time(opts(startingTimestamp="999"), offset_for_time, BOUNDS)
    assert start_by_time(opts(startingTime="999"), offset_for_time, BOUNDS) == {P0: 10, P1: 10}


def test_per_partition_times_must_name_every_partition_as_kafka_requires():
    with pytest.raises(OffsetOutOfRange, match=f"missing: {T} partition 1|missing: .*1"):
        start_by_time(opts(startingOffsetsByTimestamp=json.dumps({"t": {"0": 1}})), offset_for_time, BOUNDS)
    with pytest.raises(OffsetOutOfRange, match="which does not exist"):
        start_by_time(opts(startingOffsetsByTimestamp=json.dumps({"t": {"0": 1, "1": 1, "5": 1}})),
                      offset_for_time, BOUNDS)


def test_an_end_without_a_message_after_its_time_is_the_latest():
    o = opts(endingOffsetsByTimestamp=json.dumps({"t": {"0": 135, "1": 999}}))
    assert end_by_time(o, offset_for_time, BOUNDS) == {P0: 4, P1: 10}


def test_headers_are_the_properties_as_kafkas_array_of_key_value_structs():
    props = pa.array([[("a", "1"), ("b", "2")], [], [("c", "3")]], type=pa.map_(pa.string(), pa.string()))
    batch = pa.RecordBatch.from_arrays([pa.array([0, 1, 2]), props], names=["__offset", "__messageProperties"])
    assert add_headers(batch).column(2).to_pylist() == [
        [{"key": "a", "value": b"1"}, {"key": "b", "value": b"2"}], None, [{"key": "c", "value": b"3"}]]
    assert add_headers(batch.slice(2)).column(2).to_pylist() == [[{"key": "c", "value": b"3"}]]
