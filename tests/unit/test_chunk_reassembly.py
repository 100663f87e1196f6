"""The pure chunk reassembler of the entry codec (:class:`~broker_core.protocol.chunks.ChunkedMessageTracker`),
with a fake clock: state in, messages and settlements out."""
from __future__ import annotations

import pytest

from broker_core.protocol.chunks import Chunk, ChunkedMessageTracker

PUBLISHED = 1_000_000


class FakeClock:
    def __init__(self, now: int = PUBLISHED) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def _tracker(clock=None, **options):
    return ChunkedMessageTracker(now_ms=clock or FakeClock(), **options)


def _chunks(uuid, payload, offsets, size=3, publish_time=PUBLISHED):
    """The chunks of ``payload`` split every ``size`` bytes, stored at ``offsets``."""
    parts = [payload[i:i + size] for i in range(0, len(payload), size)]
    assert len(parts) == len(offsets)
    return [Chunk(uuid, i, len(parts), len(payload), offset, publish_time, part)
            for i, (offset, part) in enumerate(zip(offsets, parts))]


def test_consecutive_chunks_become_one_message_when_the_last_arrives():
    tracker = _tracker()
    c1, c2, c3 = _chunks("p-0", b"abcdefgh", [10, 11, 12])
    assert tracker.add(c1) == (None, [], [])
    assert tracker.add(c2) == (None, [], [])
    assert len(tracker) == 1 and tracker.pending_offsets() == [10, 11]
    done, ack, redeliver = tracker.add(c3)
    assert done.payload == b"abcdefgh" and done.offsets == (10, 11, 12) and done.error is None
    assert (ack, redeliver) == ([], [])
    assert len(tracker) == 0


def test_interwoven_chunks_of_two_producers_are_reassembled_per_message():
    # The seed's example: M1-C1, M2-C1, M1-C2, M2-C2, M1-C3, M2-C3 at offsets 0..5.
    tracker = _tracker()
    m1 = _chunks("producer-1-0", b"M1:one-two", [0, 2, 4], size=4)
    m2 = _chunks("producer-2-0", b"M2:three-four", [1, 3, 5], size=5)
    completed = [tracker.add(c).completed for c in (m1[0], m2[0], m1[1], m2[1], m1[2], m2[2])]
    assert completed[:4] == [None] * 4
    assert (completed[4].uuid, completed[4].payload, completed[4].offsets) == \
        ("producer-1-0", b"M1:one-two", (0, 2, 4))
    assert (completed[5].uuid, completed[5].payload, completed[5].offsets) == \
        ("producer-2-0", b"M2:three-four", (1, 3, 5))


def test_a_message_of_one_chunk_completes_at_once():
    (only,) = _chunks("p-7", b"abc", [4])
    assert _tracker().add(only).completed.payload == b"abc"


def test_queue_full_with_auto_ack_acknowledges_the_oldest_incomplete_message():
    tracker = _tracker(max_pending_chunked_message=2, auto_ack_oldest_chunked_message_on_queue_full=True)
    a, b, c = (_chunks(u, b"xxxxxx", offsets) for u, offsets in
               (("a", [0, 3]), ("b", [1, 4]), ("c", [2, 5])))
    tracker.add(a[0])
    tracker.add(b[0])
    assert tracker.add(c[0]) == (None, [0], [])
    assert len(tracker) == 2
    assert tracker.add(a[1]) == (None, [3], [])  # a's later chunk shares its fate
    assert tracker.add(b[1]).completed.offsets == (1, 4)


def test_queue_full_without_auto_ack_asks_for_the_oldest_message_to_be_redelivered():
    tracker = _tracker(max_pending_chunked_message=1)
    a = _chunks("a", b"xxxxxx", [0, 2])
    b = _chunks("b", b"yyyyyy", [1, 3])
    tracker.add(a[0])
    assert tracker.add(b[0]) == (None, [], [0])
    assert tracker.pending_offsets() == [1]
    assert tracker.add(a[1]) == (None, [], [2])  # a's later chunk: redelivered too
    # the redelivery brings a's chunks again; once b is done they fit
    assert tracker.add(b[1]).completed.payload == b"yyyyyy"
    tracker.add(a[0])
    assert tracker.add(a[1]).completed.payload == b"xxxxxx"


def test_incomplete_message_expires_and_its_chunks_are_acknowledged():
    clock = FakeClock()
    tracker = _tracker(clock, expire_time_of_incomplete_chunked_message_ms=200)
    a = _chunks("a", b"xxxxxxxxx", [0, 1, 2])
    tracker.add(a[0])
    tracker.add(a[1])
    assert tracker.next_expiry_ms() == PUBLISHED + 200
    clock.now += 199
    assert tracker.expire() == (None, [], [])
    clock.now += 1
    assert tracker.expire() == (None, [0, 1], [])
    assert len(tracker) == 0 and tracker.next_expiry_ms() is None
    assert tracker.add(a[2]) == (None, [2], [])  # the last chunk, late: acknowledged at once


def test_expiry_acknowledges_even_without_auto_ack_and_is_checked_on_each_chunk():
    clock = FakeClock()
    tracker = _tracker(clock, expire_time_of_incomplete_chunked_message_ms=200,
                       auto_ack_oldest_chunked_message_on_queue_full=False)
    old = _chunks("old", b"xxxxxx", [0, 5])
    young = _chunks("young", b"yyyyyy", [7, 8], publish_time=PUBLISHED + 300)
    tracker.add(old[0])
    clock.now += 300
    outcome = tracker.add(young[0])
    assert outcome == (None, [0], [])
    assert tracker.pending_offsets() == [7]


def test_only_the_latest_given_up_messages_are_remembered(monkeypatch):
    from broker_core.protocol import chunks

    monkeypatch.setattr(chunks, "GIVEN_UP_MEMORY", 2)
    tracker = _tracker(max_pending_chunked_message=1, auto_ack_oldest_chunked_message_on_queue_full=True)
    messages = [_chunks(u, b"xxxxxx", [i, 10 + i]) for i, u in enumerate("abcd")]
    for first, _ in messages:
        tracker.add(first)  # each drops the one before: a, b, c given up
    assert tracker.add(messages[0][1]) == (None, [], [10])  # a forgotten: an unexpected chunk
    assert tracker.add(messages[2][1]) == (None, [12], [])  # c remembered


def test_zero_expiry_never_expires():
    clock = FakeClock()
    tracker = _tracker(clock, expire_time_of_incomplete_chunked_message_ms=0)
    tracker.add(_chunks("a", b"xxxxxx", [0, 1])[0])
    clock.now += 10**9
    assert tracker.expire() == (None, [], []) and tracker.next_expiry_ms() is None
    assert len(tracker) == 1


def test_out_of_order_chunk_drops_the_buffer_and_redelivers_while_the_message_is_young():
    clock = FakeClock()
    tracker = _tracker(clock, expire_time_of_incomplete_chunked_message_ms=1000)
    c = _chunks("a", b"xxxxxxxxx", [0, 1, 2])
    tracker.add(c[0])
    assert tracker.add(c[2]) == (None, [], [0, 2])  # chunk 1 is missing
    assert len(tracker) == 0


def test_out_of_order_chunk_of_an_old_message_is_acknowledged():
    clock = FakeClock(PUBLISHED + 1000)
    tracker = _tracker(clock, expire_time_of_incomplete_chunked_message_ms=1000)
    c = _chunks("a", b"xxxxxxxxx", [0, 1, 2])
    tracker.add(c[0])
    assert tracker.add(c[2]) == (None, [0, 2], [])


def test_chunk_without_its_first_chunk_is_dropped():
    tracker = _tracker()
    c = _chunks("a", b"xxxxxx", [4, 5])
    assert tracker.add(c[1]) == (None, [], [5])
    assert len(tracker) == 0


def test_chunk_id_beyond_the_chunk_count_is_dropped():
    tracker = _tracker()
    bad = Chunk("a", 3, 2, 6, 9, PUBLISHED, b"xxx")
    assert tracker.add(bad) == (None, [], [9])


def test_redelivered_first_chunk_restarts_the_message_without_acks():
    tracker = _tracker()
    c = _chunks("a", b"abcdef", [0, 1])
    tracker.add(c[0])
    assert tracker.add(c[0]) == (None, [], [])  # the same entry again (a redelivery)
    assert tracker.add(c[1]).completed.payload == b"abcdef"


def test_duplicate_first_chunk_at_another_offset_acknowledges_the_abandoned_copy():
    tracker = _tracker()
    first_try = _chunks("a", b"abcdef", [0, 1])
    second_try = _chunks("a", b"abcdef", [2, 3])
    tracker.add(first_try[0])
    assert tracker.add(second_try[0]) == (None, [0], [])
    assert tracker.add(second_try[1]).completed.offsets == (2, 3)


def test_duplicate_first_chunk_after_completion_starts_a_buffer_that_expires():
    clock = FakeClock()
    tracker = _tracker(clock, expire_time_of_incomplete_chunked_message_ms=100)
    c = _chunks("a", b"abcdef", [0, 1])
    tracker.add(c[0])
    assert tracker.add(c[1]).completed is not None
    duplicate = c[0]._replace(offset=2)
    assert tracker.add(duplicate) == (None, [], [])
    clock.now += 100
    assert tracker.expire() == (None, [2], [])


def test_chunk_received_twice_in_a_row_is_ignored():
    tracker = _tracker()
    c = _chunks("a", b"abcdefghi", [0, 1, 2])
    tracker.add(c[0])
    tracker.add(c[1])
    assert tracker.add(c[1]) == (None, [], [])  # redelivered copy: nothing to ack
    assert tracker.add(c[1]._replace(offset=7)) == (None, [7], [])  # a stored duplicate
    assert tracker.add(c[2]).completed.payload == b"abcdefghi"


def test_size_disagreeing_with_total_chunk_msg_size_is_reported_on_completion():
    tracker = _tracker()
    c = [Chunk("a", i, 2, 10, i, PUBLISHED, b"abc") for i in range(2)]
    tracker.add(c[0])
    done = tracker.add(c[1]).completed
    assert done.offsets == (0, 1)
    assert "6 bytes" in done.error and "10" in done.error


def test_restarted_message_becomes_the_youngest_for_the_queue_limit():
    tracker = _tracker(max_pending_chunked_message=2, auto_ack_oldest_chunked_message_on_queue_full=True)
    a = _chunks("a", b"xxxxxx", [0, 3])
    b = _chunks("b", b"yyyyyy", [1, 4])
    tracker.add(a[0])
    tracker.add(b[0])
    tracker.add(a[0])  # a redelivered: now younger than b
    assert tracker.add(Chunk("c", 0, 2, 6, 5, PUBLISHED, b"zzz")).ack == [1]
    assert tracker.pending_offsets() == [0, 5]


def test_clear_forgets_every_buffer():
    tracker = _tracker()
    tracker.add(_chunks("a", b"xxxxxx", [0, 1])[0])
    assert tracker.clear() == [0]
    assert len(tracker) == 0


@pytest.mark.parametrize("option, value", [("max_pending_chunked_message", 0),
                                           ("expire_time_of_incomplete_chunked_message_ms", -1)])
def test_bad_options_are_rejected_by_name(option, value):
    with pytest.raises(ValueError, match=option):
        _tracker(**{option: value})


def test_first_pending_offset_is_where_reading_must_start_again():
    tracker = _tracker()
    assert tracker.first_pending_offset() is None
    a, b = _chunks("a", b"xxxxxx", [4, 6]), _chunks("b", b"yyyyyy", [5, 7])
    tracker.add(a[0])
    tracker.add(b[0])
    assert tracker.first_pending_offset() == 4 and tracker.is_pending("b") and not tracker.is_pending("c")
    tracker.add(a[1])
    assert tracker.first_pending_offset() == 5
