"""A compacted reader's progress told to the broker (connector.client.consumer.read_progress): the last message returned
per partition acknowledged cumulatively, at most every 100 ms and whenever the reader waits; nothing after a
seek from before it; a failed acknowledgment never reaches the application."""
from __future__ import annotations

from broker_core import errors
from connector.client.consumer.read_progress import INTERVAL_S, ReadProgress


class Msg:
    def __init__(self, topic: str, offset: int) -> None:
        self.topic, self.offset = topic, offset

    def topic_name(self) -> str:
        return self.topic

    def __repr__(self) -> str:
        return f"{self.topic}:{self.offset}"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def progress_and_acks(fail: bool = False) -> tuple[ReadProgress, list[tuple[str, int]], Clock]:
    acks: list[tuple[str, int]] = []
    clock = Clock()

    def acknowledge(msg: Msg) -> None:
        if fail:
            raise errors.AlreadyClosed("the reader is closed")
        acks.append((msg.topic, msg.offset))

    return ReadProgress(acknowledge, clock), acks, clock


def test_the_first_message_is_acknowledged_at_once_then_at_most_every_interval():
    progress, acks, clock = progress_and_acks()
    for offset in range(10):
        progress.returned(Msg("t", offset))
    assert acks == [("t", 0)]
    clock.now += INTERVAL_S / 2
    progress.returned(Msg("t", 10))
    assert acks == [("t", 0)]
    clock.now += INTERVAL_S
    progress.returned(Msg("t", 11))
    assert acks == [("t", 0), ("t", 11)]


def test_a_reader_waiting_with_nothing_to_return_acknowledges_its_last_message_of_each_partition():
    progress, acks, clock = progress_and_acks()
    progress.returned(Msg("p0", 0))
    progress.returned(Msg("p0", 1))
    progress.returned(Msg("p1", 5))
    progress.flush()
    assert sorted(acks) == [("p0", 0), ("p0", 1), ("p1", 5)]
    progress.flush()  # nothing new: nothing sent
    assert len(acks) == 3


def test_nothing_returned_before_a_seek_is_acknowledged_after_it():
    progress, acks, clock = progress_and_acks()
    progress.returned(Msg("t", 0))
    progress.returned(Msg("t", 7))
    progress.forget()
    progress.flush()
    assert acks == [("t", 0)]


def test_a_failed_acknowledgment_is_not_the_applications_error():
    progress, acks, clock = progress_and_acks(fail=True)
    progress.returned(Msg("t", 0))
    progress.flush()
