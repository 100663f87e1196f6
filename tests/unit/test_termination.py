"""Topic termination's bookkeeping: the marker survives a reload, a damaged one is reported without a
path, and each consumer hears of the end of the topic once -- again after a seek back."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from broker_core.errors import CorruptLog, TopicTerminated
from broker_core.core.termination import MARKER, Termination, nothing_left_to_deliver


def consumer(consumer_id: int, unacked: int = 0) -> SimpleNamespace:
    return SimpleNamespace(consumer_id=consumer_id, unacked_messages=unacked)


def subscription(backlog: int, *consumers: SimpleNamespace) -> SimpleNamespace:
    return SimpleNamespace(backlog=backlog, consumers=list(consumers))


def test_a_terminated_topic_is_still_terminated_when_loaded_again(tmp_path) -> None:
    assert Termination(tmp_path, "t").terminate(5)
    again = Termination(tmp_path, "t")
    assert again.end_offset == 5 and not again.terminate(9)
    with pytest.raises(TopicTerminated):
        again.refuse()


def test_a_damaged_marker_is_corrupt_log_without_the_servers_path(tmp_path) -> None:
    (tmp_path / MARKER).write_bytes(b"{not json")
    with pytest.raises(CorruptLog) as damaged:
        Termination(tmp_path, "persistent://public/default/t")
    assert str(tmp_path) not in damaged.value.message


def test_nothing_is_left_to_deliver_when_the_consumers_hold_every_unacknowledged_message() -> None:
    assert nothing_left_to_deliver(subscription(3, consumer(1, 2), consumer(2, 1)))
    assert not nothing_left_to_deliver(subscription(3, consumer(1, 2)))


def test_each_consumer_hears_of_the_end_once_and_again_after_a_seek_back(tmp_path) -> None:
    termination = Termination(tmp_path, "t")
    heard: list[int] = []
    c1, c2 = consumer(1), consumer(2)
    for c in (c1, c2):
        termination.watch(c, lambda c=c: heard.append(c.consumer_id))
    sub = subscription(0, c1, c2)
    termination.check([sub], 10)  # not terminated: nothing
    termination.terminate(10)
    termination.check([sub], 9)  # the last messages are not synced yet
    assert heard == []
    termination.check([sub], 10)
    termination.check([sub], 10)
    assert sorted(heard) == [1, 2]
    termination.rewound(sub)
    termination.check([subscription(4, c1, c2)], 10)  # moved back: there is something to deliver again
    termination.check([sub], 10)
    assert sorted(heard) == [1, 1, 2, 2]
