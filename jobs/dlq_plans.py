"""redrive's plan of a dead letter topic in the job's positions (:mod:`jobs.positions`): which messages the DLQ's
durable subscription has not acknowledged, the range that reads them, and how they are acknowledged after.
:func:`dlq_plan` picks the plan for the positions the job chose; :mod:`jobs.redrive` runs either the same way.

- :class:`OffsetDlq` (pulsarlike, dense offsets): each partition's ends, the subscription's first
  unacknowledged offset and its individually acknowledged ranges from the broker's internal stats (those
  messages are left out); after the write, the contiguous prefix acknowledged cumulatively
  (``Admin.acknowledge_up_to``), each other re-driven message individually through a Shared consumer.
- :class:`HeldDlq` (another Pulsar broker, message ids): each partition's last message id, then a Shared
  consumer of the subscription (created at the earliest message when missing) receives what the subscription
  has not acknowledged up to those ids -- the broker delivers only unacknowledged messages, so individually
  acknowledged ones are left out as on pulsarlike -- and holds them until the run ends (no other consumer of
  the subscription gets them meanwhile; messages past the planned ids are not taken). It acknowledges each
  re-driven message individually; the others go back to the backlog when it closes. A message it did not
  receive within ``RECEIVE_TIMEOUT_MS`` of the last one (a slow broker) is not planned: it stays in the backlog
  for the next run, never re-driven unacknowledged. Not counted there: messages written and the backlog (no
  admin calls over the binary protocol).

A plan has ``plan(dry_run)`` (how many messages are planned), ``start``/``end`` (the range to read),
``select(df)`` (the planned messages of the range), ``read_total`` (what a progress bar counts to),
``redriven(rows)`` (the re-driven messages of rows with ``__partition``, ``__offset`` and ``__messageId``),
``write_id(filter, to)``, ``sink_options(admin_url)``, ``target_ends(targets)`` / ``written(before)``,
``acknowledge(redriven)``, ``backlog()`` and ``close()``.
"""
from __future__ import annotations

import hashlib
import json
import logging
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from jobs._common import BROKER_TIMEOUT_MS, JobFailed, JobInputError, client_kwargs, security
from jobs.positions import Positions, before, id_key

log = logging.getLogger(__name__)

RECEIVE_TIMEOUT_MS = 5_000
"""How long a consumer of the DLQ waits for the next message before it takes what it has."""
RECEIVE_QUEUE = 1_000
_RANGE = re.compile(r"\((?:-?\d+:)?(-?\d+)\.\.(?:-?\d+:)?(-?\d+)\]")
Key = tuple[int, int, int, int]
"""``(partition, ledger, entry, batch)`` of a DLQ message on a broker without dense offsets."""


def dlq_plan(positions: Positions, dlq: str, subscription: str) -> "OffsetDlq | HeldDlq":
    """The plan of ``dlq`` on ``subscription`` in the job's positions."""
    return (OffsetDlq if positions.dense else HeldDlq)(positions, dlq, subscription)


# --- dense offsets (pulsarlike) ---------------------------------------------------------------------------
@dataclass
class PartitionPlan:
    """One DLQ partition: re-drive ``start <= offset < end`` minus the ``acked`` ranges."""

    start: int
    end: int
    acked: list[tuple[int, int]] = field(default_factory=list)
    """Individually acknowledged ranges ``[s, e)`` above ``start`` (left out)."""
    exists: bool = True
    """Whether the subscription exists on this partition already."""


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


def without_acked(df: Any, plans: Mapping[Any, PartitionPlan]) -> Any:
    """``df`` minus the rows of individually acknowledged ranges."""
    from pyspark.sql import functions as F

    condition = None
    for tp, plan in plans.items():
        for s, e in plan.acked:
            hit = (F.col("__partition") == tp.partition) & (F.col("__offset") >= s) & (F.col("__offset") < e)
            condition = hit if condition is None else condition | hit
    return df if condition is None else df.where(~condition)


class OffsetDlq:
    """The DLQ's plan on pulsarlike (module docstring)."""

    read_label = "offsets of"

    def __init__(self, positions: Positions, dlq: str, subscription: str) -> None:
        self.positions = positions
        self.service_url = positions.service_url
        self.dlq = dlq
        self.subscription = subscription
        self.plans: dict[Any, PartitionPlan] = {}

    def plan(self, dry_run: bool) -> int:
        from connector import Admin

        bounds = self.positions.bounds(self.dlq)
        if not bounds:
            raise JobInputError(f"dead letter topic {self.dlq} does not exist")
        with Admin(self.service_url, **client_kwargs(self.service_url)) as admin:
            for tp, b in sorted(bounds.items()):
                cursor = admin.topic_internal_stats(tp.internal_name).get("cursors", {}).get(self.subscription)
                if cursor is None:
                    self.plans[tp] = PartitionPlan(b.start, b.end, exists=False)
                    continue
                start = max(position_offset(cursor["markDeletePosition"]) + 1, b.start)  # ranges after it are apart
                acked = [(max(s, start), min(e, b.end)) for s, e in
                         parse_acked_ranges(cursor.get("individuallyDeletedMessages", ""))
                         if e > start and s < b.end]
                self.plans[tp] = PartitionPlan(min(start, b.end), b.end, acked)
        planned = sum(p.end - p.start - sum(e - s for s, e in p.acked) for p in self.plans.values())
        if planned and not dry_run:  # from here on the subscription holds the range against retention
            self._ensure_subscription()
        return planned

    def _ensure_subscription(self) -> None:
        from connector.spark.source_admin import SourceAdmin

        calls = SourceAdmin(self.service_url, BROKER_TIMEOUT_MS, security())
        try:
            for tp, plan in self.plans.items():
                if not plan.exists:
                    calls.ensure_subscription(tp, self.subscription, plan.start)
        finally:
            calls.close()

    @property
    def start(self) -> dict[Any, int]:
        return {tp: p.start for tp, p in self.plans.items()}

    @property
    def end(self) -> dict[Any, int]:
        return {tp: p.end for tp, p in self.plans.items()}

    @property
    def read_total(self) -> int:
        """Every pass reads the whole planned range (acknowledged ranges and filtered-out messages are dropped
        after the source), so that is what each bar counts up to."""
        return sum(p.end - p.start for p in self.plans.values())

    def select(self, df: Any) -> Any:
        return without_acked(df, self.plans)

    @staticmethod
    def redriven(rows: Sequence[Any]) -> dict[int, list[int]]:
        found: dict[int, list[int]] = {}
        for row in rows:
            found.setdefault(row["__partition"], []).append(row["__offset"])
        return found

    def write_id(self, filter_expr: str | None, to: str | None) -> str:
        return write_id(self.dlq, self.subscription, self.plans, filter_expr, to)

    @staticmethod
    def sink_options(admin_url: str | None) -> dict[str, str]:
        return {}

    def target_ends(self, targets: Iterable[str]) -> dict[str, int]:
        return {target: self._end(target) for target in targets}

    def written(self, before_write: Mapping[str, int]) -> int:
        """Messages the targets' ends moved by since ``before_write``."""
        return sum(self._end(target) - n for target, n in before_write.items())

    def _end(self, topic: str) -> int:
        return sum(b.end for b in self.positions.bounds(topic).values())

    def acknowledge(self, redriven: Mapping[int, list[int]] | None) -> int:
        """Acknowledge what was re-driven (``redriven`` None: everything planned); returns how many."""
        from connector import Admin

        individual: dict[int, set[int]] = {}
        acknowledged = 0
        with Admin(self.service_url, **client_kwargs(self.service_url)) as admin:
            for tp, plan in self.plans.items():
                if redriven is None:
                    upto, rest = plan.end, []
                else:
                    upto, rest = plan_acks(plan.start, plan.end, redriven.get(tp.partition, []), plan.acked)
                if upto > plan.start:
                    admin.acknowledge_up_to(tp.internal_name, self.subscription, upto)
                    acknowledged += (upto - plan.start) - sum(min(e, upto) - s for s, e in plan.acked if s < upto)
                if rest:
                    individual[tp.partition] = set(rest)
        if individual:
            acknowledged += self._acknowledge_individually(individual)
        return acknowledged

    def _acknowledge_individually(self, wanted: dict[int, set[int]]) -> int:
        """Receive the subscription's messages with a Shared consumer and acknowledge those in ``wanted``
        (partition -> offsets); the others go back to the backlog when the consumer closes."""
        from broker_core.errors import Timeout
        from connector import Client, ConsumerType

        highest = {p: max(offsets) for p, offsets in wanted.items()}
        left = sum(len(offsets) for offsets in wanted.values())
        passed: set[int] = set()
        acknowledged = 0
        client = Client(self.service_url, **client_kwargs(self.service_url))
        try:
            consumer = client.subscribe(self.dlq, self.subscription, consumer_type=ConsumerType.Shared,
                                        batch_index_ack_enabled=True, consumer_name="redrive-acknowledger")
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
            raise JobFailed(f"{left} re-driven message(s) of {self.dlq} could not be acknowledged on subscription "
                            f"{self.subscription} (another consumer of the subscription holds them?); they are in "
                            "their topic already: acknowledge them, or rerun (the same plan writes nothing twice)")
        return acknowledged

    def backlog(self) -> int | None:
        from connector import Admin

        with Admin(self.service_url, **client_kwargs(self.service_url)) as admin:
            stats = admin.topic_stats(self.dlq)
        return stats.get("subscriptions", {}).get(self.subscription, {}).get("msgBacklog")

    def close(self) -> None:
        pass


# --- message ids (another Pulsar broker) -------------------------------------------------------------------
def ranges(ends: Mapping[Any, Any], pending: Mapping[Key, Any]) -> tuple[dict[Any, Any], dict[Any, Any]]:
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


class HeldDlq:
    """The DLQ's durable subscription held by one Shared consumer for the run (module docstring)."""

    read_label = "message ids of"
    read_total = None
    """A range's size is not known before it is read."""

    def __init__(self, positions: Positions, dlq: str, subscription: str) -> None:
        self.positions = positions
        self.service_url = positions.service_url
        self.dlq = dlq
        self.subscription = subscription
        self.client: Any = None
        self.consumer: Any = None
        self.pending: dict[Key, Any] = {}
        """The planned messages' ids, by key."""
        self.start: dict[Any, Any] = {}
        self.end: dict[Any, Any] = {}

    def plan(self, dry_run: bool) -> int:
        ends = {tp: b.end for tp, b in self.positions.bounds(self.dlq).items()}
        if all(end.is_earliest for end in ends.values()):
            return 0  # nothing stored: attach nothing (subscribing would create the subscription, even the topic)
        if dry_run:
            print(f"pulsarlike job redrive: a dry run on a broker other than pulsarlike attaches a consumer to "
                  f"{self.subscription} (created at the earliest message when missing); it acknowledges nothing",
                  file=sys.stderr)
        self.take(ends)
        self.start, self.end = ranges(ends, self.pending)
        return len(self.pending)

    def take(self, ends: Mapping[Any, Any]) -> None:
        """Receive the subscription's unacknowledged messages up to each partition's end in ``ends``."""
        from broker_core.errors import Timeout
        from connector import Client, ConsumerType, InitialPosition
        from connector.spark.message_id_offsets import is_within, of_message_id

        self.client = Client(self.service_url, transport="binary",
                             operation_timeout_seconds=BROKER_TIMEOUT_MS / 1000.0, **client_kwargs(self.service_url))
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

    def select(self, df: Any) -> Any:
        return only(df, set(self.pending))

    @staticmethod
    def redriven(rows: Sequence[Any]) -> set[Key]:
        from connector.client.message_id import MessageId

        return {(row["__partition"], *id_key(MessageId.deserialize(bytes(row["__messageId"])))) for row in rows}

    def write_id(self, filter_expr: str | None, to: str | None) -> str:
        return planned_write_id(self.dlq, self.subscription, self.pending, filter_expr, to)

    @staticmethod
    def sink_options(admin_url: str | None) -> dict[str, str]:
        """The sink checks and turns on the targets' deduplication over REST when given the admin URL."""
        return {"admin.url": admin_url} if admin_url else {}

    @staticmethod
    def target_ends(targets: Iterable[str]) -> None:
        return None

    @staticmethod
    def written(before_write: Any) -> None:
        return None  # not counted: the sink's commit line in the Spark log has it

    def acknowledge(self, keys: set[Key] | None) -> int:
        """Acknowledge the re-driven messages ``keys`` (None: every planned one); returns how many the broker is
        told: the client holds a batched entry's acknowledgments until all its messages are acknowledged, so
        the messages of an entry the filter split stay in the backlog (re-driven again by a later run: at
        least once, never lost)."""
        keys = set(self.pending) if keys is None else keys
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

    @staticmethod
    def backlog() -> None:
        return None  # no admin calls over the binary protocol

    def close(self) -> None:
        try:
            if self.consumer is not None:
                self.consumer.close()  # sends the grouped acknowledgments; the rest go back to the backlog
        finally:
            if self.client is not None:
                self.client.close()
