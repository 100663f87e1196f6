"""Streams' back-pressure, driven without gRPC (whose transport would take some replies off the queue):
while a stream's replies wait unread beyond streamReplyQueueMaxMessages, the broker reads no more of its
requests; once they are read, it goes on and every request gets its reply, in order."""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from broker_core.clock import SYSTEM_CLOCK
from broker_core.config import BrokerConfig
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol import codec, pulsar_api_pb2
from broker_core.core.producers import ProducerNames
from broker_core.frontends.grpc.servicer import BrokerServicer
from broker_core.core.registry import TopicRegistry

SENDS = 200
BOUND = 20


class PeerContext:
    def peer(self) -> str:
        return "ipv4:127.0.0.1:40000"


def send(i: int) -> pb.ProduceRequest:
    entry = codec.encode_entry(pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=i, publish_time=1),
                               b"payload")
    return pb.ProduceRequest(send=pb.SendBatch(entries=[pb.SendEntry(
        sequence_id=i, highest_sequence_id=i, num_messages=1, data=entry)]))


def test_a_producer_stream_reads_no_more_requests_while_its_receipts_wait_unread(tmp_path) -> None:
    pulled = 0

    async def requests():
        nonlocal pulled
        pulled += 1
        yield pb.ProduceRequest(open=pb.ProducerOpen(topic="persistent://public/default/bp"))
        for i in range(SENDS):
            pulled += 1
            yield send(i)

    async def scenario() -> tuple[int, list[int]]:
        config = BrokerConfig(journalSyncMode="never", streamReplyQueueMaxMessages=BOUND)
        with ThreadPoolExecutor(2) as executor:
            registry = TopicRegistry(tmp_path, config, executor, SYSTEM_CLOCK)
            replies = BrokerServicer(registry, ProducerNames("test")).Produce(requests(), PeerContext())
            assert (await anext(replies)).WhichOneof("response") == "opened"
            for _ in range(10):  # let the session run as far as it may (no timing: it never waits on time)
                await asyncio.sleep(0)
            stopped_at = pulled
            receipts: list[int] = []
            async for reply in replies:
                receipts.extend(r.sequence_id for r in reply.receipts.receipts)
                if len(receipts) == SENDS:
                    break
            await replies.aclose()
            await registry.close()
        return stopped_at, receipts

    stopped_at, receipts = asyncio.run(scenario())
    assert stopped_at <= BOUND + 1  # the open request and the sends whose receipts fill the queue
    assert receipts == list(range(SENDS))


def test_a_consumer_stream_reads_no_more_requests_while_its_replies_wait_unread(tmp_path) -> None:
    pulled = 0

    async def requests():
        nonlocal pulled
        pulled += 1
        yield pb.ConsumeRequest(subscribe=pb.Subscribe(
            topic="persistent://public/default/bp", subscription="s", sub_type=pb.EXCLUSIVE_SUB, durable=True))
        for _ in range(SENDS):  # each acknowledges a message never sent: a warning reply each
            pulled += 1
            yield pb.ConsumeRequest(ack=pb.Ack(ack_type=pb.INDIVIDUAL, ranges=[pb.OffsetRange(start=5, end=6)]))

    async def scenario() -> tuple[int, int]:
        config = BrokerConfig(journalSyncMode="never", streamReplyQueueMaxMessages=BOUND)
        with ThreadPoolExecutor(2) as executor:
            registry = TopicRegistry(tmp_path, config, executor, SYSTEM_CLOCK)
            replies = BrokerServicer(registry, ProducerNames("test")).Consume(requests(), PeerContext())
            assert (await anext(replies)).WhichOneof("response") == "subscribed"
            for _ in range(10):
                await asyncio.sleep(0)
            stopped_at = pulled
            warnings = 0
            async for reply in replies:
                warnings += reply.WhichOneof("response") == "warning"
                if warnings == SENDS:
                    break
            await replies.aclose()
            await registry.close()
        return stopped_at, warnings

    stopped_at, warnings = asyncio.run(scenario())
    assert stopped_at <= BOUND + 1 and warnings == SENDS
