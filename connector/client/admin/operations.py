"""Operator calls of :class:`~connector.client.admin.Admin` on topics and namespaces (``pulsar-admin topics
terminate|unload|compact|compaction-status|examine-message|last-message-id|lookup|expire-messages``, ``namespaces
clear-backlog|unsubscribe``), and pulsarlike's ``topics verify``."""
from __future__ import annotations

from typing import Any

from broker_core.errors import NotAllowedError
from broker_core.protocol import broker_pb2
from broker_core.types import TopicName

from connector.client.admin.peek import PeekedMessage, messages_of
from connector.client.admin.wire import UnaryWire, fans_out, topic_name, whole
from connector.client.transport.events import LastMessage
from connector.client.message_id import MessageId

INITIAL_POSITIONS = ("earliest", "latest")
VERIFY_TIMEOUT_S = 3600.0
"""How long :meth:`OperationsAdmin.verify_topic` waits by default: it reads every byte the topic stores."""


def _message_id(last: LastMessage, topic: str) -> MessageId:
    partition = TopicName.parse(topic).partition_index
    if last.last_offset < 0:
        return MessageId.of(-1, -1, partition, topic=topic)
    return MessageId.of(last.ledger_id, last.entry_id, partition, last.batch_index, topic=topic)


class OperationsAdmin:
    """Operator calls on topics and namespaces: a part of :class:`~connector.client.admin.Admin`, which serves
    its public methods."""

    def __init__(self, wire: UnaryWire) -> None:
        self._wire = wire

    # --- topics ----------------------------------------------------------------------------------------
    def terminate_topic(self, topic: str) -> MessageId:
        """Terminate a topic (one partition, or a non-partitioned topic): it takes no more messages, ever --
        connected producers and later sends fail with ``TopicTerminated`` -- and its consumers and readers
        see ``has_reached_end_of_topic()`` once they have received everything. Stays so across restarts.
        Returns the id of its last message (``-1:-1`` when it has none)."""
        name = topic_name(topic)
        return _message_id(self._wire.unary("TerminateTopic", broker_pb2.TopicRequest(topic=name)), name)

    def unload_topic(self, topic: str) -> None:
        """Close the topic (every loaded partition of a partitioned topic) now: cursors saved, files closed;
        it is loaded again on its next use. Its producers' and consumers' sessions end with
        ``ServiceNotReady``, and they reconnect by themselves (as Pulsar's clients do): the topic loads again."""
        self._wire.unary("UnloadTopic", broker_pb2.TopicRequest(topic=topic_name(topic)))

    def trigger_compaction(self, topic: str) -> None:
        """Start compacting a topic (each partition of a partitioned one) in the background: the latest
        message of each key is kept for readers with ``is_read_compacted``. ``CompactionAlreadyRunning``
        while a compaction runs; :meth:`compaction_status` tells when it is done."""
        self._wire.unary("Compact", broker_pb2.TopicRequest(topic=topic_name(topic)))

    def compaction_status(self, topic: str) -> dict[str, str]:
        """Pulsar's ``LongRunningProcessStatus`` of the topic's last compaction:
        ``{"status": "NOT_RUN"|"RUNNING"|"SUCCESS"|"ERROR", "lastError": "..."}``."""
        state = self._wire.unary("CompactionStatus", broker_pb2.TopicRequest(topic=topic_name(topic)))
        return {"status": state.status, "lastError": state.last_error}

    def get_last_message_id(self, topic: str) -> MessageId:
        """The id of the last stored message of a topic partition (``-1:-1`` when it has none)."""
        name = topic_name(topic)
        return _message_id(self._wire.unary("GetLastMessageId", broker_pb2.TopicRequest(topic=name)), name)

    def examine_message(self, topic: str, initial_position: str = "latest",
                        message_position: int = 1) -> PeekedMessage:
        """One stored message of a topic partition, counted from the newest (``initial_position="latest"``,
        1 = the last message) or the oldest (``"earliest"``, 1 = the first), acknowledged or not
        (``topics examine-message``). ``NotAllowedError`` when there is no message there, or on a
        partitioned topic."""
        if initial_position not in INITIAL_POSITIONS:
            raise ValueError(f"initial_position={initial_position!r} is not valid; use 'earliest' or 'latest'")
        name = topic_name(topic)
        stored = self._wire.unary("ExamineMessage", broker_pb2.ExamineMessageRequest(
            topic=name, latest=initial_position == "latest", position=whole("message_position", message_position,
                                                                            1)))
        found = messages_of(stored, name, TopicName.parse(name).partition_index, 1)
        if not found:
            raise NotAllowedError(f"{name}: no message at position {message_position}", topic=name)
        return found[0]

    def lookup_topic(self, topic: str) -> str:
        """The service URL of the broker serving the topic (``pulsar://host:port``; ``advertisedAddress``
        names the host)."""
        return self._wire.unary("LookupTopic", broker_pb2.TopicRequest(topic=topic_name(topic))).broker_url

    def expire_messages(self, topic: str, subscription: str, expire_time_seconds: int | None = None,
                        message_id: MessageId | None = None) -> int:
        """Acknowledge, on a durable subscription, the messages published more than ``expire_time_seconds``
        ago, or every message up to and including ``message_id`` (``topics expire-messages``), as the message
        TTL does; on every partition of a partitioned topic. Returns how many messages were expired."""
        if (expire_time_seconds is None) == (message_id is None):
            raise ValueError("expire_messages takes expire_time_seconds or message_id")
        if message_id is not None and not isinstance(message_id, MessageId):
            raise TypeError("message_id must be a MessageId")
        names = self._expire_targets(topic, message_id)
        return sum(self._expire(name, subscription, False, expire_time_seconds, message_id) for name in names)

    def expire_messages_for_all_subscriptions(self, topic: str, expire_time_seconds: int) -> int:
        """:meth:`expire_messages` by time on every durable subscription of the topic."""
        return sum(self._expire(name, "", True, expire_time_seconds, None)
                   for name in self._expire_targets(topic, None))

    def _expire_targets(self, topic: str, message_id: MessageId | None) -> list[str]:
        name = topic_name(topic)
        if fans_out(self._wire):
            return [name]  # the server expires each partition (and refuses a message id on a partitioned topic)
        n = self._wire.unary("GetPartitionedTopicMetadata", broker_pb2.TopicRequest(topic=name))
        if n and message_id is not None:
            raise NotAllowedError(f"{name} is partitioned: expire up to a message id on the partition that holds"
                                  " it", topic=name, partitions=n)
        return [str(TopicName.parse(name).partition(i)) for i in range(n)] if n else [name]

    def _expire(self, name: str, subscription: str, all_subscriptions: bool, seconds: int | None,
                message_id: MessageId | None) -> int:
        request = broker_pb2.ExpireMessagesRequest(topic=name, subscription=subscription,
                                                   all_subscriptions=all_subscriptions)
        if message_id is not None:
            request.position.offset = message_id.offset()
        else:
            request.expire_time_seconds = whole("expire_time_seconds", seconds, 0)
        return self._wire.unary("ExpireMessages", request)

    # --- stored files (a pulsarlike extension) ---------------------------------------------------------
    def verify_topic(self, topic: str, timeout_seconds: float = VERIFY_TIMEOUT_S) -> dict[str, Any]:
        """Check a topic's stored files (every partition of a partitioned topic) without changing them
        (``topics verify``): every frame's CRC and offset, that its segments follow each other, its index
        entries and its cursor copies. Returns ``{"ok": bool, "topics": [...], "totals": {...}}``; each topic's
        segments list their damaged ranges (``firstOffset``, ``lastOffset``, ``messages``, ``position``,
        ``resumePosition``, ``reason``). Damage is in the answer, never an error; the verification reads the
        whole topic, so the call waits up to ``timeout_seconds``."""
        return self._wire.unary("VerifyTopic", broker_pb2.TopicRequest(topic=topic_name(topic)), timeout_seconds)

    def verify_all_topics(self, timeout_seconds: float = VERIFY_TIMEOUT_S) -> dict[str, Any]:
        """:meth:`verify_topic` for every persistent topic of the broker (super-users only)."""
        return self._wire.unary("VerifyAllTopics", broker_pb2.Empty(), timeout_seconds)

    # --- namespaces ------------------------------------------------------------------------------------
    def clear_namespace_backlog(self, namespace: str, subscription: str | None = None) -> int:
        """Acknowledge everything on every durable subscription (or only ``subscription``) of every topic of
        ``tenant/namespace`` (``namespaces clear-backlog``); returns how many messages."""
        return self._wire.unary("ClearNamespaceBacklog", broker_pb2.NamespaceSubscriptionRequest(
            namespace=namespace, subscription=subscription or ""))

    def unsubscribe_namespace(self, namespace: str, subscription: str) -> list[str]:
        """Delete ``subscription`` from every topic of ``tenant/namespace`` that has it (``namespaces
        unsubscribe``); ``NotAllowedError`` (nothing deleted) while a consumer is connected to it anywhere,
        ``SubscriptionNotFound`` when no topic has it. Returns the topic partitions it was deleted from."""
        if not subscription:
            raise ValueError("subscription must be a non-empty name")
        return list(self._wire.unary("UnsubscribeNamespace", broker_pb2.NamespaceSubscriptionRequest(
            namespace=namespace, subscription=subscription)))
