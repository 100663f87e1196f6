"""export's and redrive's decisions on a broker without dense offsets, without Spark or a broker: message id
plans from the manifest and the flags, the ranges redrive reads, and which acknowledgments it counts."""
from __future__ import annotations

import pytest

from connector.spark.message_id_offsets import EARLIEST, IdOffset
from connector.spark.offsets import TopicPartition
from jobs._common import JobInputError
from connector.spark.offset_kinds import Bounds
from jobs.dlq_plans import HeldDlq, planned_write_id, ranges
from jobs.export import plan_export
from jobs.positions import IdPositions

T = "persistent://public/default/orders"
P = TopicPartition(T, -1)
LAST = {P: IdOffset(3, 9, -1)}


def plan_id_export(topic, last, manifest, starting, ending):
    """export's plan over message id positions: a partition's bounds are before its first message and its last id."""
    bounds = {tp: Bounds(EARLIEST, end) for tp, end in last.items()}
    return plan_export(topic, bounds, manifest, starting, ending, positions=IdPositions())


def manifest(end: dict | None = None) -> dict:
    return {"offsetKind": "messageId", "endOffsets": {T: {"-1": end}} if end else {}, "runs": []}


def test_a_first_run_exports_from_before_the_first_message_to_the_last():
    plan = plan_id_export(T, LAST, manifest(), None, None)
    assert (plan.start, plan.end, plan.source, plan.kind) == ({P: EARLIEST}, LAST, "earliest", "messageId")
    assert plan.messages is None and not plan.empty


def test_a_later_run_starts_after_the_manifests_end_and_is_empty_when_nothing_is_new():
    plan = plan_id_export(T, LAST, manifest({"ledger": 3, "entry": 4, "batch": -1}), None, None)
    assert (plan.start, plan.source) == ({P: IdOffset(3, 4, -1)}, "manifest")
    assert plan_id_export(T, LAST, manifest(LAST[P].to_json()), None, None).empty


def test_a_manifest_past_the_topics_last_message_is_refused():
    with pytest.raises(JobInputError, match="deleted and created again"):
        plan_id_export(T, LAST, manifest({"ledger": 3, "entry": 12, "batch": -1}), None, None)


@pytest.mark.parametrize("flag, value, match", [
    ("start", '{"persistent://public/default/orders": {"-1": 5}}', "dense offset"),
    ("end", '{"persistent://public/default/orders": {"0": {"ledger": 3, "entry": 1}}}', "does not exist"),
    ("end", '{"persistent://public/default/orders": {"-1": {"ledger": 3, "entry": 1}}}', "after the end"),
])
def test_offsets_this_broker_cannot_honour_are_refused_naming_why(flag, value, match):
    starting, ending = (value, None) if flag == "start" else ('{"%s": {"-1": {"ledger": 3, "entry": 2}}}' % T, value)
    with pytest.raises(JobInputError, match=match):
        plan_id_export(T, LAST, manifest(), starting, ending)


def test_redrive_reads_from_before_its_first_planned_message_to_its_last():
    other = TopicPartition(T, 1)
    pending = {(-1, 3, 4, -1): None, (-1, 3, 7, 2): None}
    start, end = ranges({P: LAST[P], other: IdOffset(5, 1, -1)}, pending)
    assert start == {P: IdOffset(3, 3, -1), other: IdOffset(5, 1, -1)}  # nothing planned there: an empty range
    assert end == {P: IdOffset(3, 7, 2), other: IdOffset(5, 1, -1)}


def test_the_write_id_names_the_plan():
    one = planned_write_id(T, "s", {(-1, 3, 4, -1): None}, None, None)
    assert one == planned_write_id(T, "s", {(-1, 3, 4, -1): "another object"}, None, None)
    assert one != planned_write_id(T, "s", {(-1, 3, 5, -1): None}, None, None)
    assert one != planned_write_id(T, "s", {(-1, 3, 4, -1): None}, "__key = 'a'", None)


class FakeConsumer:
    def __init__(self) -> None:
        self.acknowledged: list = []

    def acknowledge(self, message_id) -> None:
        self.acknowledged.append(message_id)


def test_redrive_counts_only_acknowledgments_of_whole_entries():
    held = HeldDlq.__new__(HeldDlq)  # no broker: only what acknowledge reads
    held.dlq, held.subscription, held.consumer = T, "s", FakeConsumer()
    held.pending = {(-1, 3, 4, -1): "a", (-1, 3, 5, 0): "b0", (-1, 3, 5, 1): "b1", (-1, 3, 6, 0): "c0"}
    # the batch at entry 5 is split by the filter: its re-driven message stays unacknowledged at the broker
    assert held.acknowledge({(-1, 3, 4, -1), (-1, 3, 5, 0), (-1, 3, 6, 0)}) == 2
    assert held.consumer.acknowledged == ["a", "b0", "c0"]


def test_redrive_without_a_filter_acknowledges_every_planned_message():
    held = HeldDlq.__new__(HeldDlq)
    held.dlq, held.subscription, held.consumer = T, "s", FakeConsumer()
    held.pending = {(-1, 3, 4, -1): "a", (-1, 3, 5, 0): "b0", (-1, 3, 5, 1): "b1"}
    assert held.acknowledge(None) == 3
    assert held.consumer.acknowledged == ["a", "b0", "b1"]


def test_the_job_positions_choose_the_dlq_plan_and_the_manifest_kind():
    from jobs.dlq_plans import OffsetDlq, dlq_plan
    from jobs.positions import DensePositions

    assert type(dlq_plan(DensePositions("pulsar://x"), T, "s")) is OffsetDlq
    assert type(dlq_plan(IdPositions("pulsar://x"), T, "s")) is HeldDlq
    dense = plan_export(T, {P: Bounds(2, 9)}, {"endOffsets": {}}, None, None)
    assert (dense.kind, dense.messages, dense.stored_from) == ("dense", 7, {P: 2})


def test_an_empty_time_range_on_message_ids_starts_where_it_ends():
    # --starting-time and --ending-time finding the same message: the range is empty, not reversed
    at = {P: IdOffset(3, 4, -1)}
    plan = plan_export(T, {P: Bounds(EARLIEST, LAST[P])}, manifest(), None, None, at, at, IdPositions())
    assert plan.empty and plan.source == "time"
    assert IdPositions.earlier(IdOffset(3, 6, -1), IdOffset(3, 4, -1)) == IdOffset(3, 4, -1)
