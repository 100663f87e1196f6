"""A topic's subscriptions over REST: list, create at a position, delete, skip, skip all, reset the cursor
(to a time or a message id), expire messages: each handler parses the request, calls the admin core's
:class:`~broker_core.core.admin.subscriptions.SubscriptionAdmin` (as the gRPC calls do, so both answer alike)
and renders its answer. Prefix ``/admin/v2/{domain}/{tenant}/{ns}/{topic}``; every call needs the ``consume``
permission, as in Pulsar.

=================================================  ================================================
``GET /subscriptions``                             the subscription names
``PUT /subscription/{sub}``                        create it; body: a MessageId (default: latest,
                                                   ``{"ledgerId": -1, "entryId": -1}`` earliest),
                                                   with its ``properties`` (Pulsar's ResetCursorData);
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
``GET /subscription/{sub}/properties``             its properties (a partitioned topic's partitions'
                                                   merged); 404
``PUT /subscription/{sub}/properties``             replace them with the body's (``{}``: none); 404
=================================================  ================================================

On a partitioned topic, creating, deleting, skipping all, resetting to a time and expiring by time act on
each partition (with Pulsar's 409, 404 and 412: see :mod:`broker_core.core.admin.subscriptions`); the calls
taking a message id or a count act on one partition (use its name), as a message id belongs to one partition.

Skip, skip all and expire answer 204 as Pulsar, with the count of messages they acknowledged in the
``X-Pulsarlike-Acknowledged`` header (:data:`~broker_core.types.ACKNOWLEDGED_HEADER`).

A MessageId body is Pulsar's (``ledgerId``, ``entryId``, optional ``batchIndex``, ``partitionIndex``,
``isExcluded``); this broker's ``entryId`` is the entry's offset (:class:`~broker_core.types.MessageId`).
"""
from __future__ import annotations

from typing import Any

from aiohttp import web

from broker_core.core.admin import Position, SubscriptionAdmin
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.http.admin.access import TOPIC, needs, topic_of
from broker_core.frontends.http.admin.answers import acknowledged, body, boolean, flag, integer, obj, ok, path_int
from broker_core.security import CONSUME

TOPIC_PATH = "/admin/v2/{domain:persistent|non-persistent}/{tenant}/{namespace}/{topic}"


def position(value: Any, field: str = "messageId") -> Position:
    """A MessageId body (``ledgerId``, ``entryId``, optional ``batchIndex``, ``isExcluded``); 400 naming the
    field of the wrong type."""
    found = obj(value, field)
    return Position.of_message_id(integer(found.get("ledgerId"), f"{field}.ledgerId"),
                                  integer(found.get("entryId"), f"{field}.entryId"),
                                  integer(found.get("batchIndex", -1), f"{field}.batchIndex"),
                                  boolean(found.get("isExcluded", False), f"{field}.isExcluded"))


class SubscriptionRoutes:
    def __init__(self, registry: TopicRegistry) -> None:
        self._subscriptions = SubscriptionAdmin(registry)

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
            web.get(s + "/properties", self.properties),
            web.put(s + "/properties", self.replace_properties),
        ]

    @needs(CONSUME, TOPIC)
    async def list_subscriptions(self, request: web.Request) -> web.Response:
        return ok(self._subscriptions.names(topic_of(request)))

    @needs(CONSUME, TOPIC)
    async def create(self, request: web.Request) -> web.Response:
        found = await body(request, "messageId", None)
        start = Position.latest() if found is None else position(found)
        properties = None if found is None or found.get("properties") is None else found["properties"]
        self._subscriptions.create(topic_of(request), request.match_info["subscription"], start, properties)
        return ok()

    @needs(CONSUME, TOPIC)
    async def delete(self, request: web.Request) -> web.Response:
        self._subscriptions.delete(topic_of(request), request.match_info["subscription"], force=flag(request, "force"))
        return ok()

    @needs(CONSUME, TOPIC)
    async def skip(self, request: web.Request) -> web.Response:
        return acknowledged(self._subscriptions.skip(topic_of(request), request.match_info["subscription"],
                                                     path_int(request, "count")).acknowledged)

    @needs(CONSUME, TOPIC)
    async def skip_all(self, request: web.Request) -> web.Response:
        return acknowledged(self._subscriptions.clear_backlog(topic_of(request),
                                                              request.match_info["subscription"]).acknowledged)

    @needs(CONSUME, TOPIC)
    async def reset_to_time(self, request: web.Request) -> web.Response:
        self._subscriptions.reset_to_time(topic_of(request), request.match_info["subscription"],
                                          path_int(request, "timestamp"))
        return ok()

    @needs(CONSUME, TOPIC)
    async def reset_to_message(self, request: web.Request) -> web.Response:
        where = position(await body(request, "messageId"))
        self._subscriptions.reset(topic_of(request), request.match_info["subscription"], where)
        return ok()

    @needs(CONSUME, TOPIC)
    async def expire_by_time(self, request: web.Request) -> web.Response:
        return acknowledged(self._subscriptions.expire_by_time(topic_of(request), request.match_info["subscription"],
                                                               path_int(request, "seconds")).acknowledged)

    @needs(CONSUME, TOPIC)
    async def expire_through_message(self, request: web.Request) -> web.Response:
        where = position(await body(request, "messageId"))
        return acknowledged(self._subscriptions.expire_through(topic_of(request), request.match_info["subscription"],
                                                               where).acknowledged)

    @needs(CONSUME, TOPIC)
    async def expire_all_by_time(self, request: web.Request) -> web.Response:
        return acknowledged(self._subscriptions.expire_all_by_time(topic_of(request),
                                                                   path_int(request, "seconds")).acknowledged)

    @needs(CONSUME, TOPIC)
    async def properties(self, request: web.Request) -> web.Response:
        return ok(self._subscriptions.properties(topic_of(request), request.match_info["subscription"]))

    @needs(CONSUME, TOPIC)
    async def replace_properties(self, request: web.Request) -> web.Response:
        found = await body(request, "properties", {})
        self._subscriptions.replace_properties(topic_of(request), request.match_info["subscription"], found)
        return ok()
