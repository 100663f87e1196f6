"""Batch-index ack sets: which messages of a partially acknowledged entry are still to be delivered.

Pulsar's format: a list of int64 words forming a bitset over the entry's messages, least significant bit
first; bit ``i`` set = message ``i`` is still unacknowledged. Example: an entry at offset 10 with 4 messages,
of which 11 and 12 are acknowledged, has bits ``0b1001`` and ack set ``[9]``.

An ack set names at most the entry's own messages: words past ``ceil(n / 64)`` and bits past ``n`` are
ignored (cut, as Pulsar's broker does by AND-ing a client's ack set with the entry's own bitset), and a
missing word reads as zeros (acknowledged), as Java's ``BitSet.valueOf``.

Every function here is linear in the words or the entry's size: words become one big int through
``int.from_bytes`` (OR-ing each shifted word into a growing int copies it once per word: quadratic, 16 s
for a 100,000-word ack set), an int becomes words through ``to_bytes``, and runs of bits are found in the
int's binary text, which CPython converts both ways in linear time.
"""
from __future__ import annotations

import re
import sys
from array import array
from typing import Iterable, Sequence

_WORD = 64
_WORD_MASK = (1 << _WORD) - 1
_CLEAR_RUN = re.compile("0+")
_SET_BIT = re.compile("1")


def words_for(num_messages: int) -> int:
    """How many words an ack set of an entry of ``num_messages`` messages needs (``ceil(n / 64)``)."""
    return (max(num_messages, 0) + _WORD - 1) // _WORD


def unacked_bits(start: int, end: int, mark_delete_offset: int,
                 acked: Iterable[tuple[int, int]]) -> int:
    """The unacked-bitset of the entry ``[start, end)`` given the cursor's state (0 = fully acked)."""
    size = end - start
    if size <= 0:
        return 0
    cleared = sorted((max(s, start) - start, min(e, end) - start) for s, e in acked if s < end and e > start)
    if start <= mark_delete_offset:
        cleared.insert(0, (0, min(mark_delete_offset + 1, end) - start))
    if not cleared:
        return (1 << size) - 1
    # runs of '1' (unacked) and '0' (acked), lowest bit first, then read as one binary number
    pieces: list[str] = []
    pos = 0
    for s, e in cleared:
        if e <= pos:
            continue
        if s > pos:
            pieces.append("1" * (s - pos))
        else:
            s = pos
        pieces.append("0" * (e - s))
        pos = e
    if pos < size:
        pieces.append("1" * (size - pos))
    return int("".join(pieces)[::-1], 2)


def to_words(bits: int, num_messages: int) -> list[int]:
    """``bits`` as Pulsar's ``repeated int64 ack_set`` (signed words, one per 64 messages; the bits past
    ``num_messages`` are left out)."""
    count = words_for(num_messages)
    if count == 0:
        return []
    words = array("q")
    words.frombytes((bits & ((1 << num_messages) - 1)).to_bytes(count * 8, "little"))
    if sys.byteorder == "big":
        words.byteswap()
    return words.tolist()


def from_words(words: Sequence[int], num_messages: int | None = None) -> int:
    """The inverse of :func:`to_words`. With ``num_messages``, only the entry's own messages count: the
    words past ``ceil(num_messages / 64)`` are never read and the bits past ``num_messages`` are cleared."""
    if num_messages is not None:
        words = words[:words_for(num_messages)]
    if len(words) == 1:  # an entry of at most 64 messages: the usual case, without packing
        bits = words[0] & _WORD_MASK
        return bits & ((1 << max(num_messages, 0)) - 1) if num_messages is not None else bits
    try:
        packed = array("q", words)
    except OverflowError:  # unsigned words (above 2^63) or out of range: their low 64 bits, as the wire has
        packed = array("Q", (word & _WORD_MASK for word in words))
    if sys.byteorder == "big":
        packed.byteswap()
    bits = int.from_bytes(packed.tobytes(), "little")
    if num_messages is not None:
        bits &= (1 << max(num_messages, 0)) - 1
    return bits


def clear_runs(bits: int, size: int, limit: int | None = None) -> list[tuple[int, int]]:
    """The runs ``[i, j)`` of clear bits (acknowledged messages) among the first ``size`` bits, in order;
    with ``limit``, at most ``limit + 1`` of them (the caller sees there are too many without all being
    built). Example: ``clear_runs(0b1001, 6)`` is ``[(1, 3), (4, 6)]``."""
    bits &= (1 << max(size, 0)) - 1
    text = format(bits, "b")[::-1] if bits else ""  # bit i at index i; ends at the highest set bit
    runs = []
    for match in _CLEAR_RUN.finditer(text):
        runs.append(match.span())
        if limit is not None and len(runs) > limit:
            return runs
    if len(text) < size:  # every bit above the highest set one is clear: one run, without building it
        runs.append((len(text), size))
    return runs


def set_indexes(bits: int, size: int) -> list[int]:
    """The indexes of the set bits (unacknowledged messages) among the first ``size`` bits, in order."""
    bits &= (1 << max(size, 0)) - 1
    return [m.start() for m in _SET_BIT.finditer(format(bits, "b")[::-1])] if bits else []
