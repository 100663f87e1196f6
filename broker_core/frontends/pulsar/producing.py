"""PRODUCER, SEND and CLOSE_PRODUCER: the producers of one connection.

A producer is registered on its topic exactly as the gRPC front end registers one (access modes, the
producer limit, names unique per topic); its schema, when it brings one, is registered in the schema
registry and its version returned. ``PRODUCER_SUCCESS`` carries ``last_sequence_id``: the highest sequence
id deduplication has stored for the producer's name (-1 without deduplication), so a producer that
reconnects after a broker restart goes on after what is stored. A ``WaitForExclusive`` producer is answered
``producer_ready=false`` at once and ``PRODUCER_SUCCESS`` again once it is admitted.

A SEND's payload is the entry as the client built it: it is stored as it comes (the topic verifies its CRC,
its metadata's claims and its size, and adds the broker's ``BrokerEntryMetadata`` prefix). Its
``SEND_RECEIPT`` carries the entry's message id ``(ledger = the segment's base offset, entry = the entry's
first offset)`` and leaves once the entry is as durable as ``journalSyncMode`` promises; receipts and
``SEND_ERROR`` leave in the order of the SENDs, as the clients require. A duplicate (deduplication) is
acknowledged with the id ``(-1, -1)``, as Pulsar does.

When the broker ends a producer (fenced by an ``ExclusiveWithFencing`` producer, its topic terminated,
unloaded or deleted) it sends ``CLOSE_PRODUCER``: the client reconnects, and learns why from the answer to
its new ``PRODUCER``. SENDs already on their way for a producer the broker ended are dropped unanswered (the
client sends them again once its producer is back).

A send the topic cannot store (disk full, I/O error: ``PersistenceError``) is not answered with
``SEND_ERROR``: the official clients drop the connection on it, reconnect at once and send again, so their
``send_timeout`` never fires. As Pulsar's broker does, the producer is closed instead (``CLOSE_PRODUCER``,
after the receipts of what was stored before it) while its topic cannot write
(:mod:`broker_core.core.write_fault`). A reconnecting producer (``epoch`` > 0) is then answered
``producer_ready=false`` and ``PRODUCER_SUCCESS`` once the topic can write again; a new one (``epoch`` 0) is
refused with ``ServiceNotReady``. Meanwhile the client's send timer fails its pending sends with a timeout;
once space is freed the producer is ready again within the probe interval and re-sends what is pending.
"""
from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import TYPE_CHECKING, Callable, NamedTuple

from broker_core.errors import (NotAllowedError, PersistenceError, ProducerBusy, PulsarLikeError,
                                ServiceNotReady)
from broker_core.protocol import pulsar_api_pb2 as wire
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.server_errors import server_error
from broker_core.protocol.status import wire_message
from broker_core.core.access import AccessMode
from broker_core.core.producers import ProducerInfo
from broker_core.frontends.pulsar.frames import encode
from broker_core.frontends.pulsar.schema_commands import register
from broker_core.core.write_fault import WriteFault
from broker_core.types import TopicName

if TYPE_CHECKING:
    from broker_core.frontends.pulsar.connection import PulsarConnection
    from broker_core.core.persistent.topic import Accepted

log = logging.getLogger(__name__)

T = cmd.BaseCommand
MAX_ENDED_IDS = 1024
"""How many producer ids ended by the broker a connection remembers (their late SENDs are dropped)."""
NO_ID = (1 << 64) - 1
"""-1 as an unsigned 64-bit field: the ledger and entry of a deduplicated send's receipt."""
ACCESS_MODES = {cmd.Shared: AccessMode.SHARED, cmd.Exclusive: AccessMode.EXCLUSIVE,
                cmd.WaitForExclusive: AccessMode.WAIT_FOR_EXCLUSIVE,
                cmd.ExclusiveWithFencing: AccessMode.EXCLUSIVE_WITH_FENCING}


class SendEntry(NamedTuple):
    """One SEND as the topic's ``publish`` reads it."""

    data: memoryview
    sequence_id: int
    highest_sequence_id: int
    num_messages: int


class ProducerSession:
    """One producer of a connection: its registration on the topic and its receipts, owed in order."""

    __slots__ = ("conn", "producer_id", "topic", "info", "name", "epoch", "ready", "receipts", "request_id",
                 "schema_version", "closed", "closing", "writable")

    def __init__(self, conn: "PulsarConnection", producer_id: int, topic, name: str, epoch: int,
                 request_id: int, schema_version: bytes | None) -> None:
        self.conn = conn
        self.producer_id = producer_id
        self.topic = topic
        self.info: ProducerInfo | None = None
        self.name = name
        self.epoch = epoch
        self.ready = False
        self.receipts: deque[list] = deque()  # [frame bytes or None while waiting]
        self.request_id = request_id
        self.schema_version = schema_version
        self.closed = False
        self.closing = False
        """A send could not be stored: the producer ends once the receipts owed before it have left."""
        self.writable: Callable[[], None] | None = None
        """Held ``producer_ready=false`` until its topic can write again: the callback waiting for that."""

    def opened(self, ready: bool = True) -> None:
        reply = cmd.CommandProducerSuccess(request_id=self.request_id, producer_name=self.name,
                                           last_sequence_id=self.topic.last_sequence_id(self.name),
                                           producer_ready=ready)
        if self.schema_version is not None:
            reply.schema_version = self.schema_version
        self.ready = ready
        self.conn.send(T(type=T.PRODUCER_SUCCESS, producer_success=reply))

    def reserve(self) -> list:
        slot: list = [None]
        self.receipts.append(slot)
        return slot

    def fill(self, slot: list, frames: bytes) -> None:
        slot[0] = frames
        receipts = self.receipts
        while receipts and receipts[0][0] is not None:
            frames = receipts.popleft()[0]
            if frames:
                self.conn.write(frames)
        if self.closing and not receipts and not self.closed:
            self.conn.producers.cannot_store(self)

    def published(self, slot: list, sequence_id: int, highest: int, results: "list[Accepted]",
                  error: BaseException | None) -> None:
        frames = []
        for result in results:
            failure = result.error or (error if result.entry is not None else None)
            if result.duplicate:
                frames.append(self._receipt(sequence_id, highest, NO_ID, NO_ID))
            elif failure is None:
                entry = result.entry
                frames.append(self._receipt(sequence_id, highest, entry.ledger_id, entry.offset))
            elif isinstance(failure, PersistenceError):  # no SEND_ERROR: see the module docstring
                self.closing = True
            else:
                if not isinstance(failure, PulsarLikeError):
                    from broker_core.frontends.pulsar.connection import unexpected
                    failure = unexpected(failure, self.conn.peer)
                frames.append(self.send_error(sequence_id, failure))
        self.fill(slot, b"".join(frames))

    def _receipt(self, sequence_id: int, highest: int, ledger_id: int, entry_id: int) -> bytes:
        return encode(T(type=T.SEND_RECEIPT, send_receipt=cmd.CommandSendReceipt(
            producer_id=self.producer_id, sequence_id=sequence_id, highest_sequence_id=highest,
            message_id=wire.MessageIdData(ledgerId=ledger_id, entryId=entry_id))))

    def send_error(self, sequence_id: int, exc: PulsarLikeError) -> bytes:
        return encode(T(type=T.SEND_ERROR, send_error=cmd.CommandSendError(
            producer_id=self.producer_id, sequence_id=sequence_id, error=server_error(exc),
            message=wire_message(exc))))


class ProducerCommands:
    def __init__(self, conn: "PulsarConnection") -> None:
        self._conn = conn
        self._front = conn.front
        self._sessions: dict[int, ProducerSession] = {}
        self._ended_ids: dict[int, None] = {}
        """Ids of the producers the broker ended (oldest first): SENDs still on their way are dropped."""
        self._registering: dict[int, asyncio.Task] = {}
        """By producer id, the registrations of new schema versions (their PRODUCER is answered after)."""

    def handlers(self) -> dict:
        return {T.PRODUCER: self.producer, T.SEND: self.send, T.CLOSE_PRODUCER: self.close_producer}

    # ------------------------------------------------------------------ PRODUCER
    def producer(self, request: cmd.CommandProducer) -> None:
        existing = self._sessions.get(request.producer_id)
        if existing is not None:  # the client asked again (a timeout on its side): the same answer
            if existing.ready:
                existing.request_id = request.request_id
                existing.opened()
            else:
                raise ProducerBusy(f"producer {request.producer_id} is already being created on this connection")
            return
        if request.producer_id in self._registering:
            raise ProducerBusy(f"producer {request.producer_id} is already being created on this connection")
        if request.txn_enabled:
            raise NotAllowedError("transactions are not supported by this broker: create the producer without"
                                  " enable_transaction")
        front, conn = self._front, self._conn
        name = TopicName.parse(request.topic)
        conn.authorize("produce", str(name))
        if request.producer_access_mode not in ACCESS_MODES:
            raise NotAllowedError(f"unknown producer access mode {request.producer_access_mode}")
        topic = front.registry.get(name, create=True)
        initial = request.initial_subscription_name if request.HasField("initial_subscription_name") else ""
        if initial and topic.persistent and initial not in topic.subscriptions:
            # a durable subscription is a consumer's to make: Pulsar (PIP-124) refuses the producer unless its
            # role may consume the topic
            conn.authorize("consume", str(name))
        if not request.HasField("schema"):
            self._open(request, name, None)
            return
        schema = request.schema
        schema_type = cmd.Schema.Type.Name(schema.type)
        info = front.schemas.find(name, schema_type, schema.schema_data)
        if info is not None:
            self._open(request, name, info.version_bytes)
            return
        # a new schema version is checked and written off the event loop; the producer opens once it is durable
        self._registering[request.producer_id] = asyncio.get_running_loop().create_task(
            self._register_then_open(request, name, schema_type))

    async def _register_then_open(self, request: cmd.CommandProducer, name: TopicName, schema_type: str) -> None:
        try:
            info = await register(self._conn, name, schema_type, request.schema, request.request_id)
            if info is not None:
                self._open(request, name, info.version_bytes)
        finally:
            self._registering.pop(request.producer_id, None)

    def _open(self, request: cmd.CommandProducer, name: TopicName, schema_version: bytes | None) -> None:
        front, conn = self._front, self._conn
        topic = front.registry.get(name, create=True)  # again: it may have been unloaded during a schema's write
        writes: WriteFault | None = topic.writes
        if writes is not None and writes.error is not None and not request.epoch:
            raise ServiceNotReady(f"topic {topic.topic} cannot store messages now"
                                  f" ({getattr(writes.error, 'reason', None) or writes.error.message}): retry once"
                                  " the broker's storage works again")
        producer_name = request.producer_name or front.producer_names.next()
        front.limits.admit(conn.peer, stream=True)
        session = ProducerSession(conn, request.producer_id, topic, producer_name, request.epoch,
                                  request.request_id, schema_version)
        try:
            info, admitted = self._add(topic, session, request)
        except BaseException:
            front.limits.release(conn.peer, stream=True)
            raise
        session.info = info
        self._sessions[request.producer_id] = session
        self._ended_ids.pop(request.producer_id, None)
        front.producers[(topic.topic, producer_name)] = session
        initial = request.initial_subscription_name if request.HasField("initial_subscription_name") else ""
        # a non-persistent topic's subscriptions are its consumers' (create_subscription refuses): none made here
        if initial and topic.persistent and initial not in topic.subscriptions:
            topic.create_subscription(initial, topic.confirmed_end_offset)
        if admitted and writes is not None and not writes.can_write:
            self._hold(session, writes)
            return
        if admitted:
            session.opened()
        else:
            session.opened(ready=False)
            log.info("event=producer_waiting topic=%s producer=%s", topic.topic, producer_name)
            return
        log.info("event=producer_opened topic=%s producer=%s access_mode=%s peer=%s", topic.topic, producer_name,
                 info.access_mode.name, conn.peer)

    def _add(self, topic, session: ProducerSession, request: cmd.CommandProducer) -> tuple[ProducerInfo, bool]:
        mode = ACCESS_MODES[request.producer_access_mode]
        properties = {kv.key: kv.value for kv in request.metadata}

        def add() -> tuple[ProducerInfo, bool]:
            return topic.add_producer(session.name, properties, mode, fence=lambda e: self._ended(session, e),
                                      granted=lambda: self._granted(session))
        try:
            return add()
        except ProducerBusy:
            previous = self._front.producers.get((topic.topic, session.name))
            if previous is None or previous.closed or previous.epoch >= request.epoch:
                raise
            # the same producer reconnecting (a higher epoch) before the broker saw its old connection go
            log.info("event=producer_replaced topic=%s producer=%s epoch=%d", topic.topic, session.name,
                     request.epoch)
            previous.conn.producers.end(previous, None)
            return add()

    def _hold(self, session: ProducerSession, writes: WriteFault) -> None:
        """A reconnecting producer of a topic that cannot write: ``producer_ready=false`` until it can."""
        def writable() -> None:
            session.writable = None
            if not session.closed:
                session.opened()
                log.info("event=producer_opened topic=%s producer=%s after=cannot_write", session.topic.topic,
                         session.name)
        session.writable = writable
        session.opened(ready=False)
        log.info("event=producer_waiting topic=%s producer=%s reason=cannot_write", session.topic.topic,
                 session.name)
        writes.wait(writable)

    def cannot_store(self, session: ProducerSession) -> None:
        """A send of ``session`` could not be stored and the receipts before it have left: close it."""
        log.info("event=producer_disconnected topic=%s producer=%s reason=PersistenceError", session.topic.topic,
                 session.name)
        self.end(session, None)

    def _granted(self, session: ProducerSession) -> None:
        if not session.closed:
            session.opened()
            log.info("event=producer_opened topic=%s producer=%s access_mode=WAIT_FOR_EXCLUSIVE", session.topic.topic,
                     session.name)

    def _ended(self, session: ProducerSession, error: PulsarLikeError) -> None:
        """The topic ends the producer (fenced, terminated, unloaded): tell the client, which reconnects."""
        log.info("event=producer_disconnected topic=%s producer=%s reason=%s", session.topic.topic, session.name,
                 error.code)
        self.end(session, error)

    def end(self, session: ProducerSession, error: PulsarLikeError | None) -> None:
        """Remove ``session`` and send CLOSE_PRODUCER (the client reconnects)."""
        if session.closed:
            return
        self._forget(session)
        self._ended_ids[session.producer_id] = None
        if len(self._ended_ids) > MAX_ENDED_IDS:
            del self._ended_ids[next(iter(self._ended_ids))]
        self._conn.send(T(type=T.CLOSE_PRODUCER, close_producer=cmd.CommandCloseProducer(
            producer_id=session.producer_id, request_id=0)))

    def _forget(self, session: ProducerSession) -> None:
        session.closed = True
        self._sessions.pop(session.producer_id, None)
        key = (session.topic.topic, session.name)
        if self._front.producers.get(key) is session:
            del self._front.producers[key]
        if session.info is not None:
            session.topic.remove_producer(session.info)
        if session.writable is not None:
            session.topic.writes.forget(session.writable)
        self._front.limits.release(self._conn.peer, stream=True)

    def close_producer(self, request: cmd.CommandCloseProducer) -> None:
        session = self._sessions.get(request.producer_id)
        if session is not None:
            self._forget(session)
            log.info("event=producer_closed topic=%s producer=%s", session.topic.topic, session.name)
        self._conn.success(request.request_id)

    def connection_closed(self) -> None:
        for session in list(self._sessions.values()):
            self._forget(session)

    # ------------------------------------------------------------------ SEND
    def send(self, request: cmd.CommandSend, payload: memoryview) -> None:
        session = self._sessions.get(request.producer_id)
        sequence_id = request.sequence_id
        # a batch's messages have consecutive ids unless the request says otherwise (the C++ client does not)
        highest = (request.highest_sequence_id
                   if request.HasField("highest_sequence_id") and request.highest_sequence_id >= sequence_id
                   else sequence_id + max(request.num_messages, 1) - 1)
        if session is None and request.producer_id in self._ended_ids or session is not None and session.closing:
            return  # the client sends it again once its producer is back (see the module docstring)
        if session is None or not session.ready:
            error = NotAllowedError(f"SEND for producer {request.producer_id}, which is not open on this"
                                    " connection: send PRODUCER and wait for PRODUCER_SUCCESS first")
            self._conn.write(ProducerSession(self._conn, request.producer_id, None, "", 0, 0, None)
                             .send_error(sequence_id, error))
            return
        if request.txnid_most_bits or request.txnid_least_bits:
            self._conn.write(session.send_error(sequence_id, NotAllowedError(
                "transactions are not supported by this broker")))
            return
        slot = session.reserve()
        entry = SendEntry(payload, sequence_id, highest, request.num_messages)
        try:
            session.topic.publish(session.info, (entry,), lambda results, error: session.published(
                slot, sequence_id, highest, results, error))
        except PulsarLikeError as exc:
            session.fill(slot, session.send_error(sequence_id, exc))
