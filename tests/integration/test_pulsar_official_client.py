"""The official ``pulsar-client`` (C++ core) against a ``pulsarlike broker`` process on port 0, over Pulsar's
binary protocol on the broker's one port (issue 14, "Tests that must exist")."""
from __future__ import annotations

import contextlib
import os
import time
import uuid

import pytest

pulsar = pytest.importorskip("pulsar")
import _pulsar  # noqa: E402  (the wrapper's own extension; pattern_auto_discovery_period needs it)

from pulsar.exceptions import AlreadyClosed  # noqa: E402
from pulsar.schema import Integer, JsonSchema, Record, String, StringSchema  # noqa: E402

from tests.brokers import BrokerProcess  # noqa: E402
from tests.waiting import wait_for_backlog, wait_until  # noqa: E402

QUIET = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)


@pytest.fixture(scope="module")
def broker_proc(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("pulsar-broker"), "--set",
                         "acknowledgmentAtBatchIndexLevelEnabled=true").start()
    yield proc
    proc.stop()


@pytest.fixture
def admin(broker_proc):
    from connector import Admin

    a = Admin(broker_proc.service_url)
    yield a
    a.close()


@pytest.fixture
def topic():
    return f"persistent://public/default/pc-{uuid.uuid4().hex[:10]}"


def receive_all(consumer, n: int, timeout_ms: int = 5000) -> list:
    return [consumer.receive(timeout_ms) for _ in range(n)]


def nothing_more(consumer, timeout_ms: int = 300) -> bool:
    try:
        consumer.receive(timeout_ms)
    except pulsar.Timeout:
        return True
    return False


def test_messages_without_batching_round_trip_with_their_ids(official, topic):
    consumer = official.subscribe(topic, "s")
    producer = official.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"m{i}".encode()) for i in range(3)]
    got = receive_all(consumer, 3)
    assert [m.data() for m in got] == [b"m0", b"m1", b"m2"]
    assert [str(m.message_id()) for m in got] == [str(i) for i in ids]
    assert [i.entry_id() for i in ids] == [0, 1, 2]


def test_batched_messages_arrive_in_order_with_batch_indexes(official, topic):
    consumer = official.subscribe(topic, "s")
    producer = official.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=50)
    for i in range(5):
        producer.send_async(f"b{i}".encode(), None)
    producer.flush()
    got = receive_all(consumer, 5)
    assert [m.data() for m in got] == [f"b{i}".encode() for i in range(5)]
    assert [m.message_id().batch_index() for m in got] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("codec", ["LZ4", "ZLib", "ZSTD", "SNAPPY"])
def test_every_codec_round_trips(official, topic, codec):
    consumer = official.subscribe(topic, "s")
    producer = official.create_producer(topic, compression_type=getattr(pulsar.CompressionType, codec),
                                        batching_enabled=True, batching_max_publish_delay_ms=20)
    payloads = [(f"{codec}-{i}-" * 50).encode() for i in range(4)]
    for p in payloads:
        producer.send_async(p, None)
    producer.flush()
    assert [m.data() for m in receive_all(consumer, 4)] == payloads


@pytest.mark.parametrize("sub_type", ["Exclusive", "Shared", "Failover", "KeyShared"])
def test_each_subscription_type_delivers_and_acknowledges(official, admin, topic, sub_type):
    consumer = official.subscribe(topic, "s", consumer_type=getattr(pulsar.ConsumerType, sub_type))
    producer = official.create_producer(topic, batching_enabled=False)
    for i in range(4):
        producer.send(f"k{i}".encode(), partition_key=f"key{i}")
    got = receive_all(consumer, 4)
    assert sorted(m.data() for m in got) == [b"k0", b"k1", b"k2", b"k3"]
    for m in got:
        consumer.acknowledge(m)
    assert wait_for_backlog(admin, topic, "s", 0) == 0
    assert admin.topic_stats(topic)["subscriptions"]["s"]["type"] == sub_type.replace("KeyShared", "Key_Shared")


def test_key_shared_sticky_ranges_keep_each_key_on_the_consumer_owning_its_hash(official, topic):
    def sticky(ranges):
        return pulsar.ConsumerKeySharedPolicy(key_shared_mode=pulsar.KeySharedMode.Sticky, sticky_ranges=ranges)

    low = official.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.KeyShared,
                             key_shared_policy=sticky([(0, 32767)]))
    high = official.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.KeyShared,
                              key_shared_policy=sticky([(32768, 65535)]))
    producer = official.create_producer(topic, batching_enabled=False)
    for i in range(40):
        producer.send(b"v", partition_key=f"key{i % 8}")
    owners: dict[str, set[str]] = {}
    for name, consumer in (("low", low), ("high", high)):
        while True:
            try:
                m = consumer.receive(500)
            except pulsar.Timeout:
                break
            owners.setdefault(m.partition_key(), set()).add(name)
    assert len(owners) == 8 and all(len(o) == 1 for o in owners.values())
    assert {n for o in owners.values() for n in o} == {"low", "high"}


def test_cumulative_ack_acknowledges_everything_up_to_the_message(official, admin, topic):
    consumer = official.subscribe(topic, "s")
    producer = official.create_producer(topic, batching_enabled=False)
    for i in range(5):
        producer.send(b"c%d" % i)
    got = receive_all(consumer, 5)
    consumer.acknowledge_cumulative(got[2])
    assert wait_for_backlog(admin, topic, "s", 2) == 2


def test_batch_index_acks_redeliver_only_what_was_not_acknowledged(official, topic):
    kwargs = dict(consumer_type=pulsar.ConsumerType.Shared, batch_index_ack_enabled=True)
    consumer = official.subscribe(topic, "s", **kwargs)
    producer = official.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=50)
    for i in range(4):
        producer.send_async(b"i%d" % i, None)
    producer.flush()
    got = receive_all(consumer, 4)
    consumer.acknowledge(got[0])
    consumer.acknowledge(got[2])
    consumer.close()  # closing flushes the grouped acks; what is left comes back to the next consumer
    again = official.subscribe(topic, "s", **kwargs)
    assert sorted(m.data() for m in receive_all(again, 2)) == [b"i1", b"i3"]
    assert nothing_more(again)


def test_negative_ack_redelivers_with_a_redelivery_count(official, topic):
    consumer = official.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                                  negative_ack_redelivery_delay_ms=100)
    official.create_producer(topic).send(b"again")
    first = consumer.receive(5000)
    consumer.negative_acknowledge(first)
    second = consumer.receive(5000)
    assert (second.data(), second.redelivery_count()) == (b"again", 1)


def test_ack_timeout_redelivers_what_was_not_acknowledged(official, topic):
    # pulsar-client refuses an ack timeout below 10 s
    consumer = official.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                                  unacked_messages_timeout_ms=10_000)
    official.create_producer(topic).send(b"late")
    assert consumer.receive(5000).data() == b"late"
    again = consumer.receive(20_000)
    assert (again.data(), again.redelivery_count()) == (b"late", 1)


def test_seek_by_message_id_replays_what_follows_that_message(official, topic):
    consumer = official.subscribe(topic, "s")
    producer = official.create_producer(topic, batching_enabled=False)
    ids = [producer.send(b"s%d" % i) for i in range(4)]
    for m in receive_all(consumer, 4):
        consumer.acknowledge(m)
    consumer.seek(ids[1])
    # the broker resends from s1 itself, as Pulsar's does; pulsar-client's C++ core then skips the sought
    # message (its start message id is exclusive unless start_message_id_inclusive)
    assert [m.data() for m in receive_all(consumer, 2)] == [b"s2", b"s3"]
    assert nothing_more(consumer)


def test_seek_by_publish_time_replays_what_was_published_since(official, topic):
    producer = official.create_producer(topic, batching_enabled=False)
    producer.send(b"old")
    since = int(time.time() * 1000) + 1
    wait_until(lambda: int(time.time() * 1000) > since)
    producer.send(b"new")
    consumer = official.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    consumer.seek(since)
    assert consumer.receive(5000).data() == b"new"


def test_reader_reads_from_earliest_and_knows_when_it_has_caught_up(official, topic):
    producer = official.create_producer(topic, batching_enabled=True, batching_max_publish_delay_ms=20)
    for i in range(3):
        producer.send_async(b"r%d" % i, None)
    producer.flush()
    reader = official.create_reader(topic, pulsar.MessageId.earliest)
    read = []
    while reader.has_message_available():
        read.append(reader.read_next(5000).data())
    assert read == [b"r0", b"r1", b"r2"]
    latest = official.create_reader(topic, pulsar.MessageId.latest)
    assert not latest.has_message_available()


def test_partitioned_topic_routes_each_key_to_one_partition(official, admin, topic):
    admin.create_partitioned_topic(topic, 3)
    consumer = official.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
    producer = official.create_producer(topic, batching_enabled=False)
    partitions: dict[str, set[int]] = {}
    for i in range(12):
        key = f"key{i % 4}"
        partitions.setdefault(key, set()).add(producer.send(b"p%d" % i, partition_key=key).partition())
    assert all(len(p) == 1 for p in partitions.values())
    got = receive_all(consumer, 12)
    assert sorted(m.data() for m in got) == sorted(b"p%d" % i for i in range(12))
    assert {m.message_id().partition() for m in got} <= {0, 1, 2}
    assert all(m.topic_name().startswith(topic + "-partition-") for m in got)


def test_a_six_mib_message_is_chunked_and_reassembled(official, topic):
    consumer = official.subscribe(topic, "s")
    producer = official.create_producer(topic, chunking_enabled=True, batching_enabled=False)
    big = os.urandom(6 * 1024 * 1024)
    producer.send(big)
    assert consumer.receive(10_000).data() == big


def test_regex_subscription_sees_topics_created_after_it(official, topic):
    prefix = topic.rsplit("/", 1)[1]
    conf = _pulsar.ConsumerConfiguration()  # the wrapper ignores pattern_auto_discovery_period (60 s)
    conf.pattern_auto_discovery_period(1)
    conf.subscription_initial_position(pulsar.InitialPosition.Earliest)
    consumer = official._client.subscribe_pattern(f"persistent://public/default/{prefix}-.*", "s", conf)
    official.create_producer(f"{topic}-new").send(b"found")
    assert consumer.receive(10_000).data() == b"found"
    consumer.close()


def test_string_and_json_schemas_round_trip(official, topic):
    class User(Record):
        name = String()
        age = Integer()

    producer = official.create_producer(topic + "-s", schema=StringSchema())
    consumer = official.subscribe(topic + "-s", "s", schema=StringSchema(),
                                  initial_position=pulsar.InitialPosition.Earliest)
    producer.send("text")
    assert consumer.receive(5000).value() == "text"
    json_producer = official.create_producer(topic + "-j", schema=JsonSchema(User))
    json_consumer = official.subscribe(topic + "-j", "s", schema=JsonSchema(User),
                                       initial_position=pulsar.InitialPosition.Earliest)
    json_producer.send(User(name="ada", age=36))
    user = json_consumer.receive(5000).value()
    assert (user.name, user.age) == ("ada", 36)
    stored = official._client.get_schema_info(topic + "-j", -1)  # GET_SCHEMA: the latest version
    assert (str(stored.schema_type()), '"age"' in stored.schema()) == ("SchemaType.JSON", True)


def test_an_incompatible_schema_is_refused(official, topic):
    official.create_producer(topic, schema=StringSchema()).send("a string")

    class Point(Record):
        x = Integer()

    with pytest.raises(Exception, match="IncompatibleSchema"):
        official.create_producer(topic, schema=JsonSchema(Point))


@pytest.mark.parametrize("partitions", [0, 2])
def test_deleting_a_topic_deletes_its_schema(official, admin, topic, partitions):
    class Point(Record):
        x = Integer()

    if partitions:
        admin.create_partitioned_topic(topic, partitions)
    first = official.create_producer(topic, schema=StringSchema())
    first.send("a string")
    first.close()  # else its reconnection would make the topic, and register its schema, again
    if partitions:  # deleting one partition keeps the schema the other partitions share
        admin.delete_topic(f"{topic}-partition-1", force=True)
        with pytest.raises(Exception, match="IncompatibleSchema"):
            official.create_producer(topic, schema=JsonSchema(Point))
    admin.delete_topic(topic, force=True)
    producer = official.create_producer(topic, schema=JsonSchema(Point))  # a new topic, without a schema
    producer.send(Point(x=1))
    assert str(official._client.get_schema_info(topic, -1).schema_type()) == "SchemaType.JSON"


def test_failover_standby_takes_over_when_the_active_consumer_closes(official, topic):
    first = official.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Failover, consumer_name="a")
    second = official.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Failover, consumer_name="b")
    producer = official.create_producer(topic, batching_enabled=False)
    producer.send(b"one")
    active, standby = (first, second) if not nothing_more(first, 3000) else (second, first)
    active.close()
    producer.send(b"two")
    got = [m.data() for m in receive_all(standby, 2)]
    assert got[-1] == b"two"


def test_a_second_exclusive_consumer_is_refused(official, topic):
    official.subscribe(topic, "s")
    with pytest.raises(Exception, match="ConsumerBusy"):
        official.subscribe(topic, "s")


def test_exclusive_with_fencing_fences_the_older_producer(official, broker_proc, topic):
    # The older producer has a client of its own: once the broker fenced it, the C++ client's close() reports
    # it as AlreadyClosed (it does so with Apache Pulsar too), depending on when the fencing reached it.
    fenced_side = pulsar.Client(broker_proc.service_url, operation_timeout_seconds=10, logger=QUIET)
    try:
        older = fenced_side.create_producer(topic, producer_name="older",
                                            access_mode=pulsar.ProducerAccessMode.Exclusive)
        official.create_producer(topic, producer_name="newer",
                                 access_mode=pulsar.ProducerAccessMode.ExclusiveWithFencing).send(b"mine")
        with pytest.raises(Exception, match="Fenced"):
            older.send(b"stale")
    finally:
        with contextlib.suppress(AlreadyClosed):
            fenced_side.close()


def test_a_terminated_topic_refuses_sends(official, admin, topic):
    producer = official.create_producer(topic)
    producer.send(b"last")
    admin.terminate_topic(topic)
    with pytest.raises(Exception, match="TopicTerminated"):
        producer.send(b"too late")


def test_clients_reconnect_after_an_unload(official, admin, topic):
    consumer = official.subscribe(topic, "s")
    producer = official.create_producer(topic, batching_enabled=False)
    producer.send(b"before")
    consumer.acknowledge(consumer.receive(5000))
    assert wait_for_backlog(admin, topic, "s", 0) == 0  # acks are grouped: let this one reach the broker
    admin.unload_topic(topic)
    producer.send(b"after")
    assert consumer.receive(10_000).data() == b"after"


def test_clients_of_a_deleted_topic_are_closed_and_reconnect(official, admin, topic):
    consumer = official.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    producer = official.create_producer(topic, batching_enabled=False)
    producer.send(b"old")
    consumer.acknowledge(consumer.receive(5000))
    admin.delete_topic(topic, force=True)
    producer.send(b"new")  # auto-created again
    assert consumer.receive(10_000).data() == b"new"
    assert admin.topic_stats(topic)["msgInCounter"] == 1


def test_messages_cross_between_our_client_and_the_official_one(official, ours, topic):
    from connector import InitialPosition

    theirs = official.subscribe(topic + "-a", "s")
    our_id = ours.create_producer(topic + "-a").send(b"from ours", properties={"a": "1"}, partition_key="K",
                                                     event_timestamp=12345)
    m = theirs.receive(5000)
    assert (m.data(), m.properties(), m.partition_key(), m.event_timestamp()) == (b"from ours", {"a": "1"}, "K",
                                                                                  12345)
    assert (m.message_id().ledger_id(), m.message_id().entry_id()) == (our_id.ledger_id(), our_id.entry_id())

    mine = ours.subscribe(topic + "-b", "s", initial_position=InitialPosition.Earliest)
    their_id = official.create_producer(topic + "-b", batching_enabled=False).send(
        b"from theirs", properties={"b": "2"}, partition_key="P", event_timestamp=999)
    m = mine.receive(5000)
    assert (m.data(), m.properties(), m.partition_key(), m.event_timestamp()) == (b"from theirs", {"b": "2"}, "P",
                                                                                  999)
    assert (m.message_id().ledger_id(), m.message_id().entry_id()) == (their_id.ledger_id(), their_id.entry_id())


def test_deduplication_keeps_a_restarted_producer_from_writing_twice(official, admin, topic):
    admin.create_topic(topic)
    admin.set_topic_deduplication(topic, True)
    producer = official.create_producer(topic, producer_name="dedup-p", batching_enabled=True,
                                        batching_max_publish_delay_ms=20)
    for i in range(5):
        producer.send_async(b"d%d" % i, None)
    producer.flush()
    producer.close()
    again = official.create_producer(topic, producer_name="dedup-p", batching_enabled=False)
    assert again.last_sequence_id() == 4
    duplicate = again.send(b"d2 again", sequence_id=2)
    assert (duplicate.ledger_id(), duplicate.entry_id()) == (-1, -1)
    assert admin.topic_stats(topic)["msgInCounter"] == 5


@pytest.mark.parametrize("stop", ["terminate", "kill"])
def test_producers_and_consumers_ride_through_a_broker_restart(tmp_path, stop):
    proc = BrokerProcess(tmp_path / "broker", "--set", "brokerDeduplicationEnabled=true").start()
    client = pulsar.Client(proc.service_url, operation_timeout_seconds=30, logger=QUIET)
    try:
        consumer = client.subscribe("restart", "s", receiver_queue_size=10)
        producer = client.create_producer("restart", producer_name="survivor", batching_enabled=False,
                                          send_timeout_millis=60_000)
        for i in range(5):
            producer.send(b"a%d" % i)
        getattr(proc, stop)()
        proc.restart()
        for i in range(5):
            producer.send(b"b%d" % i)
        got = []
        while len(got) < 10:
            m = consumer.receive(20_000)
            got.append(m.data())
            consumer.acknowledge(m)
        assert sorted(got) == sorted([b"a%d" % i for i in range(5)] + [b"b%d" % i for i in range(5)])
        assert nothing_more(consumer, 500)
    finally:
        client.close()
        proc.stop()


def test_consumer_stats_and_last_message_id_answer_raw_requests(broker_proc, official, topic):
    from broker_core.protocol import pulsar_commands_pb2 as cmd
    from tests.pulsar_wire import RawPulsar, frame

    official.create_producer(topic, batching_enabled=False).send(b"only")
    T = cmd.BaseCommand
    with RawPulsar(broker_proc.address) as raw:
        raw.connect()
        assert raw.subscribe(topic, "stats", consumer_name="c1").type == T.SUCCESS
        raw.send(frame(T(type=T.CONSUMER_STATS, consumerStats=cmd.CommandConsumerStats(request_id=7, consumer_id=1))))
        stats = raw.expect(T.CONSUMER_STATS_RESPONSE).consumerStatsResponse
        assert (stats.request_id, stats.consumerName, stats.type, stats.HasField("error_code")) == (
            7, "c1", "Exclusive", False)
        raw.send(frame(T(type=T.GET_LAST_MESSAGE_ID, getLastMessageId=cmd.CommandGetLastMessageId(
            consumer_id=1, request_id=8))))
        last = raw.expect(T.GET_LAST_MESSAGE_ID_RESPONSE).getLastMessageIdResponse
        assert (last.last_message_id.ledgerId, last.last_message_id.entryId) == (0, 0)


def test_lookup_answers_the_advertised_address(tmp_path):
    proc = BrokerProcess(tmp_path / "broker", "--set", "advertisedAddress=localhost").start()
    try:
        client = pulsar.Client(proc.service_url, operation_timeout_seconds=10, logger=QUIET)
        producer = client.create_producer("advertised")  # the client connects to localhost:<port> after lookup
        producer.send(b"via localhost")
        client.close()
    finally:
        proc.stop()
    from tests.pulsar_wire import RawPulsar, frame
    from broker_core.protocol import pulsar_commands_pb2 as cmd

    proc = BrokerProcess(tmp_path / "broker", "--set", "advertisedAddress=broker.example").start()
    try:
        with RawPulsar(proc.address) as raw:
            raw.connect()
            raw.send(frame(cmd.BaseCommand(type=cmd.BaseCommand.LOOKUP, lookupTopic=cmd.CommandLookupTopic(
                topic="persistent://public/default/x", request_id=1))))
            answer = raw.expect(cmd.BaseCommand.LOOKUP_RESPONSE).lookupTopicResponse
            assert answer.brokerServiceUrl == f"pulsar://broker.example:{proc.port}"
            assert answer.response == answer.Connect and answer.authoritative
    finally:
        proc.stop()
