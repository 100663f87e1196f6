"""Compacted reads (Pulsar's readCompacted) on a broker process, after a compaction asked for through the
admin: the official pulsar-client (binary protocol) and our client (gRPC) get the latest value per key below
the compaction horizon, then every raw message after it; Shared/Key_Shared and non-persistent topics are
refused; seek, has_message_available and get_last_message_id follow the compacted view."""
from __future__ import annotations

import uuid

import grpc
import pulsar
import pytest

from broker_core.protocol import broker_pb2, broker_pb2_grpc
from broker_core.protocol import pulsar_commands_pb2 as cmd
from connector import InvalidConfiguration, MessageId, NotAllowedError, Timeout
from connector.client.enums import ConsumerType, InitialPosition
from tests.brokers import BrokerProcess
from tests.pulsar_wire import RawPulsar
from tests.waiting import wait_until

T = cmd.BaseCommand


@pytest.fixture(scope="module")
def broker_proc(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("compacted-reads-broker")).start()
    yield proc
    proc.stop()


@pytest.fixture
def topic():
    return f"persistent://public/default/compacted-{uuid.uuid4().hex[:12]}"


def compact(broker_proc: BrokerProcess, topic: str) -> None:
    """Compact ``topic`` through the admin's Compact RPC and wait until the run succeeded."""
    with grpc.insecure_channel(broker_proc.address) as channel:
        stub = broker_pb2_grpc.PulsarLikeStub(channel)
        stub.Compact(broker_pb2.TopicRequest(topic=topic), timeout=10)
        status = wait_until(lambda: stub.CompactionStatus(broker_pb2.TopicRequest(topic=topic), timeout=10).status
                            in ("SUCCESS", "ERROR") and stub.CompactionStatus(
                                broker_pb2.TopicRequest(topic=topic), timeout=10))
        assert status and status.status == "SUCCESS", status


def publish(client: pulsar.Client, topic: str, messages: list[tuple[str, bytes]]) -> list[pulsar.MessageId]:
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(value, partition_key=key) for key, value in messages]
    producer.close()
    return ids


HISTORY = [("a", b"a1"), ("b", b"b1"), ("a", b"a2"), ("c", b"c1"), ("b", b""), ("c", b"c2")]
"""Compacted: a=a2 (2), c=c2 (5); b was deleted by a tombstone."""
TAIL = [("a", b"a3"), ("a", b"a4")]
"""Published after the compaction: read raw, both."""


def read_all(read, timeout_ms: int = 500) -> list[tuple[str, bytes]]:
    out = []
    while True:
        try:
            msg = read(timeout_ms)
        except (pulsar.Timeout, Timeout):
            return out
        out.append((msg.partition_key(), msg.data()))


def compacted_topic(official: pulsar.Client, broker_proc: BrokerProcess, topic: str, tail=TAIL) -> None:
    publish(official, topic, HISTORY)
    compact(broker_proc, topic)
    if tail:
        publish(official, topic, tail)


EXPECTED = [("a", b"a2"), ("c", b"c2"), ("a", b"a3"), ("a", b"a4")]


def test_an_official_compacted_reader_gets_the_latest_value_per_key_then_the_raw_tail(official, broker_proc, topic):
    compacted_topic(official, broker_proc, topic)
    reader = official.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    assert read_all(reader.read_next) == EXPECTED
    raw = official.create_reader(topic, pulsar.MessageId.earliest)
    assert len(read_all(raw.read_next)) == len(HISTORY) + len(TAIL)  # the raw topic is unchanged


def test_an_official_compacted_consumer_gets_the_latest_value_per_key_then_the_raw_tail(official, broker_proc,
                                                                                         topic):
    compacted_topic(official, broker_proc, topic)
    consumer = official.subscribe(topic, "compacted-sub", consumer_type=pulsar.ConsumerType.Failover,
                                  initial_position=pulsar.InitialPosition.Earliest, is_read_compacted=True)
    got = []
    for _ in range(len(EXPECTED)):
        msg = consumer.receive(5000)
        got.append((msg.partition_key(), msg.data()))
        consumer.acknowledge(msg)
    assert got == EXPECTED
    with pytest.raises(pulsar.Timeout):
        consumer.receive(300)


def test_a_compacted_consumer_acknowledging_each_message_leaves_no_backlog(official, broker_proc, topic):
    compacted_topic(official, broker_proc, topic)
    consumer = official.subscribe(topic, "acked", initial_position=pulsar.InitialPosition.Earliest,
                                  is_read_compacted=True)
    for _ in EXPECTED:
        consumer.acknowledge(consumer.receive(5000))
    from connector import Admin

    with Admin(broker_proc.service_url) as admin:
        assert wait_until(lambda: admin.topic_stats(topic)["subscriptions"]["acked"]["msgBacklog"] == 0)


@pytest.mark.parametrize("sub_type", [cmd.CommandSubscribe.Shared, cmd.CommandSubscribe.Key_Shared])
def test_the_broker_refuses_compacted_reads_on_shared_subscription_types(broker_proc, topic, sub_type):
    with RawPulsar(broker_proc.address) as raw:
        raw.connect()
        answer = raw.subscribe(topic, "s", subType=sub_type, read_compacted=True)
    assert answer.type == T.ERROR
    assert answer.error.error == cmd.NotAllowedError
    assert "readCompacted only allowed on failover or exclusive subscriptions" in answer.error.message


@pytest.mark.parametrize("sub_type", [broker_pb2.SHARED_SUB, broker_pb2.KEY_SHARED_SUB])
def test_the_grpc_front_end_refuses_compacted_reads_on_shared_subscription_types(broker_proc, topic, sub_type):
    with grpc.insecure_channel(broker_proc.address) as channel:
        replies = list(broker_pb2_grpc.PulsarLikeStub(channel).Consume(iter([broker_pb2.ConsumeRequest(
            subscribe=broker_pb2.Subscribe(topic=topic, subscription="s", sub_type=sub_type, read_compacted=True,
                                           durable=True))]), timeout=10))
    assert [r.WhichOneof("response") for r in replies] == ["error"]
    assert replies[0].error.code == "NotAllowedError"
    assert "readCompacted only allowed on failover or exclusive subscriptions" in replies[0].error.message


def test_the_official_client_refuses_compacted_shared_consumers_before_asking(official, topic):
    with pytest.raises(pulsar.InvalidConfiguration):
        official.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared, is_read_compacted=True)


def test_a_compacted_reader_of_a_non_persistent_topic_is_refused(official):
    with pytest.raises(pulsar.NotAllowedError):
        official.create_reader(f"non-persistent://public/default/np-{uuid.uuid4().hex[:8]}",
                               pulsar.MessageId.earliest, is_read_compacted=True)


def test_the_last_message_id_of_a_view_whose_newest_messages_were_compacted_away(official, broker_proc, topic):
    ids = publish(official, topic, [("a", b"a1"), ("b", b"b1"), ("b", b"")])
    compact(broker_proc, topic)
    reader = official.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    assert reader.has_message_available()
    assert reader.read_next(5000).data() == b"a1"
    assert not reader.has_message_available()  # b's tombstone (the raw last message) is not in the view
    consumer = official.subscribe(topic, "last", is_read_compacted=True)
    assert str(consumer.get_last_message_id()) == str(ids[0])
    raw = official.subscribe(topic, "raw")
    assert str(raw.get_last_message_id()) == str(ids[2])


def test_has_message_available_sees_the_raw_tail_past_the_horizon(official, broker_proc, topic):
    compacted_topic(official, broker_proc, topic, tail=[("b", b"")])
    reader = official.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    got = []
    while reader.has_message_available():
        msg = reader.read_next(5000)
        got.append((msg.partition_key(), msg.data()))
    assert got == [("a", b"a2"), ("c", b"c2"), ("b", b"")]  # a tombstone past the horizon is read raw


def test_seeks_of_a_compacted_reader_follow_the_compacted_view(official, broker_proc, topic):
    compacted_topic(official, broker_proc, topic)
    reader = official.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    first = reader.read_next(5000)
    assert read_all(reader.read_next) == EXPECTED[1:]
    reader.seek(pulsar.MessageId.earliest)
    assert read_all(reader.read_next) == EXPECTED
    reader.seek(first.publish_timestamp())  # a publish time: the first kept message at or after it
    assert read_all(reader.read_next)[0] == EXPECTED[0]


def test_a_compacted_reader_at_latest_inclusive_starts_at_the_last_message_of_the_view(official, broker_proc, topic):
    publish(official, topic, [("a", b"a1"), ("b", b"b1"), ("b", b"")])
    compact(broker_proc, topic)
    reader = official.create_reader(topic, pulsar.MessageId.latest, is_read_compacted=True,
                                    start_message_id_inclusive=True)
    assert reader.has_message_available()  # pulsar-client seeks to the last message id here
    assert reader.read_next(5000).data() == b"a1"
    assert not reader.has_message_available()


# ------------------------------------------------------------------ our client (gRPC)
def test_our_compacted_reader_gets_the_latest_value_per_key_then_the_raw_tail(ours, official, broker_proc, topic):
    compacted_topic(official, broker_proc, topic)
    reader = ours.create_reader(topic, MessageId.earliest, is_read_compacted=True)
    assert read_all(reader.read_next) == EXPECTED


def test_our_compacted_consumer_gets_the_latest_value_per_key_then_the_raw_tail(ours, official, broker_proc,
                                                                                topic):
    compacted_topic(official, broker_proc, topic)
    consumer = ours.subscribe(topic, "ours", initial_position=InitialPosition.Earliest, is_read_compacted=True)
    assert read_all(consumer.receive) == EXPECTED


@pytest.mark.parametrize("consumer_type", [ConsumerType.Shared, ConsumerType.KeyShared])
def test_our_client_refuses_compacted_shared_consumers_as_pulsar_client(ours, topic, consumer_type):
    with pytest.raises(InvalidConfiguration, match="exclusive or failover persistent"):
        ours.subscribe(topic, "s", consumer_type=consumer_type, is_read_compacted=True)


def test_our_compacted_reader_of_a_non_persistent_topic_is_refused_by_the_broker(ours):
    with pytest.raises(NotAllowedError, match="persistent topics"):
        reader = ours.create_reader(f"non-persistent://public/default/np-{uuid.uuid4().hex[:8]}",
                                    MessageId.earliest, is_read_compacted=True)
        reader.read_next(2000)


def test_our_compacted_reader_knows_when_the_view_is_read(ours, official, broker_proc, topic):
    publish(official, topic, [("a", b"a1"), ("b", b"b1"), ("b", b"")])
    compact(broker_proc, topic)
    reader = ours.create_reader(topic, MessageId.earliest, is_read_compacted=True)
    assert reader.read_next(5000).data() == b"a1"
    assert not reader.has_message_available()


def test_a_compacted_reader_of_batched_messages_gets_single_messages_with_their_ids(official, broker_proc, topic):
    producer = official.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=50)
    for i in range(30):
        producer.send_async(b"v%d" % i, None, partition_key=f"k{i % 3}")
    producer.flush()
    producer.close()
    compact(broker_proc, topic)
    reader = official.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    got = []
    while reader.has_message_available():
        got.append(reader.read_next(5000))
    assert [(m.partition_key(), m.data()) for m in got] == [("k0", b"v27"), ("k1", b"v28"), ("k2", b"v29")]
    reader.seek(got[1].message_id())  # a kept message's id names it alone; the reader goes on after it
    assert read_all(reader.read_next) == [("k2", b"v29")]


def test_each_partition_of_a_partitioned_topic_is_read_compacted(official, broker_proc, topic):
    from connector import Admin

    with Admin(broker_proc.service_url) as admin:
        admin.create_partitioned_topic(topic, 3)
    publish(official, topic, [(f"k{i % 6}", b"v%d" % i) for i in range(24)])
    compact(broker_proc, topic)
    consumer = official.subscribe(topic, "parts", initial_position=pulsar.InitialPosition.Earliest,
                                  is_read_compacted=True)
    got = dict(read_all(consumer.receive))
    assert got == {f"k{k}": b"v%d" % (18 + k) for k in range(6)}
    assert len(read_all(consumer.receive)) == 0


def test_our_compacted_reader_seeks_in_the_compacted_view(ours, official, broker_proc, topic):
    compacted_topic(official, broker_proc, topic)
    reader = ours.create_reader(topic, MessageId.earliest, is_read_compacted=True)
    assert read_all(reader.read_next) == EXPECTED
    reader.seek(MessageId.earliest)
    assert read_all(reader.read_next) == EXPECTED


@pytest.mark.transports
def test_our_compacted_reader_reaches_the_end_of_a_terminated_topic(ours, official, broker_proc, topic):
    from connector import Admin

    publish(official, topic, [("a", b"a1"), ("b", b"b1"), ("a", b"a2"), ("b", b"")])  # a tombstone last
    compact(broker_proc, topic)
    with Admin(broker_proc.service_url) as admin:
        admin.terminate_topic(topic)
    reader = ours.create_reader(topic, MessageId.earliest, is_read_compacted=True)
    assert read_all(reader.read_next) == [("a", b"a2")]
    assert wait_until(reader.has_reached_end_of_topic)  # the compacted-away 3 does not keep it waiting


def test_a_compacted_consumer_restarted_mid_way_goes_on_after_what_it_acknowledged(official, broker_proc, topic):
    compacted_topic(official, broker_proc, topic)
    consumer = official.subscribe(topic, "resume", initial_position=pulsar.InitialPosition.Earliest,
                                  is_read_compacted=True, receiver_queue_size=1)
    consumer.acknowledge(consumer.receive(5000))
    consumer.close()
    publish(official, topic, [("c", b"c3")])
    compact(broker_proc, topic)  # a new ledger: c's latest moved past the subscription's position
    consumer = official.subscribe(topic, "resume", is_read_compacted=True)
    assert read_all(consumer.receive) == [("a", b"a4"), ("c", b"c3")]


def test_our_compacted_consumers_last_message_id_is_the_compacted_views(ours, official, broker_proc, topic):
    publish(official, topic, [("a", b"a1"), ("b", b"b1"), ("b", b"")])
    compact(broker_proc, topic)
    compacted = ours.subscribe(topic, "last", is_read_compacted=True)
    assert compacted.get_last_message_id().offset() == 0
    assert ours.subscribe(topic, "raw").get_last_message_id().offset() == 2


def test_a_compaction_while_a_reader_is_mid_way_neither_repeats_nor_loses_a_live_key(official, broker_proc, topic):
    publish(official, topic, [(f"k{i % 5}", b"v%d" % i) for i in range(20)])  # latest: k0..k4 at 15..19
    compact(broker_proc, topic)
    publish(official, topic, [("k0", b"new0"), ("k1", b""), ("k5", b"five")])  # 20..22
    reader = official.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True, receiver_queue_size=1)
    first = [(m.partition_key(), m.data()) for m in (reader.read_next(5000), reader.read_next(5000))]
    assert first == [("k0", b"v15"), ("k1", b"v16")]
    compact(broker_proc, topic)  # the ledger is swapped under the reader
    publish(official, topic, [("k2", b"tail")])
    rest = []
    while reader.has_message_available():
        msg = reader.read_next(5000)
        rest.append((msg.partition_key(), msg.data()))
    seen = first + rest
    assert len(seen) == len(set(seen))
    latest = {key: value for key, value in seen}
    # the reader was before k1's tombstone when the run compacted past it: the run kept the tombstone, so the
    # reader reads k1's deletion (Pulsar's compactor would have removed it, leaving the reader with k1=v16)
    assert latest == {"k0": b"new0", "k1": b"", "k2": b"tail", "k3": b"v18", "k4": b"v19", "k5": b"five"}
    assert rest[-1] == ("k2", b"tail")
