import logging

from broker_core.clock import FakeClock
from broker_core.log_limits import LogLimiter


def lines(caplog):
    return [r.getMessage() for r in caplog.records]


def test_an_event_is_logged_once_per_interval_with_how_many_it_stands_for(caplog):
    clock = FakeClock()
    limiter = LogLimiter(logging.getLogger("t"), every_ms=10_000, clock=clock)
    with caplog.at_level(logging.WARNING, logger="t"):
        assert limiter.warning("bad_ack", "event=bad_ack id=%d", 1)
        for i in range(99_999):
            assert not limiter.warning("bad_ack", "event=bad_ack id=%d", i)
        clock.advance(12_000)
        assert limiter.warning("bad_ack", "event=bad_ack id=%d", 7)
    assert lines(caplog) == ["event=bad_ack id=1 occurrences=1", "event=bad_ack id=7 occurrences=100000"]


def test_events_are_limited_each_on_its_own(caplog):
    limiter = LogLimiter(logging.getLogger("t"), clock=FakeClock())
    with caplog.at_level(logging.WARNING, logger="t"):
        limiter.warning("a", "event=a")
        limiter.warning("b", "event=b")
        limiter.warning("a", "event=a")
    assert lines(caplog) == ["event=a occurrences=1", "event=b occurrences=1"]


def test_flush_logs_what_was_counted_but_not_written(caplog):
    limiter = LogLimiter(logging.getLogger("t"), clock=FakeClock())
    with caplog.at_level(logging.WARNING, logger="t"):
        limiter.warning("a", "event=a n=%d", 1)
        limiter.warning("a", "event=a n=%d", 2, count=10)
        limiter.flush()
        limiter.flush()  # nothing left: no second line
    assert lines(caplog) == ["event=a n=1 occurrences=1", "event=a n=2 occurrences=10"]


def test_a_written_line_can_carry_the_exception_being_handled(caplog):
    limiter = LogLimiter(logging.getLogger("t"), clock=FakeClock())
    with caplog.at_level(logging.ERROR, logger="t"):
        for _ in range(3):
            try:
                raise ValueError("cannot read publish time")
            except ValueError:
                limiter.error("expire", "event=topic_check_failed check=%s", "expire", exc_info=True)
    [record] = caplog.records
    assert record.exc_info[0] is ValueError and record.getMessage().endswith("occurrences=1")


def test_keys_past_the_bound_share_one_line(caplog):
    limiter = LogLimiter(logging.getLogger("t"), clock=FakeClock(), max_keys=2)
    with caplog.at_level(logging.WARNING, logger="t"):
        for key in ("a", "b", "c", "d", "e"):
            limiter.warning(key, "event=refused key=%s", key)
    assert lines(caplog) == ["event=refused key=a occurrences=1", "event=refused key=b occurrences=1",
                             "event=refused key=c occurrences=1"]
