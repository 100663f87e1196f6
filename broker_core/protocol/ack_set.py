"""Batch-index ack sets: which messages of a partially acknowledged entry are still to be delivered.

Pulsar's format: a list of int64 words forming a bitset over the entry's messages, least significant bit
first; bit ``i`` set = message ``i`` is still unacknowledged. Example: an entry at offset 10 with 4 messages,
of which 11 and 12 are acknowledged, has bits ``0b1001`` and ack set ``[9]``.

Work here is per acknowledged range (big-int masks), never per message.
"""
from __future__ import annotations

from typing import Iterable

_WORD = 64
_WORD_MASK = (1 << _WORD) - 1
_SIGN = 1 << 63


def unacked_bits(start: int, end: int, mark_delete_offset: int,
                 acked: Iterable[tuple[int, int]]) -> int:
    """The unacked-bitset of the entry ``[start, end)`` given the cursor's state (0 = fully acked)."""
    bits = (1 << (end - start)) - 1
    if start <= mark_delete_offset:
        bits &= ~((1 << (mark_delete_offset + 1 - start)) - 1)
    for s, e in acked:
        s = max(s, start)
        e = min(e, end)
        if s < e:
            bits &= ~(((1 << (e - s)) - 1) << (s - start))
    return bits


def to_words(bits: int, num_messages: int) -> list[int]:
    """``bits`` as Pulsar's ``repeated int64 ack_set`` (signed words, one per 64 messages)."""
    words = []
    for i in range((num_messages + _WORD - 1) // _WORD):
        word = (bits >> (i * _WORD)) & _WORD_MASK
        words.append(word - (1 << _WORD) if word & _SIGN else word)
    return words


def from_words(words: Iterable[int]) -> int:
    """The inverse of :func:`to_words`."""
    bits = 0
    for i, word in enumerate(words):
        bits |= (word & _WORD_MASK) << (i * _WORD)
    return bits
