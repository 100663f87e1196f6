"""redrive: a dead letter topic's messages back to the topic they died on, then acknowledged on the DLQ.

    pulsarlike job redrive DLQ_TOPIC [--to TOPIC] [--filter EXPR] [--subscription pulsarlike-redrive]
        [--dry-run] [--admin-url URL] [--master M] [--service-url URL] [--no-progress]
    spark-submit jobs/redrive.py DLQ_TOPIC ...

What is re-driven: the messages of DLQ_TOPIC not yet acknowledged on the durable subscription
``--subscription`` (created at the earliest stored message when missing), up to the topic's end when the
job starts, and -- with ``--filter`` -- only those for which the Spark SQL expression over the source's
columns is true (``__key = 'a'``, ``__messageProperties['reason'] = 'timeout'``,
``__publishTime < '2024-05-01'``). Each goes to ``--to`` or to its ``REAL_TOPIC`` property (set by the
client that dead-lettered it) with its payload, key, event time and properties, minus the properties the
dead letter hop added (``REAL_TOPIC``, ``ORIGIN_MESSAGE_ID``, and a retry hop's ``RECONSUMETIMES``,
``DELAY_TIME``); the broker gives it a new publish time, producer name and sequence id. Ordering keys are
not kept (the source does not read them). The DLQ is read with ``keyType=string`` so that ``__key`` (in
``--filter`` too) is the key as stored and each message goes back with exactly that key.

One run, in order:

1. plan on the driver: the DLQ partitions' ends, the subscription's first unacknowledged offset and its
   individually acknowledged ranges (those messages are left out);
2. read the range with ``spark.read.format("pulsarlike")``, apply the filter, check every message has a
   target (no ``REAL_TOPIC`` and no ``--to``: exit 2, nothing written) that is not the DLQ itself;
3. write through the pulsarlike sink, effectively once: ``writeId`` is a hash of the whole plan (topic,
   subscription, ranges, acknowledged ranges, filter, ``--to``), so a rerun after a failure between the
   write and the acknowledgement writes nothing twice as long as no new dead letters arrived in between;
4. acknowledge on the subscription. Without a filter: everything below the planned end, cumulatively
   (``Admin.acknowledge_up_to``): the subscription's backlog of the range is zero. With a filter: the
   contiguous prefix cumulatively, then each other re-driven message individually through a Shared
   consumer of the subscription; messages the filter left out stay unacknowledged in the backlog for a
   later run or inspection.

``--dry-run`` stops after step 2 and prints what would be re-driven where.

On a Pulsar broker other than pulsarlike (one binary ``CONNECT`` tells) the plan is the set of message ids
the subscription has not acknowledged, taken by a consumer of it, and each re-driven message is
acknowledged individually by that consumer (:mod:`jobs.redrive_ids`).
"""
from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from jobs._common import (READ_SPLIT_MESSAGES, JobFailed, JobInputError, Progress, analysis_error, client_kwargs,
                          dense_offsets, first_line, job_parser, qualified, job_main, security, spark_options,
                          spark_session, topic_bounds)

NAME = "redrive"
DEFAULT_SUBSCRIPTION = "pulsarlike-redrive"
LETTER_PROPERTIES = ("REAL_TOPIC", "ORIGIN_MESSAGE_ID", "RECONSUMETIMES", "DELAY_TIME")
"""Properties a dead letter or retry hop adds; dropped from a re-driven message."""
RECEIVE_TIMEOUT_MS = 5_000
_RANGE = re.compile(r"\((?:-?\d+:)?(-?\d+)\.\.(?:-?\d+:)?(-?\d+)\]")


@dataclass
class PartitionPlan:
    """One DLQ partition: re-drive ``start <= offset < end`` minus the ``acked`` ranges."""

    start: int
    end: int
    acked: list[tuple[int, int]] = field(default_factory=list)
    """Individually acknowledged ranges ``[s, e)`` above ``start`` (left out)."""
    exists: bool = True
    """Whether the subscription exists on this partition already."""


@dataclass
class RedriveSummary:
    dlq: str
    subscription: str
    planned: int
    redriven: int = 0
    written: int | None = 0
    """Messages the targets' ends moved by; None on a broker without dense offsets (not counted)."""
    targets: dict[str, int] = field(default_factory=dict)
    acknowledged: int = 0
    backlog: int | None = None
    dry_run: bool = False
    seconds: float = 0.0

    def lines(self) -> list[str]:
        head = "redrive (dry run)" if self.dry_run else "redrive"
        redriven = f"  re-driven        {self.redriven:,}"
        if not self.dry_run and self.written is not None:
            earlier = max(self.redriven - self.written, 0)
            redriven += f" ({self.written:,} written, {earlier:,} stored by an earlier attempt)"
        out = [f"{head} {self.dlq} (subscription {self.subscription})",
               f"  unacknowledged   {self.planned:,} in the planned range", redriven]
        out += [f"    -> {target}  {count:,}" for target, count in sorted(self.targets.items())]
        if not self.dry_run and self.written is None:
            out.append(f"  acknowledged     {self.acknowledged:,}; written and backlog not counted (a broker other "
                       "than pulsarlike: the sink's commit line in the Spark log has written/duplicates)")
        elif not self.dry_run:
            out.append(f"  acknowledged     {self.acknowledged:,}; backlog now {self.backlog}")
        out.append(f"  seconds          {self.seconds:.1f}")
        return out


# --- pure parts ------------------------------------------------------------------------------------------
def parse_acked_ranges(text: str) -> list[tuple[int, int]]:
    """``individuallyDeletedMessages`` of the broker's internal stats, as Pulsar writes them (``[(L:a..L:b],
    (L:c..L:d]]``: offsets a+1 through b acknowledged; pulsarlike's entry ids are offsets, its ledgers
    segments) as half-open ranges ``[a+1, b+1)``."""
    return [(int(a) + 1, int(b) + 1) for a, b in _RANGE.findall(text or "")]


def position_offset(position: str) -> int:
    """The offset of a cursor position of the broker's internal stats (``ledger:entry``, the entry being the
    offset: ``markDeletePosition``, ``readPosition``)."""
    return int(str(position).rpartition(":")[2])


def plan_acks(start: int, end: int, redriven: Iterable[int],
              acked: Sequence[tuple[int, int]] = ()) -> tuple[int, list[int]]:
    """``(cumulative_end, individual)``: acknowledging everything below ``cumulative_end`` covers the longest
    run from ``start`` of messages re-driven or acknowledged already; ``individual`` are the re-driven
    offsets past it. Worked example: start 10, re-driven {10, 11, 13, 15}, acked [(12, 13)] -> (14, [15])."""
    done = sorted(set(redriven))
    position, i = start, 0
    ranges = sorted(acked)
    j = 0
    while position < end:
        while i < len(done) and done[i] < position:
            i += 1
        while j < len(ranges) and ranges[j][1] <= position:
            j += 1
        if i < len(done) and done[i] == position:
            position += 1
        elif j < len(ranges) and ranges[j][0] <= position:
            position = min(ranges[j][1], end)
        else:
            break
    return position, [offset for offset in done if offset >= position]


def write_id(dlq: str, subscription: str, plans: Mapping[Any, PartitionPlan], filter_expr: str | None,
             to: str | None) -> str:
    """The sink's identity for this plan: the same plan (nothing new, nothing acknowledged in between)
    gives the same id, so its rows are deduplicated; any change gives a new one."""
    document = {"dlq": dlq, "subscription": subscription, "filter": filter_expr, "to": to,
                "ranges": sorted([str(tp), p.start, p.end, p.acked] for tp, p in plans.items())}
    digest = hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()
    return f"redrive-{digest[:16]}"


def redrive_rows(df: Any, to: str | None) -> Any:
    """The DLQ's rows as the sink's rows: ``value``, ``__key``, ``__eventTime``, ``__messageProperties``
    without the letter properties, and ``__topic`` = ``to`` or the ``REAL_TOPIC`` property."""
    from pyspark.sql import functions as F

    target = F.lit(to) if to else F.col("__messageProperties").getItem("REAL_TOPIC")
    properties = F.map_filter("__messageProperties", lambda k, _v: ~k.isin(*LETTER_PROPERTIES))
    return df.select("value", "__key", "__eventTime", properties.alias("__messageProperties"),
                     target.alias("__topic"), "__partition", "__offset")


def read_planned(session: Any, args: Any, dlq: str, start: Mapping[Any, Any], end: Mapping[Any, Any],
                 to: str | None, planned: Any) -> tuple[Any, Any]:
    """``(selected, rows)``: the DLQ's messages ``start -> end`` (offsets or message ids, as the source takes
    them), reduced by ``planned(df)`` to the plan's, then by ``--filter``; and those as rows for the sink. A
    filter Spark cannot analyse is bad input (exit 2)."""
    from connector.spark.offsets import dumps

    source = (session.read.format("pulsarlike").option("service.url", args.service_url).options(**spark_options())
              .option("topic", dlq).option("startingOffsets", dumps(start)).option("endingOffsets", dumps(end))
              .option("maxMessagesPerPartition", READ_SPLIT_MESSAGES).option("keyType", "string").load())
    source = planned(source)
    try:
        selected = source.where(args.filter) if args.filter else source
        return selected, redrive_rows(selected, to)
    except Exception as exc:
        if analysis_error(exc):
            raise JobInputError(f"--filter {args.filter!r}: {first_line(exc)}") from None
        raise


def without_acked(df: Any, plans: Mapping[Any, PartitionPlan]) -> Any:
    """``df`` minus the rows of individually acknowledged ranges."""
    from pyspark.sql import functions as F

    condition = None
    for tp, plan in plans.items():
        for s, e in plan.acked:
            hit = (F.col("__partition") == tp.partition) & (F.col("__offset") >= s) & (F.col("__offset") < e)
            condition = hit if condition is None else condition | hit
    return df if condition is None else df.where(~condition)


# --- broker side -----------------------------------------------------------------------------------------
def _plan(service_url: str, dlq: str, subscription: str) -> dict[Any, PartitionPlan]:
    from connector import Admin

    bounds = topic_bounds(service_url, dlq)
    if not bounds:
        raise JobInputError(f"dead letter topic {dlq} does not exist")
    plans = {}
    with Admin(service_url, **client_kwargs(service_url)) as admin:
        for tp, b in sorted(bounds.items()):
            cursor = admin.topic_internal_stats(tp.internal_name).get("cursors", {}).get(subscription)
            if cursor is None:
                plans[tp] = PartitionPlan(b.start, b.end, exists=False)
                continue
            start = max(position_offset(cursor["markDeletePosition"]) + 1, b.start)  # ranges after it are apart
            acked = [(max(s, start), min(e, b.end)) for s, e in
                     parse_acked_ranges(cursor.get("individuallyDeletedMessages", ""))
                     if e > start and s < b.end]
            plans[tp] = PartitionPlan(min(start, b.end), b.end, acked)
    return plans


def _ensure_subscription(service_url: str, subscription: str, plans: Mapping[Any, PartitionPlan]) -> None:
    from connector.spark.source_admin import SourceAdmin

    calls = SourceAdmin(service_url, 30_000, security())
    try:
        for tp, plan in plans.items():
            if not plan.exists:
                calls.ensure_subscription(tp, subscription, plan.start)
    finally:
        calls.close()


def _acknowledge(service_url: str, dlq: str, subscription: str, plans: Mapping[Any, PartitionPlan],
                 redriven: Mapping[int, list[int]] | None) -> int:
    """Acknowledge what was re-driven (``redriven`` None: everything planned); returns how many."""
    from connector import Admin

    individual: dict[int, set[int]] = {}
    acknowledged = 0
    with Admin(service_url, **client_kwargs(service_url)) as admin:
        for tp, plan in plans.items():
            if redriven is None:
                upto, rest = plan.end, []
            else:
                upto, rest = plan_acks(plan.start, plan.end, redriven.get(tp.partition, []), plan.acked)
            if upto > plan.start:
                admin.acknowledge_up_to(tp.internal_name, subscription, upto)
                acknowledged += (upto - plan.start) - sum(min(e, upto) - s for s, e in plan.acked if s < upto)
            if rest:
                individual[tp.partition] = set(rest)
    if individual:
        acknowledged += _acknowledge_individually(service_url, dlq, subscription, individual)
    return acknowledged


def _acknowledge_individually(service_url: str, dlq: str, subscription: str,
                              wanted: dict[int, set[int]]) -> int:
    """Receive the subscription's messages with a Shared consumer and acknowledge those in ``wanted``
    (partition -> offsets); the others go back to the backlog when the consumer closes."""
    from broker_core.errors import Timeout
    from connector import Client, ConsumerType

    highest = {p: max(offsets) for p, offsets in wanted.items()}
    left = sum(len(offsets) for offsets in wanted.values())
    passed: set[int] = set()
    acknowledged = 0
    client = Client(service_url, **client_kwargs(service_url))
    try:
        consumer = client.subscribe(dlq, subscription, consumer_type=ConsumerType.Shared,
                                    batch_index_ack_enabled=True, consumer_name=f"{NAME}-acknowledger")
        try:
            while left and len(passed) < len(highest):
                try:
                    msg = consumer.receive(timeout_millis=RECEIVE_TIMEOUT_MS)
                except Timeout:
                    break
                mid = msg.message_id()
                offset = mid.offset()
                offsets = wanted.get(mid.partition())
                if offsets is not None and offset in offsets:
                    consumer.acknowledge(msg)
                    offsets.discard(offset)
                    acknowledged += 1
                    left -= 1
                if offset >= highest.get(mid.partition(), offset + 1):
                    passed.add(mid.partition())
        finally:
            consumer.close()
    finally:
        client.close()
    if left:
        raise JobFailed(f"{left} re-driven message(s) of {dlq} could not be acknowledged on subscription "
                        f"{subscription} (another consumer of the subscription holds them?); they are in their "
                        "topic already: acknowledge them, or rerun (the same plan writes nothing twice)")
    return acknowledged


def _backlog(service_url: str, dlq: str, subscription: str) -> int | None:
    from connector import Admin

    with Admin(service_url, **client_kwargs(service_url)) as admin:
        return admin.topic_stats(dlq).get("subscriptions", {}).get(subscription, {}).get("msgBacklog")


# --- the run ---------------------------------------------------------------------------------------------
def run(args: Any, spark: Any = None) -> RedriveSummary:
    started = time.monotonic()
    dlq = qualified(args.dlq_topic, "DLQ_TOPIC")
    to = qualified(args.to, "--to") if args.to else None
    if to == dlq:
        raise JobInputError("--to names the dead letter topic itself; give the topic to re-drive to")
    # a wrong --service-url fails here, before anything is read or written
    dense = dense_offsets(args.service_url)
    with spark_session(f"pulsarlike-redrive {dlq}", args.master, spark) as session:
        if not dense:
            from jobs.redrive_ids import run_ids

            summary = run_ids(args, session, dlq, to, RedriveSummary(dlq, args.subscription, 0, dry_run=args.dry_run))
            summary.seconds = time.monotonic() - started
            return summary
        plans = _plan(args.service_url, dlq, args.subscription)
        planned = sum(p.end - p.start - sum(e - s for s, e in p.acked) for p in plans.values())
        summary = RedriveSummary(dlq, args.subscription, planned, dry_run=args.dry_run)
        if planned == 0:
            summary.backlog = _backlog(args.service_url, dlq, args.subscription) if not args.dry_run else None
            summary.seconds = time.monotonic() - started
            return summary
        if not args.dry_run:  # from here on the subscription holds the range against retention
            _ensure_subscription(args.service_url, args.subscription, plans)
        selected, rows = read_planned(
            session, args, dlq, {tp: p.start for tp, p in plans.items()}, {tp: p.end for tp, p in plans.items()},
            to, lambda source: without_acked(source, plans))
        from pyspark.sql import functions as F

        # every pass reads the whole planned range (acknowledged ranges and filtered-out messages are
        # dropped after the source), so that is what each bar counts up to
        read = sum(p.end - p.start for p in plans.values())
        progress = Progress(session, enabled=not args.no_progress)
        with progress.track(f"reading {args.dlq_topic}", read):
            counts = rows.groupBy("__topic").agg(F.count(F.lit(1)).alias("n"),
                                                  F.min("__offset").alias("first")).collect()
        targets = check_targets(counts, dlq)
        summary.targets = targets
        summary.redriven = sum(targets.values())
        if args.dry_run or summary.redriven == 0:
            summary.seconds = time.monotonic() - started
            return summary
        redriven = None
        if args.filter:
            with progress.track(f"offsets of {args.dlq_topic}", read):
                found = rows.select("__partition", "__offset").collect()
            redriven = {}
            for row in found:
                redriven.setdefault(row["__partition"], []).append(row["__offset"])
        before = {target: _end(args.service_url, target) for target in targets}
        writer = (rows.drop("__partition", "__offset").write.format("pulsarlike").mode("append")
                  .option("service.url", args.service_url).options(**spark_options())
                  .option("writeId", write_id(dlq, args.subscription, plans, args.filter, to)))
        with progress.track(f"redrive {args.dlq_topic}", read):
            writer.save()
        summary.written = sum(_end(args.service_url, target) - n for target, n in before.items())
        summary.acknowledged = _acknowledge(args.service_url, dlq, args.subscription, plans, redriven)
        summary.backlog = _backlog(args.service_url, dlq, args.subscription)
    summary.seconds = time.monotonic() - started
    return summary


def check_targets(counts: Sequence[Any], dlq: str) -> dict[str, int]:
    """``{target topic: messages}`` from the rows' counts per ``__topic`` (with ``n`` and ``first``, the first
    offset: null on a broker without dense offsets); JobInputError for a missing or bad target."""
    targets: dict[str, int] = {}
    for row in counts:
        at = f" (the first at offset {row['first']})" if row["first"] is not None else ""
        if row["__topic"] is None:
            raise JobInputError(f"{row['n']:,} message(s) of {dlq} have no REAL_TOPIC property{at}: give --to "
                                "TOPIC, or leave them out with --filter")
        target = qualified(row["__topic"], f"REAL_TOPIC {row['__topic']!r} of {row['n']:,} message(s){at}:")
        if target == dlq:
            raise JobInputError(f"{row['n']:,} message(s) would be re-driven to the dead letter topic itself "
                                f"(REAL_TOPIC {row['__topic']}); give --to TOPIC or a --filter")
        targets[target] = targets.get(target, 0) + int(row["n"])
    return targets


def _end(service_url: str, topic: str) -> int:
    return sum(b.end for b in topic_bounds(service_url, topic).values())


def parser() -> Any:
    p = job_parser(NAME, __doc__.split("\n\n")[0])
    p.add_argument("dlq_topic", metavar="DLQ_TOPIC", help="the dead letter topic (e.g. orders-billing-DLQ)")
    p.add_argument("--to", default=None, help="re-drive every message to this topic (default: its REAL_TOPIC)")
    p.add_argument("--filter", default=None, metavar="EXPR",
                   help="a Spark SQL condition over the source's columns, e.g. \"__key = 'a'\"")
    p.add_argument("--subscription", default=DEFAULT_SUBSCRIPTION,
                   help=f"the DLQ's durable subscription to acknowledge on (default {DEFAULT_SUBSCRIPTION}; "
                        "use the dead letter policy's initial_subscription_name to drain that one)")
    p.add_argument("--dry-run", action="store_true", help="count what would be re-driven where; change nothing "
                   "(on a broker other than pulsarlike a missing --subscription is created: docs/jobs.md)")
    p.add_argument("--admin-url", default=None,
                   help="the broker's admin REST URL (http://HOST:8080): on a Pulsar broker other than pulsarlike "
                        "the sink checks and turns on the targets' deduplication there (pulsarlike needs none)")
    return p


def main(argv: Sequence[str] | None = None, spark: Any = None) -> int:
    return job_main(NAME, parser(), run, argv, spark)


if __name__ == "__main__":
    sys.exit(main())
