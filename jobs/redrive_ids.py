"""redrive on a Pulsar broker other than pulsarlike: the plan is the set of message ids the DLQ's durable
subscription has not acknowledged, taken by a consumer of that subscription, instead of dense offsets and the
broker's internal stats (which only pulsarlike's admin calls give).

One run, in order (the same guarantees as on pulsarlike, :mod:`jobs.redrive`):

1. plan on the driver: each DLQ partition's last message id, then a Shared consumer of ``--subscription``
   (created at the earliest message when missing) receives what the subscription has not acknowledged up to
   those ids; the broker delivers only unacknowledged messages, so individually acknowledged ones are left
   out as on pulsarlike. The consumer stays open until the run ends, holding them (no other consumer of the
   subscription gets them meanwhile); messages past the planned ids are not taken.
2. read the planned ids' range with ``spark.read.format("pulsarlike")`` (message id offsets) and keep exactly
   the planned messages; apply ``--filter``; check every target.
3. write through the sink; ``writeId`` is a hash of the planned ids, the subscription, the filter and
   ``--to``, so a rerun of the same plan writes nothing twice where the broker deduplicates
   (``brokerDeduplicationEnabled``; ``--admin-url`` lets the sink check and turn it on for the target).
4. acknowledge on the consumer each re-driven message, individually (all of them without a filter); the
   others go back to the subscription's backlog when the consumer closes.

A message the consumer did not receive within ``RECEIVE_TIMEOUT_MS`` of the last one (a slow broker) is not
planned: it stays in the backlog for the next run, never re-driven unacknowledged. ``--dry-run`` attaches
the consumer too (Pulsar's binary protocol cannot look at a subscription otherwise: one missing is created at
the earliest message) and acknowledges nothing. Not counted there: messages written (the sink's commit line
in the Spark log has them) and the backlog (no admin calls over the binary protocol).
"""
from __future__ import annotations

import hashlib
import json
import logging
import sys
import time
from typing import Any

from jobs._common import BROKER_TIMEOUT_MS, Progress, client_kwargs
from jobs._message_ids import before, id_key, partitions_and_ends

log = logging.getLogger(__name__)

RECEIVE_TIMEOUT_MS = 5_000
"""How long the planning consumer waits for the next unacknowledged message before it takes what it has."""
RECEIVE_QUEUE = 1_000
Key = tuple[int, int, int, int]
"""``(partition, ledger, entry, batch)`` of a DLQ message."""


class HeldDlq:
    """The DLQ's durable subscription held by one Shared consumer for the run (module docstring)."""

    def __init__(self, service_url: str, dlq: str, subscription: str) -> None:
        from connector import Client

        self.dlq = dlq
        self.subscription = subscription
        self.client = Client(service_url, transport="binary", operation_timeout_seconds=BROKER_TIMEOUT_MS / 1000.0,
                             **client_kwargs(service_url))
        self.consumer: Any = None
        self.pending: dict[Key, Any] = {}
        """The planned messages' ids, by key."""

    def take(self, ends: dict[Any, Any]) -> None:
        """Receive the subscription's unacknowledged messages up to each partition's end in ``ends``."""
        from broker_core.errors import Timeout
        from connector import ConsumerType, InitialPosition
        from connector.spark.message_id_offsets import is_within, of_message_id

        self.consumer = self.client.subscribe(
            self.dlq, self.subscription, consumer_type=ConsumerType.Shared, initial_position=InitialPosition.Earliest,
            # no batch-index acknowledgments: a broker without them (acknowledgmentAtBatchIndexLevelEnabled off)
            # would take one message's acknowledgment for its whole entry, messages left out by --filter too
            receiver_queue_size=RECEIVE_QUEUE, batch_index_ack_enabled=False, consumer_name="redrive-planner")
        by_partition = {tp.partition: end for tp, end in ends.items()}
        waiting = {p for p, end in by_partition.items() if not end.is_earliest}
        while waiting:
            try:
                message = self.consumer.receive(timeout_millis=RECEIVE_TIMEOUT_MS)
            except Timeout:
                break
            mid = message.message_id()
            end = by_partition.get(mid.partition())
            if end is None or not is_within(mid, end):
                waiting.discard(mid.partition())
                continue  # past the planned end: not taken (back to the backlog when the consumer closes)
            self.pending[(mid.partition(), *id_key(mid))] = mid
            if of_message_id(mid).key >= end.key:
                waiting.discard(mid.partition())
        log.info("event=redrive_planned dlq=%s subscription=%s messages=%d", self.dlq, self.subscription,
                 len(self.pending))

    def acknowledge(self, keys: set[Key]) -> int:
        """Acknowledge the re-driven messages ``keys``; returns how many the broker is told: the client holds
        a batched entry's acknowledgments until all its messages are acknowledged, so the messages of an entry
        the filter split stay in the backlog (re-driven again by a later run: at least once, never lost)."""
        for key in sorted(keys):
            self.consumer.acknowledge(self.pending[key])
        entries: dict[tuple[int, int, int], list[Key]] = {}
        for key in self.pending:
            entries.setdefault(key[:3], []).append(key)
        split = [k for members in entries.values() if not all(m in keys for m in members) for k in members
                 if k in keys]
        if split:
            log.warning("event=redrive_batch_split dlq=%s subscription=%s messages=%d: re-driven messages whose "
                        "batched entry holds messages the filter left out stay unacknowledged", self.dlq,
                        self.subscription, len(split))
        return len(keys) - len(split)

    def close(self) -> None:
        try:
            if self.consumer is not None:
                self.consumer.close()  # sends the grouped acknowledgments; the rest go back to the backlog
        finally:
            self.client.close()


def ranges(ends: dict[Any, Any], pending: dict[Key, Any]) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """``(start, end)`` per partition covering its planned messages (an empty range for one with none)."""
    from connector.spark.message_id_offsets import IdOffset

    start, end = {}, {}
    for tp, last in ends.items():
        keys = sorted(k[1:] for k in pending if k[0] == tp.partition)
        if keys:
            start[tp], end[tp] = before(*keys[0]), IdOffset(*keys[-1])
        else:
            start[tp] = end[tp] = last
    return start, end


def planned_write_id(dlq: str, subscription: str, keys: Any, filter_expr: str | None, to: str | None) -> str:
    document = {"dlq": dlq, "subscription": subscription, "filter": filter_expr, "to": to, "ids": sorted(keys)}
    return "redrive-" + hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:16]


def only(df: Any, keys: set[Key]) -> Any:
    """The rows of ``df`` whose message is one of ``keys``."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType

    wanted = frozenset(keys)

    def planned(partition, serialized):  # type: ignore[no-untyped-def]  # hints would make pyspark guess a pandas UDF
        from connector.client.message_id import MessageId  # on the executor: only the connector is imported

        mid = MessageId.deserialize(bytes(serialized))
        return (partition, mid.ledger_id(), mid.entry_id(), mid.batch_index()) in wanted

    return df.where(F.udf(planned, BooleanType())("__partition", "__messageId"))


def run_ids(args: Any, session: Any, dlq: str, to: str | None, summary: Any) -> Any:
    """The run on a broker without dense offsets (module docstring); fills and returns ``summary``."""
    from pyspark.sql import functions as F

    from jobs._common import spark_options
    from jobs.redrive import check_targets, read_planned

    started = time.monotonic()
    summary.written = None
    ends = partitions_and_ends(args.service_url, dlq)
    if all(end.is_earliest for end in ends.values()):
        return summary  # nothing stored: attach nothing (subscribing would create the subscription, even the topic)
    if args.dry_run:
        print(f"pulsarlike job redrive: a dry run on a broker other than pulsarlike attaches a consumer to "
              f"{args.subscription} (created at the earliest message when missing); it acknowledges nothing",
              file=sys.stderr)
    held = HeldDlq(args.service_url, dlq, args.subscription)
    try:
        held.take(ends)
        summary.planned = len(held.pending)
        if not held.pending:
            return summary
        start, end = ranges(ends, held.pending)
        selected, rows = read_planned(session, args, dlq, start, end, to,
                                      lambda source: only(source, set(held.pending)))
        progress = Progress(session, enabled=not args.no_progress)
        with progress.track(f"reading {args.dlq_topic}"):
            counts = rows.groupBy("__topic").agg(F.count(F.lit(1)).alias("n"),
                                                  F.min("__offset").alias("first")).collect()
        summary.targets = check_targets(counts, dlq)
        summary.redriven = sum(summary.targets.values())
        if args.dry_run or summary.redriven == 0:
            return summary
        redriven = set(held.pending)
        if args.filter:
            with progress.track(f"message ids of {args.dlq_topic}"):
                found = selected.select("__partition", "__messageId").collect()
            from connector.client.message_id import MessageId

            redriven = {(row["__partition"], *id_key(MessageId.deserialize(bytes(row["__messageId"]))))
                        for row in found}
        writer = (rows.drop("__partition", "__offset").write.format("pulsarlike").mode("append")
                  .option("service.url", args.service_url).options(**spark_options())
                  .option("writeId", planned_write_id(dlq, args.subscription, held.pending, args.filter, to)))
        if args.admin_url:  # the sink checks and turns on the target's deduplication over REST
            writer = writer.option("admin.url", args.admin_url)
        with progress.track(f"redrive {args.dlq_topic}"):
            writer.save()
        summary.acknowledged = held.acknowledge(redriven)
    finally:
        held.close()
        summary.seconds = time.monotonic() - started
    return summary
