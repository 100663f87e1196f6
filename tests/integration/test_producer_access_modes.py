"""Producer access modes end to end (seed 002 "Access mode"): Shared, Exclusive, ExclusiveWithFencing,
WaitForExclusive (leader election), against a real broker."""
from __future__ import annotations

import threading

import pytest

from connector import InitialPosition, ProducerAccessMode, ProducerBusy, ProducerFenced
from tests.waiting import wait_until


def payloads(client, topic, expected):
    consumer = client.subscribe(topic, "check", initial_position=InitialPosition.Earliest)
    try:
        return [consumer.receive(timeout_millis=10_000).data() for _ in range(expected)]
    finally:
        consumer.close()


def test_shared_producers_write_to_one_topic_together(client, topic):
    a = client.create_producer(topic)
    b = client.create_producer(topic, access_mode=ProducerAccessMode.Shared)
    a.send(b"a")
    b.send(b"b")
    assert sorted(payloads(client, topic, 2)) == [b"a", b"b"]


def test_second_exclusive_producer_fails_at_once(client, topic):
    leader = client.create_producer(topic, access_mode=ProducerAccessMode.Exclusive)
    with pytest.raises(ProducerFenced, match="existing exclusive producer"):
        client.create_producer(topic, access_mode=ProducerAccessMode.Exclusive)
    with pytest.raises(ProducerBusy, match="existing exclusive producer"):
        client.create_producer(topic)  # a shared producer neither
    leader.send(b"still the only writer")
    leader.close()
    client.create_producer(topic, access_mode=ProducerAccessMode.Exclusive).close()  # free again


def test_exclusive_producer_is_refused_while_shared_producers_write(client, topic):
    shared = client.create_producer(topic)
    with pytest.raises(ProducerFenced, match="existing shared producers"):
        client.create_producer(topic, access_mode=ProducerAccessMode.Exclusive)
    shared.close()


def test_exclusive_with_fencing_fences_the_old_producer_on_its_next_send(client, topic):
    old = client.create_producer(topic, access_mode=ProducerAccessMode.Exclusive, batching_enabled=False)
    old.send(b"old-1")
    new = client.create_producer(topic, access_mode=ProducerAccessMode.ExclusiveWithFencing,
                                 batching_enabled=False)
    with pytest.raises(ProducerFenced):
        old.send(b"old-2")
    new.send(b"new-1")
    assert payloads(client, topic, 2) == [b"old-1", b"new-1"]


def test_wait_for_exclusive_producers_take_over_in_order_without_timing_out(client, admin, topic):
    """Leader election: whoever holds the exclusive producer is the leader; the others wait in line."""
    leader = client.create_producer(topic, producer_name="leader", access_mode=ProducerAccessMode.Exclusive,
                                    batching_enabled=False)
    order: list[str] = []
    producers: dict[str, object] = {}
    granted = {name: threading.Event() for name in ("second", "third")}

    def wait_turn(name):
        producer = client.create_producer(topic, producer_name=name, batching_enabled=False,
                                          access_mode=ProducerAccessMode.WaitForExclusive)
        order.append(name)
        producers[name] = producer
        granted[name].set()

    second = threading.Thread(target=wait_turn, args=("second",))
    second.start()
    _wait_until_waiting(admin, topic, 1)
    third = threading.Thread(target=wait_turn, args=("third",))
    third.start()
    _wait_until_waiting(admin, topic, 2)
    assert order == []
    leader.send(b"from leader")
    leader.close()
    assert granted["second"].wait(10) and order == ["second"]
    producers["second"].send(b"from second")
    assert not granted["third"].is_set()
    producers["second"].close()
    assert granted["third"].wait(10) and order == ["second", "third"]
    producers["third"].send(b"from third")
    producers["third"].close()
    second.join(5)
    third.join(5)
    assert payloads(client, topic, 3) == [b"from leader", b"from second", b"from third"]


def _wait_until_waiting(admin, topic, count):
    """Poll the broker's view until ``count`` producers are queued (no sleeping for correctness)."""
    assert wait_until(lambda: admin.topic_stats(topic).get("waitingPublishers") == count), \
        f"{count} producers never queued"


def test_racing_exclusive_producers_admit_exactly_one(client, topic):
    results: list[object] = []
    barrier = threading.Barrier(6)

    def race(i):
        barrier.wait()
        try:
            results.append(client.create_producer(topic, producer_name=f"racer-{i}",
                                                  access_mode=ProducerAccessMode.Exclusive))
        except ProducerFenced as exc:
            results.append(exc)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    winners = [r for r in results if not isinstance(r, Exception)]
    assert len(results) == 6 and len(winners) == 1


def test_two_producers_cannot_share_a_name(client, topic):
    first = client.create_producer(topic, producer_name="unique")
    with pytest.raises(ProducerBusy, match="'unique' is already connected"):
        client.create_producer(topic, producer_name="unique")
    first.close()
    client.create_producer(topic, producer_name="unique").close()
