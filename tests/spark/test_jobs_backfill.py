"""The backfill job (jobs/backfill.py) run in-process on the session's SparkSession against a real broker:
files into a topic once, a rerun adding nothing, bad input refused before anything is written."""
from __future__ import annotations

import csv
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jobs import backfill

from tests.spark.sink_helpers import read_all

pytestmark = pytest.mark.spark

ROWS_PER_FILE = 200
EVENT_MS = 1_714_521_600_000  # 2024-05-01T00:00:00Z


def rows(part: int) -> list[dict]:
    return [{"value": f"p{part}-{i}", "sensor": f"s{i % 3}", "unit": "C", "seq": i,
             "ts": EVENT_MS + part * 1000 + i} for i in range(ROWS_PER_FILE)]


def write_inputs(folder, fmt: str, parts: int = 3) -> None:
    """``parts`` files of ``fmt`` in ``folder`` (plus a decoy of another extension a glob must skip)."""
    folder.mkdir()
    for part in range(parts):
        data = rows(part)
        if fmt == "parquet":
            pq.write_table(pa.Table.from_pylist(data), folder / f"part-{part}.parquet")
        elif fmt == "json":
            (folder / f"part-{part}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in data))
        else:
            with open(folder / f"part-{part}.csv", "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(data[0]))
                writer.writeheader()
                writer.writerows(data)
    (folder / "README.txt").write_text("not data")


GLOBS = {"parquet": "part-*.parquet", "json": "part-*.jsonl", "csv": "part-*.csv"}


def run(spark, broker, *args: str) -> int:
    return backfill.main([*args, "--service-url", broker.service_url, "--no-progress"], spark)


@pytest.mark.parametrize("fmt", ["parquet", "json", "csv"])
def test_backfill_rerun_adds_nothing_the_second_time(spark, broker, client, topic, tmp_path, capsys, fmt):
    write_inputs(tmp_path / "in", fmt)
    argv = [str(tmp_path / "in" / GLOBS[fmt]), "--topic", topic, "--key-column", "sensor"]

    assert run(spark, broker, *argv) == 0
    first = capsys.readouterr().out
    assert run(spark, broker, *argv) == 0
    second = capsys.readouterr().out

    messages = read_all(client, topic)
    assert sorted(m.data() for m in messages) == sorted(f"p{p}-{i}".encode() for p in range(3)
                                                        for i in range(ROWS_PER_FILE))
    assert "written          600" in first and "duplicates       0 " in first
    assert "rows read        600 (3 " in second
    assert "written          0" in second and "duplicates       600 " in second


def test_backfill_sends_keys_event_times_and_properties(spark, broker, client, topic, tmp_path):
    write_inputs(tmp_path / "in", "json", parts=1)

    assert run(spark, broker, str(tmp_path / "in" / "*.jsonl"), "--topic", topic, "--key-column", "sensor",
               "--event-time-column", "ts", "--properties-columns", "unit,seq") == 0

    first = read_all(client, topic)[0]
    assert (first.data(), first.partition_key(), first.event_timestamp()) == (b"p0-0", "s0", EVENT_MS)
    assert first.properties() == {"unit": "C", "seq": "0"}


def test_backfill_sends_a_binary_key_column_as_the_keys_bytes(spark, broker, client, source, topic, tmp_path):
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"value": ["a", "b"], "k": pa.array([b"\xff\x00", b"s1"], pa.binary())}),
                   tmp_path / "in" / "part-0.parquet")

    assert run(spark, broker, str(tmp_path / "in" / "*.parquet"), "--topic", topic, "--key-column", "k") == 0

    stored = sorted(read_all(client, topic), key=lambda m: m.data())
    # bytes that are not UTF-8 text: Java's keyBytes (base64, flagged); UTF-8 text: that text (as the sink sends it)
    assert [m.partition_key() for m in stored] == ["/wA=", "s1"]
    keys = source(stream=False, topic=topic).load().orderBy("__offset").collect()
    assert sorted(r["__key"] for r in keys) == [b"s1", b"\xff\x00"]


def test_backfill_of_new_files_writes_them_and_an_unchanged_rerun_adds_nothing(spark, broker, client, topic,
                                                                                tmp_path):
    write_inputs(tmp_path / "in", "json", parts=1)
    pattern = str(tmp_path / "in" / "*.jsonl")
    assert run(spark, broker, pattern, "--topic", topic) == 0
    (tmp_path / "in" / "later.jsonl").write_text(json.dumps({"value": "late"}) + "\n")

    assert run(spark, broker, str(tmp_path / "in" / "later.jsonl"), "--topic", topic) == 0
    assert run(spark, broker, str(tmp_path / "in" / "later.jsonl"), "--topic", topic) == 0

    assert len(read_all(client, topic)) == ROWS_PER_FILE + 1


def test_backfill_of_a_missing_input_fails_before_any_write(spark, broker, admin, topic, tmp_path, capsys):
    assert run(spark, broker, str(tmp_path / "nothing-here-*.parquet"), "--topic", topic) == 2

    err = capsys.readouterr().err
    assert "nothing-here-*.parquet" in err and "does not exist" in err
    assert topic not in admin.list_topics("public/default")


def test_backfill_without_a_value_column_fails_before_any_write(spark, broker, admin, topic, tmp_path, capsys):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text(json.dumps({"payload": "x", "k": "1"}) + "\n")

    assert run(spark, broker, str(tmp_path / "in"), "--topic", topic) == 2

    err = capsys.readouterr().err
    assert "no column 'value'" in err and "a.jsonl" in err and "payload" in err
    assert topic not in admin.list_topics("public/default")


def test_backfill_refuses_null_values_unless_told_to_skip_them(spark, broker, client, admin, topic, tmp_path,
                                                             capsys):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text('{"value": "x"}\n{"value": null}\n{"value": "y"}\n')

    assert run(spark, broker, str(tmp_path / "in" / "a.jsonl"), "--topic", topic) == 2
    assert "1 of 3 rows" in capsys.readouterr().err
    assert topic not in admin.list_topics("public/default")

    assert run(spark, broker, str(tmp_path / "in" / "a.jsonl"), "--topic", topic, "--skip-null-values") == 0
    assert [m.data() for m in read_all(client, topic)] == [b"x", b"y"]


def test_backfill_with_value_format_json_sends_each_row_as_a_json_object(spark, broker, client, topic, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "orders.json").write_text(
        '{"order_id": "o-1", "customer": "c-17", "amount": 12.5}\n{"order_id": "o-2", "customer": "c-42"}\n')

    assert run(spark, broker, str(tmp_path / "in" / "orders.json"), "--topic", topic, "--key-column", "order_id",
               "--value-format", "json") == 0

    messages = read_all(client, topic)
    assert [(m.partition_key(), json.loads(m.data())) for m in messages] == [
        ("o-1", {"order_id": "o-1", "customer": "c-17", "amount": 12.5}),
        ("o-2", {"order_id": "o-2", "customer": "c-42"})]  # a null field is left out


def test_backfill_of_rows_without_a_value_column_suggests_value_format_json(spark, broker, topic, tmp_path,
                                                                           capsys):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "orders.json").write_text('{"order_id": "o-1"}\n')

    assert run(spark, broker, str(tmp_path / "in" / "orders.json"), "--topic", topic) == 2

    assert "pass --value-format json" in capsys.readouterr().err


def test_backfill_refuses_a_value_column_with_value_format_json(spark, broker, topic, tmp_path, capsys):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text('{"value": "x"}\n')

    assert run(spark, broker, str(tmp_path / "in" / "a.json"), "--topic", topic, "--value-column", "value",
               "--value-format", "json") == 2

    assert "exclude each other" in capsys.readouterr().err


def test_backfill_reads_relative_inputs_from_the_current_folder(spark, broker, client, topic, tmp_path,
                                                               monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.json").write_text('{"value": "here"}\n')
    monkeypatch.chdir(tmp_path)  # the JVM keeps the folder it started in

    assert run(spark, broker, "data/*.json", "--topic", topic) == 0

    assert [m.data() for m in read_all(client, topic)] == [b"here"]
