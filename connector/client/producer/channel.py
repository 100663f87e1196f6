"""The Produce stream of one partition producer, kept open across broker restarts: :class:`ProducerChannel`.

It opens the producer under its name (the broker's name on the first open), holds the entries sent and
waiting for their receipts -- in send order, their bytes kept -- matches receipts to them, fails them at
``send_timeout_millis``, and **reconnects**, as Pulsar's producer does: when the stream is lost or the broker
answers ``ServiceNotReady``, new sends wait in the pending queue; the producer re-registers under the same
name (with backoff, :class:`~connector.client.reconnect.Redial`), learns the broker's last persisted sequence
id, completes the entries the broker already has (their ids are unknown: ``(-1,-1)``, as a deduplicated send's)
and re-sends the rest in order. Sends fail only when ``send_timeout_millis`` passes (``Timeout``), or when the
broker refuses the producer for good (``ProducerFenced``, ``TopicTerminated`` ...).

It speaks the client's events (:mod:`connector.client.transport.events`) with its transport: a
:class:`~connector.client.transport.events.ProducerSpec` opens it, :class:`~connector.client.producer.batching.PendingEntry` items
go out, ``ProducerReady``, ``Receipt``, ``SendFailed`` and ``Closed`` come back, whichever the transport.

The channel shares its producer's lock: entries are queued in sequence-id order under it, and
:class:`ProducerState` callbacks run with it held.
"""
from __future__ import annotations

import collections
import functools
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Protocol

from broker_core import errors

from connector.client.producer.batching import PendingEntry
from connector.client.producer.callbacks import SyncWaiter, complete_callbacks
from connector.client.enums import ProducerAccessMode, Result
from connector.client.transport.events import Closed, ProducerReady, ProducerSpec, Receipt, SendFailed
from connector.client.message_id import MessageId
from connector.client.producer.conf import ProducerConf
from connector.client.reconnect import Attempt, Redial, retriable, retriable_on_reconnect, retry_until
from connector.client.timer import TimerThread

if TYPE_CHECKING:
    from connector.client.transport import Transport, TransportStream

log = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
"""The largest entry until the broker says (``ProducerReady.max_message_size``)."""


class ProducerState(Protocol):
    """What the channel tells its producer, with the shared lock held."""

    def settled_locked(self, messages: int) -> None:
        """``messages`` pending messages got their receipt, failed or timed out."""

    def failed_locked(self, error: errors.PulsarLikeError) -> list[Any]:
        """The producer is unusable from now on; returns the callbacks of what it had not sent yet."""


class ProducerChannel:
    """See the module docstring."""

    def __init__(self, connection: "Transport", timer: TimerThread, topic: str, partition: int, conf: ProducerConf,
                 lock: threading.Lock, changed: threading.Condition, producer: ProducerState,
                 producer_name: str | None = None) -> None:
        self.topic = topic
        self.partition = partition
        self.conf = conf
        self._connection = connection
        self._timer = timer
        self._lock = lock
        self._changed = changed
        self._producer = producer
        self.producer_name = producer_name or conf.producer_name or ""
        self.max_message_size = DEFAULT_MAX_MESSAGE_SIZE
        self.first_last_sequence_id = -1
        """The broker's last persisted sequence id for this name when the producer first opened."""
        self.last_sequence_id = -1
        self.pending: collections.deque[PendingEntry] = collections.deque()
        self._live: "TransportStream | None" = None
        self._current: Attempt | None = None
        self._opening: Attempt | None = None
        self._timeout_check_scheduled = False
        self.error: errors.PulsarLikeError | None = None
        self.closed = False
        self._redial = Redial(timer, f"producer:{topic}", self._reconnect_attempt)

    # --- opening ------------------------------------------------------------------------------------------
    def open(self) -> None:
        """Open the producer, retrying while the broker is unreachable or not ready, within the operation
        timeout (``WaitForExclusive``: as long as it takes to become the exclusive producer)."""
        wait_s = None if self.conf.access_mode == ProducerAccessMode.WaitForExclusive \
            else self._connection.operation_timeout_s
        deadline = time.monotonic() + (wait_s if wait_s is not None else 1e12)
        retry_until(deadline, lambda: self._open_first(deadline, wait_s), self._connection.closed)

    def _spec(self) -> ProducerSpec:
        conf = self.conf
        first = self._current is None
        return ProducerSpec(
            self.topic, self.producer_name, conf.access_mode, dict(conf.properties),
            -1 if conf.initial_sequence_id is None or not first else conf.initial_sequence_id)

    def _start(self, reconnecting: bool) -> Attempt:
        attempt = self._opening = Attempt()
        attempt.stream = self._connection.produce(
            self._spec(), functools.partial(self._on_event, attempt), name=f"producer-{self.topic}",
            reconnecting=reconnecting)
        attempt.stream.start()
        return attempt

    def _open_first(self, deadline: float, wait_s: float | None) -> None:
        self._start(reconnecting=False).wait_opened(
            None if wait_s is None else max(deadline - time.monotonic(), 0.001), errors.Timeout(
                f"the broker did not open the producer on {self.topic} within "
                f"{self._connection.operation_timeout_s:g}s"))

    def _reconnect_attempt(self) -> None:
        if self.closed:
            return
        attempt = self._start(reconnecting=True)
        if self.conf.access_mode != ProducerAccessMode.WaitForExclusive:  # that one waits its turn, however long
            self._timer.call_later(self._connection.connection_timeout_s, self._attempt_expired, attempt)

    def _attempt_expired(self, attempt: Attempt) -> None:
        """An attempt still unanswered after ``connection_timeout_s`` is abandoned for a fresh one."""
        attempt.abandon(self._lock, self.closed, errors.ConnectError(
            f"the broker did not reopen the producer on {self.topic} within"
            f" {self._connection.connection_timeout_s:g}s"), self._redial)

    # --- sending (under the lock) ---------------------------------------------------------------------------
    def send_locked(self, entry: PendingEntry) -> None:
        self.pending.append(entry)
        live = self._live
        if live is not None:
            live.send(entry)
        if self.conf.send_timeout_ms > 0 and not self._timeout_check_scheduled:
            self._timeout_check_scheduled = True
            self._timer.call_later(self.conf.send_timeout_ms / 1000.0, self._check_send_timeouts)

    def _check_send_timeouts(self) -> None:
        expired: list[PendingEntry] = []
        with self._lock:
            self._timeout_check_scheduled = False
            horizon = time.monotonic() - self.conf.send_timeout_ms / 1000.0
            pending = self.pending
            while pending and pending[0].sent_at <= horizon:
                entry = pending.popleft()
                self._producer.settled_locked(entry.counted)
                expired.append(entry)
            if pending and not self.closed:
                self._timeout_check_scheduled = True
                self._timer.call_later(max(pending[0].sent_at - horizon, 0.001), self._check_send_timeouts)
            if expired:
                self._changed.notify_all()
        for entry in expired:
            complete_callbacks(entry.callbacks, errors.Timeout(
                f"no receipt for sequence id {entry.sequence_id} on {self.topic} within "
                f"send_timeout_millis={self.conf.send_timeout_ms}"
                + ("" if self._live is not None else " (the broker could not be reached meanwhile)")))

    # --- events (reader thread) -----------------------------------------------------------------------------
    def _on_event(self, attempt: Attempt, event: Any) -> None:
        kind = type(event)
        if kind is Receipt:
            self._on_receipt(event)
        elif kind is SendFailed:
            self._on_failure(event.sequence_id, event.error)
        elif kind is ProducerReady:
            self._opened(attempt, event)
        elif kind is Closed:
            self._on_end(attempt, event.error)

    def _opened(self, attempt: Attempt, opened: ProducerReady) -> None:
        stream = attempt.stream
        assert stream is not None
        dropped: list[PendingEntry] = []
        with self._lock:
            if self.closed:
                stream.close(wait_s=0)
                return
            reconnected = self._current is not None
            self.producer_name = opened.producer_name
            if opened.max_message_size > 0:
                self.max_message_size = opened.max_message_size
            last = opened.last_sequence_id
            if not reconnected:
                self.first_last_sequence_id = self.last_sequence_id = last
            else:
                # What the broker persisted before the stream was lost is done; the rest goes again, in order.
                pending = self.pending
                while pending and last >= 0 and pending[0].highest_sequence_id <= last:
                    entry = pending.popleft()
                    self._producer.settled_locked(entry.counted)
                    dropped.append(entry)
                self.last_sequence_id = max(self.last_sequence_id, last)
                for entry in pending:
                    stream.send(entry)
                if dropped:
                    self._changed.notify_all()
            self._current = attempt
            self._live = stream
        attempt.settled.set()
        partition, topic = self.partition, self.topic
        for entry in dropped:  # stored before: its id is unknown here, as a deduplicated send's
            complete_callbacks(entry.callbacks, None, lambda i: MessageId.of(-1, -1, partition, topic=topic))
        if reconnected:
            self._redial.succeeded()
            log.info("event=producer_resent topic=%s producer=%s already_stored=%d resent=%d", self.topic,
                     self.producer_name, len(dropped), len(self.pending))

    def _on_receipt(self, receipt: Receipt) -> None:
        with self._lock:
            entry = self._pop_pending(receipt.sequence_id)
            if entry is None:
                return
            if receipt.highest_sequence_id > self.last_sequence_id or self.last_sequence_id < 0:
                self.last_sequence_id = max(receipt.highest_sequence_id, entry.highest_sequence_id)
            self._changed.notify_all()
        callbacks, partition, topic = entry.callbacks, self.partition, self.topic
        if receipt.duplicate:
            complete_callbacks(callbacks, None, lambda i: MessageId.of(-1, -1, partition, topic=topic))
            return
        ledger, first = receipt.ledger_id, receipt.entry_id
        if not entry.batched:
            complete_callbacks(callbacks, None, lambda i: MessageId.of(ledger, first, partition, -1, 0, topic))
        elif type(callbacks[-1]) is SyncWaiter:  # a blocking send's message always ends its entry
            n = entry.num_messages
            complete_callbacks(callbacks, None, lambda i: MessageId.of(ledger, first, partition, i, n, topic))
        else:  # send_async callbacks only: the hot path
            ok, make_id, n = Result.Ok, MessageId.of, entry.num_messages
            for i, callback in enumerate(callbacks):
                if callback is not None:  # ids are made one at a time: a list of them would feed the GC
                    try:
                        callback(ok, make_id(ledger, first, partition, i, n, topic))
                    except Exception:  # a user callback must not break the producer
                        log.exception("send callback failed")

    def _pop_pending(self, sequence_id: int) -> PendingEntry | None:
        """The pending entry for a receipt (the head, unless earlier ones timed out or were lost)."""
        pending = self.pending
        if not pending or sequence_id < pending[0].sequence_id:
            return None  # an entry that already timed out
        for index, entry in enumerate(pending):
            if entry.sequence_id == sequence_id:
                del pending[index]
                self._producer.settled_locked(entry.counted)
                return entry
        log.warning("event=unknown_receipt topic=%s sequence_id=%d", self.topic, sequence_id)
        return None

    def _on_failure(self, sequence_id: int, error: errors.PulsarLikeError) -> None:
        with self._lock:
            entry = self._pop_pending(sequence_id)
            self._changed.notify_all()
        if entry is not None:
            complete_callbacks(entry.callbacks, error)

    def _on_end(self, attempt: Attempt, error: errors.PulsarLikeError | None) -> None:
        with self._lock:
            if self.closed or error is None:
                return
            if not attempt.settled.is_set():  # an opening that failed
                attempt.failure = error
                attempt.settled.set()
                if self._current is None:
                    return  # the first opening: open() retries or raises
                retry, lost = retriable_on_reconnect(error), False
            elif attempt is self._current:
                self._live = None
                retry = lost = retriable(error)
            else:
                return
        if not retry:
            self.fail(error)
        elif lost:
            self._redial.lost(error)
        else:
            self._redial.failed(error)

    def fail(self, error: errors.PulsarLikeError) -> None:
        """The producer is unusable: every pending and unsent message fails with ``error``."""
        self._redial.stop()
        with self._lock:
            if self.error is None:
                self.error = error
            entries = list(self.pending)
            self.pending.clear()
            for entry in entries:
                self._producer.settled_locked(entry.counted)
            unsent = self._producer.failed_locked(error)
            self._changed.notify_all()
        for entry in entries:
            complete_callbacks(entry.callbacks, error)
        complete_callbacks(unsent, error)

    # --- lifecycle ------------------------------------------------------------------------------------------
    def is_connected(self) -> bool:
        return not self.closed and self.error is None and self._live is not None

    def close(self) -> None:
        """Close the stream (a reconnection in progress is abandoned); what is still pending fails with
        ``AlreadyClosed``."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            live, self._live = self._live, None
            opening, self._opening = self._opening, None
        self._redial.stop()
        if live is not None:
            live.close()
        elif opening is not None and opening.stream is not None:
            opening.stream.close(wait_s=0)
        self.fail(errors.AlreadyClosed(f"the producer on {self.topic} is closed"))
