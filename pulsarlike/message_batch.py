"""``MessageBatch`` (pulsar-client's): split a raw batch payload, as a batching producer writes it (the
concatenated single-message metadata and bytes), into ``Message`` objects with message ids of one entry.
Consumers and readers split batches themselves; this is for tools that hold a stored entry's payload."""
from __future__ import annotations

from broker_core.protocol import codec, pulsar_api_pb2

from connector.client.message import EntryInfo, Message
from connector.client.message_id import MessageId


class MessageBatch:
    """``MessageBatch().with_message_id(entry_id).parse_from(payload, count)``."""

    def __init__(self) -> None:
        self._id: MessageId | None = None

    def with_message_id(self, msg_id: MessageId) -> "MessageBatch":
        """The entry the batch is: its messages get this id's ledger, entry and partition, and their index."""
        if not isinstance(msg_id, MessageId):
            raise TypeError("unknown message id type: use a MessageId")
        self._id = msg_id
        return self

    def parse_from(self, data: bytes, size: int) -> list[Message]:
        """The ``size`` messages of the (uncompressed) batch payload ``data``; ``InvalidMessage`` when the bytes
        do not hold that many (pulsar-client's C++ core does not check)."""
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"size={size!r} is not valid; use the batch's message count (an int >= 1)")
        mid = self._id or MessageId()
        metadata = pulsar_api_pb2.MessageMetadata(num_messages_in_batch=size)
        entry = EntryInfo(metadata, "", mid.ledger_id(), mid.entry_id(), mid.partition(), 0, size, True,
                          None, None)  # type: ignore[arg-type]  # no consumer: nothing to acknowledge
        return [Message(content, single, entry, index)
                for index, (single, content) in enumerate(codec.decode_batch(bytes(data), size))]
