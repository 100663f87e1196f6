"""Partitions added to a topic reach a running producer (over fake streams) and the client's updater thread
goes on past a failing child."""
from __future__ import annotations

import logging

from connector import PartitionsRoutingMode
from connector.client.partition_updates import PartitionsUpdater
from connector.client.producer import Producer
from connector.client.producer.routing import Router
from tests.unit import producer_fakes as fakes


def _growing_producer(monkeypatch, partitions: int, counts: list[int]) -> tuple[Producer, list]:
    """A producer of a ``partitions``-partition topic whose look-ups answer ``counts`` in turn."""
    _, parts = fakes.make_producer(monkeypatch, partitions=partitions, batching_enabled=False)
    opened: list = []

    def open_partition(index: int):
        part = fakes.make_part(topic=f"{fakes.TOPIC}-partition-{index}", partition=index, batching_enabled=False)
        opened.append(part)
        return part
    router = Router(partitions, PartitionsRoutingMode.RoundRobinDistribution)
    producer = Producer(fakes.TOPIC, parts, router, 0, count_partitions=lambda: counts.pop(0),
                        open_partition=open_partition)
    return producer, opened


def test_a_producer_opens_the_added_partitions_and_routes_over_all_of_them(monkeypatch):
    producer, opened = _growing_producer(monkeypatch, 1, [1, 3])
    producer.update_partitions()  # still 1: nothing opened
    assert opened == []
    producer.update_partitions()
    assert [p.partition for p in opened] == [1, 2]
    used = set()
    for _ in range(6):
        producer.send_async(b"m", None)
    for part in producer._partitions:
        if fakes.connection(part).streams[0].sent:
            used.add(part.partition)
    assert used == {0, 1, 2}


def test_a_count_at_or_below_what_the_producer_has_changes_nothing(monkeypatch):
    producer, opened = _growing_producer(monkeypatch, 3, [3, 2, 0])
    for _ in range(3):
        producer.update_partitions()
    assert opened == [] and len(producer._partitions) == 3


def test_partitions_opened_while_the_producer_closes_are_closed(monkeypatch):
    producer, opened = _growing_producer(monkeypatch, 2, [4])
    real_open = producer._open_partition

    def open_then_close(index: int):
        part = real_open(index)
        if index == 3:
            producer.close()  # the application closes it while the updater opens partitions
        return part
    producer._open_partition = open_then_close
    producer.update_partitions()
    assert len(producer._partitions) == 2
    assert all(not fakes.connection(p).streams[0].alive for p in opened)


def test_a_producer_of_a_non_partitioned_topic_never_looks(monkeypatch):
    producer, _ = fakes.make_producer(monkeypatch, partitions=0)
    producer.update_partitions()  # no count_partitions: nothing to look up, nothing raised
    assert len(producer._partitions) == 1


class _Child:
    def __init__(self, name: str, fail: bool = False) -> None:
        self.name, self.fail, self.calls = name, fail, 0

    def topic(self) -> str:
        return self.name

    def update_partitions(self) -> None:
        self.calls += 1
        if self.fail:
            raise ConnectionError("broker restarting")


def test_the_updater_goes_on_past_a_failing_child_and_logs_one_line(caplog):
    children = [_Child("a", fail=True), _Child("b")]
    updater = PartitionsUpdater(0, lambda: children)  # 0: no thread, rounds by hand
    with caplog.at_level(logging.WARNING, logger="connector.client.partition_updates"):
        updater.update_now()
    assert [c.calls for c in children] == [1, 1]
    assert [r.getMessage() for r in caplog.records] == [
        "event=partitions_update_failed _child=a error=ConnectionError('broker restarting')"]
    assert caplog.records[0].exc_info is None


def test_a_stopped_updater_does_no_more_rounds():
    children = [_Child("a")]
    updater = PartitionsUpdater(0, lambda: children)
    updater.stop()
    updater.update_now()
    assert children[0].calls == 0
