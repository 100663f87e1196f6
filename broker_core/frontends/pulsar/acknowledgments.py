"""ACK on the Pulsar binary front end: message ids -> offset ranges acknowledged on the subscription, at a
cost linear in the frame and bounded per ACK.

Acknowledgments name entries (:mod:`.message_ids`): an individual ack without an ack set acknowledges the
whole entry, one with an ack set the messages whose bits are clear (only the entry's own words are read);
a cumulative ack everything up to the message it names, and carries exactly one id (as Pulsar, which
ignores a cumulative ACK with several). As Pulsar's consumer, every id of the topic is applied, whether
this consumer holds its entry or not: a client re-sends the acks still pending when it reconnects, before
the broker sent it those messages again (refusing them had them delivered again and again). An id past the
topic's durable end changes nothing (Pulsar's cursor: an invalid position, past the last confirmed entry).

An id whose entry id points inside an entry names the message at that offset (+ its batch index): Pulsar's
entry ids are consecutive and clients do arithmetic on them -- a cumulative ack inside a batch is sent as
``(ledger, entryId - 1, -1)``, "everything before this batch", which here is the last message of the entry
before (PULSAR_BINARY.md pitfall 8). A cumulative ack then acknowledges up to that offset, an individual
one that message alone.

One ACK may name 100,000 ids; what each costs is kept small, and what can grow with the entry is budgeted:

- an id past the topic's end is counted, without a lookup or an error object of its own (a typed error
  costs ~11 us: 100,000 of them were a 1.1 s stall); the first refused id describes them all;
- an id the consumer does not hold (redelivered elsewhere, or from before a reconnection) is a read of the
  storage: at most :data:`MAX_ACK_LOOKUPS` per ACK; one acknowledged already is skipped without one;
- at most :data:`MAX_ACK_RANGES` separate ranges per ACK (an ack set can name one per two bits);
- an entry named again in the same ACK is resolved once, and the same entry with the same ack set bits
  (after the cut to the entry's size) is applied once.

An id past a budget is refused as one past the end is: its messages stay unacknowledged and are delivered
again, as if the ack had been lost on the way -- never lost, at worst delivered twice.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from broker_core.errors import InvalidMessage, PulsarLikeError
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.ack_set import clear_runs, from_words
from broker_core.frontends.pulsar.message_ids import cumulative_offset, signed

if TYPE_CHECKING:
    from broker_core.core.consumer_session import ConsumerSession

MAX_ACK_RANGES = 65_536
"""Most separate offset ranges one ACK may acknowledge (clients group at most 1,000 ids per ACK, each with a
batch's ack set); each costs a few microseconds of the event loop."""
MAX_ACK_LOOKUPS = 64
"""Most ids one ACK may name of entries this consumer does not hold (each is a read of the storage)."""
_U63 = 1 << 63


class Refusals:
    """The ids of one ACK that changed nothing: how many, and why the first did."""

    __slots__ = ("count", "entry_id", "reason", "error")

    def __init__(self) -> None:
        self.count = 0
        self.entry_id: int | None = None
        self.reason = ""
        self.error: PulsarLikeError | None = None

    def add(self, entry_id: int, reason: str) -> None:
        self.count += 1
        if self.entry_id is None:
            self.entry_id, self.reason = entry_id, reason

    def raised(self, entry_id: int, exc: PulsarLikeError) -> None:
        """A typed error from the subscription (e.g. a cumulative ack on a Shared one): the answer's code."""
        if self.entry_id is None:
            self.error = exc
        self.add(entry_id, exc.message)

    def as_error(self, topic: str) -> PulsarLikeError | None:
        """The error answering the ACK (None when every id was taken)."""
        if not self.count:
            return None
        if self.error is not None:
            return self.error
        more = f" ({self.count} ids of this ACK refused)" if self.count > 1 else ""
        return InvalidMessage(f"cannot acknowledge entry {self.entry_id} on {topic}: {self.reason}{more}",
                              entry_id=self.entry_id, refused=self.count)


def acknowledge(session: "ConsumerSession", ack_type: int, message_ids: Sequence) -> Refusals:
    """Apply one ACK's ``message_ids`` on the core ``session``; returns the ids refused."""
    refusals = Refusals()
    if not session.topic.persistent:  # a non-persistent subscription keeps no acknowledgments
        return refusals
    cursor = session.sub.cursor
    if ack_type == cmd.CommandAck.Cumulative and len(message_ids) > 1:
        refusals.add(signed(message_ids[0].entryId), "a cumulative ACK names exactly one message id")
        refusals.count = len(message_ids)
        return refusals
    topic_end = session.sub.source.durable_end_offset
    past_end = f"the topic ends before it (at offset {topic_end}): no consumer was sent it"
    ranges_left = MAX_ACK_RANGES
    ends = _EntryEnds(session)
    done: set[tuple[int, int | None]] = set()  # (entry, its ack set's bits): the same again changes nothing
    for mid in message_ids:
        entry_id = mid.entryId
        if entry_id >= _U63:  # negative: "before the first message", nothing to acknowledge (readers send it)
            continue
        if entry_id >= topic_end:
            refusals.add(entry_id, past_end)
            continue
        cumulative = ack_type == cmd.CommandAck.Cumulative
        if cumulative and entry_id <= cursor.mark_delete_offset:  # acknowledged already: nothing changes
            continue
        entry = ends.of(entry_id, cumulative)
        if entry is None:  # acknowledged already: nothing changes
            continue
        if isinstance(entry, str):
            refusals.add(entry_id, entry)
            continue
        entry_start, entry_end = entry
        if entry_start != entry_id:  # inside an entry: the message at that offset (see the module's doc)
            offset = min(entry_id + max(mid.batch_index, 0), entry_end - 1)
            entry_id, entry_end, bits = offset, offset + 1, None
            if cumulative:
                _ack_cumulative(session, offset, refusals)
                continue
        else:
            if cumulative:
                offset = cumulative_offset(entry_id, mid.batch_index, mid.ack_set, entry_end)
                _ack_cumulative(session, offset, refusals)
                continue
            bits = from_words(mid.ack_set, entry_end - entry_id) if mid.ack_set else None
        size = entry_end - entry_id
        if (entry_id, bits) in done:
            continue
        done.add((entry_id, bits))
        try:
            runs = clear_runs(bits, size, ranges_left) if bits is not None else [(0, size)]
            if len(runs) > ranges_left:
                ranges_left = 0  # the ids after this one are refused without looking at their ack sets
                refusals.add(entry_id, f"one ACK acknowledges at most {MAX_ACK_RANGES} separate ranges")
                continue
            ranges_left -= len(runs)
            if runs:
                session.acknowledge([(entry_id + start, entry_id + end) for start, end in runs])
        except PulsarLikeError as exc:
            refusals.raised(entry_id, exc)
    return refusals


def _ack_cumulative(session: "ConsumerSession", offset: int, refusals: Refusals) -> None:
    try:
        session.acknowledge_cumulative(offset)  # at or below the mark-delete point: nothing changes
    except PulsarLikeError as exc:
        refusals.raised(offset, exc)


class _EntryEnds:
    """``(first offset, one past the last)`` of the entry holding each id, for one ACK: from what the
    consumer holds, else from the topic (a storage read: at most :data:`MAX_ACK_LOOKUPS`); None when the id
    is acknowledged already, or why it is refused. Each entry is resolved once per ACK, however often it is
    named."""

    __slots__ = ("_session", "_known", "_lookups_left")

    def __init__(self, session: "ConsumerSession") -> None:
        self._session = session
        self._known: dict[int, tuple[int, int] | str | None] = {}
        self._lookups_left = MAX_ACK_LOOKUPS

    def of(self, entry_id: int, cumulative: bool = False) -> tuple[int, int] | str | None:
        known = self._known
        if entry_id not in known:
            known[entry_id] = self._resolve(entry_id, cumulative)
        return known[entry_id]

    def _resolve(self, entry_id: int, cumulative: bool) -> tuple[int, int] | str | None:
        session = self._session
        for start, end in session.consumer.pending.overlapping(entry_id, entry_id + 1):
            return start, end
        # a message acknowledged individually may still be below a cumulative ack's reach: look it up
        if not cumulative and session.sub.cursor.is_acked(entry_id):
            return None
        if self._lookups_left <= 0:
            return f"one ACK may name at most {MAX_ACK_LOOKUPS} entries this consumer does not hold"
        self._lookups_left -= 1
        entry = session.topic.entry_containing(entry_id)
        if entry is None:
            return "no entry holds it: the id was not sent by this broker"
        return entry.offset, entry.offset + entry.num_messages
