"""Key hashing and partition routing, as ``pulsar-client`` does it.

* A message with a partition key goes to ``hash(key) % num_partitions`` (ordering keys do not route),
  ``hash`` being ``JavaStringHash`` (default: Java's ``String.hashCode() & 0x7fffffff``) or
  ``Murmur3_32Hash`` (MurmurHash3 x86_32, seed 0, over the UTF-8 bytes, ``& 0x7fffffff``).
* A keyless message goes, under ``RoundRobinDistribution`` (default), to the current partition until
  that partition's batch is sent -- by size, count, the publish-delay timer, ``flush()`` or a blocking
  send -- and then to the next one: round robin on the batching boundary, not per message (with
  batching off every message is its own batch). Under ``UseSinglePartition`` it goes to one partition
  picked at random when the producer is created.
* With a ``message_router`` (``CustomPartition``) the router decides for every message, keyed or not.
  It must return an ``int`` in ``0 .. num_partitions - 1``; anything else fails that send with
  :class:`~broker_core.errors.InvalidConfiguration` naming ``message_router`` and the value, and the
  producer goes on.

Worked example: with 3 partitions and the default ``JavaStringHash``, key ``"hello"`` hashes to
``99162322`` (Java's ``"hello".hashCode()``) and goes to partition ``99162322 % 3 == 1``; keyless
messages under ``RoundRobinDistribution`` fill a batch on one partition, then move to the next.
"""
from __future__ import annotations

from numbers import Integral
from typing import Any, Callable

from broker_core.errors import InvalidConfiguration

from connector.client.enums import HashingScheme, PartitionsRoutingMode

_INT_MASK = 0xFFFFFFFF
_POSITIVE = 0x7FFFFFFF


def java_string_hash(key: str) -> int:
    """Java's ``String.hashCode()`` (over UTF-16 code units) & 0x7fffffff."""
    h = 0
    data = key.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & _INT_MASK
    return h & _POSITIVE


def murmur3_32_hash(key: str | bytes) -> int:
    """Murmur3 x86 32-bit, seed 0, & 0x7fffffff (Pulsar's ``Murmur3_32Hash``)."""
    import mmh3
    return mmh3.hash(key, 0, signed=False) & _POSITIVE


def hash_function(scheme: HashingScheme) -> Callable[[str], int]:
    if scheme == HashingScheme.JavaStringHash:
        return java_string_hash
    if scheme == HashingScheme.Murmur3_32Hash:
        return murmur3_32_hash
    raise InvalidConfiguration(f"hashing_scheme={scheme!r} is not supported; use "
                               "HashingScheme.JavaStringHash or HashingScheme.Murmur3_32Hash")


class Router:
    """Chooses the partition of each message: ``partition(key, msg)``; ``batch_flushed(p)`` when
    partition ``p`` sent a batch (round robin moves on).

    ``msg`` is what a custom ``message_router(msg, num_partitions)`` receives (the producer passes an
    :class:`~connector.client.producer.OutgoingMessage`).
    """

    def __init__(self, num_partitions: int, mode: PartitionsRoutingMode,
                 scheme: HashingScheme = HashingScheme.JavaStringHash,
                 message_router: Callable[[Any, int], int] | None = None, start: int = 0) -> None:
        self.num_partitions = num_partitions
        self.mode = mode
        self._hash = hash_function(scheme)
        self._custom = message_router
        if mode == PartitionsRoutingMode.CustomPartition and message_router is None:
            raise InvalidConfiguration("message_routing_mode=CustomPartition needs a message_router")
        self._current = start % num_partitions if num_partitions else 0

    def partition(self, key: str | None, msg: Any = None) -> int:
        n = self.num_partitions
        if n <= 1:
            return 0
        if self._custom is not None:  # a message_router implies CustomPartition, as in pulsar-client
            index = self._custom(msg, n)
            if isinstance(index, bool) or not isinstance(index, Integral) or not 0 <= index < n:
                raise InvalidConfiguration(
                    f"message_router returned partition {index!r}; it must return an int in "
                    f"0..{n - 1} (num_partitions={n})")
            return int(index)
        if key:
            return self._hash(key) % n
        return self._current

    def batch_flushed(self, partition: int) -> None:
        """Round robin moves on once the current partition's batch has gone out."""
        if self.mode == PartitionsRoutingMode.RoundRobinDistribution and partition == self._current:
            self._current = (self._current + 1) % self.num_partitions
