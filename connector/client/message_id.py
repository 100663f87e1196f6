"""``MessageId``, as pulsar-client's: ``MessageId(partition=-1, ledger_id=-1, entry_id=-1, batch_index=-1)``.

In pulsarlike ``entry_id`` is the offset of the entry's first message in its topic partition and
``ledger_id`` the base offset of the segment holding it, so a message's offset is ``entry_id +
max(batch_index, 0)`` (:meth:`MessageId.offset`). The rest follows pulsar-client 3.x exactly:

- ``str(mid)`` is ``(ledger,entry,partition,batch)``; ``MessageId.earliest`` is ``(-1,-1,-1,-1)`` (also what
  ``MessageId()`` is), ``MessageId.latest`` ``(2**63-1,2**63-1,-1,-1)``.
- ``serialize()`` writes Pulsar's ``MessageIdData`` bytes (:func:`broker_core.protocol.entry.message_id_bytes`)
  and ``MessageId.deserialize(data, topic=None)`` reads them: ids saved by pulsar-client load here, and back.
- Ids order by ledger, entry, batch index (the partition is not compared), and are equal when all four are.
"""
from __future__ import annotations

from typing import ClassVar

from broker_core.protocol.entry import message_id_bytes, parse_message_id

_I64_MAX = (1 << 63) - 1


class MessageId:
    """Identifies one message of one topic partition (see the module docstring)."""

    __slots__ = ("_ledger_id", "_entry_id", "_partition", "_batch_index", "_batch_size", "_topic")

    earliest: ClassVar["MessageId"]
    latest: ClassVar["MessageId"]

    def __init__(self, partition: int = -1, ledger_id: int = -1, entry_id: int = -1,
                 batch_index: int = -1) -> None:
        for name, value in (("partition", partition), ("ledger_id", ledger_id), ("entry_id", entry_id),
                            ("batch_index", batch_index)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name}={value!r} is not valid; use an int")
        self._partition = partition
        self._ledger_id = ledger_id
        self._entry_id = entry_id
        self._batch_index = batch_index
        self._batch_size = 0
        self._topic: str | None = None

    @classmethod
    def of(cls, ledger_id: int, entry_id: int, partition: int, batch_index: int = -1, batch_size: int = 0,
           topic: str | None = None) -> "MessageId":
        """An id as the client makes them (with the batch size and the topic it came from), without the
        argument checks: producers and consumers make one per message."""
        mid = object.__new__(cls)
        mid._ledger_id = ledger_id
        mid._entry_id = entry_id
        mid._partition = partition
        mid._batch_index = batch_index
        mid._batch_size = batch_size
        mid._topic = topic
        return mid

    # --- pulsar-client's accessors --------------------------------------------------------------------
    def ledger_id(self) -> int:
        return self._ledger_id

    def entry_id(self) -> int:
        return self._entry_id

    def batch_index(self) -> int:
        return self._batch_index

    def partition(self) -> int:
        return self._partition

    def serialize(self) -> bytes:
        """Pulsar's ``MessageIdData`` bytes (store them, load them with :meth:`deserialize`)."""
        return message_id_bytes(self._ledger_id, self._entry_id, self._partition, self._batch_index,
                                self._batch_size)

    @staticmethod
    def deserialize(data: bytes, topic: str | None = None) -> "MessageId":
        """The id ``serialize()`` wrote (here or by pulsar-client); ``topic`` names the topic partition it
        belongs to, for a consumer of several topics. ``ValueError`` for bytes that are not a message id."""
        ledger_id, entry_id, partition, batch_index, batch_size = parse_message_id(data)
        return MessageId.of(ledger_id, entry_id, partition, batch_index, batch_size, topic)

    # --- pulsarlike's additions -----------------------------------------------------------------------
    def offset(self) -> int:
        """The message's offset in its topic partition."""
        return self._entry_id + (self._batch_index if self._batch_index > 0 else 0)

    def batch_size(self) -> int:
        """How many messages the batch holding this one has (0: not in a batch)."""
        return self._batch_size

    def topic_name(self) -> str | None:
        """The topic partition the id belongs to, when known (ids of received or sent messages)."""
        return self._topic

    def is_earliest(self) -> bool:
        return self._ledger_id == -1 and self._entry_id == -1

    def is_latest(self) -> bool:
        return self._ledger_id == _I64_MAX and self._entry_id == _I64_MAX

    # --- comparison, as pulsar-client's -----------------------------------------------------------------
    def _order(self) -> tuple[int, int, int]:
        return self._ledger_id, self._entry_id, self._batch_index

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MessageId):
            return NotImplemented
        return self._order() == other._order() and self._partition == other._partition

    def __hash__(self) -> int:
        return hash((self._ledger_id, self._entry_id, self._partition, self._batch_index))

    def __lt__(self, other: "MessageId") -> bool:
        return self._order() < other._order()

    def __le__(self, other: "MessageId") -> bool:
        return self < other or self == other

    def __gt__(self, other: "MessageId") -> bool:
        return not self <= other

    def __ge__(self, other: "MessageId") -> bool:
        return not self < other

    def __str__(self) -> str:
        return f"({self._ledger_id},{self._entry_id},{self._partition},{self._batch_index})"

    def __repr__(self) -> str:
        return f"MessageId{self}"


MessageId.earliest = MessageId()
MessageId.latest = MessageId(-1, _I64_MAX, _I64_MAX, -1)
