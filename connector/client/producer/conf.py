"""The producer's options, parsed once by ``Client.create_producer`` (see its checks there)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

MAX_SEQUENCE_ID = (1 << 63) - 1
"""Sequence ids are Java longs in Pulsar: 0 .. 2**63 - 1."""


def check_sequence_id(option: str, value: Any) -> None:
    """ValueError naming ``option`` unless ``value`` is an int (not a bool) in 0 .. MAX_SEQUENCE_ID."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEQUENCE_ID:
        raise ValueError(f"{option}={value!r} is not valid; use an int from 0 to 2**63 - 1")


@dataclass(frozen=True)
class ProducerConf:
    """create_producer's options, parsed once."""

    producer_name: str | None
    """None: the broker assigns a unique name."""
    initial_sequence_id: int | None
    """The first message gets ``initial_sequence_id + 1``; None: continue from the broker's last id."""
    send_timeout_ms: int
    """A send without a receipt this long after it went out fails with Timeout; 0: no limit."""
    compression: int
    """``CompressionType`` value, applied per entry (batch, single message or whole chunked message)."""
    max_pending_messages: int
    """Messages sent and not yet acknowledged (a chunked message counts once); 0: no limit."""
    block_if_queue_full: bool
    """A full queue blocks the send (True) or fails it with ProducerQueueIsFull (False)."""
    batching_enabled: bool
    batching_max_messages: int
    batching_max_bytes: int
    batching_max_publish_delay_ms: int
    key_based_batching: bool
    """``BatchingType.KeyBased``: one open batch per key (:mod:`connector.client.producer.key_based`)."""
    properties: Mapping[str, str]
    """The producer's own properties (the broker shows them as the publisher's ``metadata``)."""
    access_mode: int
    """:class:`~connector.client.enums.ProducerAccessMode`."""
    chunking_enabled: bool = False
    """Split messages above the broker's maxMessageSize (needs batching off)."""
    crypto: Any = None
    """:class:`~connector.client.security.message_crypto.ProducerCrypto` encrypting every entry (None: not encrypted)."""
