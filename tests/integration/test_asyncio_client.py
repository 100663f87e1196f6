"""pulsarlike.asyncio (pulsar-client 3.13's pulsar.asyncio) against our broker, over each transport: produce and
consume, batches, readers, seeks, subscription types, close, cancellation, timeouts and errors."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest

import pulsarlike as pulsar
from pulsarlike.asyncio import Client, PulsarException, _set_future

pytestmark = pytest.mark.transports


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


@pytest.fixture
def url(broker):
    return broker.service_url


def _client(url, transport):
    return Client(url, transport=transport, operation_timeout_seconds=5)


def test_sends_are_received_in_order_and_acknowledged(url, transport, topic):
    async def main():
        client = _client(url, transport)
        producer = await client.create_producer(topic, batching_enabled=False)
        consumer = await client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
        ids = [await producer.send(b"m%d" % i, properties={"k": "v"}, partition_key="pk") for i in range(5)]
        got = []
        for _ in range(5):
            msg = await consumer.receive()
            got.append((msg.data(), msg.message_id(), msg.properties(), msg.partition_key()))
            await consumer.acknowledge(msg)
        await client.close()
        return ids, got

    ids, got = run(main())
    assert [g[0] for g in got] == [b"m%d" % i for i in range(5)]
    assert [g[1] for g in got] == ids
    assert all(isinstance(i, pulsar.MessageId) for i in ids)
    assert got[0][2:] == ({"k": "v"}, "pk")


def test_concurrent_sends_share_one_batch_and_flush_sends_it(url, transport, topic):
    async def main():
        client = _client(url, transport)
        producer = await client.create_producer(topic, batching_max_messages=10,
                                                batching_max_publish_delay_ms=60000)
        tasks = [asyncio.create_task(producer.send(b"b%d" % i)) for i in range(3)]
        done, _ = await asyncio.wait(tasks, timeout=0.3)
        assert not done  # held in the open batch
        await producer.flush()
        ids = [t.result() for t in tasks]
        assert producer.last_sequence_id() == 2
        await client.close()
        return ids

    ids = run(main())
    assert {(i.ledger_id(), i.entry_id()) for i in ids} == {(ids[0].ledger_id(), ids[0].entry_id())}
    assert [i.batch_index() for i in ids] == [0, 1, 2]


def test_a_cancelled_receive_leaves_the_message_for_the_next(url, transport, topic):
    async def main():
        client = _client(url, transport)
        consumer = await client.subscribe(topic, "sub")
        producer = await client.create_producer(topic)
        waiting = asyncio.create_task(consumer.receive())
        await asyncio.sleep(0.05)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await producer.send(b"kept")
        with pytest.raises(asyncio.TimeoutError):  # a timed out receive takes nothing either
            await asyncio.wait_for(consumer.receive(), 0.0)
        msg = await asyncio.wait_for(consumer.receive(), 5)
        await client.close()
        return msg.data()

    assert run(main()) == b"kept"


def test_receive_times_out_with_wait_for_and_the_loop_keeps_running(url, transport, topic):
    async def main():
        client = _client(url, transport)
        consumer = await client.subscribe(topic, "sub")
        ticks = 0

        async def tick():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        ticker = asyncio.create_task(tick())
        start = time.monotonic()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(consumer.receive(), 0.3)
        elapsed = time.monotonic() - start
        ticker.cancel()
        await client.close()
        return elapsed, ticks

    elapsed, ticks = run(main())
    assert 0.25 < elapsed < 2
    assert ticks >= 10  # the receive never blocked the loop


def test_a_receive_waits_without_a_thread_of_its_own(url, transport, topic):
    async def main():
        client = _client(url, transport)
        consumer = await client.subscribe(topic, "sub")
        producer = await client.create_producer(topic)
        before = threading.active_count()
        waiters = [asyncio.create_task(consumer.receive()) for _ in range(20)]
        await asyncio.sleep(0.1)
        during = threading.active_count()
        for i in range(20):
            await producer.send(b"w%d" % i)
        got = sorted((await asyncio.gather(*waiters)), key=lambda m: m.data())
        await client.close()
        return before, during, got

    before, during, got = run(main())
    assert during == before
    assert len({m.data() for m in got}) == 20


@pytest.mark.parametrize("ctype", [pulsar.ConsumerType.Exclusive, pulsar.ConsumerType.Shared,
                                   pulsar.ConsumerType.Failover, pulsar.ConsumerType.KeyShared])
def test_each_subscription_type_receives(url, transport, topic, ctype):
    async def main():
        client = _client(url, transport)
        consumer = await client.subscribe(topic, "sub", consumer_type=ctype)
        producer = await client.create_producer(topic)
        for i in range(4):
            await producer.send(b"x%d" % i, partition_key="k%d" % i)
        got = [(await consumer.receive()).data() for _ in range(4)]
        await client.close()
        return got

    assert sorted(run(main())) == [b"x%d" % i for i in range(4)]


def test_a_negatively_acknowledged_message_comes_again(url, transport, topic):
    async def main():
        client = _client(url, transport)
        consumer = await client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared,
                                          negative_ack_redelivery_delay_ms=100)
        producer = await client.create_producer(topic)
        for i in range(3):
            await producer.send(b"n%d" % i)
        msgs = [await consumer.receive() for _ in range(3)]
        await consumer.acknowledge(msgs[1])
        await consumer.acknowledge(msgs[2].message_id())
        await consumer.negative_acknowledge(msgs[0])
        again = await asyncio.wait_for(consumer.receive(), 5)
        await client.close()
        return again.data(), again.redelivery_count()

    assert run(main()) == (b"n0", 1)


def test_a_cumulative_acknowledgement_covers_what_came_before(url, transport, topic):
    async def main():
        client = _client(url, transport)
        consumer = await client.subscribe(topic, "sub")
        producer = await client.create_producer(topic)
        for i in range(3):
            await producer.send(b"c%d" % i)
        msgs = [await consumer.receive() for _ in range(3)]
        await consumer.acknowledge_cumulative(msgs[-1])
        await consumer.close()
        consumer = await client.subscribe(topic, "sub")
        await producer.send(b"final")
        final = (await asyncio.wait_for(consumer.receive(), 5)).data()
        await client.close()
        return final

    assert run(main()) == b"final"


def test_seek_to_a_message_id_and_to_a_time(url, transport, topic):
    async def main():
        client = _client(url, transport)
        producer = await client.create_producer(topic)
        ids = [await producer.send(b"s%d" % i) for i in range(3)]
        at = int(time.time() * 1000)
        await asyncio.sleep(0.01)
        for i in range(3, 5):
            await producer.send(b"s%d" % i)
        consumer = await client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest,
                                          start_message_id_inclusive=True)
        await consumer.seek(ids[1])
        after_id = (await consumer.receive()).data()
        await consumer.seek(at)
        after_time = (await consumer.receive()).data()
        with pytest.raises(ValueError):
            await consumer.seek("s1")
        await client.close()
        return after_id, after_time

    assert run(main()) == (b"s1", b"s3")


def test_reader_reads_seeks_and_knows_what_is_available(url, transport, topic):
    async def main():
        client = _client(url, transport)
        producer = await client.create_producer(topic)
        ids = [await producer.send(b"r%d" % i) for i in range(4)]
        reader = await client.create_reader(topic, pulsar.MessageId.earliest, start_message_id_inclusive=True)
        assert reader.topic() == topic and reader.is_connected()
        read = [(await reader.read_next()).data() for _ in range(4)]
        assert not await reader.has_message_available()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(reader.read_next(), 0.2)
        await reader.seek(ids[1])
        after_seek = (await reader.read_next()).data()
        latest = await client.create_reader(topic, pulsar.MessageId.latest)
        await producer.send(b"new")
        new = (await latest.read_next()).data()
        await reader.close()
        assert not reader.is_connected()
        with pytest.raises(PulsarException) as closed:
            await reader.close()
        await client.close()
        return read, after_seek, new, closed.value.error()

    read, after_seek, new, error = run(main())
    assert read == [b"r%d" % i for i in range(4)]
    assert after_seek == b"r1"
    assert new == b"new"
    assert error == pulsar.Result.AlreadyClosed


def test_errors_are_pulsar_exceptions_with_their_result(url, transport, topic):
    async def main():
        client = _client(url, transport)
        producer = await client.create_producer(topic)
        with pytest.raises(PulsarException) as too_big:
            await producer.send(b"x" * (6 * 1024 * 1024))
        await producer.close()
        assert not producer.is_connected()
        with pytest.raises(PulsarException) as closed:
            await producer.close()
        with pytest.raises(PulsarException) as send_closed:
            await producer.send(b"late")
        consumer = await client.subscribe(topic, "excl")
        with pytest.raises(PulsarException) as busy:
            await client.subscribe(topic, "excl")
        with pytest.raises(ValueError):
            await client.subscribe([topic], "s", is_pattern_topic=True)
        with pytest.raises(ValueError):
            await client.create_reader(topic, "earliest")
        await consumer.close()
        with pytest.raises(PulsarException) as receive_closed:
            await consumer.receive()
        await client.close()
        return [e.value.error() for e in (too_big, closed, send_closed, busy, receive_closed)]

    assert run(main()) == [pulsar.Result.MessageTooBig, pulsar.Result.AlreadyClosed, pulsar.Result.AlreadyClosed,
                           pulsar.Result.ConsumerBusy, pulsar.Result.AlreadyClosed]


def test_closing_the_consumer_ends_a_pending_receive(url, transport, topic):
    async def main():
        client = _client(url, transport)
        consumer = await client.subscribe(topic, "sub")
        waiting = asyncio.create_task(consumer.receive())
        await asyncio.sleep(0.05)
        await consumer.close()
        with pytest.raises(PulsarException) as ended:
            await asyncio.wait_for(waiting, 5)
        await client.close()
        return ended.value.error()

    assert run(main()) == pulsar.Result.AlreadyClosed


def test_partitions_unsubscribe_shutdown_and_close(url, transport, topic, broker):
    async def main():
        client = _client(url, transport)
        assert await client.get_topic_partitions(topic) == [topic]
        consumer = await client.subscribe(topic, "gone")
        await consumer.unsubscribe()
        consumer = await client.subscribe(topic, "gone")  # the name is free again
        producer = await client.create_producer(topic)
        client.shutdown()
        with pytest.raises(PulsarException) as after:
            await producer.send(b"x")
        await client.close()  # after shutdown: nothing to do
        return after.value.error()

    assert run(main()) == pulsar.Result.AlreadyClosed


def test_set_future_leaves_a_done_future_alone():
    async def main():
        loop = asyncio.get_running_loop()
        cancelled, resolved, failed = loop.create_future(), loop.create_future(), loop.create_future()
        cancelled.cancel()
        resolved.set_result("first")
        _set_future(cancelled, pulsar.Result.Ok, None)
        _set_future(resolved, pulsar.Result.Ok, "late")
        _set_future(failed, pulsar.Result.Timeout, None)
        await asyncio.sleep(0)
        with pytest.raises(PulsarException) as error:
            await failed
        return cancelled.cancelled(), resolved.result(), str(error.value)

    assert run(main()) == (True, "first", "3 Timeout")
