"""The one object that holds a subscription's stream to one topic partition: :class:`PartitionStream`.

It subscribes, keeps the flow-permit window (:mod:`connector.client.consumer.permits`), sends acks (grouped, held
per batch, cumulative: :mod:`connector.client.consumer.acks`), redelivery requests, seeks and the unsubscribe, closes,
and **reconnects**. It speaks the client's events (:mod:`connector.client.transport.events`) with its transport, and what
arrives goes to its :class:`StreamEvents` -- the client's
:class:`~connector.client.consumer.partition.PartitionConsumer` or the Spark source's range reader -- which
decode each delivered :class:`~connector.client.transport.events.Entry` once, with the entry codec.

Reconnection (Pulsar's consumer does the same): when the stream is lost or the broker answers
``ServiceNotReady``, the permit window is retired (buffered messages of the lost stream are skipped when
taken: the broker redelivers what is unacknowledged) and the subscription is opened again with the same
subscription, consumer name and type, with backoff (:class:`~connector.client.reconnect.Redial`). A
non-durable subscription (a reader) resumes where its ``resume()`` says: after the last message handed out.
Acks made meanwhile are kept and sent on the new stream; a seek in progress is sent again. Anything the
broker refuses for good (``TopicNotFound``, ``ConsumerAssignError`` ...) ends the stream: ``on_failed``.

When the client's service changed (cluster failover: the transport's ``service_epoch``), the reconnection goes
to another cluster, whose positions have nothing to do with the old one's: acks not sent yet and a seek in
progress are dropped, the events hear ``on_cluster_switch()`` (before ``resume()`` is asked) and the
subscription opens with its original start -- a durable one at the new cluster's cursor, as pulsar-client's
``onClusterSwitching``. A subscription that races a switch (opened on a service newer than the one it began
with) is closed and opened again.
"""
from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
from typing import Any, Callable, Iterable, Protocol, Sequence

from broker_core import errors

from connector.client.consumer.acks import AckGroup, HeldBatchAcks
from connector.client.transport.events import (
    EARLIEST, LATEST, AckCumulative, ActiveChanged, Closed, ConsumerSpec, Delivery, EndOfTopic, Entry, Flow, Position,
    Redeliver, Refused, Seek, SeekDone, Subscribed, Unreadable, Unsubscribe, Unsubscribed)
from connector.client.message_id import MessageId
from connector.client.consumer.permits import PermitWindow
from connector.client.reconnect import Attempt, Redial, retriable, retriable_on_reconnect, retry_until
from connector.client.timer import TimerThread
from connector.client.transport import DENSE, Positions, Transport, TransportStream

log = logging.getLogger(__name__)

FLOW_PERMITS_MAX = 0xFFFF_FFFF
"""The most permits one Flow request carries (its field is a uint32)."""


class StreamEvents(Protocol):
    """What a :class:`PartitionStream` reports, on its reader thread."""

    def on_entries(self, entries: Sequence[Entry], window: PermitWindow) -> None:
        """Entries delivered under ``window`` (the permit window of the current stream generation)."""

    def on_disconnected(self, cause: errors.PulsarLikeError) -> None:
        """The stream was lost; it is being reopened (what was buffered from it is stale)."""

    def on_reconnected(self) -> None:
        """The subscription is open again; the next entries come from the new stream."""

    def on_failed(self, error: errors.PulsarLikeError) -> None:
        """The stream ended for good with ``error``."""

    def on_unreadable(self, error: errors.PulsarLikeError, window: PermitWindow) -> None:
        """The broker cannot read the next message (``DataLost``: a damaged stored range): raised in its place;
        the stream goes on."""

    def on_end_of_topic(self) -> None:
        """The topic is terminated and every message of it was delivered."""

    # Optional: ``on_cluster_switch()``, called on the timer thread before the subscription is opened on
    # another cluster (the module docstring): forget the old cluster's positions.


def seek_request(seek_id: int, target: MessageId | int, positions: Positions = DENSE) -> Seek:
    """A Seek to a message id (earliest, latest or a message's position: ``positions`` numbers it; the binary
    transport sends a broker without dense offsets the real id the position packs) or a publish time in ms."""
    if not isinstance(target, MessageId):
        return Seek(seek_id, publish_time_ms=int(target))
    if target.is_earliest():
        return Seek(seek_id, EARLIEST)
    if target.is_latest():
        return Seek(seek_id, LATEST)
    return Seek(seek_id, Position.at(positions.position(target)))


class PartitionStream:
    """A subscription's stream to one topic partition, kept open across broker restarts (see the module
    docstring). ``resume()`` (non-durable subscriptions) gives the offset to resubscribe from, or None to
    keep the original start."""

    def __init__(self, connection: Transport, timer: TimerThread, spec: ConsumerSpec,
                 receiver_queue_size: int, events: StreamEvents,
                 resume: Callable[[], int | None] | None = None) -> None:
        self.topic = spec.topic
        self.partition = spec.partition
        self.subscription = spec.subscription
        self.consumer_name = spec.consumer_name
        self._connection = connection
        self._timer = timer
        self._spec = spec
        self._queue_size = max(1, receiver_queue_size)
        self._events = events
        self._resume = resume
        self._lock = threading.Lock()
        self.window = PermitWindow(self._queue_size, self._flow)
        self._acks = AckGroup(timer, self._send_ack)
        self.held_batch_acks = HeldBatchAcks()
        self._unsent_acks: list[Any] = []
        """Acks made while reconnecting: sent on the new stream."""
        self._live: TransportStream | None = None
        self._current: Attempt | None = None
        """The attempt whose stream is subscribed (deliveries of any other are ignored)."""
        self._opening: Attempt | None = None
        self._seek_id = 0
        self._seeking = 0
        self._seek_request: Seek | None = None
        self._seek_done = threading.Event()
        self._seek_error: errors.PulsarLikeError | None = None
        self._unsubscribed = threading.Event()
        self._unsubscribe_error: errors.PulsarLikeError | None = None
        self._unsubscribing = False
        self.closed = False
        self.error: errors.PulsarLikeError | None = None
        self.active = True
        self.reached_end_of_topic = False
        self._redial = Redial(timer, f"consumer:{self.topic}:{self.subscription}", self._reconnect_attempt)
        self._service_epoch = self._epoch_now()
        """The service (cluster) of the last subscription (see the module docstring)."""

    # --- opening ------------------------------------------------------------------------------------------
    def open(self) -> None:
        """Subscribe (retrying while the broker is unreachable or not ready, within the operation timeout);
        raises what the broker refused."""
        deadline = self._connection.operation_timeout_s + _now()
        retry_until(deadline, lambda: self._open_first(deadline), self._connection.closed)

    def _spec_now(self) -> ConsumerSpec:
        # The first permits travel with the subscription: a message sent right after subscribe() returns is
        # covered (a non-persistent topic drops what no permit covers).
        offset = self._resume() if self._resume is not None and self._current is not None else None
        if offset is not None:
            return dataclasses.replace(self._spec, initial_permits=self._queue_size, consumer_name=self.consumer_name,
                                       start=Position.at(offset), start_inclusive=True)
        return dataclasses.replace(self._spec, initial_permits=self._queue_size, consumer_name=self.consumer_name)

    def _epoch_now(self) -> int:
        return getattr(self._connection, "service_epoch", 0)

    def _start(self, reconnecting: bool) -> Attempt:
        epoch = self._epoch_now()
        if reconnecting and epoch != self._service_epoch:
            self._switch_cluster(epoch)
        attempt = self._opening = Attempt(epoch)
        attempt.stream = self._connection.consume(
            self._spec_now(), functools.partial(self._on_event, attempt), name=f"consumer-{self.topic}",
            reconnecting=reconnecting)
        attempt.stream.start()
        return attempt

    def _open_first(self, deadline: float) -> None:
        self._start(reconnecting=False).wait_opened(max(deadline - _now(), 0.001), errors.Timeout(
            f"the broker did not confirm the subscription on {self.topic} within "
            f"{self._connection.operation_timeout_s:g}s"))

    def _switch_cluster(self, epoch: int) -> None:
        """The next subscription goes to another cluster: forget this one's positions (module docstring)."""
        log.info("event=consumer_cluster_switch topic=%s subscription=%s", self.topic, self.subscription)
        self._acks.drop()
        with self._lock:
            self._service_epoch = epoch
            self._unsent_acks = []
            seeking, self._seeking, self._seek_request = self._seeking, 0, None
            self.reached_end_of_topic = False
        self.held_batch_acks.forget()
        if seeking:  # the seek named the old cluster's position: it ends here, as pulsar-client's
            self._seek_error = None
            self._seek_done.set()
        switch = getattr(self._events, "on_cluster_switch", None)
        if switch is not None:
            switch()

    def _reconnect_attempt(self) -> None:
        if self.closed:
            return
        attempt = self._start(reconnecting=True)
        self._timer.call_later(self._connection.connection_timeout_s, self._attempt_expired, attempt)

    def _attempt_expired(self, attempt: Attempt) -> None:
        """An attempt still unanswered after ``connection_timeout_s`` is abandoned for a fresh one."""
        attempt.abandon(self._lock, self.closed, errors.ConnectError(
            f"the broker did not answer the subscription on {self.topic} within"
            f" {self._connection.connection_timeout_s:g}s"), self._redial)

    # --- events (reader thread) ---------------------------------------------------------------------------
    def _on_event(self, attempt: Attempt, event: Any) -> None:
        kind = type(event)
        if kind is Delivery:
            if attempt is self._current and not self._seeking:
                self._events.on_entries(event.entries, self.window)
        elif kind is Subscribed:
            self._subscribed(attempt, event)
        elif kind is SeekDone:
            self._seek_finished(event)
        elif kind is ActiveChanged:
            self.active = event.active
        elif kind is EndOfTopic:
            self.reached_end_of_topic = True
            self._events.on_end_of_topic()
        elif kind is Unsubscribed:
            self._unsubscribe_error = event.error
            self._unsubscribed.set()
        elif kind is Refused:
            log.warning("event=consumer_request_rejected topic=%s subscription=%s error=%r", self.topic,
                        self.subscription, event.error)
        elif kind is Unreadable:
            if attempt is self._current and not self._seeking:
                self._events.on_unreadable(event.error, self.window)
        elif kind is Closed:
            self._on_end(attempt, event.error)

    def _subscribed(self, attempt: Attempt, subscribed: Subscribed) -> None:
        stream = attempt.stream
        assert stream is not None
        with self._lock:
            if self.closed:
                stream.close(wait_s=0)
                return
            reconnected = self._current is not None
            raced = reconnected and subscribed.service_epoch != attempt.service_epoch
            if not raced:
                self._service_epoch = subscribed.service_epoch
                self.consumer_name = subscribed.consumer_name or self.consumer_name
                if reconnected:
                    self.window = PermitWindow(self._queue_size, self._flow)  # sent with the subscribe
                self._current = attempt
                self._live = stream
                unsent, self._unsent_acks = self._unsent_acks, []
                seek = self._seek_request
        if raced:  # opened on a cluster switched to meanwhile, with the old one's start: open it again
            attempt.abandon(self._lock, self.closed, errors.ConnectError(
                f"the client's service changed while subscribing on {self.topic}"), self._redial)
            return
        for request in unsent:
            stream.send(request)
        if seek is not None and reconnected:
            stream.send(seek)
        attempt.settled.set()
        if reconnected:
            self._redial.succeeded()
            self._events.on_reconnected()

    def _on_end(self, attempt: Attempt, error: errors.PulsarLikeError | None) -> None:
        with self._lock:
            if self.closed or error is None:
                return
            if not attempt.settled.is_set():  # an opening that failed
                attempt.failure = error
                attempt.settled.set()
                if self._current is None:
                    return  # the first opening: the constructor retries or raises
                retry = retriable_on_reconnect(error)
                lost = False
            elif attempt is self._current:
                self._live = None
                retry = lost = retriable(error)
                if retry:  # the broker sends the permits' messages again; a failure keeps what came before it
                    self.window.retire()
                if self._unsubscribing and not self._unsubscribed.is_set():  # not answered before the end
                    self._unsubscribe_error = errors.NotConnected(
                        f"the connection to the broker was lost while unsubscribing from {self.topic}: "
                        f"{error.message}; unsubscribe again once it is back")
                    self._unsubscribed.set()
            else:
                return
        if not retry:
            self._fail(error)
        elif lost:
            self._events.on_disconnected(error)
            self._redial.lost(error)
        else:
            self._redial.failed(error)

    def _fail(self, error: errors.PulsarLikeError) -> None:
        log.warning("event=consumer_failed topic=%s subscription=%s error=%r", self.topic, self.subscription,
                    error)
        self._redial.stop()
        self.error = error
        self._seek_done.set()
        self._unsubscribed.set()
        self._events.on_failed(error)

    # --- requests -------------------------------------------------------------------------------------------
    def _send(self, request: Any) -> None:
        """A request that only means something on the current stream (flow, redelivery)."""
        live = self._live
        if live is not None:
            live.send(request)

    def _send_ack(self, request: Any) -> None:
        with self._lock:
            live = self._live
            if live is None:
                if not self.closed:
                    self._unsent_acks.append(request)
                return
        live.send(request)

    def _flow(self, permits: int) -> None:
        while permits > 0:  # a poison entry's skipped count may exceed Flow's uint32
            step = min(permits, FLOW_PERMITS_MAX)
            self._send(Flow(step))
            permits -= step

    def check_usable(self) -> None:
        if self.closed:
            raise errors.AlreadyClosed(f"the consumer on {self.topic} is closed")
        if self.error is not None:
            raise self.error

    # --- acks -----------------------------------------------------------------------------------------------
    def ack(self, offset: int) -> None:
        self._acks.add(offset)

    def ack_all(self, offsets: Iterable[int]) -> None:
        self._acks.add_all(offsets)

    def ack_batch_member(self, entry_id: int, index: int, size: int) -> None:
        """Message ``index`` of the batch at ``entry_id``: held until the whole batch is acknowledged."""
        if self.held_batch_acks.acknowledge(entry_id, index, size):
            self._acks.add_all(range(entry_id, entry_id + size))

    def ack_cumulative(self, offset: int) -> None:
        self._acks.flush()
        self._send_ack(AckCumulative(offset))
        self.held_batch_acks.forget(offset)

    def flush_acks(self) -> None:
        self._acks.flush()

    def redeliver(self, ranges: Sequence[tuple[int, int]] | None = None) -> None:
        """Ask the broker for the positions of these ``[start, end)`` ranges again, or for everything
        unacknowledged when None (after a reconnection the broker redelivers everything unacknowledged anyway)."""
        self._acks.flush()
        self._send(Redeliver(tuple(ranges or ())))

    # --- seek -----------------------------------------------------------------------------------------------
    def start_seek(self, target: MessageId | int) -> None:
        """Send the Seek; deliveries are dropped from now until its ``seek_done``, buffered messages are
        skipped when taken."""
        self._acks.flush()
        with self._lock:
            self.check_usable()
            self._seek_id += 1
            request = seek_request(self._seek_id, target, self._connection.positions)
            self._seek_done.clear()
            self._seek_error = None
            self._seeking = self._seek_id
            self._seek_request = request
            self.window.retire()
            self.reached_end_of_topic = False
        self.held_batch_acks.forget()
        self._send(request)

    def _seek_finished(self, done: SeekDone) -> None:
        if done.seek_id != self._seeking:
            return
        self._seek_error = done.error
        # The broker starts from no permits after a seek: a new window, all of it sent now.
        self.window = PermitWindow(self._queue_size, self._flow)
        self._seeking = 0
        self._seek_request = None
        self._flow(self._queue_size)
        self._seek_done.set()

    def finish_seek(self, timeout_s: float) -> None:
        if not self._seek_done.wait(timeout_s):
            self._seeking = 0
            self._seek_request = None
            raise errors.Timeout(f"seek on {self.topic} not confirmed within {timeout_s:g}s")
        if self.error is not None:
            raise self.error
        if self._seek_error is not None:
            raise self._seek_error

    # --- lifecycle ------------------------------------------------------------------------------------------
    def unsubscribe(self, request_id: int, timeout_s: float) -> None:
        self.check_usable()
        if self._live is None:
            raise errors.NotConnected(f"the consumer on {self.topic} is reconnecting to the broker; "
                                      "unsubscribe once it is connected again")
        self._acks.flush()
        self._unsubscribed.clear()
        self._unsubscribe_error = None
        self._unsubscribing = True
        try:
            self._send(Unsubscribe(request_id))
            if not self._unsubscribed.wait(timeout_s):
                raise errors.Timeout(f"unsubscribe on {self.topic} not confirmed within {timeout_s:g}s")
        finally:
            self._unsubscribing = False
        if self.error is not None:
            raise self.error
        if self._unsubscribe_error is not None:
            raise self._unsubscribe_error

    def is_connected(self) -> bool:
        return not self.closed and self.error is None and self._live is not None

    def close(self) -> None:
        """Send the acks made so far and close the stream; a reconnection in progress is abandoned."""
        if self.closed:
            return
        self._acks.flush()
        with self._lock:
            self.closed = True
            live, self._live = self._live, None
            opening, self._opening = self._opening, None
        self._redial.stop()
        self._seek_done.set()
        self._unsubscribed.set()
        if live is not None:
            live.close()
        elif opening is not None and opening.stream is not None:
            opening.stream.close(wait_s=0)  # maybe still waiting for the broker to come back


def _now() -> float:
    return time.monotonic()
