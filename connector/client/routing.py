"""Key hashing and partition routing, as ``pulsar-client`` does it.

Worked example: with 3 partitions and the default ``JavaStringHash``, key ``"hello"`` hashes to
``99162322`` (Java's ``"hello".hashCode()``) and goes to partition ``99162322 % 3 == 1``; keyless
messages under ``RoundRobinDistribution`` fill a batch on one partition, then move to the next.
"""
from __future__ import annotations

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
    """Chooses the partition of each message: ``partition(msg, key)`` and ``batch_flushed(p)``.

    ``msg`` is what a custom ``message_router(msg, num_partitions)`` receives (the client passes a
    :class:`~connector.client.message.Message` being sent).
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
            index = int(self._custom(msg, n))
            if not 0 <= index < n:
                raise InvalidConfiguration(f"message_router returned partition {index}, "
                                           f"not in 0..{n - 1}")
            return index
        if key:
            return self._hash(key) % n
        return self._current

    def batch_flushed(self, partition: int) -> None:
        """Round robin moves on once the current partition's batch has gone out."""
        if self.mode == PartitionsRoutingMode.RoundRobinDistribution and partition == self._current:
            self._current = (self._current + 1) % self.num_partitions
