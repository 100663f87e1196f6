"""A topic's subscriptions over REST: list, create at a position, delete, skip, skip all, reset the cursor
(to a time or a message id), expire messages, on the topics, :mod:`broker_core.core.persistent.cursor_admin`
and :mod:`broker_core.core.topic_admin` (what ``pulsarlike admin topics subscriptions|create-subscription|
unsubscribe|skip|clear-backlog|reset-cursor|expire-messages`` does over gRPC). Prefix
``/admin/v2/{domain}/{tenant}/{ns}/{topic}``; every call needs the ``consume`` permission, as in Pulsar.

=================================================  ================================================
``GET /subscriptions``                             the subscription names
``PUT /subscription/{sub}``                        create it; body: a MessageId (default: latest,
                                                   ``{"ledgerId": -1, "entryId": -1}`` earliest);
                                                   204, 409 when it exists
``DELETE /subscription/{sub}``                     ``?force=true``: with connected consumers; 204,
                                                   404, 412 while it has consumers
``POST /subscription/{sub}/skip/{n}``              acknowledge the next ``n`` messages
``POST /subscription/{sub}/skip_all``              acknowledge everything (clear the backlog)
``POST /subscription/{sub}/resetcursor/{time}``    next message: the first published at or after
                                                   ``time`` (ms since the epoch)
``POST /subscription/{sub}/resetcursor``           next message: the MessageId of the body (after it
                                                   with ``"isExcluded": true``)
``POST /subscription/{sub}/expireMessages/{s}``    acknowledge what was published over ``s`` s ago
``POST /subscription/{sub}/expireMessages``        acknowledge through the MessageId of the body
``POST /all_subscription/expireMessages/{s}``      the same on every subscription
=================================================  ================================================

On a partitioned topic, creating, deleting, skipping all, resetting to a time and expiring by time act on
each partition; the calls taking a message id or a count act on one partition (use its name), as a message
id belongs to one partition.

A MessageId body is Pulsar's (``ledgerId``, ``entryId``, optional ``batchIndex``, ``partitionIndex``,
``isExcluded``); this broker's ``entryId`` is the entry's offset (:class:`~broker_core.types.MessageId`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from broker_core.core import topic_admin
from broker_core.core.persistent import cursor_admin
from broker_core.core.persistent.topic import PersistentTopic
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import TOPIC, needs, topic_of
from broker_core.frontends.http.admin.answers import Refused, body, boolean, flag, integer, obj, ok, path_int
from broker_core.security import CONSUME
from broker_core.types import TopicName

TOPIC_PATH = "/admin/v2/{domain:persistent|non-persistent}/{tenant}/{namespace}/{topic}"
LATEST = (1 << 63) - 1
"""Pulsar's ``MessageId.latest``: ledger and entry ``Long.MAX_VALUE``."""


@dataclass(frozen=True)
class Position:
    """Where a MessageId body points: ``earliest``, ``latest``, or the message at ``offset`` (after it when
    ``excluded``)."""

    kind: str
    offset: int = -1
    excluded: bool = False

    def next_offset(self, topic: PersistentTopic) -> int:
        """The first message a cursor placed here reads (clamped to the topic's confirmed end)."""
        if self.kind == "earliest":
            return topic.start_offset
        if self.kind == "latest":
            return topic.confirmed_end_offset
        return min(self.offset + 1 if self.excluded else self.offset, topic.confirmed_end_offset)

    def first_kept(self, topic: PersistentTopic) -> int:
        """The first message that expiring messages through here keeps: expiring is up to and including the
        message (excluding it when ``excluded``), the opposite of a cursor placed on it."""
        if self.kind != "at":
            return self.next_offset(topic)
        return min(self.offset if self.excluded else self.offset + 1, topic.confirmed_end_offset)


def position(value: Any, field: str = "messageId") -> Position:
    """A MessageId body (``ledgerId``, ``entryId``, optional ``batchIndex``, ``isExcluded``); 400 naming the
    field of the wrong type."""
    found = obj(value, field)
    ledger = integer(found.get("ledgerId"), f"{field}.ledgerId")
    entry = integer(found.get("entryId"), f"{field}.entryId")
    batch = integer(found.get("batchIndex", -1), f"{field}.batchIndex")
    excluded = boolean(found.get("isExcluded", False), f"{field}.isExcluded")
    if ledger < 0 or entry < 0:
        return Position("earliest")
    if ledger == LATEST and entry == LATEST:
        return Position("latest")
    return Position("at", entry + max(batch, 0), excluded)


class SubscriptionRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._registry = registry

    def routes(self) -> list[web.RouteDef]:
        s = TOPIC_PATH + "/subscription/{subscription}"
        return [
            web.get(TOPIC_PATH + "/subscriptions", self.list_subscriptions),
            web.put(s, self.create),
            web.delete(s, self.delete),
            web.post(s + "/skip/{count}", self.skip),
            web.post(s + "/skip_all", self.skip_all),
            web.post(s + "/resetcursor/{timestamp}", self.reset_to_time),
            web.post(s + "/resetcursor", self.reset_to_message),
            web.post(s + "/expireMessages/{seconds}", self.expire_by_time),
            web.post(s + "/expireMessages", self.expire_through_message),
            web.post(TOPIC_PATH + "/all_subscription/expireMessages/{seconds}", self.expire_all_by_time),
        ]

    def _partitions(self, name: TopicName) -> list[TopicName]:
        """``name``'s partitions, or ``name`` itself when it is not partitioned."""
        n = self._registry.partitions_of(name)
        return [name.partition(i) for i in range(n)] if n else [name]

    def _stored(self, name: TopicName, verb: str) -> list[PersistentTopic]:
        return [topic_admin.persistent_topic(self._registry, p, verb) for p in self._partitions(name)]

    @needs(CONSUME, TOPIC)
    async def list_subscriptions(self, request: web.Request) -> web.Response:
        return ok(self._registry.subscriptions(topic_of(request)))

    @needs(CONSUME, TOPIC)
    async def create(self, request: web.Request) -> web.Response:
        name, sub = topic_of(request), request.match_info["subscription"]
        found = await body(request, "messageId", None)
        start = Position("latest") if found is None else position(found)
        topics = self._stored(name, "create-subscription")
        if start.kind == "at" and len(topics) > 1:
            raise Refused(412, f"{name} is partitioned: a message id names a message of one partition; create"
                               " the subscription at earliest or latest, or on the partition")
        if any(sub in t.subscriptions for t in topics):  # Pulsar: 409 "Subscription already exists"
            raise Refused(409, f"subscription {sub[:64]!r} already exists on {name}")
        for topic in topics:
            topic.create_subscription(sub, start.next_offset(topic))
        return ok()

    @needs(CONSUME, TOPIC)
    async def delete(self, request: web.Request) -> web.Response:
        sub, force = request.match_info["subscription"], flag(request, "force")
        for name in self._partitions(topic_of(request)):
            self._registry.get(name, create=False).unsubscribe(sub, force=force)
        return ok()

    @needs(CONSUME, TOPIC)
    async def skip(self, request: web.Request) -> web.Response:
        topic = topic_admin.persistent_topic(self._registry, topic_of(request), "skip")
        cursor_admin.skip(topic, request.match_info["subscription"], path_int(request, "count"))
        return ok()

    @needs(CONSUME, TOPIC)
    async def skip_all(self, request: web.Request) -> web.Response:
        for topic in self._stored(topic_of(request), "skip_all"):
            cursor_admin.clear_backlog(topic, request.match_info["subscription"])
        return ok()

    def _seek(self, topic: PersistentTopic, sub: str, offset: int) -> None:
        topic.durable_subscription(sub).seek(offset)
        topic.touch_subscription(sub)

    @needs(CONSUME, TOPIC)
    async def reset_to_time(self, request: web.Request) -> web.Response:
        timestamp, sub = path_int(request, "timestamp"), request.match_info["subscription"]
        for topic in self._stored(topic_of(request), "reset-cursor"):
            self._seek(topic, sub, topic.offset_for_timestamp(timestamp))
        return ok()

    @needs(CONSUME, TOPIC)
    async def reset_to_message(self, request: web.Request) -> web.Response:
        topic = topic_admin.persistent_topic(self._registry, topic_of(request), "reset-cursor")
        where = position(await body(request, "messageId"))
        self._seek(topic, request.match_info["subscription"], where.next_offset(topic))
        return ok()

    @needs(CONSUME, TOPIC)
    async def expire_by_time(self, request: web.Request) -> web.Response:
        seconds, sub = path_int(request, "seconds"), request.match_info["subscription"]
        for name in self._partitions(topic_of(request)):
            topic_admin.expire_messages(self._registry, name, sub, False, seconds, None)
        return ok()

    @needs(CONSUME, TOPIC)
    async def expire_through_message(self, request: web.Request) -> web.Response:
        name = topic_of(request)
        topic = topic_admin.persistent_topic(self._registry, name, "expire-messages")
        first_kept = position(await body(request, "messageId")).first_kept(topic)
        if first_kept <= topic.start_offset:
            return ok()  # nothing before it to expire
        topic_admin.expire_messages(self._registry, name, request.match_info["subscription"], False, None,
                                    first_kept - 1)
        return ok()

    @needs(CONSUME, TOPIC)
    async def expire_all_by_time(self, request: web.Request) -> web.Response:
        seconds = path_int(request, "seconds")
        for name in self._partitions(topic_of(request)):
            topic_admin.expire_messages(self._registry, name, "", True, seconds, None)
        return ok()
