"""The jobs against a Pulsar broker that is not ours (pulsar-lite): backfill writes every row once through the
sink over the binary protocol; export and redrive, which plan by dense offsets, refuse before anything is done,
saying why."""
from __future__ import annotations

import json
import uuid

import pytest

from jobs import backfill, export, redrive
from tests.pulsar_lite import pulsar_lite_broker  # noqa: F401

pytestmark = pytest.mark.spark
pulsar = pytest.importorskip("pulsar")


def _topic() -> str:
    return f"persistent://public/default/jobs-any-{uuid.uuid4().hex[:10]}"


def test_backfill_into_pulsar_lite_stores_every_row_once(spark, pulsar_lite_broker, tmp_path, capsys):
    topic = _topic()
    (tmp_path / "in").mkdir()
    for part in range(2):
        (tmp_path / "in" / f"part-{part}.jsonl").write_text(
            "".join(json.dumps({"value": f"p{part}-{i}", "sensor": f"s{i % 3}"}) + "\n" for i in range(150)))

    assert backfill.main([str(tmp_path / "in"), "--topic", topic, "--key-column", "sensor", "--service-url",
                          pulsar_lite_broker.service_url, "--no-progress"], spark) == 0

    out = capsys.readouterr().out
    assert "rows read        300 (2 json" in out and "written          not counted" in out
    client = pulsar.Client(pulsar_lite_broker.service_url)
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        stored = []
        while reader.has_message_available():
            stored.append(reader.read_next(5000))
    finally:
        client.close()
    assert sorted(m.data() for m in stored) == sorted(f"p{p}-{i}".encode() for p in range(2) for i in range(150))
    assert {m.partition_key() for m in stored} == {"s0", "s1", "s2"}


@pytest.mark.parametrize("job, argv", [
    (export, ["--output", "OUT"]),
    (redrive, []),
])
def test_jobs_that_plan_by_dense_offsets_refuse_another_broker_naming_why(spark, pulsar_lite_broker, tmp_path, capsys,
                                                                          job, argv):
    argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    assert job.main([_topic(), *argv, "--service-url", pulsar_lite_broker.service_url, "--no-progress"], spark) == 2
    err = capsys.readouterr().err
    assert "other than pulsarlike (no dense offsets)" in err and "dense offsets" in err and "docs/spark.md" in err
