"""A job's positions: what an offset is on the broker the job runs against, chosen once per job
(:func:`positions_for`: one binary ``CONNECT`` says whose broker it is, as the Spark source chooses its offset
kind, :mod:`connector.spark.offset_kinds`). export and redrive plan, read and acknowledge over one of:

- :class:`DensePositions` (pulsarlike): a position is a partition's dense message offset, the next message
  after a boundary; a range ``start -> end`` holds ``start <= offset < end``. Bounds, time lookups and
  acknowledgments through pulsarlike's admin calls (:class:`~connector.spark.source_admin.SourceAdmin`,
  :class:`~connector.client.Admin`); data retention deleted is told from the first stored offset.
- :class:`IdPositions` (Apache Pulsar, pulsar-lite): a position is a message id boundary
  (:class:`~connector.spark.message_id_offsets.IdOffset`, the last message before it); a range holds
  ``start < id <= end``. Partitions and last ids over Pulsar's binary protocol
  (:class:`~connector.spark.any_broker.IdSourceCalls`), a publish time's message id over the broker's admin
  REST API (``--admin-url``: the binary protocol cannot find one), a durable subscription acknowledged
  cumulatively (whole entries). The size of a range is not known before it is read, nor data lost to
  retention (ids have gaps).

Both have the same order (``holds``, ``earlier``, ``first``), ``resolve`` (a user's JSON offsets), ``lost``,
``count`` and the broker calls ``bounds(topic)``, ``at_time(bounds, ms)`` and ``acknowledge(topic,
subscription, held)``; the pure parts need no broker, so plans are tested without one.
"""
from __future__ import annotations

import logging
from typing import Any, Mapping

from jobs._common import BROKER_TIMEOUT_MS, JobFailed, JobInputError, client_kwargs, security

log = logging.getLogger(__name__)

DENSE_KIND = "dense"
ID_KIND = "messageId"
"""The kinds' names, as the export manifest's ``offsetKind`` records them."""


class DensePositions:
    """pulsarlike's dense offsets (module docstring)."""

    kind = DENSE_KIND
    dense = True
    noun = "offset"

    def __init__(self, service_url: str = "") -> None:
        self.service_url = service_url

    # --- order --------------------------------------------------------------------------------------------
    @staticmethod
    def holds(start: int, end: int) -> bool:
        """Whether ``start -> end`` holds messages."""
        return end > start

    @staticmethod
    def earlier(a: int, b: int) -> int:
        return min(a, b)

    @staticmethod
    def first(bounds: Any) -> int:
        """Where a partition is read from at earliest: its first stored offset."""
        return bounds.start

    @staticmethod
    def resolve(flag: str, given: Mapping[Any, Any], bounds: Mapping[Any, Any], default_earliest: bool) -> dict:
        """Offsets for every partition in ``bounds`` from a user's JSON (``ValueError`` naming ``flag``)."""
        from connector.spark.planning import resolve_user_offsets

        return resolve_user_offsets(flag, given, bounds, default_earliest)

    @staticmethod
    def lost(start: Mapping[Any, int], end: Mapping[Any, int], bounds: Mapping[Any, Any]) -> list:
        """``(partition, first, end)`` of planned messages retention already deleted."""
        return [(tp, start[tp], min(bounds[tp].start, end[tp])) for tp in sorted(end)
                if start[tp] < bounds[tp].start and start[tp] < end[tp]]

    @staticmethod
    def count(start: Mapping[Any, int], end: Mapping[Any, int]) -> int:
        return sum(end[tp] - start[tp] for tp in end)

    # --- the broker ---------------------------------------------------------------------------------------
    def bounds(self, topic: str) -> dict[Any, Any]:
        """``{TopicPartition: Bounds(start, end)}`` of every partition of ``topic`` that exists (empty when the
        topic does not)."""
        from connector.spark.options import TopicSpec
        from connector.spark.source_admin import SourceAdmin

        calls = SourceAdmin(self.service_url, BROKER_TIMEOUT_MS, security())
        try:
            return calls.bounds(calls.discover(TopicSpec(topics=(topic,))))
        finally:
            calls.close()

    def at_time(self, bounds: Mapping[Any, Any], publish_time_ms: int) -> dict[Any, int]:
        """Each partition's offset of its first message published at or after the time (its end when none)."""
        from connector.spark.source_admin import SourceAdmin

        calls = SourceAdmin(self.service_url, BROKER_TIMEOUT_MS, security())
        try:
            return {tp: calls.offset_for_time(tp, publish_time_ms) for tp in bounds}
        finally:
            calls.close()

    def acknowledge(self, topic: str, subscription: str, held: Mapping[Any, int]) -> int | None:
        """Acknowledge everything below ``held`` on ``subscription`` (created there when missing, never moved
        back); returns its backlog."""
        from connector import Admin

        with Admin(self.service_url, **client_kwargs(self.service_url)) as admin:
            for tp, offset in held.items():
                admin.acknowledge_up_to(tp.internal_name, subscription, offset)
            stats = admin.topic_stats(topic)
        return stats.get("subscriptions", {}).get(subscription, {}).get("msgBacklog")


class IdPositions:
    """Message id boundaries on a broker without dense offsets (module docstring)."""

    kind = ID_KIND
    dense = False
    noun = "message id"

    def __init__(self, service_url: str = "", admin_url: str | None = None) -> None:
        self.service_url = service_url
        self.admin_url = admin_url

    # --- order --------------------------------------------------------------------------------------------
    @staticmethod
    def holds(start: Any, end: Any) -> bool:
        from connector.spark.message_id_offsets import holds_messages

        return holds_messages(start, end)

    @classmethod
    def earlier(cls, a: Any, b: Any) -> Any:
        return a if cls.holds(a, b) else b

    @staticmethod
    def first(bounds: Any) -> Any:
        return bounds.start  # before every message: ids have gaps, what retention deleted is not told

    @staticmethod
    def resolve(flag: str, given: Mapping[Any, Any], bounds: Mapping[Any, Any], default_earliest: bool) -> dict:
        """Boundaries for every partition in ``bounds`` from a user's JSON (-2: before the first message, -1:
        the last message id, a message id as it is); ``ValueError`` for a dense offset or an unknown partition,
        as the Spark source answers them."""
        from connector.spark.offset_kinds import IdKind

        return IdKind.resolve(flag, given, bounds, default_earliest)

    @staticmethod
    def lost(start: Mapping[Any, Any], end: Mapping[Any, Any], bounds: Mapping[Any, Any]) -> list:
        return []

    @staticmethod
    def count(start: Mapping[Any, Any], end: Mapping[Any, Any]) -> None:
        return None  # not known before the range is read

    # --- the broker ---------------------------------------------------------------------------------------
    def bounds(self, topic: str) -> dict[Any, Any]:
        """``{TopicPartition: Bounds(EARLIEST, last message id)}`` of ``topic``'s partitions (EARLIEST for one
        holding nothing), over Pulsar's binary protocol; a topic not created yet reads as one empty
        partition."""
        from connector.spark.any_broker import IdSourceCalls
        from connector.spark.offset_kinds import Bounds
        from connector.spark.message_id_offsets import EARLIEST
        from connector.spark.options import TopicSpec

        calls = IdSourceCalls(self.service_url, BROKER_TIMEOUT_MS, security())
        try:
            last = calls.last_ids(calls.discover(TopicSpec(topics=(topic,))))
        finally:
            calls.close()
        return {tp: Bounds(EARLIEST, end) for tp, end in last.items()}

    def at_time(self, bounds: Mapping[Any, Any], publish_time_ms: int) -> dict[Any, Any]:
        """Each partition's boundary just before its first message published at or after the time (its last
        message id when none), looked up over ``admin_url``."""
        admin_url = require_admin_url(self.admin_url, "--starting-time/--ending-time", "export")
        found = {tp: message_id_at(admin_url, tp, publish_time_ms) for tp in bounds}
        return {tp: (before(*mid, exact=True) if mid is not None else bounds[tp].end) for tp, mid in found.items()}

    def acknowledge(self, topic: str, subscription: str, held: Mapping[Any, Any]) -> None:
        """Acknowledge on the durable ``subscription`` of each partition every whole entry up to its boundary
        in ``held``: a consumer of the subscription (created at the earliest message when missing) that takes
        no message acknowledges cumulatively (:class:`connector.spark.any_broker.IdSourceCalls`); a position
        behind the subscription's moves nothing. A boundary inside a batched entry acknowledges up to the
        entry before it (a broker without batch-index acknowledgments would take the entry's later messages
        too). The backlog is not known (no admin calls over the binary protocol): None."""
        from connector.spark.any_broker import IdSourceCalls

        calls = IdSourceCalls(self.service_url, BROKER_TIMEOUT_MS, security())
        try:
            for tp, end in sorted(held.items()):
                calls.hold(tp, subscription, end)
        finally:
            calls.close()
        return None


Positions = DensePositions | IdPositions


def positions_for(service_url: str, admin_url: str | None = None) -> Positions:
    """The job's positions: dense on pulsarlike, message ids on any other broker; one binary CONNECT decides
    (a wrong service URL fails here, before anything is read or written)."""
    from connector.spark.any_broker import dense_offsets

    if dense_offsets(service_url, BROKER_TIMEOUT_MS, security()):
        return DensePositions(service_url)
    return IdPositions(service_url, admin_url)


# --- message ids ------------------------------------------------------------------------------------------
def before(ledger: int, entry: int, batch: int, exact: bool = False) -> Any:
    """The boundary just before the message ``(ledger, entry, batch)``: the previous index of its batch, else
    the previous entry of its ledger as a whole. Before a ledger's first entry: ``(ledger, -1)`` when
    ``exact`` (Pulsar's position before a ledger's first entry: the messages of earlier ledgers are before
    it), else before every message (a superset, for a caller that picks its messages by id: pulsar-lite
    cannot start a reader at an entry of -1)."""
    from connector.spark.message_id_offsets import EARLIEST, IdOffset

    if batch > 0:
        return IdOffset(ledger, entry, batch - 1)
    if entry > 0:
        return IdOffset(ledger, entry - 1, -1)
    return IdOffset(ledger, -1, -1) if exact and ledger >= 0 else EARLIEST


def require_admin_url(admin_url: str | None, flags: str, job: str) -> str:
    """``admin_url``; JobInputError (exit 2) naming ``--admin-url`` when the job needs one and has none."""
    if not admin_url:
        raise JobInputError(f"{flags} on a Pulsar broker other than pulsarlike needs its admin REST API: give "
                            f"--admin-url http://HOST:8080 (Pulsar's binary protocol cannot find a message by "
                            f"publish time); the {job} job uses GET .../messageid/{{timestamp}} there")
    return admin_url


def message_id_at(admin_url: str, tp: Any, publish_time_ms: int) -> tuple[int, int, int] | None:
    """``(ledger, entry, batch)`` of the first message of ``tp`` published at or after ``publish_time_ms``,
    from Pulsar's REST ``GET /admin/v2/persistent/{tenant}/{namespace}/{topic}/messageid/{timestamp}``; None
    when there is none (Pulsar answers 404)."""
    from broker_core import errors
    from connector.client.admin.rest import RestTransport
    from connector.client.admin.rest_wire import topic_path

    kwargs = security().client_kwargs(admin_url)
    rest = RestTransport(admin_url, kwargs.pop("authentication", None), BROKER_TIMEOUT_MS / 1000.0, **kwargs)
    try:
        found = rest.call("GET", topic_path(tp.internal_name, "messageid", str(int(publish_time_ms))),
                          not_found=errors.TopicNotFound)
    except (errors.TopicNotFound, errors.MessageNotFound) as exc:  # the partition exists: no such message
        log.info("event=no_message_at_time partition=%s publish_time_ms=%s reason=%r", tp, publish_time_ms,
                 exc.message)
        return None
    except errors.PulsarLikeError as exc:
        raise JobFailed(f"finding the message published at {publish_time_ms} of {tp} over {admin_url} failed "
                        f"({exc.code}: {exc.message})") from None
    finally:
        rest.close()
    if not isinstance(found, dict) or int(found.get("ledgerId", -1)) < 0 or int(found.get("entryId", -1)) < 0:
        return None
    return int(found["ledgerId"]), int(found["entryId"]), int(found.get("batchIndex", -1))


def id_key(message_id: Any) -> tuple[int, int, int]:
    """``(ledger, entry, batch)`` of a client ``MessageId``."""
    return message_id.ledger_id(), message_id.entry_id(), message_id.batch_index()
