"""Message retention and expiry end to end (seed "Message retention and expiry"): a real broker whose
segments roll every few entries, policies through Admin, checks triggered on the broker's loop (and one
test where the periodic checks run by themselves)."""
from __future__ import annotations

import asyncio
import uuid

import pytest

from broker_core import Broker
from broker_core.errors import InvalidConfiguration
from broker_core.types import TopicName
from connector import Admin, Client, ConsumerType, MessageId
from tests.waiting import wait_until

PER_SEGMENT = 5  # entries per segment (managedLedgerMaxEntriesPerLedger)


def on_loop(broker: Broker, fn):
    """Run ``fn()`` on the broker's event loop, where topics live, and return its result."""
    async def call():
        return fn()
    return asyncio.run_coroutine_threadsafe(call(), broker._loop).result(timeout=10)


def loaded(broker: Broker, topic: str):
    return broker._service.registry.loaded(TopicName.parse(topic))


def trim(broker: Broker, topic: str) -> int:
    return on_loop(broker, lambda: loaded(broker, topic).trim())


def expire(broker: Broker, topic: str) -> int:
    return on_loop(broker, lambda: loaded(broker, topic).expire_messages())


def produce(client: Client, topic: str, n: int, size: int = 16) -> None:
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(n):
        producer.send(f"{i:06d}".encode().ljust(size, b"."))
    producer.close()


def first_message(client: Client, topic: str) -> bytes:
    reader = client.create_reader(topic, MessageId.earliest)
    try:
        return reader.read_next(timeout_millis=5000).data()[:6]
    finally:
        reader.close()


@pytest.fixture(scope="module")
def rbroker(tmp_path_factory):
    with Broker(data_dir=tmp_path_factory.mktemp("retention"), port=0,
                managedLedgerMaxEntriesPerLedger=PER_SEGMENT) as running:
        yield running


@pytest.fixture
def rclient(rbroker):
    c = Client(rbroker.service_url)
    yield c
    c.close()


@pytest.fixture
def radmin(rbroker):
    a = Admin(rbroker.service_url)
    yield a
    a.close()


def test_consumed_data_beyond_retention_is_deleted_whole_segments_while_unconsumed_data_stays(
        rbroker, rclient, radmin, topic):
    consumer = rclient.subscribe(topic, "sub", consumer_type=ConsumerType.Exclusive)
    produce(rclient, topic, 23)  # segments [0-4] [5-9] [10-14] [15-19] [20-22]
    messages = [consumer.receive(timeout_millis=5000) for _ in range(12)]
    consumer.acknowledge_cumulative(messages[-1])  # offsets 0..11 consumed
    assert wait_until(lambda: radmin.topic_stats(topic)["subscriptions"]["sub"]["msgBacklog"] == 11)
    before = radmin.topic_stats(topic)["storageSize"]
    trim(rbroker, topic)
    stats = radmin.topic_stats(topic)
    assert stats["firstOffset"] == 10  # [10-14] is only partly consumed: it stays, and all after it
    assert stats["storageSize"] < before
    assert stats["subscriptions"]["sub"]["msgBacklog"] == 11
    assert first_message(rclient, topic) == b"000010"
    rest = [consumer.receive(timeout_millis=5000).data()[:6] for _ in range(11)]
    assert rest == [f"{i:06d}".encode() for i in range(12, 23)]
    consumer.close()


def test_a_topic_without_durable_subscriptions_keeps_nothing_beyond_retention(rbroker, rclient, radmin, topic):
    produce(rclient, topic, 12)  # segments [0-4] [5-9] [10-11]
    trim(rbroker, topic)
    assert radmin.topic_stats(topic)["firstOffset"] == 10  # never the active segment
    assert first_message(rclient, topic) == b"000010"


def test_readers_do_not_hold_data(rbroker, rclient, radmin, topic):
    reader = rclient.create_reader(topic, MessageId.earliest)
    produce(rclient, topic, 12)  # the reader may or may not have read the first ones: it holds nothing
    trim(rbroker, topic)
    stats = radmin.topic_stats(topic)
    assert stats["firstOffset"] == 10
    assert [s["msgBacklog"] for s in stats["subscriptions"].values()] == [2]  # moved past the hole
    reader.close()


def test_retention_size_keeps_consumed_data_up_to_the_limit(rbroker, rclient, radmin, topic):
    radmin.create_topic(topic)
    radmin.set_topic_retention(topic, retention_time_minutes=-1, retention_size_mb=2)
    consumer = rclient.subscribe(topic, "sub")
    produce(rclient, topic, 20, size=256 * 1024)  # 4 segments of ~1.25 MiB, the last one active
    for _ in range(20):
        consumer.acknowledge(consumer.receive(timeout_millis=5000))
    assert wait_until(lambda: radmin.topic_stats(topic)["subscriptions"]["sub"]["msgBacklog"] == 0)
    trim(rbroker, topic)
    # deleting a segment is allowed while what stays is still >= 2 MiB: 5 - 1.25 - 1.25 >= 2, not - 1.25 more
    assert radmin.topic_stats(topic)["firstOffset"] == 10
    radmin.set_topic_retention(topic, retention_time_minutes=-1, retention_size_mb=1)
    # a trim asked for while the previous removal still runs is done when it ends
    assert wait_until(lambda: trim(rbroker, topic) or radmin.topic_stats(topic)["firstOffset"] == 15)
    assert radmin.topic_stats(topic)["firstOffset"] == 15
    consumer.close()


def test_retention_time_keeps_consumed_data_and_infinite_retention_keeps_everything(
        rbroker, rclient, radmin, topic):
    radmin.create_topic(topic)
    radmin.set_topic_retention(topic, retention_time_minutes=10, retention_size_mb=-1)
    produce(rclient, topic, 12)  # no subscription: all of it counts as consumed
    trim(rbroker, topic)
    assert radmin.topic_stats(topic)["firstOffset"] == 0  # younger than 10 minutes
    radmin.set_topic_retention(topic, retention_time_minutes=-1, retention_size_mb=-1)
    trim(rbroker, topic)
    assert radmin.topic_stats(topic)["firstOffset"] == 0
    radmin.remove_topic_retention(topic)  # back to the broker default: no retention
    assert radmin.get_topic_retention(topic) is None
    assert wait_until(lambda: radmin.topic_stats(topic)["firstOffset"] == 10)  # applied at once


def test_ttl_moves_a_subscriptions_cursor_past_expired_messages_then_retention_deletes_them(
        rbroker, rclient, radmin, topic):
    radmin.create_topic(topic)
    radmin.set_topic_message_ttl(topic, 1)
    holder = rclient.subscribe(topic, "slow", consumer_type=ConsumerType.Shared)
    idle = rclient.subscribe(topic, "idle")
    idle.close()
    produce(rclient, topic, 12)
    delayed = rclient.create_producer(topic, batching_enabled=False)
    delayed.send(b"000012-late", deliver_after=3_600_000)  # delayed messages expire too
    delayed.close()
    assert holder.receive(timeout_millis=5000).data()[:6] == b"000000"  # delivered, never acked
    expired = []
    assert wait_until(lambda: expired.append(expire(rbroker, topic)) or sum(expired) == 2 * 13, timeout_s=5)
    stats = radmin.topic_stats(topic)
    for name in ("slow", "idle"):
        assert stats["subscriptions"][name]["msgBacklog"] == 0
        assert stats["subscriptions"][name]["totalMsgExpired"] == 13
    assert stats["subscriptions"]["slow"]["unackedMessages"] == 0 and stats["backlogSize"] == 0
    trim(rbroker, topic)
    assert radmin.topic_stats(topic)["firstOffset"] == 10
    holder.close()  # what it prefetched is gone with it; nothing expired is delivered again
    again = rclient.subscribe(topic, "slow", consumer_type=ConsumerType.Shared)
    with pytest.raises(Exception, match="no message"):
        again.receive(timeout_millis=300)
    again.close()


def test_namespace_policies_apply_where_the_topic_has_none_and_topic_policies_win(rbroker, rclient, radmin):
    ns = f"public/ret-{uuid.uuid4().hex[:8]}"
    kept, trimmed = f"persistent://{ns}/kept", f"persistent://{ns}/trimmed"
    radmin.create_namespace(ns)  # a namespace must exist before its topics are used, as in Pulsar
    radmin.set_namespace_retention(ns, retention_time_minutes=-1, retention_size_mb=-1)
    radmin.set_namespace_message_ttl(ns, 3600)
    radmin.create_topic(trimmed)
    radmin.set_topic_retention(trimmed, retention_time_minutes=0, retention_size_mb=0)
    radmin.set_topic_message_ttl(trimmed, 0)
    assert radmin.get_namespace_retention(ns) == {"retentionTimeInMinutes": -1, "retentionSizeInMB": -1}
    assert radmin.get_topic_retention(trimmed) == {"retentionTimeInMinutes": 0, "retentionSizeInMB": 0}
    assert (radmin.get_namespace_message_ttl(ns), radmin.get_topic_message_ttl(trimmed)) == (3600, 0)
    for t in (kept, trimmed):
        produce(rclient, t, 12)
        trim(rbroker, t)
    assert radmin.get_topic_retention(kept) is None  # the namespace's applies
    assert radmin.topic_stats(kept)["firstOffset"] == 0
    assert radmin.topic_stats(trimmed)["firstOffset"] == 10
    radmin.remove_namespace_message_ttl(ns)
    assert radmin.get_namespace_message_ttl(ns) is None


@pytest.mark.parametrize("call, match", [
    (lambda a, t: a.set_namespace_retention("public/default", -2, 10), "retentionTimeInMinutes"),
    (lambda a, t: a.set_topic_retention(t, 10, -3), "retentionSizeInMB"),
    (lambda a, t: a.set_topic_retention(t, 0, 10), "use -1 to ignore a limit"),
    (lambda a, t: a.set_namespace_message_ttl("public/default", -1), "messageTTLInSeconds"),
    (lambda a, t: a.set_topic_message_ttl(t, -5), "messageTTLInSeconds"),
])
def test_bad_retention_and_ttl_values_are_refused(radmin, topic, call, match):
    radmin.create_topic(topic)
    with pytest.raises(InvalidConfiguration, match=match):
        call(radmin, topic)
    assert radmin.get_topic_retention(topic) is None and radmin.get_topic_message_ttl(topic) is None


def test_non_integer_values_are_refused_by_the_client(radmin, topic):
    with pytest.raises(ValueError, match="seconds"):
        radmin.set_topic_message_ttl(topic, 1.5)
    with pytest.raises(ValueError, match="retention_size_mb"):
        radmin.set_namespace_retention("public/default", 10, "1G")


def test_policies_on_a_partitioned_topic_apply_to_its_partitions(rbroker, rclient, radmin, topic):
    radmin.create_partitioned_topic(topic, 2)
    radmin.set_topic_message_ttl(topic, 1)
    consumer = rclient.subscribe(topic, "sub")
    producer = rclient.create_producer(topic, batching_enabled=False)
    for i in range(6):
        producer.send(b"m", partition_key=str(i))
    producer.close()
    consumer.close()
    partitions = [f"{topic}-partition-{i}" for i in range(2)]
    assert wait_until(lambda: [expire(rbroker, p) for p in partitions]
                      and radmin.topic_stats(topic)["subscriptions"]["sub"]["msgBacklog"] == 0, timeout_s=5)
    assert radmin.topic_stats(topic)["subscriptions"]["sub"]["totalMsgExpired"] == 6


def test_policies_and_trimmed_data_survive_a_restart(tmp_path):
    topic = "persistent://public/keep/t"
    with Broker(data_dir=tmp_path, port=0, managedLedgerMaxEntriesPerLedger=PER_SEGMENT) as broker:
        with Admin(broker.service_url) as admin, Client(broker.service_url) as client:
            admin.create_namespace("public/keep")
            admin.set_namespace_retention("public/keep", retention_time_minutes=-1, retention_size_mb=-1)
            admin.create_topic(topic)
            admin.set_topic_message_ttl(topic, 120)
            produce(client, topic, 12)
            trim(broker, topic)
            assert admin.topic_stats(topic)["firstOffset"] == 0
            admin.set_topic_retention(topic, retention_time_minutes=0, retention_size_mb=0)
            trim(broker, topic)
            assert admin.topic_stats(topic)["firstOffset"] == 10
    with Broker(data_dir=tmp_path, port=0, managedLedgerMaxEntriesPerLedger=PER_SEGMENT) as broker:
        with Admin(broker.service_url) as admin, Client(broker.service_url) as client:
            assert admin.get_namespace_retention("public/keep") == {"retentionTimeInMinutes": -1,
                                                                    "retentionSizeInMB": -1}
            assert admin.get_topic_retention(topic) == {"retentionTimeInMinutes": 0, "retentionSizeInMB": 0}
            assert admin.get_topic_message_ttl(topic) == 120
            assert admin.topic_stats(topic)["firstOffset"] == 10
            assert first_message(client, topic) == b"000010"


def test_the_broker_checks_expiry_and_retention_by_itself(tmp_path):
    with Broker(data_dir=tmp_path, port=0, managedLedgerMaxEntriesPerLedger=PER_SEGMENT,
                ttlDurationDefaultInSeconds=1, messageExpiryCheckIntervalInSeconds=1,
                retentionCheckIntervalInSeconds=1) as broker:
        with Admin(broker.service_url) as admin, Client(broker.service_url) as client:
            topic = "persistent://public/default/periodic"
            client.subscribe(topic, "forgotten").close()
            produce(client, topic, 12)
            assert wait_until(lambda: admin.topic_stats(topic)["firstOffset"] == 10, timeout_s=15)
            assert admin.topic_stats(topic)["subscriptions"]["forgotten"]["msgBacklog"] == 0
