"""Reconnection as Pulsar's clients do it: which failures are worth another attempt, the backoff between
attempts, and the loop that drives one stream's attempts.

A failure is retriable when the broker could not be reached or was not ready (:func:`retriable`):
``ConnectError`` (the stream or call was lost, the broker restarted), ``ServiceNotReady`` (the broker is
starting or stopping, the topic is being unloaded) and ``NotConnected``. While a stream reconnects, a
``ProducerBusy``/``ConsumerBusy`` may come from the broker still holding the session that was just lost: a
reconnection retries those too (:func:`retriable_on_reconnect`). Anything else (``TopicNotFound``,
``ProducerFenced``, ``TopicTerminated`` ...) is final.

Backoff: 100 ms, doubling to 30 s (Pulsar's client defaults), reset once connected. Calls that wait for an
answer (``subscribe``, ``create_producer``, lookups) retry within ``operation_timeout_seconds``; a lost
stream retries until it is back or closed (its pending sends still fail at ``send_timeout_millis``).

One ``ConnectError`` ends such a call at once (:func:`gives_up`): the client's service URL not reachable
within ``connection_timeout_ms`` -- as pulsar-client, whose connection timeout fails the call with
``ConnectError`` rather than retrying it to the operation timeout. A lost stream still retries it.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Callable

from broker_core import errors

from connector.client.timer import TimerThread

if TYPE_CHECKING:
    from connector.client.transport import TransportStream

log = logging.getLogger(__name__)

INITIAL_BACKOFF_S = 0.1
MAX_BACKOFF_S = 30.0

_RETRIABLE = (errors.ConnectError, errors.ServiceNotReady, errors.NotConnected)
_STALE_SESSION = (errors.ProducerBusy, errors.ConsumerBusy)


def retriable(error: BaseException) -> bool:
    """A failure another attempt may get past: the broker unreachable, restarting or not ready."""
    return isinstance(error, _RETRIABLE)


def retriable_on_reconnect(error: BaseException) -> bool:
    """:func:`retriable`, or the broker still holding this client's lost session (busy name)."""
    return isinstance(error, _RETRIABLE + _STALE_SESSION)


class Backoff:
    """Delays between attempts: ``initial_s``, doubling up to ``max_s``. Example: 0.1, 0.2, 0.4 ... 25.6, 30,
    30 ...; :meth:`reset` starts again at ``initial_s``."""

    def __init__(self, initial_s: float = INITIAL_BACKOFF_S, max_s: float = MAX_BACKOFF_S) -> None:
        self.initial_s = initial_s
        self.max_s = max_s
        self._next = initial_s

    def next(self) -> float:
        delay = self._next
        self._next = min(self._next * 2, self.max_s)
        return delay

    def reset(self) -> None:
        self._next = self.initial_s


def gives_up(error: BaseException) -> bool:
    """A ``ConnectError`` saying the service URL was not reachable within the connection timeout (it carries
    ``connection_timeout_s``): the call that met it fails with it, not retried (module docstring)."""
    return isinstance(error, errors.ConnectError) and getattr(error, "connection_timeout_s", None) is not None


def retry_until(deadline: float, attempt: Callable[[], object], closed: threading.Event,
                clock: Callable[[], float] = time.monotonic, to_the_end: bool = False) -> object:
    """``attempt()`` until it returns, retrying retriable failures with :class:`Backoff` while ``deadline``
    (a ``clock()`` time) allows; the last failure is raised once it does not (or ``closed`` is set), or at
    once when it :func:`gives_up`. ``to_the_end``: the last attempt is made at the deadline (a wait for a
    connection lasts its whole timeout, as a connect that hangs does), not when the next delay passes it."""
    backoff = Backoff()
    while True:
        try:
            return attempt()
        except errors.PulsarLikeError as exc:
            delay = backoff.next()
            left = deadline - clock()
            if to_the_end:
                delay = min(delay, left)
            if not retriable(exc) or gives_up(exc) or closed.is_set() or \
                    (left <= 0 if to_the_end else delay >= left):
                raise
            log.debug("event=retry cause=%r delay_s=%.1f", exc, delay)
            if closed.wait(delay):
                raise


class Redial:
    """Drives the reconnection of one stream on the client's timer thread.

    ``lost(cause)`` when the stream is lost: logged once (``event=reconnecting``, with the cause), then
    ``attempt()`` runs after the first backoff delay. An attempt must not block: it starts opening a stream
    and reports later with ``succeeded()`` (logged as ``event=reconnected`` with the time it took) or
    ``failed(cause)`` (the next attempt is scheduled after the next delay). ``stop()`` (the stream is closed
    or failed for good) cancels whatever is scheduled.
    """

    def __init__(self, timer: TimerThread, what: str, attempt: Callable[[], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.what = what
        self._timer = timer
        self._attempt = attempt
        self._clock = clock
        self._backoff = Backoff()
        self._lock = threading.Lock()
        self._lost_at: float | None = None
        self._round = 0
        """Bumped by every lost/stop: a scheduled attempt of an earlier round does nothing."""
        self.attempts = 0

    @property
    def active(self) -> bool:
        """Lost and not yet reconnected (or stopped)."""
        return self._lost_at is not None

    def lost(self, cause: BaseException) -> None:
        with self._lock:
            if self._lost_at is not None:
                return
            self._lost_at = self._clock()
            self._round += 1
            self.attempts = 0
            self._backoff.reset()
            current = self._round
        log.warning("event=reconnecting stream=%s cause=%r", self.what, cause)
        self._schedule(current)

    def failed(self, cause: BaseException) -> None:
        with self._lock:
            if self._lost_at is None:
                return
            current = self._round
        log.debug("event=reconnect_attempt_failed stream=%s attempt=%d cause=%r", self.what, self.attempts, cause)
        self._schedule(current)

    def succeeded(self) -> None:
        with self._lock:
            lost_at, self._lost_at = self._lost_at, None
            self._round += 1
            attempts = self.attempts
        if lost_at is not None:
            log.info("event=reconnected stream=%s after_ms=%d attempts=%d", self.what,
                        (self._clock() - lost_at) * 1000, attempts)

    def stop(self) -> None:
        with self._lock:
            self._lost_at = None
            self._round += 1

    def _schedule(self, current: int) -> None:
        self._timer.call_later(self._backoff.next(), self._run, current)

    def _run(self, scheduled_round: int) -> None:
        with self._lock:
            if scheduled_round != self._round or self._lost_at is None:
                return
            self.attempts += 1
        try:
            self._attempt()
        except Exception as exc:  # an attempt that could not even start: try again later
            log.debug("event=reconnect_attempt_failed stream=%s cause=%r", self.what, exc)
            self.failed(exc)


class Attempt:
    """One opening of a producer's or consumer's stream: its stream and, once settled, its outcome."""

    __slots__ = ("stream", "settled", "failure", "service_epoch")

    def __init__(self, service_epoch: int = 0) -> None:
        self.stream: "TransportStream | None" = None
        self.settled = threading.Event()
        """Set once opened (``failure`` None) or failed."""
        self.failure: errors.PulsarLikeError | None = None
        self.service_epoch = service_epoch
        """The service (cluster) the client used when this attempt began (see ``SwitchingTransport``)."""

    def wait_opened(self, wait_s: float | None, timeout: errors.PulsarLikeError) -> None:
        """Wait for the broker's answer to a first opening: raises ``timeout`` when none came within ``wait_s``
        (None: as long as it takes), or the broker's refusal; the stream is closed then."""
        assert self.stream is not None
        if not self.settled.wait(wait_s):
            self.stream.close(wait_s=0.1)
            raise timeout
        if self.failure is not None:
            self.stream.close(wait_s=0.5)
            raise self.failure

    def abandon(self, lock: "threading.Lock", closed: bool, failure: errors.PulsarLikeError, redial: Redial) -> None:
        """Give up on this attempt if it is still unanswered (gRPC holds a reconnecting stream until the
        channel is up: never let one wait for ever) and let ``redial`` schedule a fresh one."""
        with lock:
            if self.settled.is_set() or closed:
                return
            self.failure = failure
            self.settled.set()
        assert self.stream is not None
        self.stream.close(wait_s=0)
        redial.failed(failure)
