"""``GET_LAST_MESSAGE_ID``'s ``consumer_mark_delete_position`` (:func:`broker_core.core.admin.last_message.
mark_delete_message`): the acknowledged message's id, or -- for a subscription behind the first stored message
(a reader at the earliest after retention deleted messages) -- the position just before that message, as
Pulsar's cursor answers it (issue 32: the Spark source learns a partition's first stored offset from it over the
binary protocol)."""
from __future__ import annotations

from dataclasses import dataclass

from broker_core.core.admin.last_message import LastMessage, mark_delete_message


@dataclass
class _Stored:
    ledger_id: int
    offset: int
    num_messages: int


class _Positions:
    """Entries of 5 messages from ``start_offset`` on, in segments of 10 entries (ledger = segment's base)."""

    def __init__(self, start_offset: int, end_offset: int) -> None:
        self.start_offset = start_offset
        self.end_offset = end_offset

    def entry_containing(self, offset: int) -> _Stored | None:
        if not self.start_offset <= offset < self.end_offset:
            return None
        first = offset - offset % 5
        return _Stored(first - first % 50, first, 5)


def test_nothing_acknowledged_on_a_partition_that_lost_nothing_answers_no_position():
    assert mark_delete_message(_Positions(0, 100), -1, 0) is None


def test_an_acknowledged_message_answers_its_id_in_its_batch():
    assert mark_delete_message(_Positions(0, 100), 57, 2) == LastMessage(50, 55, 2, 2, 0)


def test_a_reader_behind_the_first_stored_message_answers_the_position_just_before_it():
    positions = _Positions(50, 100)
    for mark_delete in (-1, 10, 49):
        assert mark_delete_message(positions, mark_delete, 0) == LastMessage(50, 49, 0, -1, 50)


def test_a_partition_whose_every_message_was_deleted_answers_the_position_before_its_end():
    assert mark_delete_message(_Positions(100, 100), -1, -1) == LastMessage(100, 99, -1, -1, 100)
