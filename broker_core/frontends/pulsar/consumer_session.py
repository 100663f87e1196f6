"""One consumer of a Pulsar binary protocol connection: the core's
:class:`~broker_core.core.consumer_session.ConsumerSession` and the frames its events make (MESSAGE,
ACTIVE_CONSUMER_CHANGE, REACHED_END_OF_TOPIC, CLOSE_CONSUMER, and to pulsarlike's clients
PULSARLIKE_CONSUMER_ERROR), written after the SUBSCRIBE's SUCCESS."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from broker_core.errors import DataLost
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.status import fields_json, wire_message
from broker_core.core.consumer_session import ConsumerSession, Delivery
from broker_core.frontends.pulsar.frames import FRAME_HEADER, encode
from broker_core.frontends.pulsar.message_ids import message_id

if TYPE_CHECKING:
    from broker_core.frontends.pulsar.connection import PulsarConnection

log = logging.getLogger("broker_core.frontends.pulsar.consuming")

T = cmd.BaseCommand
_PREFIX_MAGIC = b"\x0e\x02"
"""A stored entry starting so begins with the broker's BrokerEntryMetadata prefix."""


class PulsarConsumer:
    """One consumer of a connection: its wire id, epoch and partition, the core session, and its events as
    frames."""

    def __init__(self, conn: "PulsarConnection", consumer_id: int, topic, request_id: int) -> None:
        self.conn = conn
        self.consumer_id = consumer_id
        self.topic = topic
        self.partition = topic.partition_index
        self.request_id = request_id
        self.epoch: int | None = None
        self.last_ids: tuple | None = None
        """GET_LAST_MESSAGE_ID's last answer, by (topic end, mark-delete offset): see ConsumerCommands."""
        self.session = ConsumerSession(self, peer=conn.peer, peers=conn.front.subscribers)

    @property
    def sub(self) -> Any:
        return self.session.sub

    @property
    def consumer(self) -> Any:
        return self.session.consumer

    # ------------------------------------------------------------------ the session's events
    def subscribed(self) -> None:
        self.conn.consumers.joined(self)
        self.conn.success(self.request_id)

    def deliver(self, deliveries: list[Delivery]) -> None:
        """Dispatch's sink: one MESSAGE frame per entry, written together."""
        parts: list = []
        strip = not self.conn.entry_metadata
        for d in deliveries:
            entry = d.entry
            data = entry.data
            start = 6 + int.from_bytes(data[2:6], "big") if strip and data[:2] == _PREFIX_MAGIC else 0
            message = cmd.CommandMessage(consumer_id=self.consumer_id,
                                         message_id=message_id(entry.ledger_id, entry.offset, self.partition),
                                         redelivery_count=d.redelivery_count)
            if d.ack_set:
                message.ack_set.extend(d.ack_set)
            if self.epoch is not None:
                message.consumer_epoch = self.epoch
            body = T(type=T.MESSAGE, message=message).SerializeToString()
            parts.append(FRAME_HEADER.pack(4 + len(body) + len(data) - start, len(body)))
            parts.append(body)
            parts.append(memoryview(data)[start:] if start else data)
        self.conn.write(b"".join(parts))

    def active_changed(self, active: bool) -> None:
        self.conn.write(encode(T(type=T.ACTIVE_CONSUMER_CHANGE, active_consumer_change=cmd.CommandActiveConsumerChange(
            consumer_id=self.consumer_id, is_active=active))))

    def reached_end_of_topic(self) -> None:
        self.conn.write(encode(T(type=T.REACHED_END_OF_TOPIC, reachedEndOfTopic=cmd.CommandReachedEndOfTopic(
            consumer_id=self.consumer_id))))

    def error(self, exc: Exception) -> None:
        """Dispatch cannot go on for this consumer. When its next message is in a damaged range
        (``DataLost``), a client that reads pulsarlike's PULSARLIKE_CONSUMER_ERROR (pulsarlike's, said in its
        CONNECT) gets it, raised in that message's place, and stays subscribed; any other client waits there,
        as Apache Pulsar's consumers wait at an unreadable entry (Pulsar's protocol has no error for a
        consumer, and closing it would only make it subscribe again and again; the broker's log and the
        topic's stats say why). Other errors close the consumer, and the client subscribes again."""
        if isinstance(exc, DataLost):
            if self.conn.consumer_errors:
                command = T(type=T.PULSARLIKE_CONSUMER_ERROR)
                notice = command.pulsarlikeConsumerError
                notice.consumer_id = self.consumer_id
                notice.error.code = exc.code
                notice.error.message = wire_message(exc)
                notice.error.fields_json = fields_json(exc)
                self.conn.send(command)
            else:
                log.warning("event=consumer_waits_at_damaged_range topic=%s consumer=%s first_offset=%d"
                            " last_offset=%d", self.topic.topic, self.consumer_id, exc.start_offset,
                            exc.end_offset - 1)
            return
        log.info("event=consumer_disconnected topic=%s consumer=%s reason=%s", self.topic.topic,
                 self.consumer_id, getattr(exc, "code", type(exc).__name__))
        self.session.end()

    def ended(self) -> None:
        """The broker closed the consumer (seek, unload, topic deleted): CLOSE_CONSUMER, and the client
        subscribes again."""
        self.conn.consumers.left(self)
        self.conn.send(T(type=T.CLOSE_CONSUMER, close_consumer=cmd.CommandCloseConsumer(
            consumer_id=self.consumer_id, request_id=0)))
