"""export: a topic's offset or time range to Parquet, partitioned by publish date, with a manifest.

    pulsarlike job export TOPIC --output DIR [--starting-offsets earliest|latest|JSON]
        [--ending-offsets latest|JSON] [--starting-time T] [--ending-time T] [--subscription NAME]
        [--allow-data-loss] [--admin-url URL] [--master M] [--service-url URL] [--no-progress]
    spark-submit jobs/export.py TOPIC --output DIR ...

Rows are the pulsarlike source's (``value``, ``__key``, ``__topic``, ``__partition``, ``__offset``,
``__messageId``, ``__publishTime``, ``__eventTime``, ``__messageProperties``, ``__producerName``,
``__sequenceId``) plus ``publish_date``, the UTC date of ``__publishTime``, which partitions the output.
``__key`` is read with ``keyType=string`` (the key as stored, pulsarlike 0.1's column, while the source's
default is binary): every run's files keep one schema, so an export folder started before stays one
dataset, and a backfill of the files sends the same keys again
(``DIR/publish_date=2024-05-01/run-<id>-part-....parquet``). T is milliseconds since the epoch or ISO-8601
(``2024-05-01``, ``2024-05-01T12:00:00Z``; no zone means UTC).

The manifest ``DIR/_pulsarlike_manifest.json`` records, per topic partition, the end offset exported so
far (``endOffsets``, exclusive) and every run (its range, rows and files). Without ``--starting-offsets``
or ``--starting-time`` a run starts where the manifest ends (a partition it does not name: at the earliest
stored message), so each run exports only what is new. One run, in order:

1. plan the range on the driver (offsets resolved to numbers, times looked up on the broker);
2. delete files a crashed run left behind (``run-<id>-*`` files of a run the manifest does not list);
3. read the range with ``spark.read.format("pulsarlike")`` and write Parquet into ``DIR/_staging/<id>``;
4. move the files into their ``publish_date=`` folders, named ``run-<id>-...``;
5. replace the manifest atomically (temp file, fsync, rename, fsync folder): the run is committed;
6. remove the staging folder;
7. with ``--subscription``: acknowledge on that durable subscription everything below the manifest's
   ``endOffsets`` (created there when missing; never moved back), so it holds exactly what later runs
   will export and retention may delete the rest.

The job's positions are chosen once, by one binary ``CONNECT`` (:mod:`jobs.positions`), and every step
runs over them: on pulsarlike a partition's dense offsets, on any other Pulsar broker its message ids.
There ``endOffsets`` holds each partition's last exported message id, inclusive (the manifest says
``"offsetKind": "messageId"``; a manifest of the other kind is refused, exit 2), ``--subscription`` is
acknowledged cumulatively up to it over the binary protocol, ``--starting-time``/``--ending-time`` need
``--admin-url`` (the broker's REST API: the binary protocol cannot find a message by publish time), the
progress bar has no total (a range's size is not known before it is read) and data deleted by retention is
not detected (ids have gaps; ``--subscription`` keeps what later runs export).

A crash before step 5 leaves the manifest as it was, so the next run exports the same range again (and
step 2 removes the first attempt's files). DIR must be a local (or mounted) folder every Spark executor
sees. Retention: a topic keeps what no durable subscription holds only up to its retention policy (by
default nothing beyond the active segment); create a durable subscription (and pass it as
``--subscription``) or set a retention policy before the data you want to export is published, or the
range is gone (the job then fails, exit 1, unless ``--allow-data-loss``). A failure in step 7 leaves the
run committed; the next run acknowledges again.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from jobs._common import (READ_SPLIT_MESSAGES, JobFailed, JobInputError, Progress, job_parser, local_path, qualified,
                          job_main, spark_options, spark_session, write_json_atomically)
from jobs.positions import DENSE_KIND, ID_KIND, DensePositions, Positions, positions_for, require_admin_url

NAME = "export"
MANIFEST = "_pulsarlike_manifest.json"
MANIFEST_FORMAT = "pulsarlike-export/1"
STAGING = "_staging"
DATE_COLUMN = "publish_date"


@dataclass
class ExportPlan:
    """One run's range per topic partition (``TopicPartition`` keys) in the job's positions: ``start <= offset
    < end`` (dense), or message ids ``start < id <= end`` (``IdOffset`` boundaries)."""

    topic: str
    start: dict[Any, int]
    end: dict[Any, int]
    source: str
    """Where the start came from: ``manifest``, ``earliest``, ``latest``, ``offsets`` or ``time``."""
    lost: list[tuple[Any, int, int]] = field(default_factory=list)
    """(partition, first, end) of planned messages retention already deleted."""
    stored_from: dict[Any, Any] = field(default_factory=dict)
    """Each partition's first position (its first stored offset; before every message for message ids)."""
    positions: Any = field(default_factory=DensePositions)
    """The job's positions (:mod:`jobs.positions`): their order and kind."""

    @property
    def kind(self) -> str:
        """``dense`` (pulsarlike) or ``messageId`` (another Pulsar broker)."""
        return self.positions.kind

    @property
    def messages(self) -> int | None:
        """How many messages the range holds; None for message ids (not known before it is read)."""
        return self.positions.count(self.start, self.end)

    @property
    def empty(self) -> bool:
        return not any(self.positions.holds(self.start[tp], self.end[tp]) for tp in self.end)


# --- pure parts ------------------------------------------------------------------------------------------
def parse_time(text: str, flag: str) -> int:
    """Milliseconds since the epoch from ``text`` (ms, or ISO-8601; no zone means UTC)."""
    value = text.strip()
    if value.isdigit():
        return int(value)
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise JobInputError(f"{flag} {text!r} is neither milliseconds since the epoch nor an ISO-8601 time "
                            "(2024-05-01, 2024-05-01T12:00:00Z)") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return int(parsed.timestamp() * 1000)


def empty_manifest(topic: str, kind: str = DENSE_KIND) -> dict[str, Any]:
    return {"format": MANIFEST_FORMAT, "topic": topic, "offsetKind": kind, "endOffsets": {}, "runs": []}


def load_manifest(output: str, topic: str, kind: str = DENSE_KIND) -> dict[str, Any]:
    """The manifest in ``output`` (a new one when there is none); JobInputError when it belongs to
    another topic, holds offsets of another kind than ``kind`` (the broker's), or cannot be read."""
    path = os.path.join(output, MANIFEST)
    if not os.path.exists(path):
        return empty_manifest(topic, kind)
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, ValueError) as exc:
        raise JobInputError(f"cannot read the manifest {path}: {exc}; restore it, or export to a new "
                            "folder") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise JobInputError(f"{path} is not a pulsarlike export manifest ({MANIFEST_FORMAT})")
    if manifest.get("topic") != topic:
        raise JobInputError(f"{output} holds an export of {manifest.get('topic')}, not {topic}: export each "
                            "topic to its own folder")
    found = manifest.get("offsetKind", DENSE_KIND)  # manifests written before the field: pulsarlike's
    if found != kind:
        kinds = {DENSE_KIND: "dense offsets (pulsarlike)", ID_KIND: "message ids (a Pulsar broker other than "
                 "pulsarlike)"}
        raise JobInputError(f"{path} records where the export ends as {kinds.get(found, repr(found))}, but this "
                            f"broker numbers messages by {kinds[kind]}: one kind cannot say where the other ends "
                            "(offsetKind); export to a new folder, as a Spark query needs a new checkpoint "
                            "location on another kind of broker")
    return {**manifest, "offsetKind": kind}


def plan_export(topic: str, bounds: Mapping[Any, Any], manifest: Mapping[str, Any], starting: str | None,
                ending: str | None, starting_at: Mapping[Any, Any] | None = None,
                ending_at: Mapping[Any, Any] | None = None, positions: Positions | None = None) -> ExportPlan:
    """The run's range from the partitions' bounds, the manifest and the flags (``starting``/``ending``:
    ``earliest``/``latest``/JSON or None; ``*_at``: positions the broker found for a time), in ``positions``
    (pulsarlike's dense offsets when None)."""
    from connector.spark.offsets import from_json_dict, parse_user_offsets
    from connector.spark.planning import OffsetOutOfRange

    p = positions or DensePositions()
    try:
        if starting_at is not None:
            start, source = dict(starting_at), "time"
        elif starting is not None and starting.strip().lower() in ("earliest", "latest"):
            source = starting.strip().lower()
            start = {tp: (p.first(b) if source == "earliest" else b.end) for tp, b in bounds.items()}
        elif starting is not None:
            given = parse_user_offsets("--starting-offsets", starting)
            start, source = p.resolve("--starting-offsets", given, bounds, True), "offsets"
        else:
            done = from_json_dict(manifest.get("endOffsets", {}))
            source = "manifest" if done else "earliest"
            start = {tp: done.get(tp, p.first(b)) for tp, b in bounds.items()}
            for tp, offset in sorted(done.items()):
                if tp in bounds and p.holds(bounds[tp].end, offset):
                    raise JobInputError(
                        f"the manifest says {tp} was exported up to {p.noun} {offset}, but it ends at "
                        f"{bounds[tp].end}: the topic was deleted and created again? export it to a new folder, "
                        "or give --starting-offsets")
        if ending_at is not None:
            end = dict(ending_at)
        elif ending is None or ending.strip().lower() == "latest":
            end = {tp: b.end for tp, b in bounds.items()}
        else:
            given = parse_user_offsets("--ending-offsets", ending, allow_earliest=False)
            end = p.resolve("--ending-offsets", given, bounds, False)
    except (ValueError, OffsetOutOfRange) as exc:
        if isinstance(exc, JobInputError):
            raise
        raise JobInputError(str(exc)) from None
    for tp in sorted(end):
        if p.holds(end[tp], start[tp]):
            raise JobInputError(f"{tp}: the start ({start[tp]}, from {source}) is after the end ({end[tp]}); "
                                "give an end at or after the start")
    return ExportPlan(topic=topic, start=start, end=end, source=source, lost=p.lost(start, end, bounds),
                      stored_from={tp: p.first(b) for tp, b in bounds.items()}, positions=p)


def held_offsets(plan: ExportPlan, manifest: Mapping[str, Any]) -> dict[Any, Any]:
    """Where ``--subscription`` should stand after a run: at the manifest's end, where the next run
    starts (a partition the manifest does not name: at its first stored message)."""
    from connector.spark.offsets import from_json_dict

    done = from_json_dict(manifest.get("endOffsets", {}))
    return {tp: done.get(tp, plan.stored_from[tp]) for tp in sorted(plan.end)}


def with_publish_date(df: Any) -> Any:
    """The source's rows plus ``publish_date``: the UTC date of ``__publishTime`` (whatever the session's
    time zone), as ``yyyy-MM-dd``."""
    from pyspark.sql import functions as F

    day = F.date_from_unix_date(F.floor(F.unix_micros("__publishTime") / 86_400_000_000).cast("int"))
    return df.withColumn(DATE_COLUMN, F.date_format(day, "yyyy-MM-dd"))


def committed_files(manifest: Mapping[str, Any]) -> set[str]:
    return {path for run in manifest.get("runs", []) for path in run.get("files", [])}


def orphans(output: str, manifest: Mapping[str, Any]) -> list[str]:
    """Data files (relative paths) a run wrote but never committed to the manifest."""
    kept = committed_files(manifest)
    found = []
    for folder in sorted(os.listdir(output)) if os.path.isdir(output) else ():
        if not folder.startswith(DATE_COLUMN + "=") or not os.path.isdir(os.path.join(output, folder)):
            continue
        for name in sorted(os.listdir(os.path.join(output, folder))):
            relative = f"{folder}/{name}"
            if name.startswith("run-") and relative not in kept:
                found.append(relative)
    return found


def commit_staged(staging: str, output: str, run_id: str) -> list[str]:
    """Move the staged Parquet files into ``output``'s date folders as ``run-<id>-<name>``; returns their
    paths relative to ``output``."""
    moved = []
    for folder in sorted(os.listdir(staging)):
        source = os.path.join(staging, folder)
        if not folder.startswith(DATE_COLUMN + "=") or not os.path.isdir(source):
            continue
        target = os.path.join(output, folder)
        os.makedirs(target, exist_ok=True)
        for name in sorted(os.listdir(source)):
            if name.startswith(("_", ".")):
                continue  # _SUCCESS, .crc checksums
            new_name = f"run-{run_id}-{name}"
            os.replace(os.path.join(source, name), os.path.join(target, new_name))
            moved.append(f"{folder}/{new_name}")
    return moved


# --- the run ---------------------------------------------------------------------------------------------
def _plan(args: Any, topic: str, manifest: Mapping[str, Any], positions: Positions) -> ExportPlan:
    if args.starting_offsets is not None and args.starting_time is not None:
        raise JobInputError("give --starting-offsets or --starting-time, not both")
    if args.ending_offsets is not None and args.ending_time is not None:
        raise JobInputError("give --ending-offsets or --ending-time, not both")
    start_ms = parse_time(args.starting_time, "--starting-time") if args.starting_time else None
    end_ms = parse_time(args.ending_time, "--ending-time") if args.ending_time else None
    if start_ms is not None and end_ms is not None and end_ms < start_ms:
        raise JobInputError(f"--ending-time {args.ending_time} is before --starting-time {args.starting_time}")
    if not positions.dense and (start_ms is not None or end_ms is not None):
        require_admin_url(args.admin_url, "--starting-time/--ending-time", NAME)  # before the broker is asked
    bounds = positions.bounds(topic)
    if not bounds:
        raise JobInputError(f"topic {topic} does not exist")
    starting_at = positions.at_time(bounds, start_ms) if start_ms is not None else None
    ending_at = positions.at_time(bounds, end_ms) if end_ms is not None else None
    if starting_at is not None and ending_at is not None:  # an empty time range, not a reversed one
        starting_at = {tp: positions.earlier(position, ending_at[tp]) for tp, position in starting_at.items()}
    return plan_export(topic, bounds, manifest, args.starting_offsets, args.ending_offsets, starting_at,
                       ending_at, positions)


@dataclass
class ExportSummary:
    run_id: str | None
    topic: str
    output: str
    rows: int
    files: int
    dates: list[str]
    start: dict[str, dict[str, int]]
    end: dict[str, dict[str, int]]
    seconds: float
    subscription: str | None = None
    backlog: int | None = None
    kind: str = DENSE_KIND

    def lines(self) -> list[str]:
        backlog = (f"backlog now {self.backlog}" if self.kind == DENSE_KIND else
                   "backlog not counted (a broker other than pulsarlike: no admin calls over the binary protocol)")
        held = ([f"  acknowledged     on subscription {self.subscription} up to the exported end; {backlog}"]
                if self.subscription else [])
        until = "to (exclusive)  " if self.kind == DENSE_KIND else "to (inclusive)  "
        if self.run_id is None:
            return [f"export {self.topic} -> {self.output}: nothing new (up to {json.dumps(self.end)})", *held]
        return [f"export {self.run_id}: {self.topic} -> {self.output}",
                f"  rows             {self.rows:,} ({self.files} file(s), dates {', '.join(self.dates) or '-'})",
                f"  from             {json.dumps(self.start)}",
                f"  {until} {json.dumps(self.end)}", *held,
                f"  seconds          {self.seconds:.1f}"]


def acknowledge_exported(positions: Positions, topic: str, subscription: str, held: Mapping[Any, Any]) -> int | None:
    """Acknowledge on ``subscription`` each partition's messages below ``held`` (the subscription is created
    there when missing, and never moved back); returns its backlog (None: not known for message ids)."""
    from broker_core.errors import PulsarLikeError

    try:
        return positions.acknowledge(topic, subscription, held)
    except PulsarLikeError as exc:
        raise JobFailed(f"the export is committed, but acknowledging on subscription {subscription} failed "
                        f"({exc.code}: {exc.message}); the next run acknowledges again") from None


def run(args: Any, spark: Any = None) -> ExportSummary:
    from connector.spark.offsets import dumps, to_json_dict

    started = time.monotonic()
    topic = qualified(args.topic, "TOPIC")
    output = local_path(args.output, "--output")
    if os.path.exists(output) and not os.path.isdir(output):
        raise JobInputError(f"--output {output} is a file; give a folder")
    # a wrong --service-url fails here, before anything is written; the broker says which offsets it has
    positions = positions_for(args.service_url, args.admin_url)
    kind = positions.kind
    manifest = load_manifest(output, topic, kind)
    with spark_session(f"pulsarlike-export {topic}", args.master, spark) as session:
        plan = _plan(args, topic, manifest, positions)
        if plan.lost and not args.allow_data_loss:
            tp, first, stored = plan.lost[0]
            raise JobFailed(f"messages {first}..{stored - 1} of {tp} were deleted by retention before they were "
                            "exported; pass --allow-data-loss to export what is left, and keep data with a "
                            "durable subscription or a retention policy (docs/jobs.md)")
        if plan.source not in ("manifest", "earliest") and manifest["runs"]:
            print(f"pulsarlike job export: starting at the given {plan.source}, not where the manifest ends",
                  file=sys.stderr)
        start_json, end_json = to_json_dict(plan.start), to_json_dict(plan.end)
        if plan.empty:
            summary = ExportSummary(None, topic, output, 0, 0, [], start_json, end_json, 0.0, args.subscription,
                                    kind=kind)
            if args.subscription:
                summary.backlog = acknowledge_exported(positions, topic, args.subscription,
                                                       held_offsets(plan, manifest))
            summary.seconds = time.monotonic() - started
            return summary
        os.makedirs(output, exist_ok=True)
        for relative in orphans(output, manifest):  # a run that crashed before its manifest was written
            os.unlink(os.path.join(output, relative))
        run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:8]
        staging_root = os.path.join(output, STAGING)
        shutil.rmtree(staging_root, ignore_errors=True)
        staging = os.path.join(staging_root, run_id)
        rows = (session.read.format("pulsarlike").option("service.url", args.service_url).options(**spark_options()).option("topic", topic)
                .option("startingOffsets", dumps(plan.start)).option("endingOffsets", dumps(plan.end))
                .option("failOnDataLoss", "false" if args.allow_data_loss else "true")
                .option("maxMessagesPerPartition", READ_SPLIT_MESSAGES).option("keyType", "string")
                .option("topicColumn", "topic").load())  # __topic without -partition-<i>, as exports had it
        progress = Progress(session, enabled=not args.no_progress)
        with progress.track(f"export {args.topic}", plan.messages) as totals:
            with_publish_date(rows).write.partitionBy(DATE_COLUMN).mode("overwrite").parquet(staging)
        # Spark counts the rows a file write stores; the Parquet footers say the same, when it did not
        exported = totals.output_records or session.read.parquet(staging).count()
        files = commit_staged(staging, output, run_id)
        dates = sorted({path.split("/", 1)[0].split("=", 1)[1] for path in files})
        new_end = {**manifest.get("endOffsets", {})}
        for topic_name, parts in end_json.items():
            new_end[topic_name] = {**new_end.get(topic_name, {}), **parts}
        seconds = time.monotonic() - started
        manifest = {**manifest, "endOffsets": new_end, "runs": [*manifest["runs"], {
            "runId": run_id, "startOffsets": start_json, "endOffsets": end_json, "rows": exported,
            "files": files, "dates": dates, "startedFrom": plan.source, "seconds": round(seconds, 3),
            "finishedAt": datetime.now(timezone.utc).isoformat(timespec="seconds")}]}
        write_json_atomically(os.path.join(output, MANIFEST), manifest)
        shutil.rmtree(staging_root, ignore_errors=True)
        summary = ExportSummary(run_id, topic, output, exported, len(files), dates, start_json, end_json, seconds,
                                args.subscription, kind=kind)
        if args.subscription:
            summary.backlog = acknowledge_exported(positions, topic, args.subscription,
                                                   held_offsets(plan, manifest))
            summary.seconds = time.monotonic() - started
    return summary


def parser() -> Any:
    p = job_parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("topic", metavar="TOPIC", help="the topic to export (all its partitions)")
    p.add_argument("--output", required=True, help="the output folder (local or mounted)")
    p.add_argument("--starting-offsets", default=None,
                   help="earliest, latest or JSON {\"topic\": {\"partition\": offset}} (default: where the "
                        "manifest ends, else earliest)")
    p.add_argument("--ending-offsets", default=None, help="latest (default) or JSON; exclusive (on a broker other "
                   "than pulsarlike a message id: the last message exported)")
    p.add_argument("--starting-time", default=None,
                   help="start at the first message published at or after this time (ms or ISO-8601)")
    p.add_argument("--ending-time", default=None,
                   help="end before the first message published at or after this time (ms or ISO-8601)")
    p.add_argument("--subscription", default=None, metavar="NAME",
                   help="a durable subscription to acknowledge up to what is exported (created when missing), "
                        "so it holds what the next run exports and nothing more")
    p.add_argument("--admin-url", default=None,
                   help="the broker's admin REST URL (http://HOST:8080): on a Pulsar broker other than pulsarlike "
                        "--starting-time/--ending-time look message ids up there (pulsarlike needs none)")
    p.add_argument("--allow-data-loss", action="store_true",
                   help="export what is left when retention deleted part of the range (default: fail)")
    return p


def main(argv: Sequence[str] | None = None, spark: Any = None) -> int:
    return job_main(NAME, parser(), run, argv, spark)


if __name__ == "__main__":
    sys.exit(main())
