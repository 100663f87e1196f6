"""Stored messages over REST, as Pulsar answers them: ``peek`` (the n-th entry a subscription has not
acknowledged) and ``examinemessage`` (an entry counted from the oldest or the newest), found by the admin
core (:class:`~broker_core.core.admin.subscriptions.SubscriptionAdmin`,
:class:`~broker_core.core.admin.topics.TopicAdmin`: what ``pulsarlike admin topics peek-messages|
examine-messages`` asks over gRPC). Prefix ``/admin/v2/{domain}/{tenant}/{ns}/{topic}``:

=================================================  =================================================  ==========
``GET /subscription/{sub}/position/{n}``           the n-th entry (1 = the first) holding messages     consume
                                                   the subscription has not acknowledged; 404
                                                   "Message not found" past the last
``GET /examinemessage?initialPosition=latest|``    the entry holding the ``messagePosition``-th       consume
``earliest&messagePosition=N``                     stored message (1 = the newest, or the oldest)
=================================================  =================================================  ==========

The answer is Pulsar's: the entry's payload, decompressed (a batch's is its frame of messages, each after
its ``SingleMessageMetadata``), as ``application/octet-stream``, and its metadata in headers:
``X-Pulsar-Message-ID`` (``ledgerId:entryId``), ``X-Pulsar-PROPERTY`` (the properties as a JSON object),
``X-Pulsar-publish-time`` (ISO 8601), ``X-Pulsar-event-time``, ``X-Pulsar-producer-name``,
``X-Pulsar-sequence-id``, ``X-Pulsar-partition-key``, ``X-Pulsar-num-batch-message`` and
``X-Pulsar-batch-size`` (a batch), ``X-Pulsar-deliver-at-time``, ``X-Pulsar-Broker-Entry-METADATA-timestamp``.
``messagePosition`` counts messages, Pulsar's entries: the same on topics written without batching.
On a partitioned topic both are refused (412, as Pulsar): peek a partition.
"""
from __future__ import annotations

import datetime
import json

from aiohttp import web

from typing import Any

from broker_core.core.admin import SubscriptionAdmin, TopicAdmin
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import TOPIC, needs, topic_of
from broker_core.frontends.http.admin.answers import BadRequest, path_int
from broker_core.protocol import codec
from broker_core.protocol.entry import payload_of
from broker_core.security import CONSUME

TOPIC_PATH = "/admin/v2/{domain:persistent|non-persistent}/{tenant}/{namespace}/{topic}"


def _time(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).isoformat(timespec="milliseconds")


def _header(value: object) -> str:
    """A header value from what a producer chose (names, keys): never a line break (no header injection)."""
    return str(value).replace("\r", " ").replace("\n", " ")


def entry_answer(entry: Any) -> web.Response:
    """Pulsar's answer for one stored entry (its ``data``, ``ledger_id`` and ``offset``): the payload, and its
    metadata in ``X-Pulsar-*`` headers."""
    broker_time, _, start = codec.split_broker_entry(entry.data)
    metadata, payload = codec.decode_entry(memoryview(entry.data)[start:], verify=False)
    data = bytes(payload_of(metadata, payload))
    headers = {"X-Pulsar-Message-ID": f"{entry.ledger_id}:{entry.offset}",
               "X-Pulsar-PROPERTY": json.dumps({kv.key: kv.value for kv in metadata.properties}),
               "X-Pulsar-publish-time": _time(metadata.publish_time),
               "X-Pulsar-producer-name": _header(metadata.producer_name),
               "X-Pulsar-sequence-id": str(metadata.sequence_id)}
    if metadata.event_time:
        headers["X-Pulsar-event-time"] = _time(metadata.event_time)
    if metadata.HasField("partition_key"):
        headers["X-Pulsar-partition-key"] = _header(metadata.partition_key)
    if metadata.HasField("num_messages_in_batch"):
        headers["X-Pulsar-num-batch-message"] = str(metadata.num_messages_in_batch)
        headers["X-Pulsar-batch-size"] = str(len(data))
    if metadata.deliver_at_time:
        headers["X-Pulsar-deliver-at-time"] = _time(metadata.deliver_at_time)
    if broker_time >= 0:
        headers["X-Pulsar-Broker-Entry-METADATA-timestamp"] = str(broker_time)
    return web.Response(body=data, headers=headers, content_type="application/octet-stream")


class MessageRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._subscriptions = SubscriptionAdmin(registry)
        self._topics = TopicAdmin(registry)

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get(TOPIC_PATH + "/subscription/{subscription}/position/{position}", self.peek),
            web.get(TOPIC_PATH + "/examinemessage", self.examine),
        ]

    @needs(CONSUME, TOPIC)
    async def peek(self, request: web.Request) -> web.Response:
        found = self._subscriptions.peek_entry(topic_of(request), request.match_info["subscription"],
                                               path_int(request, "position"))
        return entry_answer(found.entry)

    @needs(CONSUME, TOPIC)
    async def examine(self, request: web.Request) -> web.Response:
        initial = request.query.get("initialPosition", "latest")
        if initial not in ("latest", "earliest"):
            raise BadRequest(f"initialPosition: expected latest or earliest, got {initial[:64]!r}")
        raw = request.query.get("messagePosition", "1")
        try:
            position = int(raw)
        except ValueError:
            raise BadRequest(f"messagePosition: expected an integer, got {raw[:64]!r}") from None
        peeked = self._topics.examine(topic_of(request), initial == "latest", position)
        return entry_answer(peeked.entry)
