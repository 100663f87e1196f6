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

The job's positions are chosen once, by one binary ``CONNECT`` (:mod:`jobs.positions`), and the DLQ's plan
with them (:mod:`jobs.dlq_plans`). On a Pulsar broker other than pulsarlike step 1 plans the set of message
ids the subscription has not acknowledged, taken by a Shared consumer of it that holds them for the run
(``--dry-run`` attaches it too: the binary protocol cannot look at a subscription otherwise; a missing one is
created at the earliest message), ``writeId`` is a hash of those ids, and step 4 acknowledges each re-driven
message individually on that consumer (a batched entry only when all its messages were re-driven); messages
written and the backlog are not counted there, and ``--admin-url`` lets the sink check and turn on the
targets' deduplication.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from jobs._common import (READ_SPLIT_MESSAGES, JobInputError, Progress, analysis_error, first_line, job_parser,
                          qualified, job_main, spark_options, spark_session)
from jobs.dlq_plans import dlq_plan
from jobs.positions import positions_for

NAME = "redrive"
DEFAULT_SUBSCRIPTION = "pulsarlike-redrive"
LETTER_PROPERTIES = ("REAL_TOPIC", "ORIGIN_MESSAGE_ID", "RECONSUMETIMES", "DELAY_TIME")
"""Properties a dead letter or retry hop adds; dropped from a re-driven message."""


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


# --- the rows ------------------------------------------------------------------------------------------
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


# --- the run ---------------------------------------------------------------------------------------------
def run(args: Any, spark: Any = None) -> RedriveSummary:
    started = time.monotonic()
    dlq = qualified(args.dlq_topic, "DLQ_TOPIC")
    to = qualified(args.to, "--to") if args.to else None
    if to == dlq:
        raise JobInputError("--to names the dead letter topic itself; give the topic to re-drive to")
    # a wrong --service-url fails here, before anything is read or written
    positions = positions_for(args.service_url, args.admin_url)
    summary = RedriveSummary(dlq, args.subscription, 0, written=0 if positions.dense else None, dry_run=args.dry_run)
    with spark_session(f"pulsarlike-redrive {dlq}", args.master, spark) as session:
        plan = dlq_plan(positions, dlq, args.subscription)
        try:
            summary.planned = plan.plan(args.dry_run)
            if summary.planned == 0:
                summary.backlog = plan.backlog() if not args.dry_run else None
                return summary
            selected, rows = read_planned(session, args, dlq, plan.start, plan.end, to, plan.select)
            from pyspark.sql import functions as F

            progress = Progress(session, enabled=not args.no_progress)
            with progress.track(f"reading {args.dlq_topic}", plan.read_total):
                counts = rows.groupBy("__topic").agg(F.count(F.lit(1)).alias("n"),
                                                      F.min("__offset").alias("first")).collect()
            summary.targets = check_targets(counts, dlq)
            summary.redriven = sum(summary.targets.values())
            if args.dry_run or summary.redriven == 0:
                return summary
            redriven = None
            if args.filter:
                with progress.track(f"{plan.read_label} {args.dlq_topic}", plan.read_total):
                    redriven = plan.redriven(selected.select("__partition", "__offset", "__messageId").collect())
            before = plan.target_ends(summary.targets)
            writer = (rows.drop("__partition", "__offset").write.format("pulsarlike").mode("append")
                      .option("service.url", args.service_url).options(**spark_options())
                      .options(**plan.sink_options(args.admin_url))
                      .option("writeId", plan.write_id(args.filter, to)))
            with progress.track(f"redrive {args.dlq_topic}", plan.read_total):
                writer.save()
            summary.written = plan.written(before)
            summary.acknowledged = plan.acknowledge(redriven)
            summary.backlog = plan.backlog()
        finally:
            plan.close()
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
