"""Where an admin call places or moves a subscription: Pulsar's ``MessageId`` bodies (``earliest``,
``latest``, a message, ``isExcluded``) and the gRPC ``Position`` as one :class:`Position` over message offsets,
turned into offsets of a topic partition in one place.

A message id names a message by ``(ledgerId, entryId, batchIndex)``; this broker's ``entryId`` is the offset of
the entry's first message (:class:`~broker_core.types.MessageId`), so the message is at ``entryId + batchIndex``.
``(-1, -1)`` (any negative part) is ``earliest``, ``(2^63 - 1, 2^63 - 1)`` ``latest``, as Pulsar's clients send
them.

Worked example (a partition holding offsets 0..9)::

    Position.at(4).next_offset(topic)                  # 4: a cursor placed on 4 delivers 4 next
    Position.at(4, excluded=True).next_offset(topic)   # 5
    Position.at(4).first_kept(topic)                   # 5: expiring through 4 keeps 5 on
    Position.at(40).next_offset(topic)                 # 10: clamped to the confirmed end
    Position.latest().next_offset(topic)               # 10
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from broker_core.core.topic_protocol import Topic

EARLIEST, LATEST, AT = "earliest", "latest", "at"
LATEST_ID = (1 << 63) - 1
"""Pulsar's ``MessageId.latest``: ledger and entry ``Long.MAX_VALUE``."""


@dataclass(frozen=True)
class Position:
    """``earliest``, ``latest``, or the message at ``offset`` (the one after it when ``excluded``)."""

    kind: str
    offset: int = -1
    excluded: bool = False

    @classmethod
    def earliest(cls) -> "Position":
        return cls(EARLIEST)

    @classmethod
    def latest(cls) -> "Position":
        return cls(LATEST)

    @classmethod
    def at(cls, offset: int, excluded: bool = False) -> "Position":
        return cls(AT, offset, excluded)

    @classmethod
    def of_message_id(cls, ledger_id: int, entry_id: int, batch_index: int = -1, excluded: bool = False,
                      ) -> "Position":
        """The position a Pulsar ``MessageId`` names (see the module's docstring)."""
        if ledger_id < 0 or entry_id < 0:
            return cls.earliest()
        if ledger_id == LATEST_ID and entry_id == LATEST_ID:
            return cls.latest()
        return cls.at(entry_id + max(batch_index, 0), excluded)

    @property
    def is_message(self) -> bool:
        """True when it names a message (of one partition), not earliest or latest."""
        return self.kind == AT

    def next_offset(self, topic: "Topic") -> int:
        """The first message a cursor placed here delivers (clamped to the topic's confirmed end)."""
        if self.kind == EARLIEST:
            return topic.start_offset
        if self.kind == LATEST:
            return topic.confirmed_end_offset
        return min(self.offset + 1 if self.excluded else self.offset, topic.confirmed_end_offset)

    def first_kept(self, topic: "Topic") -> int:
        """The first message that expiring messages through here keeps: expiring goes up to and including the
        message (excluding it when ``excluded``), the opposite of a cursor placed on it."""
        if self.kind != AT:
            return self.next_offset(topic)
        return min(self.offset if self.excluded else self.offset + 1, topic.confirmed_end_offset)
