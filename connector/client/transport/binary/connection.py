"""One binary protocol connection to one broker: :class:`PulsarConnection`.

Opening, on the caller's thread within ``connection_timeout_s``: TCP, TLS, ``CONNECT`` -> ``CONNECTED``
(:mod:`connector.client.transport.binary.handshake`). An ``AUTH_CHALLENGE`` later (the broker found the credentials
expired) is answered with fresh ones, asked from the authentication's source then.

Then one I/O thread per connection reads frames and dispatches them:

- answers by ``request_id`` to the request waiting for them (:meth:`request`, :meth:`request_async`);
- producer frames (``SEND_RECEIPT``, ``SEND_ERROR``, ``CLOSE_PRODUCER``) and consumer frames (``MESSAGE``,
  ``ACTIVE_CONSUMER_CHANGE``, ``REACHED_END_OF_TOPIC``, ``CLOSE_CONSUMER``) by id to the registered
  :class:`FrameHandler`;
- ``PING`` is answered ``PONG``. After :data:`KEEPALIVE_S` without a frame from the broker the connection
  sends ``PING``; after another :data:`KEEPALIVE_S` still without one, the broker is taken for dead and
  the connection closes (Pulsar's clients do the same).

When the connection ends (the broker closed it, a write failed, a bad frame, a dead broker, :meth:`close`),
every waiting request fails with ``ConnectError`` and every handler's ``on_connection_lost`` is called once.

Writes: :meth:`send` never blocks on the network. On a plain socket the caller writes at once without
waiting (the socket is non-blocking: no thread hop on the hot path); what the kernel does not take now is
queued, and the I/O thread writes it when the socket can take more (later sends queue behind it, so frames
stay in order). A TLS socket is written by the I/O thread only (one thread per TLS object).
"""
from __future__ import annotations

import collections
import itertools
import logging
import selectors
import socket
import ssl
import threading
import time
from typing import Callable, Protocol

from broker_core import errors
from broker_core.protocol import pulsar_commands_pb2 as cmd

from connector.client.transport.binary import wire
from connector.client.transport.binary.handshake import READ_SIZE, auth_response, open_connection

log = logging.getLogger(__name__)

T = cmd.BaseCommand
KEEPALIVE_S = 30.0
"""Pulsar's clients' ``keepAliveIntervalSeconds``."""

_ANSWER_FIELDS = {
    T.SUCCESS: "success", T.ERROR: "error", T.PRODUCER_SUCCESS: "producer_success",
    T.LOOKUP_RESPONSE: "lookupTopicResponse", T.PARTITIONED_METADATA_RESPONSE: "partitionMetadataResponse",
    T.CONSUMER_STATS_RESPONSE: "consumerStatsResponse", T.GET_LAST_MESSAGE_ID_RESPONSE: "getLastMessageIdResponse",
    T.GET_TOPICS_OF_NAMESPACE_RESPONSE: "getTopicsOfNamespaceResponse", T.GET_SCHEMA_RESPONSE: "getSchemaResponse",
    T.GET_OR_CREATE_SCHEMA_RESPONSE: "getOrCreateSchemaResponse", T.ACK_RESPONSE: "ackResponse",
}
"""Answers: the field holding their ``request_id``."""
_PRODUCER_FRAMES = {T.SEND_RECEIPT: "send_receipt", T.SEND_ERROR: "send_error", T.CLOSE_PRODUCER: "close_producer"}
_CONSUMER_FRAMES = {T.MESSAGE: "message", T.ACTIVE_CONSUMER_CHANGE: "active_consumer_change",
                    T.REACHED_END_OF_TOPIC: "reachedEndOfTopic", T.CLOSE_CONSUMER: "close_consumer",
                    T.ACK_RESPONSE: "ackResponse", T.PULSARLIKE_CONSUMER_ERROR: "pulsarlikeConsumerError"}

Callback = Callable[["cmd.BaseCommand | None", "errors.PulsarLikeError | None"], None]


class FrameHandler(Protocol):
    def on_frame(self, command: cmd.BaseCommand, payload: memoryview | None) -> None:
        """A frame naming this producer or consumer (on the connection's I/O thread: do not block)."""

    def on_connection_lost(self, error: errors.PulsarLikeError) -> None:
        """Once, when the connection ends."""


class _Waiter:
    __slots__ = ("event", "answer", "error")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.answer: cmd.BaseCommand | None = None
        self.error: errors.PulsarLikeError | None = None

    def __call__(self, answer: cmd.BaseCommand | None, error: errors.PulsarLikeError | None) -> None:
        self.answer, self.error = answer, error
        self.event.set()


HANDED_OVER_FROM = 32 * 1024
"""Frames at least this large are written by the I/O thread, not by the caller: a producer's batch of a few
hundred KB takes its ``send`` tens to hundreds of µs in the kernel, which the application thread spends
building the next batch instead (the I/O thread's ``send`` releases the GIL). Smaller frames -- a sync send's
message, FLOW, ACK -- are written at once, as the latency path wants (bench/client_latency.py: produce of
300k x 100 B in batches of 1,000, interleaved runs, 488-593k -> 539-541k msg/s, e2e unchanged)."""


class PulsarConnection:
    """See the module docstring. ``PulsarConnection(address, security, connection_timeout_s)`` connects at
    once (``ConnectError`` naming ``address`` when it cannot; the broker's refusal as its typed error)."""

    def __init__(self, address: str, security: object, connection_timeout_s: float = 10.0,
                 keepalive_s: float = KEEPALIVE_S, proxy_to_broker_url: str | None = None) -> None:
        self.address = address
        self.server_version = ""
        self.protocol_version = 0
        self.max_message_size = wire.DEFAULT_MAX_MESSAGE_SIZE
        self.is_pulsarlike = False
        self.closed = False
        self._security = security
        self._keepalive_s = keepalive_s
        self._ids = itertools.count(1)
        self._producer_ids = itertools.count(1)
        self._consumer_ids = itertools.count(1)
        self._lock = threading.Lock()  # waiters, handlers, closing
        self._waiters: dict[int, Callback] = {}
        self._producers: dict[int, FrameHandler] = {}
        self._consumers: dict[int, FrameHandler] = {}
        self._lost_listeners: list[Callable[[errors.PulsarLikeError], None]] = []
        self._wlock = threading.Lock()  # the socket's writes and the queue of what it did not take yet
        self._pending: collections.deque[memoryview] = collections.deque()
        self._write_failure: OSError | None = None
        """A write on a caller's thread failed: the I/O thread ends the connection (the caller may hold its
        producer's or consumer's lock, which the handlers' ``on_connection_lost`` takes)."""
        self._received = True
        self._ping_outstanding = False
        opened = open_connection(address, security, connection_timeout_s, proxy_to_broker_url)
        self._sock, self._reader, self._early = opened.sock, opened.reader, opened.early
        self.server_version = opened.connected.server_version
        self.protocol_version = opened.connected.protocol_version
        self.max_message_size = opened.max_message_size
        self.is_pulsarlike = self.server_version.startswith("pulsarlike")
        log.debug("event=binary_connected address=%s server_version=%s protocol_version=%d", address,
                  self.server_version, self.protocol_version)
        self._tls = isinstance(self._sock, ssl.SSLSocket)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._sock.setblocking(False)
        self._thread = threading.Thread(target=self._run, name=f"pulsar-conn-{address}", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ ids
    def next_request_id(self) -> int:
        return next(self._ids)

    def next_producer_id(self) -> int:
        return next(self._producer_ids)

    def next_consumer_id(self) -> int:
        return next(self._consumer_ids)

    # ------------------------------------------------------------------ writing
    def send(self, command: cmd.BaseCommand, payload: bytes | memoryview | None = None) -> None:
        """Queue one frame (see the module docstring); after the connection ended, a send is dropped (its
        handlers were told the connection was lost)."""
        self._write(wire.encode(command) if payload is None else b"".join(wire.payload_frame(command, payload)))

    def send_many(self, frames: list[tuple[cmd.BaseCommand, bytes | memoryview | None]]) -> None:
        """Several frames in one write."""
        parts: list[bytes | memoryview] = []
        for command, payload in frames:
            if payload is None:
                parts.append(wire.encode(command))
            else:
                parts.extend(wire.payload_frame(command, payload))
        self._write(b"".join(parts))

    def _write(self, data: bytes) -> None:
        failure: OSError | None = None
        with self._wlock:
            if self.closed:
                log.debug("event=binary_send_dropped address=%s reason=closed", self.address)
                return
            if self._pending or self._tls or len(data) >= HANDED_OVER_FROM:
                self._pending.append(memoryview(data))
                if len(self._pending) == 1:
                    self._wake()
                return
            try:
                sent = self._sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as exc:
                sent, failure = len(data), exc
                if self._write_failure is None:
                    self._write_failure = exc
            if sent < len(data):
                self._pending.append(memoryview(data)[sent:])
            if sent < len(data) or failure is not None:
                self._wake()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except (BlockingIOError, OSError):
            pass  # already woken (the pipe is full) or closing

    def _flush(self) -> None:
        """On the I/O thread: write what is queued, as far as the socket takes it."""
        with self._wlock:
            while self._pending:
                head = self._pending[0]
                try:
                    sent = self._sock.send(head)
                except (BlockingIOError, InterruptedError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
                    return
                if sent < len(head):
                    self._pending[0] = head[sent:]
                    return
                self._pending.popleft()

    # ------------------------------------------------------------------ requests
    def request(self, command: cmd.BaseCommand, timeout_s: float) -> cmd.BaseCommand:
        """Send ``command`` (it carries its ``request_id``) and wait for its answer; see the module docstring."""
        if threading.current_thread() is self._thread:  # the answer would wait for this very thread
            raise errors.UnknownError(f"{T.Type.Name(command.type)}: request() called on the connection's own I/O "
                                      "thread (a frame handler) would wait forever; use request_async()")
        waiter = _Waiter()
        request_id = self.request_async(command, waiter)
        if not waiter.event.wait(timeout_s):
            with self._lock:
                self._waiters.pop(request_id, None)
            if not waiter.event.is_set():
                raise errors.Timeout(f"the broker at {self.address} did not answer {T.Type.Name(command.type)} "
                                     f"within {timeout_s:g}s", target=self.address, timeout_s=timeout_s)
        if waiter.error is not None:
            raise waiter.error
        assert waiter.answer is not None
        return waiter.answer

    def request_async(self, command: cmd.BaseCommand, callback: Callback) -> int:
        """Send ``command``; ``callback(answer, None)`` or ``callback(None, error)`` later, on the I/O thread
        (or at once on this one when the connection is already closed). Returns the request id."""
        request_id = _request_id(command)
        with self._lock:
            closed = self.closed
            if not closed:
                self._waiters[request_id] = callback
        if closed:
            callback(None, errors.ConnectError(f"the connection to the broker at {self.address} is closed",
                                               target=self.address))
            return request_id
        self.send(command)
        return request_id

    # ------------------------------------------------------------------ handlers
    def register_producer(self, producer_id: int, handler: FrameHandler) -> None:
        self._register(self._producers, producer_id, handler)

    def register_consumer(self, consumer_id: int, handler: FrameHandler) -> None:
        self._register(self._consumers, consumer_id, handler)

    def _register(self, table: dict[int, FrameHandler], key: int, handler: FrameHandler) -> None:
        with self._lock:
            closed = self.closed
            if not closed:
                table[key] = handler
        if closed:  # it would never hear of the loss otherwise
            handler.on_connection_lost(errors.ConnectError(f"the connection to the broker at {self.address} is "
                                                           "closed", target=self.address))

    def unregister_producer(self, producer_id: int) -> None:
        with self._lock:
            self._producers.pop(producer_id, None)

    def unregister_consumer(self, consumer_id: int) -> None:
        with self._lock:
            self._consumers.pop(consumer_id, None)

    def add_lost_listener(self, listener: Callable[[errors.PulsarLikeError], None]) -> None:
        """``listener(error)`` once when the connection ends (the transport's pool drops it then)."""
        with self._lock:
            closed = self.closed
            if not closed:
                self._lost_listeners.append(listener)
        if closed:
            listener(errors.ConnectError(f"the connection to the broker at {self.address} is closed"))

    # ------------------------------------------------------------------ the I/O thread
    def _run(self) -> None:
        selector = selectors.DefaultSelector()
        try:
            selector.register(self._sock, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            for command, payload in self._early:
                self._dispatch(command, payload)
            writing = False
            next_tick = time.monotonic() + self._keepalive_s
            while not self.closed:
                want_write = bool(self._pending)
                if want_write != writing:
                    selector.modify(self._sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if want_write else 0))
                    writing = want_write
                events = selector.select(max(next_tick - time.monotonic(), 0))
                for key, mask in events:
                    if key.fileobj is self._wake_r:
                        try:
                            while self._wake_r.recv(4096):
                                pass
                        except (BlockingIOError, OSError):
                            pass
                        continue
                    if mask & selectors.EVENT_WRITE or self._tls:
                        self._flush()
                    if mask & selectors.EVENT_READ and not self._read():
                        return
                if self._tls and self._pending:
                    self._flush()
                failure = self._write_failure
                if failure is not None:
                    self._lost(errors.ConnectError(f"writing to the broker at {self.address} failed: {failure}",
                                                   target=self.address))
                    return
                now = time.monotonic()
                if now >= next_tick:
                    next_tick = now + self._keepalive_s
                    self._keepalive()
        except wire.FrameError as exc:
            self._lost(errors.ConnectError(f"the broker at {self.address} sent a bad frame ({exc.reason})",
                                           target=self.address))
        except (OSError, ValueError) as exc:  # ValueError: the socket was closed under select
            self._lost(errors.ConnectError(f"the connection to the broker at {self.address} failed: {exc}",
                                           target=self.address))
        except Exception as exc:  # a bug here must still end the connection cleanly
            log.exception("event=binary_connection_failed address=%s", self.address)
            self._lost(errors.ConnectError(f"the connection to the broker at {self.address} failed: {exc!r}",
                                           target=self.address))
        finally:
            selector.close()

    def _read(self) -> bool:
        """Read and dispatch what is there; False when the connection ended."""
        while True:
            try:
                data = self._sock.recv(READ_SIZE)
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                return True
            if not data:
                self._lost(errors.ConnectError(f"the broker at {self.address} closed the connection",
                                               target=self.address))
                return False
            self._received = True
            for command, payload in self._reader.feed(data):
                self._dispatch(command, payload)
            if not self._tls:  # level-triggered: select says when there is more; TLS may hold decrypted bytes
                return True

    def _keepalive(self) -> None:
        if self._received:
            self._received = False
            self._ping_outstanding = False
        elif self._ping_outstanding:
            self._lost(errors.ConnectError(f"the broker at {self.address} did not answer for "
                                           f"{2 * self._keepalive_s:g}s (PING unanswered): taken for dead",
                                           target=self.address))
        else:
            self._ping_outstanding = True
            self.send(T(type=T.PING, ping=cmd.CommandPing()))

    def _dispatch(self, command: cmd.BaseCommand, payload: memoryview | None) -> None:
        kind = command.type
        field = _ANSWER_FIELDS.get(kind)
        if field is not None:
            request_id = getattr(command, field).request_id
            if kind == T.PRODUCER_SUCCESS and not command.producer_success.producer_ready:
                return  # WaitForExclusive: queued; the ready answer follows with the same request id
            with self._lock:
                callback = self._waiters.pop(request_id, None)
            if callback is not None:
                _call(callback, command, wire.answer_error(command))
                return
            if kind == T.ERROR and request_id == 0 and command.error.error == cmd.AuthenticationError:
                self._lost(wire.answer_error(command))  # type: ignore[arg-type]
                return
        if kind in _PRODUCER_FRAMES:
            handler = self._producers.get(getattr(command, _PRODUCER_FRAMES[kind]).producer_id)
        elif kind in _CONSUMER_FRAMES:
            handler = self._consumers.get(getattr(command, _CONSUMER_FRAMES[kind]).consumer_id)
        elif kind == T.PING:
            self.send(T(type=T.PONG, pong=cmd.CommandPong()))
            return
        elif kind == T.PONG:
            return
        elif kind == T.AUTH_CHALLENGE:
            log.info("event=binary_auth_challenge address=%s", self.address)
            try:
                self.send(auth_response(self._security))
            except Exception as exc:  # the token source failed: the broker will disconnect; say why now
                self._lost(errors.AuthenticationError(f"cannot answer the broker's AUTH_CHALLENGE: {exc!r}"))
            return
        else:
            handler = None
        if handler is None:
            log.debug("event=binary_frame_unclaimed address=%s type=%s", self.address, T.Type.Name(kind))
            return
        try:
            handler.on_frame(command, payload if payload else None)
        except Exception:
            log.exception("event=binary_handler_failed address=%s type=%s", self.address, T.Type.Name(kind))

    # ------------------------------------------------------------------ ending
    def _lost(self, error: errors.PulsarLikeError) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
            waiters, self._waiters = list(self._waiters.values()), {}
            handlers = list(self._producers.values()) + list(self._consumers.values())
            self._producers, self._consumers = {}, {}
            listeners, self._lost_listeners = self._lost_listeners, []
        log.info("event=binary_connection_lost address=%s cause=%s", self.address, error.message)
        with self._wlock:
            self._pending.clear()
        for sock in (self._sock, self._wake_w):
            try:
                sock.close()
            except OSError:
                pass
        for waiter in waiters:
            _call(waiter, None, error)
        for handler in handlers:
            try:
                handler.on_connection_lost(error)
            except Exception:
                log.exception("event=binary_handler_failed address=%s type=connection_lost", self.address)
        for listener in listeners:
            try:
                listener(error)
            except Exception:
                log.exception("event=binary_listener_failed address=%s", self.address)

    def close(self) -> None:
        """Close the connection: waiting requests fail and handlers hear ``on_connection_lost`` (ConnectError)."""
        self._lost(errors.ConnectError(f"the connection to the broker at {self.address} was closed by the client",
                                       target=self.address))
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=2.0)
        try:
            self._wake_r.close()
        except OSError:
            pass

    def __repr__(self) -> str:
        return f"PulsarConnection({self.address!r}, server_version={self.server_version!r})"


def _request_id(command: cmd.BaseCommand) -> int:
    """The ``request_id`` of a request command (every request names one; its answer echoes it)."""
    for _, value in command.ListFields():
        if hasattr(value, "request_id"):
            return value.request_id
    raise ValueError(f"{T.Type.Name(command.type)} carries no request_id")


def _call(callback: Callback, answer: cmd.BaseCommand | None, error: errors.PulsarLikeError | None) -> None:
    try:
        callback(answer if error is None else None, error)
    except Exception:
        log.exception("event=binary_request_callback_failed")
