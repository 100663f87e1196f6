"""The jobs' pure decisions, without a SparkSession or a broker: formats, job ids, export ranges and
manifests, which offsets a redrive acknowledges how, where the progress bar stands."""
from __future__ import annotations

import io
import json
import os
import pty
import select

import pytest

from connector.spark.source_admin import Bounds
from connector.spark.offsets import TopicPartition
from jobs import backfill, dlq_plans, export, redrive
from jobs._common import (JobInputError, Progress, StageTotals, is_terminal, progress_position,
                          write_json_atomically)

T = "persistent://public/default/t"
P0, P1 = TopicPartition(T, 0), TopicPartition(T, 1)


# --- backfill --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path, fmt", [("a.parquet", "parquet"), ("part-0.snappy.parquet", "parquet"),
                                       ("x.pq", "parquet"), ("a.json", "json"), ("a.jsonl.gz", "json"),
                                       ("a.ndjson", "json"), ("A.CSV", "csv"), ("a.csv.bz2", "csv"),
                                       ("a.txt", None), ("csv", None)])
def test_format_is_read_from_the_extension_through_a_compression_suffix(path, fmt):
    assert backfill.format_of("file:/data/" + path) == fmt


def test_mixed_or_unknown_formats_are_refused_naming_a_file():
    with pytest.raises(JobInputError, match="mix formats.*csv: file:/b.csv.*json: file:/a.json"):
        backfill.infer_format(["file:/a.json", "file:/b.csv"])
    with pytest.raises(JobInputError, match="file:/a.txt.*--format"):
        backfill.infer_format(["file:/a.txt"])


def test_job_id_depends_on_the_topic_and_each_files_path_size_and_time_not_their_order():
    a, b = backfill.InputFile("file:/a", 10, 1000), backfill.InputFile("file:/b", 20, 2000)
    base = backfill.job_id(T, [a, b])

    assert backfill.job_id(T, [b, a]) == base
    assert len({base, backfill.job_id(T + "2", [a, b]), backfill.job_id(T, [a._replace(size=11), b]),
                backfill.job_id(T, [a._replace(modified_ms=1001), b]), backfill.job_id(T, [a])}) == 5


# --- export ----------------------------------------------------------------------------------------------
BOUNDS = {P0: Bounds(0, 10), P1: Bounds(2, 5)}


def test_export_starts_where_the_manifest_ends_and_at_earliest_where_it_says_nothing():
    manifest = {"endOffsets": {T: {"0": 7}}}

    plan = export.plan_export(T, BOUNDS, manifest, None, None)

    assert (plan.start, plan.end, plan.source, plan.messages) == ({P0: 7, P1: 2}, {P0: 10, P1: 5}, "manifest", 6)


def test_export_flags_win_over_the_manifest():
    manifest = {"endOffsets": {T: {"0": 7}}}

    plan = export.plan_export(T, BOUNDS, manifest, json.dumps({T: {"0": 3}}), json.dumps({T: {"1": 4}}))

    assert (plan.start, plan.end, plan.source) == ({P0: 3, P1: 2}, {P0: 10, P1: 4}, "offsets")
    assert export.plan_export(T, BOUNDS, manifest, "latest", None).messages == 0


def test_export_refuses_a_reversed_range_and_a_manifest_past_the_topics_end():
    with pytest.raises(JobInputError, match="start .* is after the end"):
        export.plan_export(T, BOUNDS, {}, json.dumps({T: {"0": 8}}), json.dumps({T: {"0": 4}}))
    with pytest.raises(JobInputError, match="exported up to offset 12, but it ends at 10"):
        export.plan_export(T, BOUNDS, {"endOffsets": {T: {"0": 12}}}, None, None)
    with pytest.raises(JobInputError, match="--starting-offsets"):
        export.plan_export(T, BOUNDS, {}, "{not json", None)


def test_export_reports_planned_messages_retention_deleted():
    plan = export.plan_export(T, BOUNDS, {"endOffsets": {T: {"0": 4, "1": 0}}}, None, None)

    assert plan.lost == [(P1, 0, 2)]


@pytest.mark.parametrize("text, ms", [("1714564800000", 1_714_564_800_000), ("2024-05-01", 1_714_521_600_000),
                                      ("2024-05-01T12:00:00Z", 1_714_564_800_000),
                                      ("2024-05-01T14:00:00+02:00", 1_714_564_800_000)])
def test_times_are_ms_or_iso_8601_in_utc_by_default(text, ms):
    assert export.parse_time(text, "--starting-time") == ms


def test_a_bad_time_names_the_flag():
    with pytest.raises(JobInputError, match="--ending-time 'yesterday'"):
        export.parse_time("yesterday", "--ending-time")


def test_a_manifest_of_another_topic_is_refused(tmp_path):
    write_json_atomically(str(tmp_path / export.MANIFEST), export.empty_manifest(T + "-other"))

    with pytest.raises(JobInputError, match="holds an export of .*t-other"):
        export.load_manifest(str(tmp_path), T)
    assert export.load_manifest(str(tmp_path / "new"), T) == export.empty_manifest(T)


def test_staged_files_move_into_date_folders_and_uncommitted_ones_are_orphans(tmp_path):
    staging = tmp_path / "out" / "_staging" / "r1"
    (staging / "publish_date=2024-05-01").mkdir(parents=True)
    (staging / "publish_date=2024-05-01" / "part-0.parquet").write_bytes(b"x")
    (staging / "publish_date=2024-05-01" / ".part-0.parquet.crc").write_bytes(b"c")
    (staging / "_SUCCESS").write_bytes(b"")
    out = str(tmp_path / "out")

    moved = export.commit_staged(str(staging), out, "r1")

    assert moved == ["publish_date=2024-05-01/run-r1-part-0.parquet"]
    assert export.orphans(out, {"runs": []}) == moved
    assert export.orphans(out, {"runs": [{"files": moved}]}) == []


def test_manifest_is_replaced_whole(tmp_path):
    path = str(tmp_path / "m.json")
    write_json_atomically(path, {"a": 1})
    write_json_atomically(path, {"b": 2})

    assert json.loads(open(path).read()) == {"b": 2}
    assert os.listdir(tmp_path) == ["m.json"]


# --- redrive ---------------------------------------------------------------------------------------------
def test_acked_ranges_are_read_as_pulsar_writes_them():
    assert dlq_plans.parse_acked_ranges("[(0:3..0:5], (8:9..8:10]]") == [(4, 6), (10, 11)]
    assert dlq_plans.parse_acked_ranges("[(3..5], (9..10]]") == [(4, 6), (10, 11)]  # brokers before issue 31
    assert dlq_plans.parse_acked_ranges("[]") == []


def test_a_cursor_position_is_read_as_its_offset():
    assert dlq_plans.position_offset("8:12") == 12
    assert dlq_plans.position_offset("0:-1") == -1


def test_acknowledgement_is_cumulative_over_the_contiguous_prefix_and_individual_after_it():
    assert dlq_plans.plan_acks(10, 20, [10, 11, 13, 15], [(12, 13)]) == (14, [15])
    assert dlq_plans.plan_acks(10, 20, [11, 12], []) == (10, [11, 12])
    assert dlq_plans.plan_acks(0, 3, [0, 1, 2], []) == (3, [])
    assert dlq_plans.plan_acks(0, 10, [9], [(0, 9)]) == (10, [])


def test_write_id_changes_with_anything_that_changes_the_rows():
    plans = {P0: dlq_plans.PartitionPlan(0, 10)}
    base = dlq_plans.write_id(T, "s", plans, None, None)

    assert dlq_plans.write_id(T, "s", {P0: dlq_plans.PartitionPlan(0, 10)}, None, None) == base
    assert len({base, dlq_plans.write_id(T, "s", {P0: dlq_plans.PartitionPlan(0, 11)}, None, None),
                dlq_plans.write_id(T, "s", {P0: dlq_plans.PartitionPlan(0, 10, [(3, 4)])}, None, None),
                dlq_plans.write_id(T, "s", plans, "__key = 'a'", None),
                dlq_plans.write_id(T, "s", plans, None, "elsewhere"), dlq_plans.write_id(T, "s2", plans, None, None)}) == 6


# --- progress --------------------------------------------------------------------------------------------
def test_progress_counts_the_rows_read_never_past_the_total_with_tasks_done_beside():
    assert progress_position(StageTotals(tasks=4, tasks_done=1, input_records=250), 1000) == (250, "tasks 1/4")
    assert progress_position(StageTotals(tasks=2, tasks_done=2, input_records=20), 10) == (10, "tasks 2/2")
    assert progress_position(StageTotals(tasks=3, tasks_done=3, input_records=1200), None) == (1200, "tasks 3/3")


def test_progress_is_shown_only_on_a_terminal(tmp_path):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    with open(tmp_path / "log", "w") as log_file:
        assert (is_terminal(Terminal()), is_terminal(io.StringIO()), is_terminal(log_file)) == (True, False, False)


def read_until_closed(leader: int) -> str:
    """What was written to a pty whose other side is closed (the kernel may hand it over in pieces)."""
    chunks = []
    try:
        while select.select([leader], [], [], 10)[0]:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the other side is closed and everything was read
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    return b"".join(chunks).decode()


def test_the_bar_is_drawn_on_a_terminal_that_reports_no_size(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    leader, follower = pty.openpty()  # a new pty is 0x0, where tqdm alone would hide the bar
    with os.fdopen(follower, "w") as terminal:
        progress = Progress(spark=None, stream=terminal)
        bar = progress.bar("export orders", 10)
        Progress.show(bar, StageTotals(tasks=2, tasks_done=1, input_records=5), 10)
        bar.close()
    shown = read_until_closed(leader)

    assert "export orders" in shown and "5/10" in shown and "tasks 1/2" in shown


# --- export's subscription -------------------------------------------------------------------------------
def test_export_subscription_is_held_where_the_next_run_starts():
    plan = export.plan_export(T, BOUNDS, {}, None, None)

    assert export.held_offsets(plan, {"endOffsets": {T: {"0": 7}}}) == {P0: 7, P1: 2}


# --- backfill's relative inputs --------------------------------------------------------------------------
def test_relative_inputs_are_made_absolute_against_this_process_and_uris_pass(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)

    assert backfill.absolute("data/2024-05-*.json") == f"{tmp_path}/data/2024-05-*.json"
    assert [backfill.absolute(p) for p in ("/abs/a.json", "file:/a.json", "hdfs:///raw/*.parquet")] == [
        "/abs/a.json", "file:/a.json", "hdfs:///raw/*.parquet"]


def test_a_pulsarlike_redrive_collects_the_re_driven_offsets_per_partition():
    rows = [{"__partition": 0, "__offset": 3}, {"__partition": 1, "__offset": 0}, {"__partition": 0, "__offset": 5}]
    assert dlq_plans.OffsetDlq.redriven(rows) == {0: [3, 5], 1: [0]}
