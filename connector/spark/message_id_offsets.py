"""Source offsets on a broker without dense offsets (Apache Pulsar, pulsar-lite): a partition's offset is a
message id ``(ledger, entry, batch index)``.

Such a broker numbers messages by the ledger and entry that store them (and the index within a batched entry),
with gaps between ledgers, so "the next offset" cannot be computed. An offset there names **the last message
before the boundary** instead: a range ``start -> end`` covers the messages with ``start < id <= end``
(exclusive start, inclusive end), so a batch's end is still the next batch's start, exactly as with dense
offsets. ``batch == -1`` means the whole entry (an unbatched message, or every message of a batched entry:
what the broker's last message id names); :data:`EARLIEST` (``-1:-1:-1``) is before every message.

In the checkpoint, next to dense offsets, a partition's value is then a JSON object with sorted keys::

    {"offsets": {"persistent://public/default/orders": {"0": {"batch": -1, "entry": 41, "ledger": 7}}},
     "subscription": "spark-pulsarlike-3f9c2a7d1b4e8a60"}

Users may also write an id in ``startingOffsets``/``endingOffsets`` as that object, or as pulsar-spark's form:
the bytes of ``MessageId.serialize()`` (pulsar-client's ``MessageIdData``) as a JSON array of (signed) byte
values; either is read as "start after this message" / "end with this message".
"""
from __future__ import annotations

from typing import Any, NamedTuple

from connector.client.message_id import MessageId

_WHOLE = 1 << 62
"""Sort key of batch index -1 (the whole entry): after every index of the entry."""


class IdOffset(NamedTuple):
    """A boundary after the message ``(ledger, entry, batch)`` (``batch`` -1: after the whole entry)."""

    ledger: int
    entry: int
    batch: int = -1

    @property
    def key(self) -> tuple[int, int, int]:
        """Order of boundaries and message ids alike (``batch`` -1 sorts after the entry's indexes)."""
        return self.ledger, self.entry, self.batch if self.batch >= 0 else _WHOLE

    def __str__(self) -> str:
        return f"{self.ledger}:{self.entry}:{self.batch}"

    def to_json(self) -> dict[str, int]:
        return {"batch": int(self.batch), "entry": int(self.entry), "ledger": int(self.ledger)}

    @property
    def is_earliest(self) -> bool:
        return self.ledger < 0 and self.entry < 0


EARLIEST = IdOffset(-1, -1, -1)
"""Before every message of a partition."""


def is_id_value(value: Any) -> bool:
    """Whether a JSON offset value is a message id (an object or a byte array), not a dense offset."""
    return isinstance(value, (dict, list))


def from_json(value: Any, where: str = "offset") -> IdOffset:
    """An id offset from its JSON object, or from pulsar-spark's byte array of a serialized ``MessageId``;
    ``ValueError`` naming ``where`` otherwise."""
    if isinstance(value, dict):
        try:
            fields = [value["ledger"], value["entry"], value.get("batch", -1)]
        except KeyError as exc:
            raise ValueError(f"{where}: message id {value!r} lacks {exc}; use "
                             '{"ledger": L, "entry": E, "batch": B} (batch -1: the whole entry)') from None
        if any(isinstance(f, bool) or not isinstance(f, int) for f in fields):
            raise ValueError(f"{where}: message id {value!r} must hold integers")
        return IdOffset(*fields)
    if isinstance(value, list):
        if any(isinstance(b, bool) or not isinstance(b, int) or not -128 <= b <= 255 for b in value):
            raise ValueError(f"{where}: {value!r} is not the byte array of a serialized MessageId")
        try:
            mid = MessageId.deserialize(bytes(b & 0xFF for b in value))
        except ValueError as exc:
            raise ValueError(f"{where}: the bytes are not a serialized MessageId ({exc})") from None
        return IdOffset(mid.ledger_id(), mid.entry_id(), mid.batch_index())
    raise ValueError(f"{where}: {value!r} is not a message id")


def of_message_id(message_id: Any) -> IdOffset:
    """The boundary just after the message ``message_id`` (a ``MessageId`` of pulsarlike's or pulsar-client's
    client). The last message of a batch names the whole entry, so it equals the broker's last message id."""
    batch = message_id.batch_index()
    size_of = getattr(message_id, "batch_size", None)
    size = size_of() if callable(size_of) else 0
    if batch >= 0 and size and batch == size - 1:
        batch = -1
    return IdOffset(message_id.ledger_id(), message_id.entry_id(), batch)


def is_after(message_id: Any, boundary: IdOffset) -> bool:
    """Whether the message ``message_id`` comes after ``boundary``."""
    batch = message_id.batch_index()
    return (message_id.ledger_id(), message_id.entry_id(), batch if batch >= 0 else _WHOLE) > boundary.key


def is_within(message_id: Any, boundary: IdOffset) -> bool:
    """Whether the message ``message_id`` is at or before ``boundary`` (inside a range ending there)."""
    return not is_after(message_id, boundary)


def holds_messages(start: IdOffset, end: IdOffset) -> bool:
    """Whether ``start -> end`` may hold messages (``end`` after ``start``)."""
    return end.key > start.key
