"""backfill: files (Parquet, JSON lines, CSV) into a topic, through the pulsarlike batch sink, once.

    pulsarlike job backfill INPUT [INPUT ...] --topic TOPIC [--format parquet|json|csv] [--option K=V ...]
        [--value-column value | --value-format json] [--key-column COL] [--event-time-column COL] [--properties-columns A,B]
        [--skip-null-values] [--job-id ID] [--admin-url URL] [--master M] [--service-url URL] [--no-progress]
    spark-submit jobs/backfill.py INPUT ... --topic TOPIC ...

INPUT is a file, a folder (its files, recursively, without ``_``/``.`` names) or a Hadoop glob
(``data/2024-05-*.json``, ``data/{a,b}.csv``); the format comes from ``--format`` or the files' extension
(``.parquet``/``.pq``, ``.json``/``.jsonl``/``.ndjson``, ``.csv``, each optionally ``.gz``/``.bz2``/...).
Each row's payload is its ``--value-column`` (default ``value``), or with ``--value-format json`` the
whole row as a JSON object (what ordinary JSON or CSV records need: they have no ``value`` column).

Idempotency. The write's identity (the sink's ``writeId``) is ``backfill-<job id>``; the job id is
``--job-id`` or 16 hex digits of SHA-256 over the topic and every input file's path, size and
modification time. The sink names one producer per Spark partition after it and numbers the rows of the
partition, and the broker keeps what each name stored, so a rerun of the same inputs stores nothing twice
-- provided each Spark partition holds the same rows in the same order. This job therefore fixes how files
are split (``SPLIT_SETTINGS``, independent of the master's core count) and hands Spark the files in sorted
order. A changed file (size or time) makes a new job id, and the whole input is written again.

Any Pulsar broker. Against a broker other than pulsarlike the write goes over Pulsar's binary protocol; a
rerun stores nothing twice only if that broker deduplicates (``brokerDeduplicationEnabled=true`` or the
namespace's policy; with ``--admin-url`` the sink checks and turns it on for the topic), and the summary
does not count written/duplicates (the topic's end there is a message id, not a count).

Bad input -- an INPUT that matches nothing, an unknown extension, a missing column, null values (without
``--skip-null-values``) -- stops the job with exit 2 before anything is written. The progress bar (stderr)
counts the rows the write stage has read; the summary (stdout) gives rows read, written, duplicates
dropped (stored by an earlier run) and seconds. "written" is how far the topic's end moved.
"""
from __future__ import annotations

import hashlib
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Iterable, NamedTuple, Sequence

from jobs._common import (JobInputError, Progress, analysis_error, first_line, job_parser, qualified, job_main,
                          spark_conf, spark_options, spark_session)
from jobs.positions import Positions, positions_for

NAME = "backfill"
FORMATS = ("parquet", "json", "csv")
VALUE_FORMATS = ("column", "json")
EXTENSIONS = {".parquet": "parquet", ".pq": "parquet", ".json": "json", ".jsonl": "json", ".ndjson": "json",
              ".csv": "csv"}
COMPRESSION_SUFFIXES = (".gz", ".bz2", ".deflate", ".lz4", ".snappy", ".zst", ".zstd", ".xz")
READER_DEFAULTS = {"csv": {"header": "true"}}
SPLIT_SETTINGS: dict[str, str | None] = {
    "spark.sql.files.maxPartitionBytes": str(128 * 1024 * 1024),
    "spark.sql.files.openCostInBytes": str(4 * 1024 * 1024),
    "spark.sql.files.minPartitionNum": "16",
    "spark.sql.files.maxPartitionNum": None,
}
"""How Spark cuts files into partitions during the write, pinned so that a rerun on another master (other
core count, other defaults) gives every Spark partition -- every producer name -- the same rows."""


class InputFile(NamedTuple):
    path: str
    """Fully qualified (``file:/data/a.json``)."""
    size: int
    modified_ms: int


@dataclass(frozen=True)
class MessageColumns:
    """Which input columns become which parts of a message."""

    value: str = "value"
    value_format: str = "column"
    """``column``: the payload is the ``value`` column; ``json``: the whole row as a JSON object."""
    key: str | None = None
    event_time: str | None = None
    properties: tuple[str, ...] = ()


@dataclass
class BackfillSummary:
    job_id: str
    topic: str
    files: int
    format: str
    rows: int
    written: int | None
    """How far the topic's end moved; None on a broker without dense offsets (its end is a message id)."""
    duplicates: int | None
    null_values_skipped: int
    seconds: float

    def lines(self) -> list[str]:
        if self.written is None or self.duplicates is None:
            counts = ["  written          not counted (a broker other than pulsarlike: no dense offsets; the "
                      "sink's commit line in the Spark log gives written/duplicates)"]
        else:
            counts = [f"  written          {self.written:,}",
                      f"  duplicates       {self.duplicates:,} (stored by an earlier run of this job id: dropped)"]
        return [f"backfill {self.job_id} -> {self.topic}",
                f"  rows read        {self.rows:,} ({self.files} {self.format} file(s))",
                *counts,
                f"  null values      {self.null_values_skipped:,} skipped",
                f"  seconds          {self.seconds:.1f}"]


# --- pure parts ------------------------------------------------------------------------------------------
def job_id(topic: str, files: Iterable[InputFile]) -> str:
    """16 hex digits of SHA-256 over the topic and each file's path, size and modification time."""
    digest = hashlib.sha256(f"backfill\0{topic}\0".encode())
    for f in sorted(files):
        digest.update(f"{f.path}\t{f.size}\t{f.modified_ms}\n".encode())
    return digest.hexdigest()[:16]


def format_of(path: str) -> str | None:
    """The format a file's extension says (a compression suffix is looked through); None: unknown."""
    name = path.rsplit("/", 1)[-1].lower()
    for suffix in COMPRESSION_SUFFIXES:
        if name.endswith(suffix) and not name.endswith(".snappy.parquet"):
            name = name[: -len(suffix)]
            break
    for extension, fmt in EXTENSIONS.items():
        if name.endswith(extension):
            return fmt
    return None


def infer_format(paths: Sequence[str]) -> str:
    """The one format of all ``paths``; JobInputError for an unknown extension or a mix."""
    found: dict[str, list[str]] = {}
    for path in paths:
        fmt = format_of(path)
        if fmt is None:
            raise JobInputError(f"cannot tell the format of {path} from its extension; give --format "
                                f"({'|'.join(FORMATS)})")
        found.setdefault(fmt, []).append(path)
    if len(found) > 1:
        mix = "; ".join(f"{fmt}: {files[0]}" + (f" and {len(files) - 1} more" if len(files) > 1 else "")
                        for fmt, files in sorted(found.items()))
        raise JobInputError(f"the inputs mix formats ({mix}); back fill one format per run, or give --format")
    return next(iter(found))


def to_messages(df: Any, columns: MessageColumns, where: str = "the input") -> Any:
    """The sink's columns from input rows: ``value`` (binary or string; structs, arrays and maps as JSON,
    anything else as a string; with ``value_format`` ``json`` the whole row as a JSON object), ``__key``
    (a binary column as it is, sent as the key's bytes; anything else as a string), ``__eventTime``
    (timestamp or ms), and ``__messageProperties`` (column name -> value as a string; nulls left out). JobInputError naming a column the input lacks."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    fields = df.schema.fields

    def find(name: str, flag: str) -> Any:
        for field in fields:
            if field.name == name:
                return field
        for field in fields:
            if field.name.lower() == name.lower():
                return field
        have = ", ".join(f.name for f in fields) or "no columns"
        hint = ("; to send each row as a JSON object, pass --value-format json" if flag == "--value-column"
                else "")
        raise JobInputError(f"{where} has no column {name!r} ({flag}); its columns are: {have}{hint}")

    def col(field: Any) -> Any:
        return F.col("`" + field.name.replace("`", "``") + "`")

    def as_text(field: Any) -> Any:
        if isinstance(field.dataType, (T.StructType, T.ArrayType, T.MapType)):
            return F.to_json(col(field))
        return col(field).cast("string")

    if columns.value_format == "json":
        # null fields are left out of the object (Spark's to_json), as most JSON writers do
        selected = [F.to_json(F.struct(*[col(field) for field in fields])).alias("value")]
    else:
        value = find(columns.value, "--value-column")
        selected = [(col(value) if isinstance(value.dataType, (T.BinaryType, T.StringType)) else as_text(value))
                    .alias("value")]
    if columns.key:
        key = find(columns.key, "--key-column")
        selected.append((col(key) if isinstance(key.dataType, T.BinaryType) else as_text(key)).alias("__key"))
    if columns.event_time:
        field = find(columns.event_time, "--event-time-column")
        kind = field.dataType
        if isinstance(kind, (T.TimestampType, T.TimestampNTZType, T.LongType)):
            event = col(field)
        elif isinstance(kind, (T.IntegerType, T.ShortType)):
            event = col(field).cast("long")
        elif isinstance(kind, (T.StringType, T.DateType)):
            event = col(field).cast("timestamp")
        else:
            raise JobInputError(f"column {field.name!r} (--event-time-column) has type "
                                f"{kind.simpleString()}; it must be a timestamp, a date, a string Spark can "
                                "cast to a timestamp, or a long of milliseconds since the epoch")
        selected.append(event.alias("__eventTime"))
    if columns.properties:
        pairs: list[Any] = []
        for name in columns.properties:
            field = find(name, "--properties-columns")
            pairs += [F.lit(field.name), as_text(field)]
        selected.append(F.create_map(*pairs).alias("__messageProperties"))
    return df.select(*selected)


# --- Spark and the file system ---------------------------------------------------------------------------
def list_inputs(spark: Any, patterns: Sequence[str]) -> list[InputFile]:
    """Every data file the inputs name (Hadoop globs, folders recursively, ``_``/``.`` names skipped),
    sorted by path; JobInputError naming an input that matches nothing."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    found: dict[str, InputFile] = {}
    for pattern in patterns:
        path = jvm.org.apache.hadoop.fs.Path(absolute(pattern))
        fs = path.getFileSystem(conf)
        statuses = fs.globStatus(path)
        if not statuses:
            raise JobInputError(f"input {pattern!r} does not exist (no file or folder matches it)")
        files = []
        for status in statuses:
            if status.isDirectory():
                listing = fs.listFiles(status.getPath(), True)
                root = status.getPath().toString().rstrip("/") + "/"
                while listing.hasNext():
                    entry = listing.next()
                    relative = entry.getPath().toString()[len(root):]
                    if not any(part.startswith(("_", ".")) for part in relative.split("/")):
                        files.append(entry)
            elif not status.getPath().getName().startswith(("_", ".")):
                files.append(status)
        if not files:
            raise JobInputError(f"input {pattern!r} holds no data files (only folders, or names starting "
                                "with _ or .)")
        for status in files:
            uri = status.getPath().toString()
            found[uri] = InputFile(uri, int(status.getLen()), int(status.getModificationTime()))
    return sorted(found.values())


def absolute(pattern: str) -> str:
    """A local relative path made absolute against this process's folder: Spark would resolve it against
    the JVM's, which differs once a notebook or test changed folder. URIs (``hdfs://``, ``file:``) pass."""
    if ":" in pattern.split("/", 1)[0] or pattern.startswith("/"):
        return pattern
    return os.path.join(os.getcwd(), pattern)


def parse_options(pairs: Sequence[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise JobInputError(f"--option {pair!r} is not KEY=VALUE (e.g. --option sep=';')")
        options[key.strip()] = value
    return options


def _end_offsets(positions: Positions, topic: str) -> int:
    return sum(bounds.end for bounds in positions.bounds(topic).values())


def run(args: Any, spark: Any = None) -> BackfillSummary:
    started = time.monotonic()
    topic = qualified(args.topic, "--topic")
    if args.value_format == "json" and args.value_column is not None:
        raise JobInputError("--value-column and --value-format json exclude each other: json sends the whole "
                            "row as the value")
    columns = MessageColumns(value=args.value_column or "value", value_format=args.value_format,
                             key=args.key_column, event_time=args.event_time_column,
                             properties=tuple(name.strip() for group in args.properties_columns
                                              for name in group.split(",") if name.strip()))
    options = parse_options(args.option)
    with spark_session(f"pulsarlike-backfill {topic}", args.master, spark) as session:
        files = list_inputs(session, args.inputs)
        fmt = args.format or infer_format([f.path for f in files])
        where = files[0].path + (f" (and {len(files) - 1} more files)" if len(files) > 1 else "")
        reader = session.read.format(fmt).options(**{**READER_DEFAULTS.get(fmt, {}), **options})
        try:
            messages = to_messages(reader.load([f.path for f in files]), columns, where)
        except Exception as exc:
            if analysis_error(exc):
                raise JobInputError(f"cannot read {where} as {fmt}: {first_line(exc)}") from None
            raise
        identity = args.job_id or job_id(topic, files)
        # a wrong --service-url fails here, before reading; another broker's end is a message id, not a count
        positions = positions_for(args.service_url)
        before = _end_offsets(positions, topic) if positions.dense else None
        progress = Progress(session, enabled=not args.no_progress)
        from pyspark.sql import functions as F

        with progress.track(f"reading {len(files)} {fmt} file(s)"):
            counted = messages.agg(F.count(F.lit(1)).alias("rows"), F.count("value").alias("values")).first()
        rows, nulls = int(counted["rows"]), int(counted["rows"] - counted["values"])
        if nulls and not args.skip_null_values:
            raise JobInputError(f"{nulls:,} of {rows:,} rows of {where} have a null {columns.value!r} "
                                "(a message needs a payload); pass --skip-null-values to leave them out")
        if nulls:
            messages = messages.where(F.col("value").isNotNull())
        writer = (messages.write.format("pulsarlike").mode("append").option("service.url", args.service_url).options(**spark_options())
                  .option("topic", topic).option("writeId", f"backfill-{identity}"))
        if args.admin_url:  # another broker: the sink checks and turns on deduplication over REST
            writer = writer.option("admin.url", args.admin_url)
        with spark_conf(session, SPLIT_SETTINGS), progress.track(f"backfill -> {args.topic}", rows):
            writer.save()
        written = None if before is None else _end_offsets(positions, topic) - before
    return BackfillSummary(job_id=identity, topic=topic, files=len(files), format=fmt, rows=rows, written=written,
                           duplicates=None if written is None else max(rows - nulls - written, 0),
                           null_values_skipped=nulls, seconds=time.monotonic() - started)


def parser() -> Any:
    p = job_parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="files, folders or Hadoop globs")
    p.add_argument("--topic", required=True, help="the topic to write to")
    p.add_argument("--format", choices=FORMATS, default=None, help="default: from the files' extension")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark reader option (repeatable), e.g. --option sep=';' for CSV (header=true is "
                        "the CSV default here)")
    p.add_argument("--value-column", default=None, help="the payload column (default: value)")
    p.add_argument("--value-format", choices=VALUE_FORMATS, default="column",
                   help="column: the payload is --value-column (default); json: each row as a JSON object")
    p.add_argument("--key-column", default=None, help="the column holding each message's key")
    p.add_argument("--event-time-column", default=None,
                   help="the column holding each message's event time (timestamp, date, string or ms)")
    p.add_argument("--properties-columns", action="append", default=[], metavar="A,B",
                   help="columns sent as message properties, name -> value (comma separated, repeatable)")
    p.add_argument("--skip-null-values", action="store_true",
                   help="leave out rows whose value column is null (default: refuse the input)")
    p.add_argument("--admin-url", default=None,
                   help="the broker's admin REST URL (http://HOST:8080): on a Pulsar broker other than pulsarlike "
                        "the sink checks and turns on the topic's deduplication through it, which a rerun's "
                        "once-only needs (without it: make sure the broker deduplicates)")
    p.add_argument("--job-id", default=None, help="the write's identity (default: a hash of the topic and "
                   "the input files' paths, sizes and times); reuse it only for the very same inputs")
    return p


def main(argv: Sequence[str] | None = None, spark: Any = None) -> int:
    return job_main(NAME, parser(), run, argv, spark)


if __name__ == "__main__":
    sys.exit(main())
