"""One consumer of a Pulsar binary protocol connection: its dispatch consumer, subscription and permit gate,
and the frames dispatch makes for it (MESSAGE, ACTIVE_CONSUMER_CHANGE, REACHED_END_OF_TOPIC)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.core.backpressure import PermitGate
from broker_core.frontends.pulsar.frames import FRAME_HEADER, encode
from broker_core.frontends.pulsar.message_ids import message_id
from dispatch.consumer import Consumer, Delivery

if TYPE_CHECKING:
    from broker_core.frontends.pulsar.connection import PulsarConnection

T = cmd.BaseCommand
_PREFIX_MAGIC = b"\x0e\x02"
"""A stored entry starting so begins with the broker's BrokerEntryMetadata prefix."""


class ConsumerSession:
    """One consumer of a connection: its dispatch consumer, subscription and permit gate."""

    def __init__(self, conn: "PulsarConnection", consumer_id: int, topic, request_id: int) -> None:
        self.conn = conn
        self.consumer_id = consumer_id
        self.topic = topic
        self.partition = topic.partition_index
        self.request_id = request_id
        self.consumer: Consumer | None = None
        self.sub: Any = None
        self.gate: PermitGate | None = None
        self.epoch: int | None = None
        self.held: list[bytes] | None = []  # frames made before SUCCESS went out
        self.last_ids: tuple | None = None
        """GET_LAST_MESSAGE_ID's last answer, by (topic end, mark-delete offset): see ConsumerCommands."""
        self.closed = False

    def write(self, data: bytes) -> None:
        if self.held is not None:
            self.held.append(data)
        else:
            self.conn.write(data)

    def ready(self) -> None:
        held, self.held = self.held, None
        self.conn.success(self.request_id)
        for data in held or ():
            self.conn.write(data)

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
        self.write(b"".join(parts))

    def active_changed(self, active: bool) -> None:
        self.write(encode(T(type=T.ACTIVE_CONSUMER_CHANGE, active_consumer_change=cmd.CommandActiveConsumerChange(
            consumer_id=self.consumer_id, is_active=active))))

    def reached_end(self) -> None:
        self.write(encode(T(type=T.REACHED_END_OF_TOPIC, reachedEndOfTopic=cmd.CommandReachedEndOfTopic(
            consumer_id=self.consumer_id))))
