"""The gRPC ``Produce`` stream: protobuf in and out over one :class:`~broker_core.core.producer_session.ProducerSession`.

The first request opens the producer on its topic (access mode, WaitForExclusive, fencing: the session's);
each ``send`` is published in slices of :data:`PUBLISH_SLICE` entries and its receipts go back in order. A
send the topic cannot store fails with ``PersistenceError`` (:attr:`WriteFaults.FAIL_SENDS`): the clients
retry it. While a publish rate throttles the producer (:mod:`broker_core.core.publish_throttle`) the stream's
next request is not read (the binary front end pauses the connection; a gRPC stream is the producer's own).
"""
from __future__ import annotations

import asyncio
from typing import AsyncIterator

import grpc

from broker_core.config import BrokerConfig
from broker_core.errors import InvalidMessage, PulsarLikeError
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol.status import error_to_proto
from broker_core.core.access import AccessMode
from broker_core.core.backpressure import Outbox
from broker_core.core.producer_session import ProducerSession, Receipt
from broker_core.core.producers import ProducerNames
from broker_core.core.registry import TopicRegistry
from broker_core.frontends.grpc.streams import bad_request, first_request, serve, unexpected, while_read
from broker_core.types import TopicName

PUBLISH_SLICE = 2048
"""Entries of one SendBatch verified and appended at a time (~17 us each): a 5 MB batch of 160,000 tiny
entries held the event loop 2.7 s in one go; between slices, the loop serves everyone else."""

_ACCESS_MODES = {pb.SHARED: AccessMode.SHARED, pb.EXCLUSIVE: AccessMode.EXCLUSIVE,
                 pb.EXCLUSIVE_WITH_FENCING: AccessMode.EXCLUSIVE_WITH_FENCING,
                 pb.WAIT_FOR_EXCLUSIVE: AccessMode.WAIT_FOR_EXCLUSIVE}


def _replies(receipts: list[Receipt]) -> list[pb.ProduceResponse]:
    """Consecutive successes in one ``Receipts`` response, each failure in its own ``SendFailure``."""
    out: list[pb.ProduceResponse] = []
    done: list[pb.SendReceipt] = []
    for receipt in receipts:
        if receipt.duplicate:
            done.append(pb.SendReceipt(sequence_id=receipt.sequence_id,
                                       highest_sequence_id=receipt.highest_sequence_id, duplicate=True))
            continue
        failure = receipt.failure
        if failure is None:
            entry = receipt.entry
            done.append(pb.SendReceipt(sequence_id=receipt.sequence_id,
                                       highest_sequence_id=receipt.highest_sequence_id,
                                       ledger_id=entry.ledger_id, entry_id=entry.offset))
            continue
        if done:
            out.append(pb.ProduceResponse(receipts=pb.Receipts(receipts=done)))
            done = []
        if not isinstance(failure, PulsarLikeError):
            failure = unexpected(failure)
        out.append(pb.ProduceResponse(failure=pb.SendFailure(sequence_id=receipt.sequence_id,
                                                             error=error_to_proto(failure))))
    if done:
        out.append(pb.ProduceResponse(receipts=pb.Receipts(receipts=done)))
    return out


class _StreamEvents:
    """The session's events as ``ProduceResponse`` messages on the stream's outbox. Each publish holds a
    place in the outbox (:meth:`Outbox.hold`) until its receipts are released."""

    def __init__(self, out: Outbox, config: BrokerConfig) -> None:
        self.out = out
        self.session: ProducerSession | None = None
        self.granted = asyncio.get_running_loop().create_future()
        """Done once the producer may publish, or was ended while it waited."""
        self.reading = asyncio.Event()
        """Set while the stream's requests may be read (cleared while a publish rate throttles it)."""
        self.reading.set()
        self._config = config

    def opened(self, last_sequence_id: int, ready: bool) -> None:
        if not ready:  # WaitForExclusive: the client hears nothing until its turn
            return
        session = self.session
        self.out.put(pb.ProduceResponse(opened=pb.ProducerOpened(
            producer_name=session.name, last_sequence_id=last_sequence_id,
            max_message_size=self._config.maxMessageSize, topic=session.topic.topic)))
        self._wake()

    def ended(self, error: PulsarLikeError | None) -> None:
        # the stream ends now (fenced, topic terminated or unloaded): the client fails later sends
        self.out.put(pb.ProduceResponse(error=error_to_proto(error)))
        self.out.end()
        self.reading.set()
        self._wake()

    def receipts(self, receipts: list[Receipt]) -> None:
        out = self.out
        for reply in _replies(receipts):
            out.put(reply)
        out.release()

    def throttled(self, paused: bool) -> None:
        if paused:
            self.reading.clear()
        else:
            self.reading.set()

    def _wake(self) -> None:
        if not self.granted.done():
            self.granted.set_result(None)


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
        session: ProducerSession | None = None
        try:
            first = await first_request(requests, "open", "produce")
            if first is None:
                return
            name = TopicName.parse(first.open.topic)
            if first.open.access_mode not in _ACCESS_MODES:
                raise InvalidMessage(f"unknown producer access mode {first.open.access_mode}")
            topic = self._registry.get(name, create=True)
            events = _StreamEvents(out, self._registry.config)
            session = events.session = ProducerSession(
                topic, first.open.producer_name, self._names, events, properties=dict(first.open.properties),
                access_mode=_ACCESS_MODES[first.open.access_mode])
            if not session.open():
                await events.granted  # WaitForExclusive: no timeout; a client that gives up cancels the session
                if session.ended:
                    return
            async for request in while_read(requests, out):
                kind = request.WhichOneof("request")
                if session.ended:
                    break
                if kind == "send":
                    entries = request.send.entries
                    for first_entry in range(0, len(entries), PUBLISH_SLICE):
                        if first_entry:
                            await asyncio.sleep(0)  # other clients are served between the slices
                            if session.ended:
                                break
                        out.hold()  # released with the slice's receipts
                        try:
                            session.publish(entries[first_entry:first_entry + PUBLISH_SLICE])
                        except BaseException:
                            out.release()
                            raise
                elif kind == "close":
                    break
                else:
                    raise InvalidMessage(f"unexpected {kind!r} request on an open producer")
                if not events.reading.is_set():  # a publish rate throttles the producer: no more reads for now
                    await events.reading.wait()
            if session.owed:  # a closing producer still gets every receipt it is owed
                drained = asyncio.get_running_loop().create_future()
                session.when_drained(lambda: drained.done() or drained.set_result(None))
                await drained
        except PulsarLikeError as exc:
            bad_request(exc, "produce", peer)
            out.put(pb.ProduceResponse(error=error_to_proto(exc)))
        except (asyncio.CancelledError, grpc.RpcError):
            pass
        except Exception as exc:  # never let one bad stream take the broker down
            out.put(pb.ProduceResponse(error=error_to_proto(unexpected(exc))))
        finally:
            if session is not None:
                session.close()
            out.end()
