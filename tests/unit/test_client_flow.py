"""Flow permits, ack grouping and deliveries of one partition stream, without a broker (fakes record the
requests)."""
from __future__ import annotations

import threading

import pytest

from broker_core.errors import InvalidMessage
from broker_core.protocol import codec
from connector.client.transport.events import Ack, SeekDone
from connector import MessageId
from connector.client.consumer.permits import Discarded, PermitWindow, Skipped, Undecodable
from tests.unit.consumer_fakes import Harness, batch


class Flows:
    def __init__(self) -> None:
        self.sent: list[int] = []

    def __call__(self, permits: int) -> None:
        self.sent.append(permits)


def take(window, times: int = 1) -> None:
    for _ in range(times):
        if next(window.counter) >= window.threshold:
            window.refill()


# --- the permit window --------------------------------------------------------------------------------
def test_permits_are_returned_when_half_the_queue_is_taken():
    flows = Flows()
    window = PermitWindow(10, flows)
    take(window, 4)
    assert flows.sent == []
    take(window)
    assert flows.sent == [5]
    take(window, 9)
    assert flows.sent == [5, 5]


def test_permits_are_not_lost_when_many_threads_take_messages():
    flows = Flows()
    window = PermitWindow(100, flows)
    threads = [threading.Thread(target=take, args=(window, 10_000)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(flows.sent) == 40_000


def test_messages_settled_without_the_application_count_as_taken():
    flows = Flows()
    window = PermitWindow(10, flows)
    take(window, 2)
    window.took(3)
    assert flows.sent == [5]
    window.took(4)
    take(window)
    assert flows.sent == [5, 5]


def test_a_grown_window_sends_the_difference_at_once_and_refills_by_half_of_its_new_size():
    flows = Flows()
    window = PermitWindow(10, flows)
    take(window, 3)
    window.grow(40)
    assert flows.sent == [30]  # 40 out: 10 granted first, 30 now
    take(window, 16)
    assert flows.sent == [30]
    take(window)  # 20 taken since the last permits went back: half of 40
    assert flows.sent == [30, 20]
    window.took(20)
    assert flows.sent == [30, 20, 20]
    window.grow(30)  # smaller: nothing changes
    assert flows.sent == [30, 20, 20] and window.size == 40


def test_a_retired_window_does_not_grow():
    flows = Flows()
    window = PermitWindow(10, flows)
    window.retire()
    window.grow(100)
    assert flows.sent == []


def test_a_retired_window_skips_its_messages_and_sends_no_permits():
    flows = Flows()
    window = PermitWindow(10, flows)
    take(window, 2)
    window.retire()
    with pytest.raises(Skipped):
        take(window)
    window.took(9)
    assert flows.sent == []


def test_a_discarded_message_returns_its_permit_and_is_skipped():
    flows = Flows()
    window = PermitWindow(2, flows)
    with pytest.raises(Skipped):
        take(Discarded(window))
    assert flows.sent == [1]
    with pytest.raises(Skipped):
        take(Discarded(window, returns_permit=False))
    assert flows.sent == [1]


def test_an_undecodable_entry_returns_its_permit_settles_it_and_raises_its_error():
    from broker_core.errors import MessageDecodeError

    flows, settled = Flows(), []
    error = MessageDecodeError("bad entry")
    with pytest.raises(MessageDecodeError):
        take(Undecodable(PermitWindow(2, flows), error, lambda: settled.append(True)))
    assert flows.sent == [1] and settled == [True]


# --- acks ---------------------------------------------------------------------------------------------
def test_individual_acks_are_coalesced_into_ranges():
    h = Harness()
    for offset in [7, 3, 4, 5, 10, 8, 4]:
        h.sub.stream.ack(offset)
    h.sub.stream.flush_acks()
    (ack,) = h.sent("ack")
    assert isinstance(ack, Ack)
    assert list(ack.ranges) == [(3, 6), (7, 9), (10, 11)]
    h.sub.stream.flush_acks()
    assert len(h.sent("ack")) == 1  # nothing more to send


def test_cumulative_ack_beyond_what_was_received_is_invalid_and_sends_nothing():
    h = Harness()
    h.deliver(batch(0, [b"a"] * 6))
    with pytest.raises(InvalidMessage, match="never received"):
        h.sub.acknowledge_cumulative(6)
    assert h.sent("ack") == []
    h.sub.acknowledge_cumulative(5)
    assert h.sent("ack")[-1].offset == 5


# --- deliveries ---------------------------------------------------------------------------------------
def test_deliveries_skip_acked_batch_messages_and_return_their_permits():
    h = Harness(queue_size=4)
    h.deliver(batch(10, [b"a", b"b", b"c", b"d"], ack_set=[0b0101]))
    msgs = h.drain()
    assert [m.data() for m in msgs] == [b"a", b"c"]
    assert [m.message_id().batch_index() for m in msgs] == [0, 2]
    assert [m.offset() for m in msgs] == [10, 12]
    assert h.flows() == [2, 2]  # the two left out at once, then the two taken
    assert h.sub.max_received_offset == 13


def test_deliveries_during_a_seek_are_dropped():
    h = Harness()
    h.sub.start_seek(MessageId.earliest)
    h.deliver(batch(0, [b"a", b"b"]))
    assert h.consumer.buffered() == 0


def test_messages_buffered_before_a_seek_are_skipped_and_the_window_starts_afresh():
    h = Harness(queue_size=4)
    h.deliver(batch(0, [b"a", b"b", b"c"]))
    h.sub.start_seek(MessageId.earliest)
    h.respond(SeekDone(1))
    h.sub.finish_seek(0)
    assert h.flows() == [4]  # the whole window, as the broker has none left after a seek
    h.deliver(batch(0, [b"a", b"b", b"c"]))
    assert [m.data() for m in h.drain()] == [b"a", b"b", b"c"]  # the stale copies were skipped


def test_deliveries_of_mixed_batches_keep_each_message_s_key_and_offset():
    h = Harness()
    h.deliver(batch(20, [b"aa", codec.BatchMessage(b"bb", partition_key="k"), b"c"]), batch(23, [b"x" * 200] * 3))
    msgs = h.drain()
    assert [m.data() for m in msgs] == [b"aa", b"bb", b"c"] + [b"x" * 200] * 3
    assert [m.partition_key() for m in msgs] == ["", "k", "", "", "", ""]
    assert [m.offset() for m in msgs] == list(range(20, 26))
    assert msgs[4].message_id() is msgs[4].message_id()
    assert h.sub.max_received_offset == 25


def test_a_tombstone_has_a_null_value():
    from tests.unit.consumer_fakes import single

    h = Harness()
    h.deliver(single(0, b"", null_value=True), single(1, b"v"))
    assert [m.has_null_value() for m in h.drain()] == [True, False]
