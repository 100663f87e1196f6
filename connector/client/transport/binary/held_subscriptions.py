"""Durable subscriptions held without taking messages, with Pulsar's binary commands (the Spark source's
per-query subscription on a broker without dense offsets: :mod:`connector.spark.any_broker`).

Such a subscription only pins retention and records a committed position; it never takes a message (Spark's
executors read with readers). So it is held, per topic partition, by one consumer that is subscribed
(``SUBSCRIBE``: durable, Failover, created at the earliest message) but never given permits (no ``FLOW``: the
broker delivers nothing), and moved with ``ACK`` (cumulative) to each committed message id. A client consumer
would not do: it acknowledges cumulatively only up to what it received, as a consumer should.

- ``last_id``: ``GET_LAST_MESSAGE_ID`` on that consumer; without a subscription, the transport's
  ``last_message`` (a short-lived non-durable reader).
- A consumer whose connection ended is subscribed again on next use (the broker kept the subscription and its
  position; an acknowledgment lost with the connection is sent again at the next commit).
- Failover, not Exclusive: a restarted Spark driver may subscribe before the broker has seen the old one go.
"""
from __future__ import annotations

import logging
import threading
from typing import Any

from broker_core import errors
from broker_core.protocol import pulsar_api_pb2 as api
from broker_core.protocol import pulsar_commands_pb2 as cmd


log = logging.getLogger(__name__)

T = cmd.BaseCommand
_U64 = 1 << 64


def _signed(value: int) -> int:
    return value - _U64 if value >= 1 << 63 else value


def _unsigned(value: int) -> int:
    return value % _U64


class _Held:
    """One subscribed consumer: its connection and id; ``lost`` once its connection ended."""

    def __init__(self, conn: Any, consumer_id: int) -> None:
        self.conn = conn
        self.consumer_id = consumer_id
        self.lost = False

    def on_frame(self, command: cmd.BaseCommand, payload: Any) -> None:
        if command.type == T.CLOSE_CONSUMER:  # the broker closed it (unloaded topic): subscribe again on use
            self.lost = True

    def on_connection_lost(self, error: errors.PulsarLikeError) -> None:
        self.lost = True


LastId = tuple[int, int, int] | None
"""``(ledger, entry, batch index)`` of a topic's last message (batch -1: the whole entry); None when it has none."""


class HeldSubscriptions:
    """Per (topic partition, subscription): a durable consumer without permits (module docstring)."""

    def __init__(self, transport: Any, timeout_s: float) -> None:
        self.transport = transport
        self.timeout_s = timeout_s
        self._held: dict[tuple[str, str], _Held] = {}
        self._lock = threading.Lock()

    def open(self, topic: str, subscription: str) -> _Held:
        """The subscription's consumer on ``topic`` (a partition's name); the subscription is created at the
        earliest message when it does not exist."""
        key = (topic, subscription)
        with self._lock:
            held = self._held.get(key)
            if held is not None and not held.lost and not held.conn.closed:
                return held
            conn = self.transport.connection_for(topic, self.timeout_s)
            held = _Held(conn, conn.next_consumer_id())
            conn.register_consumer(held.consumer_id, held)
            try:
                conn.request(T(type=T.SUBSCRIBE, subscribe=cmd.CommandSubscribe(
                    topic=topic, subscription=subscription, subType=cmd.CommandSubscribe.Failover,
                    consumer_id=held.consumer_id, request_id=conn.next_request_id(), durable=True,
                    initialPosition=cmd.CommandSubscribe.Earliest, consumer_name=f"{subscription}-driver")),
                    self.timeout_s)
            except BaseException:
                conn.unregister_consumer(held.consumer_id)
                raise
            self._held[key] = held
            log.info("event=subscription_held topic=%s subscription=%s", topic, subscription)
            return held

    def acknowledge(self, topic: str, subscription: str, ledger: int, entry: int) -> None:
        """Cumulative ``ACK`` of everything up to and including the entry ``(ledger, entry)``."""
        held = self.open(topic, subscription)
        held.conn.send(T(type=T.ACK, ack=cmd.CommandAck(
            consumer_id=held.consumer_id, ack_type=cmd.CommandAck.Cumulative,
            message_id=[api.MessageIdData(ledgerId=_unsigned(ledger), entryId=_unsigned(entry))])))

    def last_id(self, topic: str, subscription: str | None) -> LastId:
        """The topic's last message id (None when it holds none)."""
        if subscription is None:
            reply = self.transport.last_message(topic, timeout_s=self.timeout_s)
            if reply.last_offset < 0:
                return None
            return reply.ledger_id, reply.entry_id, reply.batch_index
        held = self.open(topic, subscription)
        try:
            answer = held.conn.request(T(type=T.GET_LAST_MESSAGE_ID, getLastMessageId=cmd.CommandGetLastMessageId(
                consumer_id=held.consumer_id, request_id=held.conn.next_request_id())), self.timeout_s)
        except errors.UnknownError as exc:
            if "no messages" not in exc.message.lower():
                raise
            return None  # pulsar-lite's answer for an empty topic (Pulsar's: entry -1)
        last = answer.getLastMessageIdResponse.last_message_id
        ledger, entry = _signed(last.ledgerId), _signed(last.entryId)
        if ledger < 0 or entry < 0:
            return None
        return ledger, entry, _signed(last.batch_index) if last.HasField("batch_index") else -1

    def close(self) -> None:
        with self._lock:
            held, self._held = list(self._held.values()), {}
        for one in held:
            if one.lost or one.conn.closed:
                continue
            try:
                one.conn.request(T(type=T.CLOSE_CONSUMER, close_consumer=cmd.CommandCloseConsumer(
                    consumer_id=one.consumer_id, request_id=one.conn.next_request_id())), self.timeout_s)
            except errors.PulsarLikeError as exc:  # the broker drops it with the connection anyway
                log.info("event=held_subscription_close_failed error=%r", exc)
            finally:
                one.conn.unregister_consumer(one.consumer_id)
