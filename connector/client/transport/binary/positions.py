"""Positions on a broker without dense offsets: :class:`PackedPositions`.

The client core orders, acknowledges, redelivers and seeks by integer *positions* (see
:class:`connector.client.transport.Positions`): a message's position is its entry's first position plus its
index in the batch, and an entry delivered is ``DeliveredEntry(ledger_id, entry_id=<its first position>)``.
On pulsarlike a position is the dense offset (``DENSE``). An Apache Pulsar broker (or pulsar-lite) names a
message ``(ledger, entry, batch index)`` instead, with ledger ids drawn from a counter shared by the whole
cluster; :class:`PackedPositions` packs that triple into one int, order-preserving, so the core works
unchanged, and gives the broker's REAL ids back (``message_id``, ``entry_of``) for what users see and what
goes on the wire.

Bit layout (63 bits: a position fits the int64 and uint64 fields it travels in)::

    | ledger - base + LEDGERS_BELOW : 22 | entry : 24 | batch index : 17 |

- ``base`` is the first ledger the client saw (a delivered entry's, a start or seek id's); ledgers from
  ``base - LEDGERS_BELOW`` (~1M older) to ``base + 2**22 - LEDGERS_BELOW - 1`` (~3.1M newer) fit. Ledger ids
  are a cluster-wide counter: a cluster creating 60,000 ledgers a day (10,000 topics rolling over every 4
  hours) gives one client process 50 days; a new client (a restart) takes a new base.
- up to ``2**24`` (16.7M) entries per ledger. Pulsar's ``managedLedgerMaxEntriesPerLedger`` is 50,000 by
  default, but a ledger is not rolled over before ``managedLedgerMinLedgerRolloverTimeMinutes`` (10): a
  partition taking 28,000 entries a second for those 10 minutes fills it. pulsar-lite keeps one ledger per
  topic, its entry ids counting from 0: 16.7M entries per topic.
- up to ``2**17`` (131,072) messages per batch: Pulsar's producers default to 1,000 messages and 128 KiB per
  batch (at most 21,845 messages of the smallest size, 6 bytes each); a producer allowed more (up to the
  broker's 5 MB ``maxMessageSize``: 873,813 empty messages) reaches this only with tiny messages.
- the messages of one entry have consecutive positions (``pack(l, e, 0) + i``), and ``pack(l, e, n)`` for an
  entry of ``n`` messages sits after its last message and before the next entry: "one past" arithmetic of the
  core (``position + 1``, ``[start, end)`` ranges) stays in order.

Why these widths: the batch index took one bit from the ledger (it had 16 bits: a valid batch of 70,000
messages stopped a consumer), not from the entry id. An entry id beyond its field is a property of the data --
every client reading that ledger meets it -- while the ledger span is the client's own: a new client has a
new base.

Beyond these limits :class:`~broker_core.errors.NotSupported` names the field (``field``: ``ledger_id``,
``entry_id``, ``batch_index`` or ``num_messages_in_batch``), its ``value`` and the ``limit``; nothing wraps
around silently. The binary transport's consumer (:mod:`.consuming`) turns it into a ``MessageDecodeError``
raised once in the entry's place, acknowledges the entry by its real id and goes on with the next one, as
with an entry that cannot be decoded.

Positions live in one client process: what outlives it (Spark's checkpoints,
:mod:`connector.spark.message_id_offsets`) stores the broker's real ``(ledger, entry, batch index)``, so these
widths can change between versions.

Example: the first ledger seen is 4711; the message ``(ledger 4712, entry 3, batch index 2)`` is at
``((1 + 2**20) << 41) | (3 << 17) | 2`` and ``entry_of`` of that gives ``(4712, 3, 2)`` back.
"""
from __future__ import annotations

import logging
import threading
from typing import Iterable

from broker_core import errors
from broker_core.protocol import pulsar_api_pb2
from broker_core.protocol.ack_set import to_words

from connector.client.message_id import MessageId
from connector.client.transport import Positions

log = logging.getLogger(__name__)

LEDGER_BITS = 22
ENTRY_BITS = 24
BATCH_BITS = 17
LEDGERS_BELOW = 1 << 20
"""How many ledgers older than the first one seen still fit (a reader or seek to an older topic's id)."""

_ENTRY_SHIFT = BATCH_BITS
_LEDGER_SHIFT = BATCH_BITS + ENTRY_BITS
_BATCH_MASK = (1 << BATCH_BITS) - 1
_ENTRY_MASK = (1 << ENTRY_BITS) - 1
_LEDGER_SPAN = 1 << LEDGER_BITS
MAX_BATCH_SIZE = 1 << BATCH_BITS
"""Most messages one entry may hold (its ``[first, first + size)`` range must not reach the next entry)."""
ENTRY_STRIDE = 1 << BATCH_BITS
"""The distance between the first positions of two consecutive entries of one ledger."""
_I64_MAX = (1 << 63) - 1


class PackedPositions:
    """``(ledger, entry, batch index)`` <-> one order-preserving int (module docstring). Thread-safe: the
    base is fixed once, by the first id packed."""

    dense = False

    def __init__(self, base_ledger: int | None = None) -> None:
        self._lock = threading.Lock()
        self.base_ledger = base_ledger
        """The first ledger seen (None until one is)."""

    # --- packing ------------------------------------------------------------------------------------------
    def pack(self, ledger: int, entry: int, batch_index: int = 0) -> int:
        """The position of message ``batch_index`` (0 for an unbatched one) of entry ``(ledger, entry)``."""
        base = self.base_ledger
        if base is None:
            base = self._fix_base(ledger)
        rel = ledger - base + LEDGERS_BELOW
        if not 0 <= rel < _LEDGER_SPAN:
            lowest, highest = max(base - LEDGERS_BELOW, 0), base + _LEDGER_SPAN - LEDGERS_BELOW - 1
            raise errors.NotSupported(
                f"ledger {ledger} is too far from ledger {base}, the first this client saw: a client reads "
                f"ledgers {lowest}..{highest} (its positions pack the ledger in {LEDGER_BITS} bits); use a new "
                "client for it", field="ledger_id", value=ledger, lowest=lowest, limit=highest, base_ledger=base)
        if not 0 <= entry <= _ENTRY_MASK:
            raise errors.NotSupported(
                f"entry id {entry} of ledger {ledger} is out of range: a client reads entries 0..{_ENTRY_MASK} of a "
                f"ledger (its positions pack the entry id in {ENTRY_BITS} bits; keep managedLedgerMaxEntriesPerLedger "
                "and the ledger rollover time low enough)", field="entry_id", value=entry, limit=_ENTRY_MASK)
        if not 0 <= batch_index <= _BATCH_MASK:
            raise errors.NotSupported(
                f"batch index {batch_index} of entry ({ledger}, {entry}) is out of range: a client reads batches "
                f"of at most {MAX_BATCH_SIZE} messages", field="batch_index", value=batch_index, limit=_BATCH_MASK)
        return (rel << _LEDGER_SHIFT) | (entry << _ENTRY_SHIFT) | batch_index

    def _fix_base(self, ledger: int) -> int:
        with self._lock:
            if self.base_ledger is None:
                self.base_ledger = ledger
            return self.base_ledger

    def entry_of(self, position: int) -> tuple[int, int, int]:
        """``(ledger, entry, batch index)`` of a position (the inverse of :meth:`pack`)."""
        base = self.base_ledger
        if base is None or not 0 <= position <= _I64_MAX:
            raise errors.NotSupported(f"position {position} was not made by this client's positions")
        return ((position >> _LEDGER_SHIFT) + base - LEDGERS_BELOW, (position >> _ENTRY_SHIFT) & _ENTRY_MASK,
                position & _BATCH_MASK)

    def check_batch_size(self, ledger: int, entry: int, size: int) -> None:
        """An entry of ``size`` messages fits (its last position stays below the next entry's first)."""
        if size > MAX_BATCH_SIZE:
            raise errors.NotSupported(
                f"entry ({ledger}, {entry}) holds {size} messages: a client reads batches of at most "
                f"{MAX_BATCH_SIZE} messages (its positions pack the batch index in {BATCH_BITS} bits); send "
                "smaller batches (batching_max_messages)", field="num_messages_in_batch", value=size,
                limit=MAX_BATCH_SIZE)

    # --- the Positions protocol ---------------------------------------------------------------------------
    def position(self, message_id: MessageId) -> int:
        """The position of the message ``message_id`` names: -1 for earliest, ``2**63 - 1`` for latest (as
        ``DENSE``)."""
        if message_id.is_earliest():
            return -1
        if message_id.is_latest():
            return _I64_MAX
        return self.pack(message_id.ledger_id(), message_id.entry_id(), max(message_id.batch_index(), 0))

    def message_id(self, ledger_id: int, entry_position: int, partition: int, batch_index: int = -1,
                   batch_size: int = 0, topic: str | None = None) -> MessageId:
        """The broker's real id of message ``batch_index`` of the entry whose first position is
        ``entry_position`` (``ledger_id`` is the entry's ledger: the position names it too)."""
        base = self.base_ledger
        if base is None:
            raise errors.NotSupported(f"position {entry_position} was not made by this client's positions")
        return MessageId.of((entry_position >> _LEDGER_SHIFT) + base - LEDGERS_BELOW,
                            (entry_position >> _ENTRY_SHIFT) & _ENTRY_MASK, partition, batch_index, batch_size,
                            topic)


# ----------------------------------------------------------------------------------------------------------
# Positions -> the message ids of Pulsar commands (ACK, REDELIVER_UNACKNOWLEDGED_MESSAGES, SEEK, SUBSCRIBE).
ENTRIES_REMEMBERED = 50_000
"""Delivered entries whose size is remembered per topic partition (about 100 bytes each), for the acks and
redeliveries of entries delivered on an earlier stream (before a reconnection); older ones are forgotten."""
IDS_PER_REQUEST_MAX = 10_000
"""Most message ids one ACK or redelivery names; the rest of an absurd range is left (delivered again)."""
_U64 = 1 << 64
MessageIdData = pulsar_api_pb2.MessageIdData


class EntryMemory:
    """``topic -> {first position: size}`` of delivered entries, at most ``limit`` per topic (the oldest is
    forgotten first). Shared by the streams of one transport, so a stream reopened after a reconnection still
    knows the entries the previous one delivered."""

    def __init__(self, limit: int = ENTRIES_REMEMBERED) -> None:
        self._limit = limit
        self._topics: dict[str, dict[int, int]] = {}

    def of(self, topic: str) -> dict[int, int]:
        """The sizes of ``topic``'s entries by first position (add with :meth:`add`)."""
        sizes = self._topics.get(topic)
        if sizes is None:
            sizes = self._topics.setdefault(topic, {})
        return sizes

    def add(self, sizes: dict[int, int], first: int, size: int) -> None:
        sizes[first] = size
        if len(sizes) > self._limit:
            try:
                del sizes[next(iter(sizes))]
            except (StopIteration, KeyError, RuntimeError):  # another thread got there first
                pass

    def __len__(self) -> int:
        return sum(map(len, list(self._topics.values())))


def _id(ledger: int, entry: int, partition: int, batch_index: int = -1) -> MessageIdData:
    mid = MessageIdData(ledgerId=ledger % _U64, entryId=entry % _U64, partition=partition)
    if batch_index >= 0:
        mid.batch_index = batch_index
    return mid


class WireIds:
    """The message ids of one topic partition's commands, from the core's positions (``positions``: DENSE
    or :class:`PackedPositions`), knowing the delivered entries ``memory`` holds.

    - **dense** (pulsarlike): an id's entry id is an offset (its ledger id 0: our broker reads the entry id
      alone); our broker reads an id pointing inside an entry as the message at that offset, so a message of
      an entry that is not remembered is named alone.
    - **packed**: ``entry_of`` gives the real ``(ledger, entry, batch index)``.

    A range that covers a whole entry becomes the entry's id; one that covers part of a batch, the entry's id
    with an ack set (Pulsar's batch-index acknowledgment: a set bit is a message still unacknowledged). A
    cumulative ack inside a batch is sent as Pulsar's clients send it: "everything before this entry",
    ``(ledger, entry - 1)`` -- never more than was acknowledged."""

    def __init__(self, positions: Positions, memory: EntryMemory, topic: str, partition: int) -> None:
        self.positions = positions
        self.dense = positions.dense
        self._sizes = memory.of(topic)
        self._memory = memory
        self._topic = topic
        self._partition = partition

    def delivered(self, ledger: int, entry: int, size: int) -> int:
        """Remember a delivered entry; its first position (``DeliveredEntry.entry_id``)."""
        if self.dense:
            first = entry
        else:
            positions: PackedPositions = self.positions  # type: ignore[assignment]
            positions.check_batch_size(ledger, entry, size)
            first = positions.pack(ledger, entry, 0)
        self._memory.add(self._sizes, first, size)
        return first

    def start(self, position: int) -> MessageIdData:
        """The id of a SUBSCRIBE start or a SEEK to the message at ``position``."""
        if self.dense:
            return _id(0, position, self._partition)
        ledger, entry, index = self.positions.entry_of(position)  # type: ignore[attr-defined]
        return _id(ledger, entry, self._partition, index if index > 0 else -1)

    def _segments(self, ranges: Iterable[tuple[int, int]]) -> Iterable[tuple[int, int, int, int, int | None]]:
        """``(ledger, entry, first index, end index, entry size or None)`` per entry the ranges touch; a
        dense position of an entry not remembered is its own segment ``(0, offset, 0, 1, None)``."""
        budget = IDS_PER_REQUEST_MAX
        get = self._sizes.get
        topic = self._topic
        for start, end in ranges:
            pos = start
            while pos < end and budget > 0:
                budget -= 1
                if self.dense:
                    size = get(pos)
                    if size is None:
                        yield 0, pos, 0, 1, None
                        pos += 1
                        continue
                    stop = min(end, pos + size)
                    yield 0, pos, 0, stop - pos, size
                    pos = stop
                    continue
                ledger, entry, index = self.positions.entry_of(pos)  # type: ignore[attr-defined]
                first = pos - index
                size = get(first)
                stop = min(end, first + ENTRY_STRIDE)
                last = index + stop - pos
                yield ledger, entry, index, last if size is None else min(last, size), size
                pos = first + ENTRY_STRIDE
        if budget <= 0:
            log.warning("event=binary_ids_truncated topic=%s limit=%d: the rest is delivered again", topic,
                        IDS_PER_REQUEST_MAX)

    def individual(self, ranges: Iterable[tuple[int, int]]) -> list[MessageIdData]:
        """The ids of an individual ACK of the positions ``[start, end)`` of ``ranges``."""
        ids: list[MessageIdData] = []
        for ledger, entry, lo, hi, size in self._segments(ranges):
            if lo >= hi:
                continue
            if size is None:
                if lo == 0 and hi == 1:  # an unbatched message (or, forgotten, a batch's first: see above)
                    ids.append(_id(ledger, entry, self._partition))
                continue  # part of a batch whose size is forgotten: left unacknowledged (delivered again)
            mid = _id(ledger, entry, self._partition)
            if lo > 0 or hi < size:
                unacked = ((1 << size) - 1) & ~(((1 << (hi - lo)) - 1) << lo)
                mid.ack_set.extend(to_words(unacked, size))
                mid.batch_size = size
            ids.append(mid)
        return ids

    def redeliver(self, ranges: Iterable[tuple[int, int]]) -> list[MessageIdData]:
        """The ids of the entries the ranges touch (a batch comes again whole, as Pulsar redelivers)."""
        ids: list[MessageIdData] = []
        seen: set[tuple[int, int]] = set()
        for ledger, entry, _, _, _ in self._segments(ranges):
            if (ledger, entry) not in seen:
                seen.add((ledger, entry))
                ids.append(_id(ledger, entry, self._partition))
        return ids

    def cumulative(self, position: int) -> MessageIdData:
        """The id of a cumulative ACK of every message up to ``position``."""
        if self.dense:  # batch index 0: our broker reads (entry, 0) as the entry's first message, not all of it
            return _id(0, position, self._partition, 0)
        ledger, entry, index = self.positions.entry_of(position)  # type: ignore[attr-defined]
        size = self._sizes.get(position - index, 1 if index == 0 else None)
        if size is not None and index >= size - 1:
            return _id(ledger, entry, self._partition)
        return _id(ledger, entry - 1, self._partition)  # inside a batch: the entries before it

