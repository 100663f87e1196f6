"""Reconnection without a broker: fake streams are lost and opened again by hand, the timer runs the
attempts. A consumer resubscribes as itself and drops what it buffered; acks made meanwhile are sent on the new
stream; a reader resumes after what it returned; a producer re-sends what the broker does not have; refusals
for good end the stream; the backoff doubles from 100 ms to 30 s."""
from __future__ import annotations

import pytest

from broker_core import errors
from connector import Result
from connector.client.enums import ConsumerType
from connector.client.reconnect import Backoff, retriable, retriable_on_reconnect
from tests.unit import producer_fakes as pfakes
from tests.unit.consumer_fakes import Harness, batch, single

LOST = errors.ConnectError("the stream to the broker was lost: Socket closed")


def reconnect(h: Harness) -> None:
    """The stream is lost and the timer runs the reconnection attempt."""
    lost = h.stream
    lost.on_end(LOST)
    assert not h.consumer.is_connected()
    h.timer.run("_run")
    assert h.stream is not lost


# --- consumers ----------------------------------------------------------------------------------------
def test_a_consumer_resubscribes_with_the_same_subscription_name_and_type():
    h = Harness(ConsumerType.Failover)
    first = h.stream.spec
    reconnect(h)
    again = h.stream.spec
    assert (again.subscription, again.sub_type, again.consumer_name) == (first.subscription, first.sub_type, "c")
    assert again.initial_permits == first.initial_permits and h.stream.reconnecting
    assert h.consumer.is_connected()


def test_what_was_buffered_from_the_lost_stream_is_dropped_and_comes_again():
    h = Harness(queue_size=10)
    h.deliver(batch(0, [b"a", b"b", b"c"]))
    assert h.consumer.receive(0).data() == b"a"
    reconnect(h)
    assert h.drain() == []  # b and c: stale, the broker redelivers them
    h.deliver(batch(0, [b"a", b"b", b"c"], redelivery_count=1), single(3, b"d"), single(4, b"e"))
    assert [m.data() for m in h.drain()] == [b"a", b"b", b"c", b"d", b"e"]
    assert h.flows() == [5]  # half the new window: the stale messages skipped gave no permits back


def test_acks_made_while_reconnecting_are_sent_on_the_new_stream():
    h = Harness()
    h.deliver(single(0, b"a"), single(1, b"b"))
    a, b = h.consumer.receive(0), h.consumer.receive(0)
    h.stream.on_end(LOST)
    h.consumer.acknowledge(a)
    h.consumer.acknowledge(b)
    h.sub.stream.flush_acks()
    h.timer.run("_run")
    assert h.acked() == [0, 1]


def test_a_reader_resumes_after_the_last_message_it_returned():
    h = Harness(ConsumerType.Exclusive, non_durable=True)
    h.deliver(single(10, b"a"), single(11, b"b"), single(12, b"c"))
    assert h.consumer.receive(0).data() == b"a"
    reconnect(h)
    spec = h.stream.spec
    assert spec.start.offset == 11 and spec.start_inclusive


def test_a_reader_that_returned_nothing_resumes_at_its_own_start():
    h = Harness(ConsumerType.Exclusive, non_durable=True)
    reconnect(h)
    assert h.stream.spec.start is None


def test_a_refusal_for_good_ends_the_consumer_with_that_error():
    h = Harness()
    h.stream.on_end(LOST)
    h.connection.refuse = errors.TopicNotFound("the topic was deleted")
    h.timer.run("_run")
    with pytest.raises(errors.TopicNotFound):
        h.consumer.receive(0)
    assert "_run" not in h.timer.names()  # no more attempts


def test_a_broker_not_ready_yet_is_tried_again_with_backoff():
    h = Harness()
    h.stream.on_end(LOST)
    h.connection.refuse = errors.ServiceNotReady("starting")
    h.timer.run("_run")
    assert [delay for delay, fn, _ in h.timer.calls if fn.__name__ == "_run"] == [0.2]
    h.connection.refuse = None
    h.timer.run("_run")
    assert h.consumer.is_connected()


def test_a_seek_in_progress_is_sent_again_after_the_reconnection():
    from connector import MessageId

    h = Harness()
    h.sub.start_seek(MessageId.earliest)
    reconnect(h)
    assert [s.seek_id for s in h.sent("seek")] == [1]


def test_closing_while_reconnecting_abandons_the_attempt():
    h = Harness()
    h.stream.on_end(LOST)
    h.consumer.close()
    h.timer.run("_run")
    assert len(h.connection.streams) == 1


# --- producers ----------------------------------------------------------------------------------------
def _lose(part) -> None:
    pfakes.stream(part).on_end(LOST)


def test_a_producer_re_registers_under_its_name_and_resends_what_the_broker_does_not_have():
    connection = pfakes.FakeConnection()
    part = pfakes.make_part(connection, batching_enabled=False)
    results = []
    for i in range(4):
        part.add(b"m%d" % i, lambda r, mid, i=i: results.append((i, r, mid.entry_id())), None, None, None,
                 None, 0, None, True)
    sent = pfakes.sent_entries(part)
    _lose(part)
    part.add(b"m4", lambda r, mid: results.append((4, r, mid.entry_id())), None, None, None, None, 0, None, True)
    connection.last_sequence_id = 1  # the broker stored m0 and m1 before the stream was lost
    pfakes.timer(part).fire_all()
    reopened = pfakes.stream(part)
    assert reopened.spec.producer_name == "prod"
    assert [e.sequence_id for e in pfakes.sent_entries(part)] == [2, 3, 4]  # in order, m0 and m1 not again
    assert [(i, r) for i, r, _ in results] == [(0, Result.Ok), (1, Result.Ok)]  # ids unknown: (-1, -1)
    assert [entry_id for _, _, entry_id in results] == [-1, -1]
    for n, entry in enumerate(pfakes.sent_entries(part)):
        pfakes.respond(part, pfakes.receipt(entry, entry_id=10 + n))
    assert [(i, r) for i, r, _ in results][2:] == [(2, Result.Ok), (3, Result.Ok), (4, Result.Ok)]
    assert part.last_sequence_id == 4 and len(sent) == 4


def test_sends_while_reconnecting_fail_only_when_the_send_timeout_passes(monkeypatch):
    clock = pfakes.use_clock(monkeypatch)
    part = pfakes.make_part(batching_enabled=False, send_timeout_ms=1000)
    results = []
    _lose(part)
    part.add(b"x", lambda r, mid: results.append(r), None, None, None, None, 0, None, True)
    clock.now += 0.999
    pfakes.timer(part).calls[:] = [c for c in pfakes.timer(part).calls if c[1].__name__ == "_check_send_timeouts"]
    pfakes.timer(part).fire_all()
    assert results == []
    clock.now += 0.002
    pfakes.timer(part).fire_all()
    assert results == [Result.Timeout]


def test_a_fenced_producer_fails_what_is_pending_and_stays_failed():
    connection = pfakes.FakeConnection()
    part = pfakes.make_part(connection, batching_enabled=False)
    results = []
    part.add(b"x", lambda r, mid: results.append(r), None, None, None, None, 0, None, True)
    stream = pfakes.stream(part)
    stream.on_end(errors.ProducerFenced("fenced"))
    assert results == [Result.ProducerFenced]
    with pytest.raises(errors.ProducerFenced):
        part.add(b"y", None, None, None, None, None, 0, None, True)
    assert pfakes.timer(part).calls == []  # no reconnection


def test_closing_a_producer_while_reconnecting_fails_its_pending_sends_at_once():
    part = pfakes.make_part(batching_enabled=False)
    results = []
    part.add(b"x", lambda r, mid: results.append(r), None, None, None, None, 0, None, True)
    _lose(part)
    part.close(timeout_s=30)
    assert results == [Result.AlreadyClosed]


# --- what is retried, and when ------------------------------------------------------------------------
def test_the_backoff_doubles_from_100_ms_to_30_s_and_starts_again_once_reset():
    backoff = Backoff()
    delays = [backoff.next() for _ in range(11)]
    assert delays[:4] == [0.1, 0.2, 0.4, 0.8] and delays[-3:] == [25.6, 30.0, 30.0]
    backoff.reset()
    assert backoff.next() == 0.1


@pytest.mark.parametrize("error,first,again", [
    (errors.ConnectError("gone"), True, True), (errors.ServiceNotReady("unloading"), True, True),
    (errors.ProducerBusy("name taken"), False, True), (errors.ConsumerBusy("exclusive"), False, True),
    (errors.TopicNotFound("deleted"), False, False), (errors.TopicTerminated("done"), False, False),
    (errors.ProducerFenced("fenced"), False, False), (errors.Timeout("slow"), False, False)])
def test_which_failures_are_retried(error, first, again):
    assert (retriable(error), retriable_on_reconnect(error)) == (first, again)



def test_a_reconnection_attempt_left_unanswered_is_abandoned_for_a_fresh_one():
    h = Harness()
    h.stream.on_end(LOST)
    h.connection.silent = True  # the channel holds the attempt: no answer, no end
    h.timer.run("_run")
    silent = h.stream
    h.connection.silent = False
    h.timer.run("_attempt_expired")  # connection_timeout_s later
    assert silent.closed
    h.timer.run("_run")
    assert h.stream is not silent and h.consumer.is_connected()
