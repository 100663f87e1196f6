"""The Spark versions the connector declares, checks and serves (connector.spark.spark_versions, issue 34)."""
from __future__ import annotations

import configparser
import logging
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from connector.spark import spark_versions as sv

ROOT = Path(__file__).resolve().parents[2]


def declared_pyspark_range() -> tuple[str, str]:
    """setup.cfg's ``pyspark>=FLOOR,<BELOW`` of the spark extra."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    lines = [line.strip() for line in config["options.extras_require"]["spark"].splitlines()]
    [requirement] = [line for line in lines if line.startswith("pyspark")]
    match = re.fullmatch(r"pyspark>=([0-9.]+),<([0-9.]+)", requirement)
    assert match, f"setup.cfg's pyspark requirement is not pyspark>=FLOOR,<BELOW: {requirement!r}"
    return match.group(1), match.group(2)


def test_the_floor_setup_cfg_declares_is_the_one_the_connector_checks():
    floor, below = declared_pyspark_range()
    assert sv.parse_version(floor) == sv.SPARK_FLOOR
    numbers = [int(part) for part in below.split(".")]
    assert tuple(numbers + [0] * (3 - len(numbers))) == sv.SPARK_BELOW


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_makefile_tests_on_the_floor_setup_cfg_declares():
    out = subprocess.run(["make", "-s", "-C", str(ROOT), "spark-floor"], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == declared_pyspark_range()[0]


@pytest.mark.parametrize("text, version", [("4.0.0", (4, 0, 0)), ("4.1.0.dev2", (4, 1, 0)),
                                           ("4.2.0rc1", (4, 2, 0)), ("4.3", (4, 3, 0)), ("10.12.3", (10, 12, 3))])
def test_pyspark_versions_are_read_as_numbers(text, version):
    assert sv.parse_version(text) == version


def test_a_version_that_is_not_one_is_refused():
    with pytest.raises(ValueError, match="not a pyspark version"):
        sv.parse_version("four")


@pytest.mark.parametrize("text", ["3.5.3", "3.5.0", "2.4.8"])
def test_a_pyspark_older_than_the_floor_is_refused_naming_the_fix(text):
    with pytest.raises(sv.UnsupportedSparkVersion, match=rf"this is pyspark {re.escape(text)}.*pyspark>=4\.0\.0,<5") as info:
        sv.check_supported(text)
    assert info.value.found == text
    assert isinstance(info.value, ImportError)  # what an `import connector.spark` on it raises


@pytest.mark.parametrize("text", ["4.0.0", "4.1.4", "4.2.1", "4.3.0"])
def test_every_4x_from_the_floor_is_served_without_a_warning(text, caplog):
    with caplog.at_level(logging.WARNING, logger=sv.__name__):
        assert sv.check_supported(text) == sv.parse_version(text)
    assert caplog.records == []


def test_a_pyspark_beyond_the_declared_range_is_served_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger=sv.__name__):
        sv.check_supported("5.0.0")
    assert "spark_version_untested pyspark=5.0.0" in caplog.text


def test_the_running_pyspark_has_exactly_the_pieces_its_version_promises():
    assert sv.ADMISSION_CONTROL == (sv.SPARK_VERSION >= sv.ADMISSION_CONTROL_SINCE)
    assert sv.ARROW_STREAM_WRITER == (sv.SPARK_VERSION >= sv.ARROW_STREAM_WRITER_SINCE)


def test_the_stream_sink_gets_arrow_batches_on_every_version():
    from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamWriter

    from connector.spark.writer import PulsarLikeStreamWriter

    assert issubclass(PulsarLikeStreamWriter, DataSourceStreamWriter)
    if not sv.ARROW_STREAM_WRITER:  # Spark 4.0 hands record batches to any DataSourceArrowWriter
        assert issubclass(PulsarLikeStreamWriter, DataSourceArrowWriter)


def options(**fields):
    base = {"min_messages_per_trigger": None, "max_messages_per_trigger": None, "max_bytes_per_trigger": None}
    return SimpleNamespace(**{**base, **fields})


def test_min_messages_per_trigger_is_refused_without_admission_control():
    with pytest.raises(ValueError, match=r"minMessagesPerTrigger.*needs Spark 4\.2\.0.*this is Spark 4\.1\.4"):
        sv.check_stream_options(options(min_messages_per_trigger=10), (4, 1, 4), admission_control=False)


def test_max_messages_per_trigger_without_admission_control_warns_about_available_now(caplog):
    with caplog.at_level(logging.WARNING, logger=sv.__name__):
        sv.check_stream_options(options(max_messages_per_trigger=10, max_bytes_per_trigger=5), (4, 0, 0),
                                admission_control=False)
    assert "read_limit_by_source spark=4.0.0 options=maxMessagesPerTrigger,maxBytesPerTrigger" in caplog.text
    assert "Trigger.AvailableNow a run then reads one capped micro-batch" in caplog.text


def test_with_admission_control_every_read_limit_is_served_silently(caplog):
    with caplog.at_level(logging.WARNING, logger=sv.__name__):
        sv.check_stream_options(options(min_messages_per_trigger=10, max_messages_per_trigger=20), (4, 2, 0),
                                admission_control=True)
    assert caplog.records == []


def test_without_read_limits_an_old_spark_says_nothing(caplog):
    with caplog.at_level(logging.WARNING, logger=sv.__name__):
        sv.check_stream_options(options(), (4, 0, 0), admission_control=False)
    assert caplog.records == []


def test_lag_figures_read_the_offsets_of_pyspark_4_1s_progress_objects_too():
    from connector.spark.metrics import messages_behind_latest
    from connector.spark.offsets import TopicPartition, encode_source_offset

    def as_pyspark_41_shows_it(parts):  # str() of the parsed JSON, single quotes and all
        return str(encode_source_offset({TopicPartition("t", p): o for p, o in parts.items()}, "s"))

    progress = {"sources": [{"endOffset": as_pyspark_41_shows_it({0: 5, 1: 10}),
                             "latestOffset": as_pyspark_41_shows_it({0: 15, 1: 10})}]}
    assert messages_behind_latest(progress) == {
        "minOffsetsBehindLatest": 0, "avgOffsetsBehindLatest": 5.0, "maxOffsetsBehindLatest": 10}
    assert messages_behind_latest({"sources": [{"endOffset": "{'not': __import__('os')}",
                                                "latestOffset": "{oops"}]}) is None
