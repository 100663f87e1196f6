"""PRODUCER, SEND and CLOSE_PRODUCER: the producers of one connection.

Each producer is a :class:`~broker_core.core.producer_session.ProducerSession`, as the gRPC front end's
(access modes, the producer limit, names unique per topic, WaitForExclusive, fencing, the write fault,
receipts in order); this module translates the commands into session calls and the session's events into
frames, and keeps what is the binary protocol's own: producer ids, epochs, schemas. Its schema, when it brings one, is registered in the schema
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

A publish rate that throttles a producer (``publishRate``, :mod:`broker_core.core.publish_throttle`) pauses its
connection: nothing more is read from it until the rate allows, as Pulsar turns the connection's autoread off.

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
from typing import TYPE_CHECKING, NamedTuple

from broker_core.errors import (EncryptionRequired, IncompatibleSchema, NotAllowedError, ProducerBusy,
                                PulsarLikeError)
from broker_core.core.topic_policies import SCHEMA_REQUIRED
from broker_core.protocol import pulsar_api_pb2 as wire
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.server_errors import server_error
from broker_core.protocol.status import wire_message
from broker_core.core.access import AccessMode
from broker_core.core.producer_session import ProducerSession, Receipt, WriteFaults
from broker_core.frontends.pulsar.frames import encode
from broker_core.frontends.pulsar.schema_commands import register
from broker_core.types import TopicName

if TYPE_CHECKING:
    from broker_core.frontends.pulsar.connection import PulsarConnection

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


class PulsarProducer:
    """One producer of a connection: its id and epoch on the wire, and the session's events as frames."""

    __slots__ = ("conn", "producer_id", "epoch", "request_id", "schema_version", "session")

    def __init__(self, conn: "PulsarConnection", producer_id: int, epoch: int, request_id: int,
                 schema_version: bytes | None) -> None:
        self.conn = conn
        self.producer_id = producer_id
        self.epoch = epoch
        self.request_id = request_id
        """The PRODUCER being answered (a client asking again gets the answer under its new id)."""
        self.schema_version = schema_version
        self.session: ProducerSession | None = None

    @property
    def closed(self) -> bool:
        return self.session is None or self.session.closed

    def opened(self, last_sequence_id: int, ready: bool) -> None:
        reply = cmd.CommandProducerSuccess(request_id=self.request_id, producer_name=self.session.name,
                                           last_sequence_id=last_sequence_id, producer_ready=ready)
        if self.schema_version is not None:
            reply.schema_version = self.schema_version
        self.conn.send(T(type=T.PRODUCER_SUCCESS, producer_success=reply))

    def ended(self, error: PulsarLikeError | None) -> None:
        self.conn.producers.end(self)

    def throttled(self, paused: bool) -> None:
        self.conn.throttle(paused)  # the whole connection, as Pulsar's autoread

    def receipts(self, receipts: list[Receipt]) -> None:
        if not receipts:
            return
        frames = []
        for receipt in receipts:
            failure = receipt.failure
            if receipt.duplicate:
                frames.append(self._receipt(receipt, NO_ID, NO_ID))
            elif failure is None:
                frames.append(self._receipt(receipt, receipt.entry.ledger_id, receipt.entry.offset))
            else:
                if not isinstance(failure, PulsarLikeError):
                    from broker_core.frontends.pulsar.connection import unexpected
                    failure = unexpected(failure, self.conn.peer)
                frames.append(send_error(self.producer_id, receipt.sequence_id, failure))
        self.conn.write(b"".join(frames))

    def _receipt(self, receipt: Receipt, ledger_id: int, entry_id: int) -> bytes:
        return encode(T(type=T.SEND_RECEIPT, send_receipt=cmd.CommandSendReceipt(
            producer_id=self.producer_id, sequence_id=receipt.sequence_id,
            highest_sequence_id=receipt.highest_sequence_id,
            message_id=wire.MessageIdData(ledgerId=ledger_id, entryId=entry_id))))


def send_error(producer_id: int, sequence_id: int, exc: PulsarLikeError) -> bytes:
    return encode(T(type=T.SEND_ERROR, send_error=cmd.CommandSendError(
        producer_id=producer_id, sequence_id=sequence_id, error=server_error(exc), message=wire_message(exc))))


class ProducerCommands:
    def __init__(self, conn: "PulsarConnection") -> None:
        self._conn = conn
        self._front = conn.front
        self._producers: dict[int, PulsarProducer] = {}
        self._ended_ids: dict[int, None] = {}
        """Ids of the producers the broker ended (oldest first): SENDs still on their way are dropped."""
        self._registering: dict[int, asyncio.Task] = {}
        """By producer id, the registrations of new schema versions (their PRODUCER is answered after)."""

    def handlers(self) -> dict:
        return {T.PRODUCER: self.producer, T.SEND: self.send, T.CLOSE_PRODUCER: self.close_producer}

    # ------------------------------------------------------------------ PRODUCER
    def producer(self, request: cmd.CommandProducer) -> None:
        existing = self._producers.get(request.producer_id)
        if existing is not None:  # the client asked again (a timeout on its side): the same answer
            if existing.session.ready:
                existing.request_id = request.request_id
                existing.opened(existing.session.last_sequence_id, True)
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
        if topic.policies.encryption_required and not request.encrypted:  # Pulsar refuses it here too
            raise EncryptionRequired(f"Encryption is required in {name}: produce with an encryption key",
                                     topic=str(name))
        if not request.HasField("schema") and topic.policies.schema_validation_enforced \
                and topic.policies.has_schema():  # Pulsar refuses the producer itself, not only its messages
            raise IncompatibleSchema(f"{SCHEMA_REQUIRED}: {name}", topic=str(name))
        initial = request.initial_subscription_name if request.HasField("initial_subscription_name") else ""
        if initial and topic.persistent and initial not in topic.subscriptions:
            # a durable subscription is a consumer's to make: Pulsar (PIP-124) refuses the producer unless its
            # role may consume the topic
            conn.authorize("consume", str(name), initial)
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
        producer = PulsarProducer(conn, request.producer_id, request.epoch, request.request_id, schema_version)
        session = producer.session = ProducerSession(
            topic, request.producer_name, front.producer_names, producer,
            properties={kv.key: kv.value for kv in request.metadata},
            access_mode=ACCESS_MODES[request.producer_access_mode], write_faults=WriteFaults.CLOSE_PRODUCER,
            reconnecting=request.epoch > 0, peer=conn.peer)
        initial = request.initial_subscription_name if request.HasField("initial_subscription_name") else ""

        def registered() -> None:
            self._producers[request.producer_id] = producer
            self._ended_ids.pop(request.producer_id, None)
            front.producers[(topic.topic, session.name)] = producer
            # a non-persistent topic's subscriptions are its consumers' (create_subscription refuses): none made
            if initial and topic.persistent and initial not in topic.subscriptions:
                topic.create_subscription(initial, topic.confirmed_end_offset)

        front.limits.admit(conn.peer, stream=True)
        try:
            try:
                session.open(registered)
            except ProducerBusy:
                if not self._replace(topic.topic, session.name, request.epoch):
                    raise
                session.open(registered)
        except BaseException:
            self._forget(producer)
            raise

    def _replace(self, topic: str, producer_name: str, epoch: int) -> bool:
        """The same producer reconnecting (a higher epoch) before the broker saw its old connection go: end
        the old one. False when the name belongs to another producer."""
        previous = self._front.producers.get((topic, producer_name))
        if previous is None or previous.closed or previous.epoch >= epoch:
            return False
        log.info("event=producer_replaced topic=%s producer=%s epoch=%d", topic, producer_name, epoch)
        previous.conn.producers.end(previous)
        return True

    def end(self, producer: PulsarProducer) -> None:
        """Remove ``producer`` and send CLOSE_PRODUCER (the client reconnects)."""
        if producer.closed:
            return
        self._forget(producer)
        self._ended_ids[producer.producer_id] = None
        if len(self._ended_ids) > MAX_ENDED_IDS:
            del self._ended_ids[next(iter(self._ended_ids))]
        self._conn.send(T(type=T.CLOSE_PRODUCER, close_producer=cmd.CommandCloseProducer(
            producer_id=producer.producer_id, request_id=0)))

    def _forget(self, producer: PulsarProducer) -> None:
        """``producer`` leaves its topic and this connection, and gives back its place in the client limits."""
        session = producer.session
        if self._producers.get(producer.producer_id) is producer:
            del self._producers[producer.producer_id]
        key = (session.topic.topic, session.name)
        if self._front.producers.get(key) is producer:
            del self._front.producers[key]
        if not session.closed:
            session.close()
            self._front.limits.release(self._conn.peer, stream=True)

    def close_producer(self, request: cmd.CommandCloseProducer) -> None:
        producer = self._producers.get(request.producer_id)
        if producer is not None:
            self._forget(producer)
            log.info("event=producer_closed topic=%s producer=%s", producer.session.topic.topic,
                     producer.session.name)
        self._conn.success(request.request_id)

    def connection_closed(self) -> None:
        for producer in list(self._producers.values()):
            self._forget(producer)

    # ------------------------------------------------------------------ SEND
    def send(self, request: cmd.CommandSend, payload: memoryview) -> None:
        producer = self._producers.get(request.producer_id)
        session = producer.session if producer is not None else None
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
            self._conn.write(send_error(request.producer_id, sequence_id, error))
            return
        if request.txnid_most_bits or request.txnid_least_bits:
            self._conn.write(send_error(request.producer_id, sequence_id, NotAllowedError(
                "transactions are not supported by this broker")))
            return
        entries = (SendEntry(payload, sequence_id, highest, request.num_messages),)
        try:
            session.publish(entries)
        except PulsarLikeError as exc:
            session.refuse(entries, exc)
