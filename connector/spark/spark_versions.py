"""Which Spark the connector runs on (4.0 up to, not including, 5), and what the older ones lack.

Every Spark 4.x has the Python Data Source API the connector is built on: batch and stream readers whose
``read()`` yields Arrow record batches, the Arrow batch writer, streaming writes, and the offsets Spark
checkpoints. Two pieces came later, and each is looked up by its own import, not guessed from the number:

- ``DataSourceStreamArrowWriter`` (4.1): on 4.0 the stream sink is a ``DataSourceArrowWriter`` as well,
  since Spark 4.0's write worker hands record batches to any Arrow writer, streaming or not.
- Admission control (4.2: ``latestOffset(start, limit)``, ``ReadLimit``, ``getDefaultReadLimit``): before
  it Spark calls ``latestOffset()`` with neither the start nor a limit, so the reader keeps the offset Spark
  last planned (or handed back on a restart, through ``partitions(end, end)``) and caps each micro-batch
  itself, as Spark's Kafka source did before Spark had admission control.
- ``SupportsTriggerAvailableNow`` (4.2): before it Spark wraps the source, and ``Trigger.AvailableNow``
  reads, in one micro-batch, up to the offset the source answered first.

What that means for options (:func:`check_stream_options`, called when a stream read starts):
``maxMessagesPerTrigger``/``maxBytesPerTrigger`` cap every micro-batch on any 4.x, but before 4.2 a
``Trigger.AvailableNow`` run reads one capped micro-batch (Spark cannot tell the source it runs
AvailableNow), so a warning says so; ``minMessagesPerTrigger``/``maxTriggerDelay`` are refused before 4.2
(holding a batch back needs the trigger Spark does not tell: an AvailableNow run would read nothing).

The floor is :data:`SPARK_FLOOR`, the same as setup.cfg's ``pyspark>=`` (a test keeps them equal); an older
pyspark fails the import of :mod:`connector.spark` with :class:`UnsupportedSparkVersion`.
"""
from __future__ import annotations

import logging
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import pyspark

log = logging.getLogger(__name__)

SPARK_FLOOR = (4, 0, 0)
"""The oldest pyspark the connector runs on (setup.cfg's ``pyspark>=``; CI runs the core tests on it)."""
SPARK_BELOW = (5, 0, 0)
"""The first pyspark the connector is not declared for (setup.cfg's ``pyspark<``)."""
ADMISSION_CONTROL_SINCE = (4, 2, 0)
ARROW_STREAM_WRITER_SINCE = (4, 1, 0)


class UnsupportedSparkVersion(ImportError):
    """The installed pyspark is older than :data:`SPARK_FLOOR` (it has no Python Data Source API)."""

    def __init__(self, found: str) -> None:
        self.found = found
        super().__init__(
            f"the pulsarlike Spark connector needs pyspark {_dotted(SPARK_FLOOR)} or newer (before 5), and this "
            f"is pyspark {found}, which has no Python Data Source API (pyspark.sql.datasource): install "
            f"'pyspark>={_dotted(SPARK_FLOOR)},<{SPARK_BELOW[0]}' (pip install 'pulsarlike[spark]' does)")


def parse_version(text: str) -> tuple[int, int, int]:
    """``"4.0.1"``, ``"4.1.0.dev2"``, ``"4.2.0rc1"`` -> (4, 0, 1), (4, 1, 0), (4, 2, 0); ValueError for others."""
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if match is None:
        raise ValueError(f"not a pyspark version: {text!r} (expected MAJOR.MINOR[.PATCH], as '4.0.1')")
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def check_supported(text: str) -> tuple[int, int, int]:
    """The version of pyspark ``text``; :class:`UnsupportedSparkVersion` below the floor, a warning at or
    above :data:`SPARK_BELOW` (a Spark the connector was never run on may still work)."""
    version = parse_version(text)
    if version < SPARK_FLOOR:
        raise UnsupportedSparkVersion(text)
    if version >= SPARK_BELOW:
        log.warning("event=spark_version_untested pyspark=%s: the pulsarlike connector is declared for pyspark "
                    ">=%s,<%d", text, _dotted(SPARK_FLOOR), SPARK_BELOW[0])
    return version


SPARK_VERSION = check_supported(pyspark.__version__)
"""The running pyspark's (major, minor, patch)."""

# after the version check: an older pyspark has no pyspark.sql.datasource to import
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamWriter  # noqa: E402

try:
    from pyspark.sql.streaming.datasource import (  # noqa: F401  (re-exported for the readers)
        ReadAllAvailable, ReadLimit, ReadMaxBytes, ReadMaxRows, ReadMinRows, SupportsTriggerAvailableNow)
    ADMISSION_CONTROL = True
except ImportError:  # before Spark 4.2: the reader admits by itself, with these as the reader's own limits
    ADMISSION_CONTROL = False

    class ReadLimit:  # type: ignore[no-redef]
        """How much one micro-batch may read (Spark 4.2's class of the same name)."""

    @dataclass
    class ReadAllAvailable(ReadLimit):  # type: ignore[no-redef]
        """Everything available."""

    @dataclass
    class ReadMinRows(ReadLimit):  # type: ignore[no-redef]
        """At least ``min_rows``, else nothing yet."""

        min_rows: int

    @dataclass
    class ReadMaxRows(ReadLimit):  # type: ignore[no-redef]
        """At most ``max_rows``."""

        max_rows: int

    @dataclass
    class ReadMaxBytes(ReadLimit):  # type: ignore[no-redef]
        """At most ``max_bytes`` of payload."""

        max_bytes: int

    class SupportsTriggerAvailableNow(ABC):  # type: ignore[no-redef]
        """Spark 4.2's mixin; before it Spark never calls ``prepareForTriggerAvailableNow``."""

        @abstractmethod
        def prepareForTriggerAvailableNow(self) -> None:
            ...

TRIGGER_AVAILABLE_NOW = ADMISSION_CONTROL
"""Whether Spark runs Trigger.AvailableNow through the source (``prepareForTriggerAvailableNow``, and a last
``latestOffset`` after the last micro-batch, which acknowledges it). Before 4.2 Spark's own wrapper runs it and
never tells the source that the run's last micro-batch was committed: the query's subscription keeps that batch
until the next run (never less than the checkpoint needs)."""

try:
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as StreamArrowWriter
    ARROW_STREAM_WRITER = True
except ImportError:  # Spark 4.0: its write worker gives record batches to any DataSourceArrowWriter
    ARROW_STREAM_WRITER = False

    class StreamArrowWriter(DataSourceStreamWriter, DataSourceArrowWriter):  # type: ignore[no-redef]
        """A stream writer that Spark 4.0 hands Arrow record batches (it checks for ``DataSourceArrowWriter``
        whether the write is a stream's or not)."""


RATE_OPTIONS = {"maxMessagesPerTrigger": "max_messages_per_trigger", "maxBytesPerTrigger": "max_bytes_per_trigger"}


def check_stream_options(options: Any, version: tuple[int, int, int] = SPARK_VERSION,
                         admission_control: bool = ADMISSION_CONTROL) -> None:
    """At the start of a stream read: refuse what this Spark cannot serve, warn about what it serves
    differently (module docstring). ``options``: the parsed :class:`~connector.spark.options.SourceOptions`."""
    if admission_control:
        return
    spark = _dotted(version)
    if options.min_messages_per_trigger is not None:
        raise ValueError(
            f"option minMessagesPerTrigger (and maxTriggerDelay) needs Spark {_dotted(ADMISSION_CONTROL_SINCE)} "
            f"or newer, and this is Spark {spark}: before {_dotted(ADMISSION_CONTROL_SINCE)} Spark does not tell a "
            "Python source whether it runs Trigger.AvailableNow, so holding a batch back could make an "
            "AvailableNow run read nothing; remove the option (each micro-batch then reads what is available) or "
            f"upgrade to pyspark>={_dotted(ADMISSION_CONTROL_SINCE)}")
    capped = [name for name, field in RATE_OPTIONS.items() if getattr(options, field) is not None]
    if capped:
        log.warning("event=read_limit_by_source spark=%s options=%s: Spark before %s has no admission control "
                    "for Python sources, so the pulsarlike source caps each micro-batch itself; under "
                    "Trigger.AvailableNow a run then reads one capped micro-batch (run it again for the rest; "
                    "Spark %s reads everything in capped micro-batches)", spark, ",".join(capped),
                    _dotted(ADMISSION_CONTROL_SINCE), _dotted(ADMISSION_CONTROL_SINCE))
