"""Key hashing and partition routing (pulsar-client's JavaStringHash / Murmur3_32Hash)."""
from __future__ import annotations

import pytest

from broker_core.errors import InvalidConfiguration
from connector import HashingScheme, PartitionsRoutingMode
from connector.client.producer.routing import Router, java_string_hash, murmur3_32_hash
from tests.unit import producer_fakes as fakes


@pytest.mark.parametrize("key,expected", [
    ("hello", 99162322), ("", 0), ("a", 97), ("Aa", 2112), ("BB", 2112),
    ("polygenelubricants", 0),          # Java hashCode is Integer.MIN_VALUE; & 0x7fffffff -> 0
    ("\U0001F600", 31 * 0xD83D + 0xDE00),  # a surrogate pair counts as two UTF-16 units
])
def test_java_string_hash_matches_java_string_hashcode(key, expected):
    assert java_string_hash(key) == expected


def _murmur3_x86_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86_32 written out from the algorithm, to check mmh3 independently."""
    c1, c2, mask = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF
    h = seed
    rotl = lambda x, r: ((x << r) | (x >> (32 - r))) & mask  # noqa: E731
    full = len(data) - len(data) % 4
    for i in range(0, full, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = rotl((k * c1) & mask, 15) * c2 & mask
        h = (rotl(h ^ k, 13) * 5 + 0xE6546B64) & mask
    tail = data[full:]
    if tail:
        k = int.from_bytes(tail, "little")
        h ^= rotl((k * c1) & mask, 15) * c2 & mask
    h ^= len(data)
    h = ((h ^ (h >> 16)) * 0x85EBCA6B) & mask
    h = ((h ^ (h >> 13)) * 0xC2B2AE35) & mask
    return h ^ (h >> 16)


@pytest.mark.parametrize("key,unsigned", [
    # Published seed-0 MurmurHash3 x86_32 vectors (as unsigned 32-bit values).
    ("", 0), ("a", 1009084850), ("ab", 2613040991), ("abc", 3017643002), ("abcd", 1139631978),
    ("abcde", 3902511862), ("abcdefghi", 1108608752), ("hello", 613153351),
])
def test_murmur3_hash_matches_known_vectors(key, unsigned):
    assert _murmur3_x86_32(key.encode()) == unsigned
    assert murmur3_32_hash(key) == unsigned & 0x7FFFFFFF


@pytest.mark.parametrize("key,expected", [
    # What Pulsar's F# client expects of Murmur3_32Hash (the sign bit already cleared).
    ("I will not buy this record, it is scratched.", 684731290), ("Hello world", 764499724),
])
def test_murmur3_hash_matches_pulsar_client_values(key, expected):
    assert murmur3_32_hash(key) == expected


def test_murmur3_hash_covers_utf8_keys_of_every_tail_length():
    keys = ["ключ", "π" * 7, "\U0001F335", "key-%d" % 12345, "x" * 33] + ["k" * n for n in range(9)]
    for key in keys:
        assert murmur3_32_hash(key) == _murmur3_x86_32(key.encode()) & 0x7FFFFFFF, key


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


@pytest.mark.parametrize("returned", [7, 2, -1, "1", 1.0, None, True])
def test_custom_router_result_outside_the_partitions_is_rejected_naming_it(returned):
    router = Router(2, PartitionsRoutingMode.CustomPartition, message_router=lambda msg, n: returned)
    with pytest.raises(InvalidConfiguration, match=rf"message_router returned partition {returned!r}"):
        router.partition(None, msg=object())


def test_custom_router_may_return_any_integral_type():
    class Index(int):
        pass
    router = Router(4, PartitionsRoutingMode.CustomPartition, message_router=lambda msg, n: Index(3))
    assert router.partition("k", msg=object()) == 3 and type(router.partition(None, object())) is int


def test_custom_mode_without_a_router_is_rejected():
    with pytest.raises(InvalidConfiguration, match="message_router"):
        Router(2, PartitionsRoutingMode.CustomPartition)


def test_boost_hash_is_rejected_with_the_supported_schemes():
    with pytest.raises(InvalidConfiguration, match="JavaStringHash"):
        Router(2, PartitionsRoutingMode.RoundRobinDistribution, HashingScheme.BoostHash)


def test_non_partitioned_topic_always_routes_to_zero():
    assert Router(1, PartitionsRoutingMode.RoundRobinDistribution).partition("k") == 0


# --- routing in the producer ---------------------------------------------------------------------------
def _entries_per_partition(parts):
    return [len(fakes.sent_entries(part)) for part in parts]


def test_round_robin_moves_on_when_the_batch_is_full(monkeypatch):
    producer, parts = fakes.make_producer(monkeypatch, partitions=3, batching_max_messages=4, start=1)
    for _ in range(4 * 3 + 1):
        producer.send_async(b"x", None)
    assert _entries_per_partition(parts) == [1, 1, 1]  # one full batch each: partitions 1, 2, 0
    assert [len(part._container) for part in parts] == [0, 1, 0]  # the 13th opened one on 1 again


def test_round_robin_moves_on_when_the_publish_delay_timer_sends_the_batch(monkeypatch):
    clock = fakes.use_clock(monkeypatch)
    producer, parts = fakes.make_producer(monkeypatch, partitions=3, batching_max_messages=100)
    producer.send_async(b"a", None)
    producer.send_async(b"b", None)
    clock.now += 1
    fakes.timer(parts[0]).fire_all()
    producer.send_async(b"c", None)
    assert _entries_per_partition(parts) == [1, 0, 0] and len(parts[1]._container) == 1


def test_round_robin_without_batching_rotates_every_message(monkeypatch):
    producer, parts = fakes.make_producer(monkeypatch, partitions=3, batching_enabled=False)
    for _ in range(7):
        producer.send_async(b"x", None)
    assert _entries_per_partition(parts) == [3, 2, 2]


def test_keyed_messages_ignore_the_round_robin_position(monkeypatch):
    producer, parts = fakes.make_producer(monkeypatch, partitions=4, batching_enabled=False,
                                          scheme=HashingScheme.Murmur3_32Hash)
    for _ in range(3):
        producer.send_async(b"x", None, partition_key="hello")
    assert _entries_per_partition(parts)[613153351 % 4] == 3


def test_single_partition_mode_sends_every_keyless_message_to_one_partition(monkeypatch):
    producer, parts = fakes.make_producer(monkeypatch, partitions=3, batching_enabled=False,
                                          routing=PartitionsRoutingMode.UseSinglePartition, start=2)
    for _ in range(5):
        producer.send_async(b"x", None)
    producer.send_async(b"x", None, partition_key="hello")
    assert _entries_per_partition(parts) == [0, 1, 5]  # "hello": 99162322 % 3 == 1


def test_a_bad_custom_router_result_fails_that_send_and_the_producer_goes_on(monkeypatch):
    producer, parts = fakes.make_producer(
        monkeypatch, partitions=2, batching_enabled=False,
        routing=PartitionsRoutingMode.CustomPartition,
        message_router=lambda msg, n: int(msg.partition_key()) if msg.partition_key() != "bad" else "x")
    with pytest.raises(InvalidConfiguration, match="message_router returned partition 'x'"):
        producer.send_async(b"x", None, partition_key="bad")
    with pytest.raises(InvalidConfiguration, match="message_router returned partition 5"):
        producer.send(b"x", partition_key="5")
    producer.send_async(b"x", None, partition_key="1")
    assert _entries_per_partition(parts) == [0, 1] and parts[1]._pending_messages == 1
