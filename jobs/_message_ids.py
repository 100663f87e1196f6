"""What export and redrive share on a Pulsar broker other than pulsarlike, where a partition's messages are
numbered by message id ``(ledger, entry, batch index)`` with gaps, not densely: the partitions and their last
ids, the boundary just before a message, a publish time's message id over the REST API, and a durable
subscription acknowledged cumulatively up to an id.

A boundary is :class:`~connector.spark.message_id_offsets.IdOffset`, as in the Spark source's message id
offsets (docs/spark.md, "Offsets on any broker"): it names the last message before it, so a range
``start -> end`` holds the messages ``start < id <= end`` (exclusive start, inclusive end).
"""
from __future__ import annotations

import logging
from typing import Any, Mapping

from jobs._common import BROKER_TIMEOUT_MS, JobFailed, JobInputError, security

log = logging.getLogger(__name__)

ID_KIND = "messageId"
DENSE_KIND = "dense"


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


def partitions_and_ends(service_url: str, topic: str) -> dict[Any, Any]:
    """``{TopicPartition: last message id boundary}`` of ``topic``'s partitions (EARLIEST for one holding
    nothing), over Pulsar's binary protocol; a topic not created yet reads as one empty partition."""
    from connector.spark.any_broker import IdSourceCalls
    from connector.spark.options import TopicSpec

    calls = IdSourceCalls(service_url, BROKER_TIMEOUT_MS, security())
    try:
        return calls.last_ids(calls.discover(TopicSpec(topics=(topic,))))
    finally:
        calls.close()


def acknowledge_through(service_url: str, subscription: str, ends: Mapping[Any, Any]) -> None:
    """Acknowledge on the durable ``subscription`` of each partition every whole entry up to its boundary in
    ``ends``: a consumer of the subscription (created at the earliest message when missing) that takes no
    message acknowledges cumulatively (:class:`connector.spark.any_broker.IdSourceCalls`); a position behind
    the subscription's moves nothing, since the broker never moves one back. A boundary inside a batched
    entry acknowledges up to the entry before it (a broker without batch-index acknowledgments would take
    the entry's later messages too)."""
    from connector.spark.any_broker import IdSourceCalls

    calls = IdSourceCalls(service_url, BROKER_TIMEOUT_MS, security())
    try:
        for tp, end in sorted(ends.items()):
            calls.hold(tp, subscription, end)
    finally:
        calls.close()


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


def serialized_key(data: bytes) -> tuple[int, int, int]:
    """``(ledger, entry, batch)`` of a ``__messageId`` column value (``MessageId.serialize()`` bytes)."""
    from connector.client.message_id import MessageId

    return id_key(MessageId.deserialize(bytes(data)))
