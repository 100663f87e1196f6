"""Batch-index ack sets: Pulsar's int64 words <-> bits <-> acknowledged ranges, in linear time, never past the
entry's own messages."""
from __future__ import annotations

import random

from broker_core.protocol.ack_set import clear_runs, from_words, set_indexes, to_words, unacked_bits, words_for
from broker_core.protocol.entry import kept_indexes
from broker_core.frontends.pulsar.message_ids import acked_ranges, cumulative_offset


def test_words_round_trip_through_bits_for_a_hundred_thousand_words():
    rnd = random.Random(18)
    words = [rnd.randint(-(1 << 63), (1 << 63) - 1) for _ in range(100_000)]
    bits = from_words(words)
    assert to_words(bits, 64 * len(words)) == words
    assert bits >> (64 * 99_999) == words[-1] % (1 << 64)


def test_unsigned_words_read_as_their_low_64_bits():
    assert from_words([(1 << 64) - 2]) == from_words([-2]) == (1 << 64) - 2


def test_an_ack_set_is_cut_to_the_entry_it_names():
    assert words_for(0) == 0 and words_for(64) == 1 and words_for(65) == 2
    # three words, an entry of 70 messages: the third word and the bits past 70 are not the entry's
    assert from_words([-1, -1, -1], 70) == (1 << 70) - 1
    assert to_words((1 << 200) - 1, 70) == [-1, (1 << 6) - 1]


def test_unacked_bits_clear_each_acknowledged_range_and_the_mark_delete_point():
    assert unacked_bits(10, 14, -1, [(11, 13)]) == 0b1001
    assert unacked_bits(10, 14, 10, [(12, 13), (30, 40), (0, 5)]) == 0b1010
    assert unacked_bits(10, 14, 20, []) == 0
    alternate = unacked_bits(0, 100_000, -1, [(i, i + 1) for i in range(0, 100_000, 2)])
    assert alternate == int("10" * 50_000, 2)


def test_clear_runs_are_the_acknowledged_ranges_and_stop_past_a_limit():
    assert clear_runs(0b1001, 6) == [(1, 3), (4, 6)]
    assert clear_runs(0, 1_000_000) == [(0, 1_000_000)]  # a clear tail is one run, never built bit by bit
    assert len(clear_runs(int("10" * 1000, 2), 2000, limit=10)) == 11
    assert set_indexes(0b1001, 3) == [0]


def test_acked_ranges_read_a_short_ack_set_as_zeros_past_its_end():
    assert acked_ranges(10, 3, [0b110]) == [(10, 11)]
    assert acked_ranges(100, 200, [-1]) == [(164, 300)]  # words 1..3 missing: acknowledged
    assert acked_ranges(100, 200, [0b0101] * 4, limit=3) is None


def test_a_cumulative_ack_set_acknowledges_the_messages_before_its_first_set_bit():
    assert cumulative_offset(10, -1, [0b1000], entry_end=14) == 12
    assert cumulative_offset(10, -1, [0] + [-1] * 100_000, entry_end=14) == 13  # cut to the entry: all acked
    assert cumulative_offset(10, 1, [], entry_end=14) == 11


def test_kept_indexes_are_the_set_bits_of_the_entrys_messages():
    assert kept_indexes([0b1001], 4) == [0, 3]
    assert kept_indexes([-1, -1], 66) == list(range(66))
    assert kept_indexes([], 4) is None
