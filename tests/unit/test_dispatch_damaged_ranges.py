"""What dispatch does when its next entry is in a damaged stored range (the storage raises ``DataLost``):
every consumer of the subscription is told once and dispatch waits there, or -- autoSkipNonRecoverableData --
the range is passed over, acknowledged and counted; entries before and after it are delivered either way."""
from __future__ import annotations

import pytest

from broker_core.errors import DataLost
from dispatch import SubType, Subscription
from dispatch.testing import MemoryEntrySource, RecordingConsumer, entry_bytes, make_cursor

LOST = (4, 7)  # messages 4..6 are in the damaged range


class DamagedSource(MemoryEntrySource):
    """A source whose reads of ``LOST`` raise DataLost, returning the entries before it first (as the log
    does: the entries before a damaged range are returned, the next read fails)."""

    def read(self, start_offset, max_entries, max_bytes, end_offset=None):
        start, end = LOST
        if start <= start_offset < end:
            raise DataLost(topic="t", start_offset=start, end_offset=end, path="seg", position=0, reason="CRC")
        got = super().read(start_offset, max_entries, max_bytes, end_offset)
        return [e for e in got if e.offset < start] if start_offset < start else got


class TellingConsumer(RecordingConsumer):
    """A recording consumer that keeps the errors dispatch ends it with (``failures``)."""

    __slots__ = ("failures",)

    def __init__(self, consumer_id: int) -> None:
        super().__init__(consumer_id, permits=100)
        self.failures: list[Exception] = []
        self.on_error = self.failures.append


def subscription(sub_type: SubType = SubType.EXCLUSIVE, *, skip: bool = False, consumers: int = 1):
    source = DamagedSource()
    for i in range(10):
        source.append(1, entry_bytes(f"key-{i}"))
    cursor = make_cursor()
    saved: list[int] = []
    sub = Subscription("sub", "t", -1, source, cursor, skip_damaged=skip,
                       on_cursor_changed=lambda: saved.append(cursor.mark_delete_offset))
    made = []
    for i in range(consumers):
        consumer = TellingConsumer(i + 1)
        sub.add_consumer(consumer, sub_type)
        made.append(consumer)
    return sub, cursor, made, saved


@pytest.mark.parametrize("sub_type", [SubType.EXCLUSIVE, SubType.SHARED, SubType.KEY_SHARED])
def test_consumers_get_what_comes_before_the_range_then_one_data_lost_each(sub_type):
    sub, cursor, consumers, _ = subscription(sub_type, consumers=1 if sub_type is SubType.EXCLUSIVE else 2)
    assert sorted(o for c in consumers for o in c.received()) == [0, 1, 2, 3]
    for c in consumers:
        [error] = c.failures
        assert isinstance(error, DataLost) and (error.start_offset, error.end_offset) == LOST
    sub.flow(consumers[0], 10)  # dispatch again: the range is met again, nobody is told twice
    sub.on_new_entries()
    assert all(len(c.failures) == 1 for c in consumers)
    assert cursor.mark_delete_offset == -1 and sub.stats()["nonRecoverableMessagesSkipped"] == 0


def test_a_seek_past_the_range_resumes_dispatch_and_a_seek_back_reports_it_again():
    sub, _, [consumer], _ = subscription()
    consumer.take()
    sub.seek(LOST[1])
    assert consumer.take() == [7, 8, 9]
    sub.seek(0)
    assert consumer.take() == [0, 1, 2, 3] and len(consumer.failures) == 2


@pytest.mark.parametrize("sub_type", [SubType.EXCLUSIVE, SubType.FAILOVER, SubType.SHARED, SubType.KEY_SHARED])
def test_auto_skip_passes_over_the_range_acknowledges_and_counts_it(sub_type, caplog):
    sub, cursor, [consumer], saved = subscription(sub_type, skip=True)
    assert consumer.received() == [0, 1, 2, 3, 7, 8, 9] and consumer.failures == []
    assert cursor.is_acked(4) and cursor.is_acked(6) and not cursor.is_acked(3) and not cursor.is_acked(7)
    assert saved, "the cursor change is saved"
    assert sub.stats()["nonRecoverableMessagesSkipped"] == 3
    assert sub.backlog == 7  # the lost messages are not a backlog anyone can drain
    lines = [r.getMessage() for r in caplog.records if "event=damaged_range_skipped" in r.getMessage()]
    assert len(lines) == 1 and "first_offset=4 last_offset=6 messages=3" in lines[0]


def test_auto_skip_logs_and_counts_a_range_once_however_often_it_is_passed(caplog):
    sub, _, [consumer], _ = subscription(skip=True)
    sub.seek(0)
    sub.seek(0)
    assert consumer.received() == [0, 1, 2, 3, 7, 8, 9] * 3
    assert sub.stats()["nonRecoverableMessagesSkipped"] == 3
    assert len([r for r in caplog.records if "event=damaged_range_skipped" in r.getMessage()]) == 1


def test_auto_skip_on_a_reader_moves_on_without_a_durable_cursor_change():
    source = DamagedSource()
    source.append_many(10)
    changed: list[int] = []
    sub = Subscription("reader", "t", -1, source, make_cursor(), durable=False, skip_damaged=True,
                       on_cursor_changed=lambda: changed.append(1))
    consumer = TellingConsumer(1)
    sub.add_consumer(consumer, SubType.EXCLUSIVE)
    assert consumer.received() == [0, 1, 2, 3, 7, 8, 9] and changed == [] and consumer.failures == []
