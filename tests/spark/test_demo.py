"""The README's main job (``make demo``: ``python -m jobs.stream_demo``) runs end to end."""
from __future__ import annotations

import pytest

from connector.spark.spark_versions import TRIGGER_AVAILABLE_NOW
from jobs import stream_demo

pytestmark = [pytest.mark.spark, pytest.mark.skipif(not TRIGGER_AVAILABLE_NOW, reason="the demo needs Spark 4.2+")]


def test_stream_demo_counts_every_reading_once_in_the_results_topic(spark, tmp_path, capsys):
    summary = stream_demo.run(400, str(tmp_path), per_trigger=150, spark=spark)
    assert summary["rows_read"] == 401  # the readings and the heartbeat
    assert summary["micro_batches"] == 3
    assert summary["delayed"] == 40
    assert summary["all_counted_once"] and summary["windows"] == 24
    assert summary["readings_per_sensor"] == {"s0": 100, "s1": 100, "s2": 100, "s3": 100}
    assert len(summary["sink_producers"]) == 2  # spark.sql.shuffle.partitions
    out = capsys.readouterr().out
    assert "every reading counted once: True" in out and "held back from Shared/Key_Shared" in out


def test_stream_demo_refuses_a_bad_message_count():
    with pytest.raises(SystemExit):
        stream_demo.main(["--messages", "0"])


def test_stream_demo_on_a_running_broker_uses_topics_of_its_own(spark, broker, tmp_path):
    """As docker/compose.yaml runs it (PULSARLIKE_SERVICE_URL): twice on one broker, each run counts its own."""
    first = stream_demo.run(40, str(tmp_path), spark=spark, service_url=broker.service_url)
    second = stream_demo.run(40, str(tmp_path), spark=spark, service_url=broker.service_url)
    assert first["results_topic"] != second["results_topic"]
    assert first["all_counted_once"] and second["all_counted_once"]
    assert second["rows_read"] == 41
