"""What both kinds of topic (persistent and not) check and answer alike: a sent entry's checks and its
outcome (:class:`Accepted`), the consumer limit, and what a deleted topic's clients are told."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from broker_core.errors import ConsumerBusy, InvalidMessage, MessageTooBig, PulsarLikeError, TopicNotFound
from broker_core.protocol.codec import check_entry, decode_entry
from broker_core.storage.log import StoredEntry


@dataclass(frozen=True)
class Accepted:
    """The outcome of one send entry: ``entry`` when stored, ``error`` when refused, ``duplicate`` when
    deduplication dropped it (the send still succeeds)."""

    sequence_id: int
    highest_sequence_id: int
    entry: StoredEntry | None = None
    error: PulsarLikeError | None = None
    duplicate: bool = False


def checked_entry(send: Any, max_entry: int, max_message_size: int) -> tuple[Any, int]:
    """The ``MessageMetadata`` of ``send.data`` (a ``SendEntry``) and its message count, once its size, CRC
    and message count are right (``MessageTooBig``, ``InvalidMessage``, ``ChecksumError``...)."""
    data = send.data
    if len(data) > max_entry:
        raise MessageTooBig(size=len(data), limit=max_message_size)
    metadata, payload = decode_entry(data)
    count = check_entry(metadata, len(payload), max_message_size)
    if send.num_messages and send.num_messages != count:
        raise InvalidMessage(f"entry declares {send.num_messages} messages but its metadata holds {count}")
    return metadata, count


def check_consumer_limit(topic: str, limit: int, consumers: int) -> None:
    """``ConsumerBusy`` when ``consumers`` already reach ``limit`` (0: none) ("Topic reached max consumers
    limit", as Pulsar says)."""
    if limit and consumers >= limit:
        raise ConsumerBusy(f"Topic {topic} reached max consumers limit ({limit}): close a consumer, or raise"
                           " maxConsumersPerTopic (`pulsarlike admin namespaces set-max-consumers-per-topic`,"
                           " `topics set-max-consumers`)", topic=topic, limit=limit)


def deleted(topic: str) -> TopicNotFound:
    """What a deleted topic's clients are told when their sessions are closed. The Pulsar protocol front end
    closes them with CLOSE_PRODUCER/CLOSE_CONSUMER (the official clients reconnect, and may create the topic
    again); the gRPC front end ends their streams with this error."""
    return TopicNotFound(f"topic {topic} was deleted", topic=topic)
