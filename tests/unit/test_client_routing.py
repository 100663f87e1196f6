"""Key hashing and partition routing (pulsar-client's JavaStringHash / Murmur3_32Hash)."""
from __future__ import annotations

import pytest

from broker_core.errors import InvalidConfiguration
from connector import HashingScheme, PartitionsRoutingMode
from connector.client.routing import Router, java_string_hash, murmur3_32_hash


@pytest.mark.parametrize("key,expected", [
    ("hello", 99162322), ("", 0), ("a", 97), ("Aa", 2112), ("BB", 2112),
    ("polygenelubricants", 0),          # Java hashCode is Integer.MIN_VALUE; & 0x7fffffff -> 0
    ("\U0001F600", 31 * 0xD83D + 0xDE00),  # a surrogate pair counts as two UTF-16 units
])
def test_java_string_hash_matches_java_string_hashcode(key, expected):
    assert java_string_hash(key) == expected


def test_murmur3_hash_known_vectors():
    assert murmur3_32_hash("") == 0
    assert murmur3_32_hash("hello") == 613153351


def test_keyed_messages_go_to_hash_modulo_partitions():
    router = Router(3, PartitionsRoutingMode.RoundRobinDistribution)
    assert router.partition("hello") == 99162322 % 3
    router = Router(3, PartitionsRoutingMode.RoundRobinDistribution, HashingScheme.Murmur3_32Hash)
    assert router.partition("hello") == 613153351 % 3


def test_round_robin_moves_on_after_each_flushed_batch():
    router = Router(3, PartitionsRoutingMode.RoundRobinDistribution, start=1)
    seen = []
    for _ in range(4):
        p = router.partition(None)
        assert router.partition(None) == p  # stays until its batch is flushed
        seen.append(p)
        router.batch_flushed(p)
    assert seen == [1, 2, 0, 1]


def test_single_partition_mode_keeps_one_partition_for_keyless_messages():
    router = Router(4, PartitionsRoutingMode.UseSinglePartition, start=2)
    for _ in range(3):
        router.batch_flushed(router.partition(None))
    assert router.partition(None) == 2
    assert router.partition("hello") == 99162322 % 4


def test_custom_router_decides_the_partition():
    router = Router(5, PartitionsRoutingMode.CustomPartition, message_router=lambda msg, n: n - 1)
    assert router.partition("hello", msg=object()) == 4


def test_custom_router_out_of_range_is_rejected():
    router = Router(2, PartitionsRoutingMode.CustomPartition, message_router=lambda msg, n: 7)
    with pytest.raises(InvalidConfiguration, match="partition 7"):
        router.partition(None, msg=object())


def test_custom_mode_without_a_router_is_rejected():
    with pytest.raises(InvalidConfiguration, match="message_router"):
        Router(2, PartitionsRoutingMode.CustomPartition)


def test_boost_hash_is_rejected_with_the_supported_schemes():
    with pytest.raises(InvalidConfiguration, match="JavaStringHash"):
        Router(2, PartitionsRoutingMode.RoundRobinDistribution, HashingScheme.BoostHash)


def test_non_partitioned_topic_always_routes_to_zero():
    assert Router(1, PartitionsRoutingMode.RoundRobinDistribution).partition("k") == 0
