"""The gRPC calls of :class:`~connector.client.admin.topic_messages.TopicMessagesAdmin` made with Pulsar's admin
REST API (``Admin(admin_url=...)``), each answered as the call's answer (:class:`~connector.client.admin.wire.
UnaryWire`); a part of
:class:`~connector.client.admin.rest_wire.RestWire`, which hands them the calls it does not make itself:

======================================  ================================================================
``GetMessageById``                      ``GET .../ledger/{ledgerId}/entry/{entryId}``
``GetMessageIdByTimestamp``             ``GET .../messageid/{timestamp}`` (404: ``MessageNotFound``)
``GetMessageIdByIndex``                 ``GET .../getMessageIdByIndex?index=N``
``GetBacklogSize``                      ``PUT .../backlogSize`` with a MessageId
``AnalyzeBacklog``                      ``POST .../subscription/{sub}/analyzeBacklog`` (a MessageId to start
                                        from, when given)
``TrimTopic``                           ``POST .../trim``
``CreateMissedPartitions``              ``POST .../createMissedPartitions``
``TopicInternalInfo``                   ``GET .../internal-info``
``TruncateTopic``                       ``DELETE .../truncate``
``Get``/``SetSubscriptionProperties``   ``GET``/``PUT .../subscription/{sub}/properties``
======================================  ================================================================

A position (a backlog's start) travels as the rest of the REST wire sends one (:func:`~connector.client.admin.
rest_wire.message_id_body`).
"""
from __future__ import annotations

from typing import Any, Callable

from broker_core import errors
from broker_core.protocol import broker_pb2

from connector.client.admin.rest_messages import delivered_entry
from connector.client.transport.events import Entry, LastMessage


class RestTopicCalls:
    """``call(method, where, *body, **options)`` and ``fetch(method, where, **options)`` are the REST wire's
    (JSON answers; raw bodies with their headers); ``topic_path(topic, *rest)``, ``message_id_body(position)``
    and ``last_message_id(json)`` its translations."""

    def __init__(self, call: Callable[..., Any], fetch: Callable[..., tuple[bytes, Any]],
                 topic_path: Callable[..., str], message_id_body: Callable[[Any], dict],
                 last_message_id: Callable[[Any], LastMessage]) -> None:
        self._call = call
        self._fetch = fetch
        self._path = topic_path
        self._id_body = message_id_body
        self._last = last_message_id

    def handler(self, method: str) -> Callable[[Any], Any] | None:
        return getattr(self, "_" + method, None)

    def _GetMessageById(self, request: broker_pb2.MessageByIdRequest) -> list[Entry]:
        raw, headers = self._fetch("GET", self._path(request.topic, "ledger", str(request.ledger_id), "entry",
                                                     str(request.entry_id)), not_found=errors.MessageNotFound)
        return [delivered_entry(raw, headers)]

    def _GetMessageIdByTimestamp(self, request: broker_pb2.TimestampRequest) -> LastMessage:
        return self._last(self._call("GET", self._path(request.topic, "messageid", str(request.publish_time_ms)),
                                     not_found=errors.MessageNotFound))

    def _GetMessageIdByIndex(self, request: broker_pb2.MessageIndexRequest) -> LastMessage:
        return self._last(self._call("GET", self._path(request.topic, "getMessageIdByIndex"),
                                     query={"index": request.index}, not_found=errors.MessageNotFound))

    def _GetBacklogSize(self, request: broker_pb2.SubscriptionRequest) -> Any:
        found = self._call("PUT", self._path(request.topic, "backlogSize"), self._id_body(request.position))
        return int(found or 0)

    def _AnalyzeBacklog(self, request: broker_pb2.SubscriptionRequest) -> Any:
        where = self._path(request.topic, "subscription", request.subscription, "analyzeBacklog")
        body = (self._id_body(request.position),) if request.HasField("position") else ()
        return self._call("POST", where, *body, not_found=errors.SubscriptionNotFound)

    def _TrimTopic(self, request: broker_pb2.TopicRequest) -> None:
        self._call("POST", self._path(request.topic, "trim"))

    def _CreateMissedPartitions(self, request: broker_pb2.TopicRequest) -> None:
        self._call("POST", self._path(request.topic, "createMissedPartitions"))

    def _TopicInternalInfo(self, request: broker_pb2.TopicRequest) -> Any:
        return self._call("GET", self._path(request.topic, "internal-info"))

    def _TruncateTopic(self, request: broker_pb2.TopicRequest) -> None:
        self._call("DELETE", self._path(request.topic, "truncate"))

    def _GetSubscriptionProperties(self, request: broker_pb2.SubscriptionRequest) -> Any:
        found = self._call("GET", self._path(request.topic, "subscription", request.subscription, "properties"),
                           not_found=errors.SubscriptionNotFound)
        return found or {}

    def _SetSubscriptionProperties(self, request: broker_pb2.PropertiesRequest) -> None:
        self._call("PUT", self._path(request.topic, "subscription", request.subscription, "properties"),
                   dict(request.properties), not_found=errors.SubscriptionNotFound)
