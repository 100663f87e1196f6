"""Pulsar message ids and this broker's message offsets.

A message id is ``(ledger_id, entry_id, partition, batch_index)``; here ``entry_id`` is the offset of the
entry's first message (dense per partition) and ``ledger_id`` the base offset of the segment holding it
(:class:`~broker_core.types.MessageId`), so the message at ``batch_index`` i of an entry has the offset
``entry_id + i``, and ids compare as offsets do. Clients send ``earliest`` as ``(-1, -1)`` and ``latest``
as ``(2^63 - 1, 2^63 - 1)``; the unsigned wire fields carry -1 as ``2^64 - 1``.

Examples (an entry at offset 10 holding 3 messages, in the segment based at 0)::

    acked_ranges(entry_id=10, size=3, ack_set=[0b110])  # acknowledged: [(10, 11)] (bit 0 clear)
    cumulative_offset(10, batch_index=1, ...)            # 11
    cumulative_offset(10, batch_index=-1, entry_end=13)  # 12: the whole entry
"""
from __future__ import annotations

from typing import Sequence

from broker_core.protocol import pulsar_api_pb2 as wire
from broker_core.protocol.ack_set import clear_runs, from_words

U64 = 1 << 64
NO_ID = U64 - 1
"""-1 as an unsigned 64-bit field."""
LATEST = (1 << 63) - 1


def signed(value: int) -> int:
    """An unsigned 64-bit wire field as the signed number clients mean."""
    return value - U64 if value >= 1 << 63 else value


def is_earliest(mid: wire.MessageIdData) -> bool:
    return signed(mid.ledgerId) < 0 or signed(mid.entryId) < 0


def is_latest(mid: wire.MessageIdData) -> bool:
    return mid.ledgerId == LATEST and mid.entryId == LATEST


def message_id(ledger_id: int, entry_id: int, partition: int, batch_index: int = -1) -> wire.MessageIdData:
    mid = wire.MessageIdData(ledgerId=ledger_id % U64, entryId=entry_id % U64, partition=partition)
    if batch_index >= 0:
        mid.batch_index = batch_index
    return mid


def acked_ranges(entry_id: int, size: int, ack_set: Sequence[int], limit: int | None = None,
                 ) -> list[tuple[int, int]] | None:
    """The offset ranges ``[start, end)`` a batch-index ack acknowledges: the clear bits of ``ack_set``
    (a set bit is a message still unacknowledged; a word past the ack set's end reads as zeros) among the
    entry's ``size`` messages. Words past the entry's size are not read. With ``limit``: None when there
    are more ranges than that (found lazily: no more are built)."""
    runs = clear_runs(from_words(ack_set, size), size, limit)
    if limit is not None and len(runs) > limit:
        return None
    return [(entry_id + start, entry_id + end) for start, end in runs]


def cumulative_offset(entry_id: int, batch_index: int, ack_set: Sequence[int], entry_end: int) -> int:
    """The last offset a cumulative ack of ``(entry_id, batch_index, ack_set)`` covers: the message at
    ``batch_index``; with an ack set, the messages before its first set bit; else the whole entry. Only the
    entry's words of the ack set are read."""
    if ack_set:
        bits = from_words(ack_set, entry_end - entry_id)
        if bits == 0:
            return entry_end - 1
        first_unacked = (bits & -bits).bit_length() - 1
        return entry_id + first_unacked - 1
    if batch_index >= 0:
        return min(entry_id + batch_index, entry_end - 1)
    return entry_end - 1
