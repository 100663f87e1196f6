"""The sticky key of a message and its hash, exactly as a Pulsar 4.0 broker computes them for Key_Shared.

Sticky key (Pulsar ``Commands.peekStickyKey``): the ordering key if the message has one, else its partition
key (base64-decoded when ``partition_key_b64_encoded`` is set), else the fixed bytes ``b"NONE_KEY"``, so
every keyless message shares one hash. A key-based batch carries its batch key in the entry's metadata, so
the dispatcher computes one hash per entry, never one per message.

Hash (Pulsar ``StickyKeyConsumerSelectorUtils.makeStickyKeyHash``)::

    murmur = Murmur3_32(key, seed 0) & 0x7FFFFFFF          # Murmur3_32Hash.makeHash drops the sign bit
    hash   = murmur % range_size + range_start              # range = the selector's key hash range
    if hash == 0: hash = 1                                  # 0 means "hash not set" in the dispatcher

The key hash range depends on the selector, as in Pulsar 4.0:

- AUTO_SPLIT hash range and STICKY: ``[0, 65535]`` (size 65536), so ``hash = murmur % 65536`` with 0
  bumped to 1. ``murmur32("Order-3459134") = 3112179635`` gives 6067, the seed's example (clearing bit 31
  never changes a value modulo 65536).
- Consistent hashing: ``[1, 65535]`` (size 65535; PIP-379 shrank the ring to 2^16 - 1), so
  ``hash = murmur % 65535 + 1`` -- never 0. The ring points use the same function.

The seed's pseudo code ``murmur32(key) % 65536 + 1`` is the documentation's shorthand; it matches neither
formula exactly, so each selector exposes ``make_hash(key)`` built on :func:`sticky_key_hash` and the
dispatcher must hash with the selector it dispatches with.
"""
from __future__ import annotations

import base64
from typing import Protocol

import mmh3

NON_KEY = b"NONE_KEY"
"""The sticky key of a message with neither ordering key nor partition key (Pulsar's ``NONE_KEY``)."""

DEFAULT_RANGE_SIZE = 65536
"""2 << 15: the full hash space of the range selectors (Pulsar ``DEFAULT_RANGE_SIZE``)."""

STICKY_KEY_HASH_NOT_SET = 0
"""Never a valid hash: a computed 0 becomes 1."""

FULL_RANGE = (0, DEFAULT_RANGE_SIZE - 1)
"""Key hash range of the AUTO_SPLIT hash range and STICKY selectors (inclusive)."""

RING_RANGE = (STICKY_KEY_HASH_NOT_SET + 1, DEFAULT_RANGE_SIZE - 1)
"""Key hash range of the consistent hashing selector (inclusive)."""

_POSITIVE = 0x7FFFFFFF


class KeyedMetadata(Protocol):
    """What :func:`sticky_key_of` reads: the codec's ``MessageMetadata``/``SingleMeta`` have these fields."""

    ordering_key: bytes | None
    partition_key: str | None
    partition_key_b64_encoded: bool


def sticky_key(ordering_key: bytes | None = None, partition_key: str | bytes | None = None,
               partition_key_b64_encoded: bool = False) -> bytes:
    """The bytes a message is routed by: ordering key, else partition key, else :data:`NON_KEY`.

    ``None`` means absent; an empty key is a key (as in Pulsar, where presence is a protobuf ``has``).

    >>> sticky_key(b"o", "p"), sticky_key(None, "p"), sticky_key()
    (b'o', b'p', b'NONE_KEY')
    """
    if ordering_key is not None:
        return bytes(ordering_key)
    if partition_key is not None:
        if isinstance(partition_key, bytes):
            return partition_key
        if partition_key_b64_encoded:
            return base64.b64decode(partition_key)
        return partition_key.encode("utf-8")
    return NON_KEY


def sticky_key_of(metadata: KeyedMetadata) -> bytes:
    """:func:`sticky_key` of an entry's (or a single message's) metadata. A protobuf ``MessageMetadata``
    reads unset fields as empty, so presence is asked with ``HasField`` there."""
    has = getattr(metadata, "HasField", None)
    if has is not None:
        return sticky_key(metadata.ordering_key if has("ordering_key") else None,
                          metadata.partition_key if has("partition_key") else None,
                          metadata.partition_key_b64_encoded)
    return sticky_key(metadata.ordering_key, metadata.partition_key,
                      getattr(metadata, "partition_key_b64_encoded", False))


def murmur3_32(key: bytes) -> int:
    """Pulsar's ``Murmur3_32Hash.makeHash``: Murmur3 x86 32-bit, seed 0, sign bit cleared (0..2^31-1)."""
    return mmh3.hash(key, 0, signed=False) & _POSITIVE


def sticky_key_hash(key: bytes, key_hash_range: tuple[int, int] = FULL_RANGE) -> int:
    """The sticky key hash of ``key`` within the inclusive ``key_hash_range``; never 0.

    >>> sticky_key_hash(b"Order-3459134")
    6067
    >>> sticky_key_hash(b"Order-3459134", RING_RANGE)
    20788
    """
    start, end = key_hash_range
    value = (mmh3.hash(key, 0, signed=False) & _POSITIVE) % (end - start + 1) + start
    return value if value != STICKY_KEY_HASH_NOT_SET else STICKY_KEY_HASH_NOT_SET + 1
