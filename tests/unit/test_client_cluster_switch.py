"""A consumer or reader that the client moves to another cluster (cluster failover), without a broker: fake
streams tagged with the service they were opened on, the timer runs the reconnection. Nothing of the old
cluster's positions follows it (pulsar-client's ``onClusterSwitching``): acks not sent yet are dropped, acks of
messages received there are not sent, a reader starts again at its start, a seek's floor is forgotten, and a
subscription that races a switch is opened again."""
from __future__ import annotations

from broker_core import errors
from connector.client.consumer.acks import AckGroup
from connector.client.enums import ConsumerType
from connector.client.transport.events import EARLIEST, LATEST, Position, Subscribed
from connector.client.consumer.positions import ReadPositions
from tests.unit.consumer_fakes import TOPIC, FakeTimer, Harness, single

LOST = errors.ConnectError("the connection to the broker was closed by the client")


def move(h: Harness, epoch: int = 1) -> None:
    """The client switches to another cluster: the stream is lost and reopened there."""
    lost = h.stream
    h.connection.service_epoch = epoch
    lost.on_end(LOST)
    h.timer.run("_run")
    assert h.stream is not lost and h.stream.service_epoch == epoch


def test_a_consumer_that_moves_sends_none_of_the_old_clusters_acks():
    h = Harness()
    h.deliver(single(0, b"a"), single(1, b"b"), single(2, b"c"))
    a, b, c = (h.consumer.receive(0) for _ in range(3))
    h.consumer.acknowledge(a)  # grouped, not sent yet
    h.stream.on_end(LOST)
    h.consumer.acknowledge(b)  # made while reconnecting
    h.sub.stream.flush_acks()
    h.connection.service_epoch = 1
    h.timer.run("_run")
    h.consumer.acknowledge(c)  # received on the cluster it left
    assert h.acked() == []
    h.deliver(single(0, b"x"))
    x = h.consumer.receive(0)
    h.consumer.acknowledge(x)
    assert (x.data(), h.acked()) == (b"x", [0])


def test_a_reconnection_to_the_same_cluster_still_sends_the_acks_made_meanwhile():
    h = Harness()
    h.deliver(single(0, b"a"))
    a = h.consumer.receive(0)
    h.stream.on_end(LOST)
    h.consumer.acknowledge(a)
    h.sub.stream.flush_acks()
    h.timer.run("_run")
    assert h.acked() == [0]


def test_a_reader_that_moves_starts_again_at_its_start_not_after_what_it_read():
    h = Harness(ConsumerType.Exclusive, non_durable=True)
    h.deliver(single(10, b"a"), single(11, b"b"))
    assert h.consumer.receive(0).data() == b"a"
    move(h)
    assert h.stream.spec.start is None  # its own start (a subscription's initial position)
    assert h.positions.next_offset(TOPIC) is None
    h.deliver(single(0, b"x"))  # below anything it read on the old cluster: delivered
    assert [m.data() for m in h.drain()] == [b"x"]


def test_a_consumer_that_moves_forgets_the_floor_of_a_seek_on_the_old_cluster():
    h = Harness(ConsumerType.Exclusive)
    h.sub.start_floor = 7  # as a seek to offset 6, not inclusive, leaves it
    move(h)
    h.deliver(single(0, b"x"), single(1, b"y"))
    assert [m.data() for m in h.drain()] == [b"x", b"y"]


def test_a_subscription_opened_on_a_service_switched_to_meanwhile_is_opened_again():
    h = Harness(ConsumerType.Exclusive, non_durable=True)
    h.deliver(single(10, b"a"))
    h.consumer.receive(0)
    h.connection.silent = True  # the reconnection's answer comes only after the next switch
    h.stream.on_end(LOST)
    h.timer.run("_run")
    racing = h.stream
    assert racing.spec.start == Position(11) and racing.spec.start_inclusive  # the old cluster's resume point
    h.connection.silent = False
    h.connection.service_epoch = 1
    racing.on_event(Subscribed(TOPIC, "c", service_epoch=1))  # opened on the new cluster with that start
    assert racing.closed and not h.consumer.is_connected()
    h.timer.run("_run")
    assert h.stream is not racing and h.stream.spec.start is None and h.consumer.is_connected()


def test_read_positions_restart_at_a_start_position_or_forget_it():
    positions = ReadPositions()
    positions.set("t", 40)
    positions.restart("t", Position(5))
    assert positions.next_offset("t") == 5
    for start in (EARLIEST, LATEST, None):
        positions.set("t", 40)
        positions.restart("t", start)
        assert positions.next_offset("t") is None


def test_dropped_acks_are_never_sent():
    sent = []
    group = AckGroup(FakeTimer(), sent.append)  # type: ignore[arg-type]
    group.add(3)
    group.drop()
    group.flush()
    group.add(4)
    group.flush()
    assert [ack.ranges for ack in sent] == [((4, 5),)]
