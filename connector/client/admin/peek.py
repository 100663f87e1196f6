"""Peeked messages: the stored entries a ``PeekMessages`` call answers (:class:`~connector.client.transport.events.Entry`,
whichever wire they came over), split into messages as a consumer would
(batches split, payloads decompressed, acknowledged batch members left out), without receiving them.

An entry that cannot be decoded (a bad CRC, a payload that does not decompress, a batch count its bytes
cannot hold) is one :class:`PeekedMessage` whose ``decode_error`` says why, in its place among the others:
peeking is how one looks at such an entry, so it never fails the whole call."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Iterable

from broker_core.errors import ChecksumError, InvalidMessage

from connector.client import entries as entry_codec
from connector.client.transport.events import Entry
from connector.client.message_id import MessageId

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PeekedMessage:
    """One message at a subscription's position (``pulsar-admin topics peek-messages``)."""

    message_id: MessageId
    """``ledger_id:entry_id`` (``batch_index`` >= 0 inside a batch), as a consumer would receive it."""
    offset: int
    """The message's offset in its topic partition."""
    data: bytes
    """The payload (decompressed)."""
    key: str | None
    """The partition key, None when the message has none."""
    properties: dict[str, str] = field(default_factory=dict)
    publish_time: int = 0
    """Producer's publish time, ms since the epoch."""
    event_time: int = 0
    """0 when the producer set none."""
    producer_name: str = ""
    sequence_id: int = 0
    ordering_key: bytes | None = None
    deliver_at_time: int = 0
    """Delayed delivery time in ms, 0 when not delayed."""
    broker_publish_time: int = -1
    """The broker's time when it stored the entry (``BrokerEntryMetadata.broker_timestamp``)."""
    chunk: tuple[int, int] | None = None
    """``(chunk_id, num_chunks)`` when this is one chunk of a chunked message (shown raw, as Pulsar does)."""
    decode_error: str | None = None
    """Why the entry could not be decoded (``data`` is then empty and the entry stands as one message at
    its first offset), else None."""

    @property
    def batch_index(self) -> int:
        return self.message_id.batch_index()


def messages_of(stored: Iterable[Entry], topic: str, partition: int, limit: int) -> list[PeekedMessage]:
    """The first ``limit`` unacknowledged messages of the peeked entries."""
    out: list[PeekedMessage] = []
    for entry in stored:
        try:
            out.extend(_split(entry, topic, partition))
        except (InvalidMessage, ChecksumError) as exc:
            out.append(_undecodable(entry, topic, partition, exc))
        if len(out) >= limit:
            break
    return out[:limit]


def _undecodable(entry: Entry, topic: str, partition: int,
                 exc: InvalidMessage | ChecksumError) -> PeekedMessage:
    log.warning("event=peek_undecodable topic=%s entry_id=%d reason=%s", topic, entry.entry_id, exc.message)
    fields: dict[str, Any] = {}
    try:  # what the metadata still says, when only the payload is bad
        metadata, _, broker_time = entry_codec.open_entry(entry.data, verify=False)
        fields = dict(publish_time=metadata.publish_time, producer_name=metadata.producer_name,
                      sequence_id=metadata.sequence_id, broker_publish_time=broker_time)
    except InvalidMessage:
        pass
    return PeekedMessage(MessageId.of(entry.ledger_id, entry.entry_id, partition, topic=topic), entry.entry_id,
                         b"", None, decode_error=exc.message, **fields)


def _split(entry: Entry, topic: str, partition: int) -> Iterable[PeekedMessage]:
    metadata, payload, broker_time = entry_codec.open_entry(entry.data)
    common = dict(publish_time=metadata.publish_time, producer_name=metadata.producer_name,
                  deliver_at_time=metadata.deliver_at_time, broker_publish_time=broker_time)
    if entry_codec.is_chunk(metadata):  # shown raw, as Pulsar does
        yield PeekedMessage(
            MessageId.of(entry.ledger_id, entry.entry_id, partition, topic=topic), entry.entry_id, bytes(payload),
            metadata.partition_key if metadata.HasField("partition_key") else None,
            {kv.key: kv.value for kv in metadata.properties}, event_time=metadata.event_time,
            sequence_id=metadata.sequence_id,
            ordering_key=metadata.ordering_key if metadata.HasField("ordering_key") else None,
            chunk=(metadata.chunk_id, metadata.num_chunks_from_msg), **common)
        return
    metas, payloads = entry_codec.split_messages(metadata, payload)
    if metas[0] is None:
        yield PeekedMessage(
            MessageId.of(entry.ledger_id, entry.entry_id, partition, topic=topic), entry.entry_id,
            bytes(payloads[0]), metadata.partition_key if metadata.HasField("partition_key") else None,
            {kv.key: kv.value for kv in metadata.properties}, event_time=metadata.event_time,
            sequence_id=metadata.sequence_id,
            ordering_key=metadata.ordering_key if metadata.HasField("ordering_key") else None, **common)
        return
    num = len(payloads)
    kept = entry_codec.kept_indexes(entry.ack_set, num)
    for i in range(num) if kept is None else kept:
        single = metas[i]
        assert single is not None
        yield PeekedMessage(
            MessageId.of(entry.ledger_id, entry.entry_id, partition, i, num, topic), entry.entry_id + i,
            bytes(payloads[i]), single.partition_key, dict(single.properties),
            event_time=single.event_time or metadata.event_time,
            sequence_id=single.sequence_id if single.sequence_id is not None else metadata.sequence_id + i,
            ordering_key=single.ordering_key, **common)
