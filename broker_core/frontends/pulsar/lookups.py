"""LOOKUP, PARTITIONED_METADATA and GET_TOPICS_OF_NAMESPACE: where a topic lives and what a namespace holds.

What a lookup is answered is decided by :mod:`broker_core.core.topic_lookup`, as for the web service's HTTP
lookup: this broker is the only one, so a lookup answers ``Connect`` to the broker's advertised URL
(``advertisedAddress``), ``authoritative``: the client reuses the connection it has to that URL. A lookup
naming a listener (``advertised_listener_name``, pulsar-client's ``listener_name=``) is answered that
listener's URLs from ``advertisedListeners``, and refused with ``ServiceNotReady`` when the broker has no
such listener, as Pulsar. A lookup refuses what the gRPC ``LookupTopic`` refuses (a missing namespace, a
disabled domain, a missing topic under ``allowAutoTopicCreation=false``), with the ``ServerError`` code in
a ``Failed`` answer.

GET_TOPICS_OF_NAMESPACE lists the topic partitions and non-partitioned topics of the namespace in the mode
asked (persistent by default), filtered by ``topics_pattern`` when there is one, as Pulsar's
``TopicList.filterTopics``: the pattern, without its ``persistent://`` scheme, must match the whole
``tenant/namespace/topic`` of the partitioned topic. The pattern is matched with RE2, in time linear in
each name (:mod:`broker_core.core.topics_pattern`); one RE2 cannot match as Java would, or too long, is
not applied: the answer says ``filtered=false`` and the client filters with its own engine.
``topics_hash`` is a CRC32C of the names; when the client's equals it, the answer is ``changed=false``
without the list.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Iterable

import google_crc32c

from broker_core.core import topic_lookup
from broker_core.errors import PulsarLikeError
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.server_errors import server_error
from broker_core.protocol.status import wire_message
from broker_core.core.topics_pattern import safe_pattern
from broker_core.types import TopicName

if TYPE_CHECKING:
    from broker_core.frontends.pulsar.connection import PulsarConnection

log = logging.getLogger(__name__)

T = cmd.BaseCommand
_MODES = {cmd.CommandGetTopicsOfNamespace.PERSISTENT: "PERSISTENT",
          cmd.CommandGetTopicsOfNamespace.NON_PERSISTENT: "NON_PERSISTENT",
          cmd.CommandGetTopicsOfNamespace.ALL: "ALL"}


def topics_hash(topics: Iterable[str]) -> str:
    """CRC32C over the names in order, as hex of its little-endian bytes (Pulsar's ``TopicList`` hash)."""
    crc = 0
    for topic in topics:
        crc = google_crc32c.extend(crc, topic.encode())
    return crc.to_bytes(4, "little").hex()


class LookupCommands:
    def __init__(self, conn: "PulsarConnection") -> None:
        self._conn = conn
        self._registry = conn.front.registry

    def handlers(self) -> dict:
        return {T.LOOKUP: self.lookup, T.PARTITIONED_METADATA: self.partitioned_metadata,
                T.GET_TOPICS_OF_NAMESPACE: self.topics_of_namespace}

    def lookup(self, request: cmd.CommandLookupTopic) -> None:
        reply = cmd.CommandLookupTopicResponse(request_id=request.request_id)
        try:
            name = TopicName.parse(request.topic)
            self._conn.authorize("lookup", str(name))
            front = self._conn.front
            advertised = topic_lookup.BrokerUrls(front.broker_url, front.broker_url_tls)
            urls = topic_lookup.lookup(self._registry, name, advertised, request.advertised_listener_name)
        except PulsarLikeError as exc:
            reply.response, reply.error, reply.message = reply.Failed, server_error(exc), wire_message(exc)
        else:
            reply.response, reply.authoritative = reply.Connect, True
            if urls.broker_url:
                reply.brokerServiceUrl = urls.broker_url
            if urls.broker_url_tls:
                reply.brokerServiceUrlTls = urls.broker_url_tls
        self._conn.send(T(type=T.LOOKUP_RESPONSE, lookupTopicResponse=reply))

    def partitioned_metadata(self, request: cmd.CommandPartitionedTopicMetadata) -> None:
        reply = cmd.CommandPartitionedTopicMetadataResponse(request_id=request.request_id)
        try:
            name = TopicName.parse(request.topic)
            self._conn.authorize("lookup", str(name))
            reply.partitions = self._registry.lookup_partitions(name)
        except PulsarLikeError as exc:
            reply.response, reply.error, reply.message = reply.Failed, server_error(exc), wire_message(exc)
        else:
            reply.response = reply.Success
        self._conn.send(T(type=T.PARTITIONED_METADATA_RESPONSE, partitionMetadataResponse=reply))

    def topics_of_namespace(self, request: cmd.CommandGetTopicsOfNamespace) -> None:
        self._conn.authorize("lookup", request.namespace)  # a refusal is answered with ERROR
        topics = topic_lookup.namespace_topics(self._registry, request.namespace,
                                               _MODES.get(request.mode, "PERSISTENT"))
        reply = cmd.CommandGetTopicsOfNamespaceResponse(request_id=request.request_id)
        if request.topics_pattern:
            pattern = safe_pattern(request.topics_pattern)
            if pattern is not None:
                topics = [t for t in topics
                          if pattern.fullmatch(str(TopicName.parse(t).partitioned_base).split("://", 1)[1])]
                reply.filtered = True
            else:
                self._conn.log_limits.log(logging.INFO, "topics_pattern_not_applied",
                                          "event=topics_pattern_not_applied peer=%s reason=%s", self._conn.peer,
                                          "not RE2-compatible as Java reads it, or too long")
        digest = topics_hash(topics)
        reply.topics_hash = digest
        if request.HasField("topics_hash") and request.topics_hash == digest:
            reply.changed = False
        else:
            reply.topics.extend(topics)
        self._conn.send(T(type=T.GET_TOPICS_OF_NAMESPACE_RESPONSE, getTopicsOfNamespaceResponse=reply))
