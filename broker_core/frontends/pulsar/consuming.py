"""SUBSCRIBE, FLOW, MESSAGE, ACK, REDELIVER_UNACKNOWLEDGED_MESSAGES, SEEK, UNSUBSCRIBE, CLOSE_CONSUMER,
GET_LAST_MESSAGE_ID and CONSUMER_STATS: the consumers of one connection.

A consumer joins its subscription exactly as a gRPC one does (the same dispatch ``Consumer``, subscription
types, Key_Shared policies, permits and back-pressure gate), and what dispatch hands it leaves as MESSAGE
frames: the stored entry as it is, behind its command (without the broker's ``BrokerEntryMetadata``
prefix unless the client asked for it at CONNECT), with the id ``(segment base offset, entry's first
offset, partition)``, the redelivery count and, for a partly acknowledged batch, its ack set.

Acknowledgments are applied by :mod:`.acknowledgments` (at a cost linear in the frame, bounded per ACK), for
any message of the topic, held by this consumer or not (as Pulsar's: a client re-sends its pending acks on
reconnecting). An id past the topic's end, or past a bound of the ACK, changes nothing: it is answered with
an error when the client asked for ACK_RESPONSE, and logged otherwise (one line per ACK, at most one per
interval and connection).

The session itself (start positions, permits, end of topic, seek order) is the core's
:class:`~broker_core.core.consumer_session.ConsumerSession`; this module translates commands and message
ids into its calls, and :class:`~.consumer_session.PulsarConsumer` its events into frames. A seek closes the
subscription's consumers (CLOSE_CONSUMER), moves the subscription, then answers, in Pulsar's order; they
resubscribe and receive from the new position, with redelivery count 0. A reader's subscription outlives
that gap (for the core's ``READER_RESUBSCRIBE_S``), so its new position holds when it comes back.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from broker_core.errors import ConsumerBusy, InvalidMessage, NotAllowedError, ServiceNotReady
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.server_errors import server_error
from broker_core.protocol.status import wire_message
from broker_core.core.admin.values import string_map
from broker_core.core.admin.last_message import last_message, mark_delete_message
from broker_core.core.consumer_session import (EARLIEST, LATEST, MAX_PERMITS, KeySharedPolicy, Start, SubType,
                                               key_shared_policy)
from broker_core.frontends.pulsar.acknowledgments import acknowledge
from broker_core.frontends.pulsar.consumer_session import PulsarConsumer
from broker_core.frontends.pulsar.message_ids import is_earliest, is_latest, message_id, signed
from broker_core.frontends.pulsar.schema_commands import check_for_consumer
from broker_core.types import TopicName

if TYPE_CHECKING:
    from broker_core.frontends.pulsar.connection import PulsarConnection

log = logging.getLogger(__name__)

T = cmd.BaseCommand
SUB_TYPES = {cmd.CommandSubscribe.Exclusive: SubType.EXCLUSIVE, cmd.CommandSubscribe.Shared: SubType.SHARED,
             cmd.CommandSubscribe.Failover: SubType.FAILOVER, cmd.CommandSubscribe.Key_Shared: SubType.KEY_SHARED}


def _key_shared_policy(request: cmd.CommandSubscribe) -> KeySharedPolicy:
    if not request.HasField("keySharedMeta"):
        return KeySharedPolicy()
    meta = request.keySharedMeta
    return key_shared_policy(meta.keySharedMode == cmd.STICKY, meta.allowOutOfOrderDelivery,
                             ((r.start, r.end) for r in meta.hashRanges))


class ConsumerCommands:
    def __init__(self, conn: "PulsarConnection") -> None:
        self._conn = conn
        self._front = conn.front
        self._sessions: dict[int, PulsarConsumer] = {}
        self._registering: dict[int, asyncio.Task] = {}
        """By consumer id, the registrations of new schema versions (their SUBSCRIBE is answered after)."""

    def handlers(self) -> dict:
        return {T.SUBSCRIBE: self.subscribe, T.FLOW: self.flow, T.ACK: self.ack,
                T.REDELIVER_UNACKNOWLEDGED_MESSAGES: self.redeliver, T.SEEK: self.seek,
                T.UNSUBSCRIBE: self.unsubscribe, T.CLOSE_CONSUMER: self.close_consumer,
                T.GET_LAST_MESSAGE_ID: self.last_message_id, T.CONSUMER_STATS: self.consumer_stats}

    def _session(self, consumer_id: int) -> PulsarConsumer:
        session = self._sessions.get(consumer_id)
        if session is None:
            raise NotAllowedError(f"no consumer {consumer_id} on this connection: SUBSCRIBE first")
        return session

    # ------------------------------------------------------------------ SUBSCRIBE
    def subscribe(self, request: cmd.CommandSubscribe) -> None:
        if request.consumer_id in self._sessions:  # asked again (a timeout on the client's side)
            self._conn.success(request.request_id)
            return
        if request.consumer_id in self._registering:
            raise ConsumerBusy(f"consumer {request.consumer_id} is already being created on this connection")
        if request.replicate_subscription_state:
            raise NotAllowedError("replicated subscriptions are not supported: this broker has no"
                                  " geo-replication; subscribe without replicate_subscription_state")
        if not request.subscription:
            raise InvalidMessage("subscription name must not be empty")
        if request.subType not in SUB_TYPES:
            raise InvalidMessage(f"unknown subscription type {request.subType}")
        front, conn = self._front, self._conn
        name = TopicName.parse(request.topic)
        conn.authorize("consume", str(name), request.subscription)  # its subscription permissions and auth mode
        front.registry.get(name, create=request.force_topic_creation)
        schema = request.schema
        if request.HasField("schema") and schema.type != 0:  # 0: None, a consumer of bytes
            schema_type = cmd.Schema.Type.Name(schema.type)
            if front.schemas.find(name, schema_type, schema.schema_data) is None:
                # checked (a new version written only on a topic without a schema) off the event loop; then it joins
                self._registering[request.consumer_id] = asyncio.get_running_loop().create_task(
                    self._register_then_join(request, name, schema_type))
                return
        self._join(request, name)

    async def _register_then_join(self, request: cmd.CommandSubscribe, name: TopicName, schema_type: str) -> None:
        try:
            if await check_for_consumer(self._conn, name, schema_type, request.schema, request.request_id):
                self._join(request, name)
        finally:
            self._registering.pop(request.consumer_id, None)

    def _join(self, request: cmd.CommandSubscribe, name: TopicName) -> None:
        front, conn = self._front, self._conn
        topic = front.registry.get(name, create=request.force_topic_creation)
        sub_type = SUB_TYPES[request.subType]
        front.limits.admit(conn.peer, stream=True)
        consumer = PulsarConsumer(conn, request.consumer_id, topic, request.request_id)
        if request.HasField("consumer_epoch"):
            consumer.epoch = request.consumer_epoch
        session = consumer.session
        if conn.paused:
            session.pause()
        try:
            session.subscribe(topic, request.subscription, sub_type, self._start(request, front.clock),
                              consumer_id=next(front.consumer_ids),
                              consumer_name=request.consumer_name or f"consumer-{request.consumer_id}",
                              durable=request.durable, priority_level=request.priority_level,
                              key_shared=_key_shared_policy(request), read_compacted=request.read_compacted,
                              refuse_damaged=not conn.consumer_errors,
                              properties=string_map({kv.key: kv.value for kv in request.subscription_properties},
                                                    "subscription_properties"))
        except BaseException:
            front.limits.release(conn.peer, stream=True)
            raise

    def joined(self, consumer: PulsarConsumer) -> None:
        """``consumer`` subscribed (its SUCCESS goes out next)."""
        self._sessions[consumer.consumer_id] = consumer

    def left(self, consumer: PulsarConsumer) -> None:
        """``consumer``'s session is over (closed by the client or the broker, or its connection went)."""
        if self._sessions.get(consumer.consumer_id) is consumer:
            del self._sessions[consumer.consumer_id]
        self._front.limits.release(self._conn.peer, stream=True)

    @staticmethod
    def _start(request: cmd.CommandSubscribe, clock) -> Start:
        """Where a new subscription starts: a reader's ``start_message_id`` (its entry: the client skips what
        is before the id in it), else the initial position, else ``start_message_rollback_duration_sec``
        ago."""
        if not request.durable and request.HasField("start_message_id"):
            mid = request.start_message_id
            if is_earliest(mid):
                return EARLIEST
            if is_latest(mid):
                return LATEST
            return Start.at(signed(mid.entryId))
        if request.start_message_rollback_duration_sec:
            return Start.published(clock.now_ms() - request.start_message_rollback_duration_sec * 1000)
        if request.initialPosition == cmd.CommandSubscribe.Earliest:
            return EARLIEST
        return LATEST

    # ------------------------------------------------------------------ FLOW and ACK
    def _gone(self, kind: str, consumer_id: int) -> None:
        # a consumer the broker just closed (a seek, an unload) may still flush its acks and permits, as Pulsar
        # ignores them
        log.debug("event=command_for_closed_consumer peer=%s command=%s consumer=%d", self._conn.peer, kind,
                  consumer_id)

    def flow(self, request: cmd.CommandFlow) -> None:
        consumer = self._sessions.get(request.consumer_id)
        if consumer is None:
            return self._gone("FLOW", request.consumer_id)
        try:
            consumer.session.flow(request.messagePermits)
        except InvalidMessage:
            self._conn.abort(f"FLOW would give consumer {request.consumer_id} more than {MAX_PERMITS} permits")

    def ack(self, request: cmd.CommandAck) -> None:
        consumer = self._sessions.get(request.consumer_id)
        if consumer is None and not request.HasField("request_id"):
            return self._gone("ACK", request.consumer_id)
        consumer = self._session(request.consumer_id)
        refusals = acknowledge(consumer.session, request.ack_type, request.message_id)
        error = refusals.as_error(consumer.topic.topic)
        if request.HasField("request_id"):
            reply = cmd.CommandAckResponse(consumer_id=request.consumer_id, request_id=request.request_id)
            if error is not None:
                reply.error, reply.message = server_error(error), wire_message(error)
            self._conn.send(T(type=T.ACK_RESPONSE, ackResponse=reply))
        elif error is not None:  # one line for the frame (and at most one per interval), not one per id
            self._conn.log_limits.warning("bad_ack", "event=bad_ack peer=%s topic=%s consumer=%s ids=%d error=%s",
                                          self._conn.peer, consumer.topic.topic, request.consumer_id,
                                          refusals.count, error.message, count=refusals.count)

    def redeliver(self, request: cmd.CommandRedeliverUnacknowledgedMessages) -> None:
        consumer = self._sessions.get(request.consumer_id)
        if consumer is None:
            return self._gone("REDELIVER_UNACKNOWLEDGED_MESSAGES", request.consumer_id)
        if request.HasField("consumer_epoch"):
            consumer.epoch = request.consumer_epoch
        if not request.message_ids:
            consumer.session.redeliver()
        else:
            consumer.session.redeliver_entries(mid.entryId for mid in request.message_ids)

    # ------------------------------------------------------------------ SEEK, UNSUBSCRIBE, CLOSE_CONSUMER
    def seek(self, request: cmd.CommandSeek) -> None:
        consumer = self._session(request.consumer_id)
        topic = consumer.session.positions  # a compacted reader's earliest and times are the compacted view's
        if request.HasField("message_publish_time"):
            offset = topic.offset_for_timestamp(request.message_publish_time)
        elif request.HasField("message_id"):
            mid = request.message_id
            if is_earliest(mid):
                offset = topic.start_offset
            elif is_latest(mid):
                offset = topic.confirmed_end_offset
            else:
                offset = signed(mid.entryId) + max(mid.batch_index, 0)
        else:
            raise InvalidMessage("SEEK needs a message_id or a message_publish_time")
        # Pulsar's order: the subscription's consumers are closed (CLOSE_CONSUMER) before the cursor moves, and
        # the SEEK is answered last (see ConsumerSession.seek)
        consumer.session.seek(offset, lambda: self._conn.success(request.request_id), close_consumers=True)

    def unsubscribe(self, request: cmd.CommandUnsubscribe) -> None:
        consumer = self._session(request.consumer_id)
        consumer.session.unsubscribe(force=request.force)
        self.left(consumer)
        self._conn.success(request.request_id)

    def close_consumer(self, request: cmd.CommandCloseConsumer) -> None:
        consumer = self._sessions.get(request.consumer_id)
        if consumer is not None:
            consumer.session.close()
            self.left(consumer)
        self._conn.success(request.request_id)

    def connection_closed(self) -> None:
        for consumer in list(self._sessions.values()):
            consumer.session.close()
            self.left(consumer)

    def writable(self, writable: bool) -> None:
        for consumer in self._sessions.values():
            if writable:
                consumer.session.resume()
            else:
                consumer.session.pause()

    # ------------------------------------------------------------------ GET_LAST_MESSAGE_ID, CONSUMER_STATS
    def last_message_id(self, request: cmd.CommandGetLastMessageId) -> None:
        session = self._session(request.consumer_id)
        reply = cmd.CommandGetLastMessageIdResponse(request_id=request.request_id)
        last, mark_delete = self._last_ids(session)
        reply.last_message_id.CopyFrom(last)
        if mark_delete is not None:
            reply.consumer_mark_delete_position.CopyFrom(mark_delete)
        self._conn.send(T(type=T.GET_LAST_MESSAGE_ID_RESPONSE, getLastMessageIdResponse=reply))

    @staticmethod
    def _last_ids(session: PulsarConsumer) -> tuple:
        """The topic's last message id and the subscription's mark-delete position (None when nothing is
        acknowledged), looked up again only when the topic's end or the mark-delete point moved: each lookup
        may read the storage (an old mark-delete entry is not cached), and a client may ask 20,000 times in
        one write. A reader's subscription answers its position too, as Pulsar's non-durable cursor does:
        the client's ``has_message_available()`` compares it with the last id (a reader started at latest
        with ``start_message_id_inclusive`` has the last message available)."""
        topic = session.session.positions  # a compacted reader's last message is the compacted view's
        cursor = getattr(session.sub, "cursor", None)
        mark_delete = cursor.mark_delete_offset if cursor is not None else -1
        key = (topic.confirmed_end_offset, mark_delete, topic.start_offset,
               topic.ledger if session.session.read_compacted else None)
        if session.last_ids is not None and session.last_ids[0] == key:
            return session.last_ids[1]
        last = last_message(topic, session.partition)  # found as the REST and gRPC calls find it
        last_id = message_id(last.ledger_id, last.entry_id, last.partition, last.batch_index)
        marked = None if cursor is None else mark_delete_message(  # a non-persistent topic keeps no cursor
            topic, mark_delete, session.partition, read_compacted=session.session.read_compacted)
        position = None if marked is None else message_id(marked.ledger_id, marked.entry_id, marked.partition,
                                                          marked.batch_index)
        session.last_ids = (key, (last_id, position))
        return last_id, position

    def consumer_stats(self, request: cmd.CommandConsumerStats) -> None:
        reply = cmd.CommandConsumerStatsResponse(request_id=request.request_id)
        session = self._sessions.get(request.consumer_id)
        if session is None:
            exc = ServiceNotReady(f"no consumer {request.consumer_id} on this connection")
            reply.error_code, reply.error_message = server_error(exc), wire_message(exc)
        else:
            # this consumer's rates alone: the topic's stats cost every subscription's and consumer's
            # (20,000 CONSUMER_STATS frames, 0.35 MB, held the event loop 0.5 s)
            mine = {"consumerId": session.consumer.consumer_id}
            session.topic.rates.apply({"subscriptions": {session.sub.name: {"consumers": [mine]}}})
            reply.consumerName = session.consumer.consumer_name
            reply.availablePermits = max(session.consumer.permits, 0)
            reply.unackedMessages = max(session.consumer.unacked_messages, 0)
            reply.msgRateOut = float(mine.get("msgRateOut", 0.0))
            reply.msgThroughputOut = float(mine.get("msgThroughputOut", 0.0))
            reply.msgRateRedeliver = float(mine.get("msgRateRedeliver", 0.0))
            reply.type = str(session.sub.sub_type or "")
            reply.msgBacklog = max(int(session.sub.backlog), 0)
            reply.address = self._conn.peer
        self._conn.send(T(type=T.CONSUMER_STATS_RESPONSE, consumerStatsResponse=reply))
