"""skip / peek positions over a cursor with individually acknowledged messages (cursor_admin's worked
example), without a broker."""
from broker_core.core.persistent.cursor_admin import _last_of_next
from broker_core.storage.cursor import ManagedCursor


class _Sub:
    """The two things skip reads from a subscription."""

    def __init__(self, cursor: ManagedCursor, start_offset: int = 0) -> None:
        self.cursor = cursor
        self._start = start_offset

    def first_unacked_offset(self) -> int:
        return max(self.cursor.next_unacked(self.cursor.mark_delete_offset + 1), self._start)


def _example() -> _Sub:
    cursor = ManagedCursor("sub", mark_delete_offset=4)
    cursor.ack(6, 8)
    return _Sub(cursor)


def test_skip_counts_only_unacknowledged_messages():
    sub = _example()  # backlog: 5, 8, 9, 10, 11 (end 12)
    assert _last_of_next(sub, 1, 12) == 5
    assert _last_of_next(sub, 2, 12) == 8
    assert _last_of_next(sub, 5, 12) == 11


def test_skip_stops_at_the_end_of_the_log():
    assert _last_of_next(_example(), 50, 12) == 11
    assert _last_of_next(_example(), 0, 12) == -1


def test_nothing_to_skip_on_an_empty_backlog():
    cursor = ManagedCursor("sub", mark_delete_offset=11)
    assert _last_of_next(_Sub(cursor), 3, 12) == -1


def test_skip_from_a_cursor_behind_the_first_stored_message():
    cursor = ManagedCursor("sub", mark_delete_offset=-1)
    assert _last_of_next(_Sub(cursor, start_offset=10), 2, 20) == 11
