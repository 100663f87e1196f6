"""``Admin(service_url=...)``'s wire: each admin call made with the broker's unary gRPC call of that name, its
reply translated into the call's answer (:mod:`connector.client.admin.wire`'s table), as
:mod:`connector.client.admin.rest_wire` translates Pulsar's REST answers into the same ones. The admin's parts
read answers, never a gRPC reply."""
from __future__ import annotations

import json
from typing import Any, Callable

from broker_core.protocol import broker_pb2 as pb

from connector.client.admin.wire import CompactionState, LookupAnswer
from connector.client.transport.events import Entry, LastMessage

NEXT_OFFSET_CALLS = frozenset({"OffsetForTimestamp", "AcknowledgeUpTo"})
"""The calls whose ``SubscriptionPosition`` answers a subscription's next offset; the others answer how many
messages they acknowledged (or nothing: a create or a reset)."""
NO_ANSWER_CALLS = frozenset({"CreateSubscription", "ResetCursor"})


def _json(text: str) -> Any:
    return json.loads(text) if text else None


def _last_message(reply: pb.LastMessageId) -> LastMessage:
    return LastMessage(reply.ledger_id, reply.entry_id, reply.batch_index, reply.last_offset, reply.start_offset)


def _entries(reply: pb.PeekedEntries) -> list[Entry]:
    return [Entry(e.data, e.ledger_id, e.entry_id, e.num_messages, e.redelivery_count, tuple(e.ack_set))
            for e in reply.entries]


ANSWERS: dict[str, Callable[[Any], Any]] = {
    "Empty": lambda reply: None,
    "NameList": lambda reply: list(reply.names),
    "TopicList": lambda reply: list(reply.topics),
    "JsonResponse": lambda reply: _json(reply.json),
    "SchemaAdminReply": lambda reply: _json(reply.answer),
    "PartitionedTopicMetadata": lambda reply: reply.partitions,
    "LastMessageId": _last_message,
    "LookupResult": lambda reply: LookupAnswer(reply.broker_url, reply.http_url),
    "CompactionStatusReply": lambda reply: CompactionState(reply.status, reply.last_error),
    "PeekedEntries": _entries,
    "TenantInfo": lambda reply: {"adminRoles": list(reply.admin_roles),
                                 "allowedClusters": list(reply.allowed_clusters)},
}
"""A reply message's name -> its answer (``SubscriptionPosition`` depends on the call: :func:`answer`)."""


def answer(method: str, reply: Any) -> Any:
    """What the gRPC ``reply`` of ``method`` answers (:mod:`connector.client.admin.wire`)."""
    kind = reply.DESCRIPTOR.name
    if kind == "SubscriptionPosition":
        if method in NO_ANSWER_CALLS:
            return None
        return reply.next_offset if method in NEXT_OFFSET_CALLS else reply.acknowledged
    translate = ANSWERS.get(kind)
    if translate is None:
        raise TypeError(f"the gRPC reply {kind} of {method} has no admin answer")
    return translate(reply)


class GrpcWire:
    """A :class:`~connector.client.admin.wire.UnaryWire` over a gRPC connection (``connection``: whose
    ``unary(method, request, timeout_s, retry)`` answers gRPC replies); ``retry``: every call is tried again
    while the broker is unavailable (``Admin(retry_while_unavailable=True)``)."""

    def __init__(self, connection: Any, retry: bool = False) -> None:
        self.connection = connection
        self._retry = retry

    def unary(self, method: str, request: Any, timeout_s: float | None = None, retry: bool = False) -> Any:
        return answer(method, self.connection.unary(method, request, timeout_s, retry or self._retry))

    def close(self) -> None:
        self.connection.close()
