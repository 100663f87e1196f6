"""Sticky key and sticky key hash of Key_Shared (seed 003: Key_Shared, "Preserving order ... by key")."""
from __future__ import annotations

import base64
import doctest

import dispatch.sticky_key
from broker_core.protocol.codec.batch_decoding import SingleMeta
from dispatch.sticky_key import (
    FULL_RANGE,
    NON_KEY,
    RING_RANGE,
    murmur3_32,
    sticky_key,
    sticky_key_hash,
    sticky_key_of,
)


def test_module_examples_hold() -> None:
    assert doctest.testmod(dispatch.sticky_key).failed == 0


def test_ordering_key_wins_over_partition_key() -> None:
    assert sticky_key(b"order", "partition") == b"order"


def test_partition_key_is_used_without_ordering_key() -> None:
    assert sticky_key(None, "partition") == b"partition"
    assert sticky_key(None, "ключ") == "ключ".encode()


def test_base64_partition_key_is_decoded() -> None:
    encoded = base64.b64encode(b"\x00\xffraw").decode()
    assert sticky_key(None, encoded, partition_key_b64_encoded=True) == b"\x00\xffraw"


def test_keyless_messages_share_pulsars_none_key() -> None:
    assert NON_KEY == b"NONE_KEY"
    assert sticky_key() == NON_KEY


def test_empty_key_is_a_key_not_a_missing_one() -> None:
    assert sticky_key(b"", "p") == b""
    assert sticky_key(None, "") == b""


def test_sticky_key_of_reads_entry_metadata() -> None:
    assert sticky_key_of(SingleMeta(payload_size=1, partition_key="p", ordering_key=b"o")) == b"o"
    assert sticky_key_of(SingleMeta(payload_size=1, partition_key="p")) == b"p"
    assert sticky_key_of(SingleMeta(payload_size=1)) == NON_KEY


def test_murmur3_clears_the_sign_bit_as_pulsar_does() -> None:
    assert murmur3_32(b"") == 0
    assert murmur3_32(b"hello") == 0x248BFA47  # the reference vector (sign bit already clear)
    assert murmur3_32(b"Order-3459134") == 3112179635 & 0x7FFFFFFF


def test_seed_example_order_3459134_hashes_to_6067() -> None:
    assert 3112179635 % 65536 == 6067
    assert sticky_key_hash(b"Order-3459134") == 6067


def test_range_selectors_hash_modulo_65536() -> None:
    for key in (b"key-1", b"a", NON_KEY, "ключ".encode()):
        assert sticky_key_hash(key) == murmur3_32(key) % 65536
    assert sticky_key_hash(b"key-1") == 5536
    assert sticky_key_hash(NON_KEY) == 48803


def test_a_hash_of_zero_becomes_one() -> None:
    assert murmur3_32(b"k179888") % 65536 == 0
    assert sticky_key_hash(b"k179888") == 1
    assert sticky_key_hash(b"") == 1


def test_consistent_hashing_range_is_one_to_65535() -> None:
    assert RING_RANGE == (1, 65535) and FULL_RANGE == (0, 65535)
    assert sticky_key_hash(b"Order-3459134", RING_RANGE) == (3112179635 & 0x7FFFFFFF) % 65535 + 1
    hashes = {sticky_key_hash(f"k{i}".encode(), RING_RANGE) for i in range(20000)}
    assert min(hashes) >= 1 and max(hashes) <= 65535


def test_unset_keys_of_a_protobuf_metadata_are_absent_not_empty():
    from broker_core.protocol import pulsar_api_pb2
    from dispatch.sticky_key import NON_KEY, sticky_key_of

    meta = pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1)
    assert sticky_key_of(meta) == NON_KEY
    meta.partition_key = "k"
    assert sticky_key_of(meta) == b"k"
    meta.ordering_key = b"o"
    assert sticky_key_of(meta) == b"o"
    meta.partition_key = ""
    meta.ClearField("ordering_key")
    assert sticky_key_of(meta) == b""  # set but empty: a key, as in Pulsar
