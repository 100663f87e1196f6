"""The gRPC ``Produce`` stream: one producer's session, protobuf in and out.

The first request opens the producer on its topic (access mode, WaitForExclusive, fencing); each ``send``
is published in slices of :data:`PUBLISH_SLICE` entries and its receipts go back in order.
"""
from __future__ import annotations

import asyncio
import logging
from typing import AsyncIterator

import grpc

from broker_core.errors import InvalidMessage, ProducerFenced, PulsarLikeError
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol.status import error_to_proto
from broker_core.core.access import AccessMode
from broker_core.core.backpressure import OrderedReplies, Outbox
from broker_core.core.persistent.topic import Accepted
from broker_core.core.producers import ProducerInfo, ProducerNames
from broker_core.core.registry import TopicRegistry
from broker_core.core.topic_protocol import Topic
from broker_core.frontends.grpc.streams import bad_request, first_request, serve, unexpected, while_read
from broker_core.types import TopicName

log = logging.getLogger("broker_core.frontends.grpc.servicer")

PUBLISH_SLICE = 2048
"""Entries of one SendBatch verified and appended at a time (~17 us each): a 5 MB batch of 160,000 tiny
entries held the event loop 2.7 s in one go; between slices, the loop serves everyone else."""

_ACCESS_MODES = {pb.SHARED: AccessMode.SHARED, pb.EXCLUSIVE: AccessMode.EXCLUSIVE,
                 pb.EXCLUSIVE_WITH_FENCING: AccessMode.EXCLUSIVE_WITH_FENCING,
                 pb.WAIT_FOR_EXCLUSIVE: AccessMode.WAIT_FOR_EXCLUSIVE}


def _replies(results: list[Accepted], error: BaseException | None) -> list[pb.ProduceResponse]:
    out: list[pb.ProduceResponse] = []
    receipts: list[pb.SendReceipt] = []
    for result in results:
        if result.duplicate:
            receipts.append(pb.SendReceipt(sequence_id=result.sequence_id,
                                           highest_sequence_id=result.highest_sequence_id, duplicate=True))
            continue
        failure = result.error or (error if result.entry is not None else None)
        if failure is None:
            entry = result.entry
            receipts.append(pb.SendReceipt(sequence_id=result.sequence_id,
                                           highest_sequence_id=result.highest_sequence_id,
                                           ledger_id=entry.ledger_id, entry_id=entry.offset))
            continue
        if receipts:
            out.append(pb.ProduceResponse(receipts=pb.Receipts(receipts=receipts)))
            receipts = []
        if not isinstance(failure, PulsarLikeError):
            failure = unexpected(failure)
        out.append(pb.ProduceResponse(failure=pb.SendFailure(sequence_id=result.sequence_id,
                                                             error=error_to_proto(failure))))
    if receipts:
        out.append(pb.ProduceResponse(receipts=pb.Receipts(receipts=receipts)))
    return out


class ProduceStreams:
    """The ``Produce`` RPC."""

    def __init__(self, registry: TopicRegistry, producer_names: ProducerNames, outbox) -> None:
        self._registry = registry
        self._names = producer_names
        self._outbox = outbox

    async def Produce(self, request_iterator, context) -> AsyncIterator[pb.ProduceResponse]:
        out = self._outbox()
        async for response in serve(self._produce_session(request_iterator, out, context.peer()), out):
            yield response

    async def _produce_session(self, requests, out: Outbox, peer: str) -> None:
        topic: Topic | None = None
        info: ProducerInfo | None = None
        try:
            first = await first_request(requests, "open", "produce")
            if first is None:
                return
            name = TopicName.parse(first.open.topic)
            if first.open.access_mode not in _ACCESS_MODES:
                raise InvalidMessage(f"unknown producer access mode {first.open.access_mode}")
            topic = self._registry.get(name, create=True)
            producer_name = first.open.producer_name or self._names.next()
            granted = asyncio.get_running_loop().create_future()

            def fence(error: PulsarLikeError) -> None:
                # The session ends now (fenced, topic terminated or unloaded): the client fails later sends.
                fenced.append(error)
                out.put(pb.ProduceResponse(error=error_to_proto(error)))
                out.end()
                log.info("event=producer_%s topic=%s producer=%s", "fenced" if isinstance(error, ProducerFenced)
                         else "disconnected", name, producer_name)

            fenced: list[PulsarLikeError] = []
            info, admitted = topic.add_producer(
                producer_name, dict(first.open.properties), _ACCESS_MODES[first.open.access_mode],
                fence=fence, granted=lambda: granted.done() or granted.set_result(None))
            if not admitted:
                log.info("event=producer_waiting topic=%s producer=%s", topic.topic, producer_name)
                await granted  # WaitForExclusive: no timeout; a client that gives up cancels the session
                if fenced:
                    return
            out.put(pb.ProduceResponse(opened=pb.ProducerOpened(
                producer_name=producer_name, last_sequence_id=topic.last_sequence_id(producer_name),
                max_message_size=self._registry.config.maxMessageSize, topic=topic.topic)))
            log.info("event=producer_opened topic=%s producer=%s access_mode=%s", topic.topic, producer_name,
                     info.access_mode.name)
            replies = OrderedReplies(out)
            async for request in while_read(requests, out):
                kind = request.WhichOneof("request")
                if fenced:
                    break
                if kind == "send":
                    entries = request.send.entries
                    for first_entry in range(0, len(entries), PUBLISH_SLICE):
                        if first_entry:
                            await asyncio.sleep(0)  # other clients are served between the slices
                            if fenced:
                                break
                        slot = replies.reserve()
                        topic.publish(info, entries[first_entry:first_entry + PUBLISH_SLICE],
                                      lambda results, error, slot=slot: replies.fill(slot, _replies(results, error)))
                elif kind == "close":
                    break
                else:
                    raise InvalidMessage(f"unexpected {kind!r} request on an open producer")
            await replies.drained()  # a closing producer still gets every receipt it is owed
        except PulsarLikeError as exc:
            bad_request(exc, "produce", peer)
            out.put(pb.ProduceResponse(error=error_to_proto(exc)))
        except (asyncio.CancelledError, grpc.RpcError):
            pass
        except Exception as exc:  # never let one bad stream take the broker down
            out.put(pb.ProduceResponse(error=error_to_proto(unexpected(exc))))
        finally:
            if topic is not None and info is not None:
                topic.remove_producer(info)
            out.end()
