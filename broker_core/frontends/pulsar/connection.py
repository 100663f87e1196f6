"""One client connection speaking Pulsar's binary protocol: framing, the handshake, keep-alive, and the
command table; the commands of each concern are handled by their own module (:mod:`.lookups`,
:mod:`.producing`, :mod:`.consuming`, :mod:`.schema_commands`).

Life of a connection:

1. The first frame must be ``CONNECT``, within ``handshakeTimeoutSeconds`` of the socket's accept and in a
   frame of at most :data:`~.frames.PRE_CONNECT_MAX_FRAME` (64 KiB; ``maxMessageSize`` plus padding only
   once ``CONNECTED`` was sent): a client that has not shown who it is costs little and not for long
   (:mod:`broker_core.net.connection_budget`; those refusals are logged one line per interval with a
   count). The client's credentials go to the security layer
   (:mod:`.authentication`), which may answer later (a password hashed on a worker thread): the connection
   handles none of its frames after ``CONNECT`` until then. ``CONNECTED`` answers with ``protocol_version =
   min(client's, MAX_PROTOCOL_VERSION)`` and the broker's ``maxMessageSize``. A refused client gets
   ``ERROR(AuthenticationError)`` and the connection closes; expiring credentials are refreshed with
   ``AUTH_CHALLENGE``. Every command on a topic or namespace is authorized first (:meth:`PulsarConnection.
   authorize`); a refusal is answered ``AuthorizationError``.
2. Commands are handled in the order they arrive, on the broker's event loop. A request the broker refuses
   is answered with ``ERROR`` (or ``SEND_ERROR``, ...) carrying Pulsar's ``ServerError`` code
   (:mod:`broker_core.protocol.server_errors`); a command of a type the broker does not serve
   (transactions, topic watchers) with ``ERROR(NotAllowedError)`` naming it.
3. What cannot be answered closes the connection with one WARNING line (peer and reason): bytes that are
   not frames, a frame over ``maxMessageSize`` + 10 KiB, an unknown command type, a command without its
   required fields and without a request id to answer, anything before ``CONNECT``.
4. Keep-alive: every ``keepAliveIntervalSeconds`` a connection that sent nothing since the last check gets a
   ``PING``; one silent for twice the interval is closed. A client's ``PING`` gets a ``PONG``.
5. Back-pressure: replies the client leaves unread stop the connection: above the write buffer's high mark
   (``streamReplyQueueMaxBytes``) it reads no more commands and its consumers' permits are withheld (as the
   gRPC front end's outbox does), until the client has read down to the low mark.
6. Publish rate limits: while a publish rate throttles one of its producers (:meth:`PulsarConnection.throttle`,
   :mod:`broker_core.core.publish_throttle`) the connection reads no more commands, as Pulsar turns its
   connection's autoread off, until the rate allows again.

Replies written while a batch of incoming frames is handled leave in one write at its end. A connection's
frames hold the event loop at most ``TURN_S`` at a time: the rest of what it sent waits for a later turn
(its reading paused), so a write of thousands of costly frames (each creating a topic, say) never keeps
the other connections waiting longer than that and one frame.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Callable, Iterator

from broker_core.errors import NotAllowedError, PulsarLikeError, UnknownError
from broker_core.log_limits import LogLimiter
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.entry_limits import FRAME_PADDING
from broker_core.protocol.server_errors import server_error
from broker_core.protocol.status import wire_message
from broker_core.net.connection_budget import Admitted
from broker_core.net.peers import ClientIdentity, peer_name
from broker_core.frontends.pulsar.context import FrontEnd
from broker_core.frontends.pulsar.frames import PRE_CONNECT_MAX_FRAME, FrameError, FrameReader, FrameSizeError, encode
from broker_core.frontends.pulsar.text_fields import HAS_TEXT, not_utf8
from broker_core.security import Principal

if TYPE_CHECKING:
    from broker_core.frontends.pulsar.consuming import ConsumerCommands
    from broker_core.frontends.pulsar.producing import ProducerCommands

log = logging.getLogger(__name__)

T = cmd.BaseCommand
TURN_S = 0.05
"""Longest one connection's frames are handled in one go before the event loop serves the others."""
CORK_BYTES = 64 * 1024
"""Replies held back while a batch of incoming frames is handled are written once they reach this size."""
MAX_PROTOCOL_VERSION = 20
"""The newest protocol version this broker speaks (Pulsar 3.x, C++ client 4.x)."""
MIN_PROTOCOL_VERSION = 0
SERVER_VERSION = "pulsarlike"
_FIELD = {f.number: f.name for f in T.DESCRIPTOR.fields}
"""Command type -> the BaseCommand field holding that command (the numbers are equal)."""
_UNSERVED = {T.NEW_TXN, T.ADD_PARTITION_TO_TXN, T.ADD_SUBSCRIPTION_TO_TXN, T.END_TXN, T.END_TXN_ON_PARTITION,
             T.END_TXN_ON_SUBSCRIPTION, T.TC_CLIENT_CONNECT_REQUEST, T.WATCH_TOPIC_LIST}
_TXN_RESPONSES = {T.NEW_TXN: "newTxnResponse", T.ADD_PARTITION_TO_TXN: "addPartitionToTxnResponse",
                  T.ADD_SUBSCRIPTION_TO_TXN: "addSubscriptionToTxnResponse", T.END_TXN: "endTxnResponse",
                  T.END_TXN_ON_PARTITION: "endTxnOnPartitionResponse",
                  T.END_TXN_ON_SUBSCRIPTION: "endTxnOnSubscriptionResponse",
                  T.TC_CLIENT_CONNECT_REQUEST: "tcClientConnectResponse"}

Handler = Callable[..., None]


class PulsarConnection(asyncio.Protocol):
    def __init__(self, front: FrontEnd, identity: ClientIdentity | None = None,
                 admitted: Admitted | None = None) -> None:
        """``admitted``: the socket's place in the listener's connection budget (released when the
        connection is lost) and its handshake deadline; None: a deadline from now."""
        from broker_core.frontends.pulsar.authentication import ConnectionAuthentication

        self.front = front
        self.config = front.config
        self.identity = identity
        self.peer = identity.address if identity is not None else "unknown"
        self.transport: asyncio.Transport | None = None
        self.principal: Principal | None = None
        self.protocol_version = 0
        self.entry_metadata = False
        self.consumer_errors = False
        """The client reads a typed error in CLOSE_CONSUMER (pulsarlike's clients: FeatureFlags'
        ``pulsarlike_consumer_errors``); other clients are never closed for an error they cannot read."""
        """The client asked for each message's BrokerEntryMetadata (the stored prefix is then sent)."""
        self.closed = False
        self._admitted = admitted
        self._handshake: asyncio.TimerHandle | None = None
        self._reader = FrameReader(PRE_CONNECT_MAX_FRAME, "before CONNECTED: a CONNECT and its credentials")
        self._corked: list[bytes] | None = None
        self._corked_bytes = 0
        self._heard = True
        self._silent_checks = 0
        self._keepalive: asyncio.TimerHandle | None = None
        self._frames: Iterator[tuple[cmd.BaseCommand, memoryview]] | None = None  # a read not handled to its end
        self._unread: list[bytes] = []  # reads that came after it
        self._turn: asyncio.Handle | None = None
        self.paused = False
        self._throttled = 0
        """Producers of this connection a publish rate throttles now: while any is, nothing more is read."""
        self._authenticating = False
        """CONNECT's credentials are being checked: no frame after it is handled until they are."""
        self.log_limits = LogLimiter(log, clock=front.clock)
        """WARNING lines a client can cause again and again (``bad_ack``, ...): one per event and interval."""
        self.producers: ProducerCommands | None = None
        self.consumers: ConsumerCommands | None = None
        """Built with the other commands' handlers at the first command after the handshake (see
        :meth:`_serve_commands`)."""
        self._authentication = ConnectionAuthentication(self)
        self._handlers: dict[int, Handler] = {
            T.CONNECT: self._connect, T.PING: self._ping, T.PONG: self._pong, **self._authentication.handlers()}

    def _serve_commands(self) -> None:
        """The handlers of every other command (lookups, producers, consumers, schemas), added once.

        Not in ``__init__``: their modules (and the dispatch and storage code under them) are imported at the
        first command that needs one, after the broker's first CONNECTED answer, not before it (issue 19's
        start time: ~25 ms of imports on the first connection's path)."""
        from broker_core.frontends.pulsar.consuming import ConsumerCommands
        from broker_core.frontends.pulsar.lookups import LookupCommands
        from broker_core.frontends.pulsar.producing import ProducerCommands
        from broker_core.frontends.pulsar.schema_commands import SchemaCommands

        self.producers = ProducerCommands(self)
        self.consumers = ConsumerCommands(self)
        self._handlers = {**self._handlers, **LookupCommands(self).handlers(), **self.producers.handlers(),
                          **self.consumers.handlers(), **SchemaCommands(self).handlers()}

    # ------------------------------------------------------------------ transport events
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if self.identity is None:
            peer = transport.get_extra_info("peername")
            self.identity = ClientIdentity(peer_name(peer[0], peer[1]) if isinstance(peer, tuple) else str(peer))
            self.peer = self.identity.address
        high = max(self.config.streamReplyQueueMaxBytes, 64 * 1024)
        self.transport.set_write_buffer_limits(high=high, low=high // 2)
        self.front.connections.add(self)
        loop = asyncio.get_running_loop()
        admitted = self._admitted
        deadline = admitted.deadline if admitted is not None else loop.time() + self.config.handshakeTimeoutSeconds
        self._handshake = loop.call_at(deadline, self._handshake_overdue)
        self._schedule_keepalive()
        log.debug("event=pulsar_connection_opened peer=%s", self.peer)

    def data_received(self, data: bytes) -> None:
        self._heard = True
        if self.closed:
            return
        if self._frames is not None:  # an earlier read is still being handled: this one after it
            self._unread.append(data)
            return
        self._frames = self._reader.feed(data)
        self._handle_frames()

    def _handle_frames(self) -> None:
        """Dispatch what was read, for at most ``TURN_S`` (then again on a later turn of the loop)."""
        self._turn = None
        if self.closed:
            return
        self._corked = corked = []
        self._corked_bytes = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TURN_S
        try:
            while self._frames is not None:
                for command, payload in self._frames:
                    self._dispatch(command, payload)
                    if self.closed:
                        return
                    if self.paused or self._throttled or self._authenticating or loop.time() > deadline:
                        self._handle_later()
                        return
                self._frames = self._reader.feed(self._unread.pop(0)) if self._unread else None
            if self.transport is not None and not self.paused and not self._throttled:
                self.transport.resume_reading()
        except FrameError as exc:
            self.abort(exc.reason, "frame_too_large" if isinstance(exc, FrameSizeError) else "bad_frame")
        except Exception as exc:  # never let one connection take the broker down
            log.error("event=unexpected_error peer=%s error_type=%s error=%s", self.peer, type(exc).__name__, exc,
                      exc_info=exc)
            self.abort("internal broker error")
        finally:
            self._corked = None
            if corked and self.transport is not None and not self.transport.is_closing():
                self.transport.write(b"".join(corked))

    def _handle_later(self) -> None:
        """The rest of what was read waits: reading stops, and the frames go on at the next turn (once the
        client reads its replies, when it is paused for writing)."""
        if self.transport is not None:
            self.transport.pause_reading()
        if not self.paused and not self._throttled and not self._authenticating:
            self._turn = asyncio.get_running_loop().call_soon(self._handle_frames)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.front.connections.discard(self)
        if self._admitted is not None:
            self._admitted.release()
        for timer in (self._keepalive, self._handshake):
            if timer is not None:
                timer.cancel()
        if self.producers is not None:
            self.producers.connection_closed()
        if self.consumers is not None:
            self.consumers.connection_closed()
        self._authentication.closed()
        self.log_limits.flush()
        log.debug("event=pulsar_connection_closed peer=%s", self.peer)

    def pause_writing(self) -> None:
        # the client does not read what it is sent: read no more of its commands, send no more messages
        self.paused = True
        if self.transport is not None:
            self.transport.pause_reading()
        if self.consumers is not None:
            self.consumers.writable(False)

    def resume_writing(self) -> None:
        self.paused = False
        if not self._throttled:
            self._read_again()
        if self.consumers is not None:
            self.consumers.writable(True)

    def throttle(self, paused: bool) -> None:
        """A producer of this connection is throttled by a publish rate (``paused``), or no longer: while any
        is, the connection reads nothing (Pulsar turns its autoread off)."""
        self._throttled += 1 if paused else -1
        if self.closed or self.transport is None:
            return
        if paused and self._throttled == 1:
            self.transport.pause_reading()
        elif not paused and not self._throttled and not self.paused:
            self._read_again()

    def _read_again(self) -> None:
        """Frames read before a pause go first, then reading goes on."""
        if self._frames is not None and not self.closed:
            if self._turn is None and not self._authenticating:  # frames read before the pause go first
                self._turn = asyncio.get_running_loop().call_soon(self._handle_frames)
        elif self.transport is not None and not self.closed:
            self.transport.resume_reading()

    # ------------------------------------------------------------------ writing
    def send(self, command: cmd.BaseCommand) -> None:
        self.write(encode(command))

    def write(self, data: bytes) -> None:
        if self.closed or self.transport is None:
            return
        corked = self._corked
        if corked is None:
            self.transport.write(data)
            return
        corked.append(data)
        self._corked_bytes += len(data)
        if self._corked_bytes >= CORK_BYTES:  # the transport must see it: its high mark is the back-pressure
            self.transport.write(b"".join(corked))
            corked.clear()
            self._corked_bytes = 0

    def error(self, request_id: int, exc: PulsarLikeError) -> None:
        self.send(T(type=T.ERROR, error=cmd.CommandError(request_id=request_id, error=server_error(exc),
                                                         message=wire_message(exc))))

    def authorize(self, action: str, resource: str, subscription: str = "") -> None:
        """Raises ``AuthorizationError`` when this connection's role may not do ``action`` on ``resource``
        (``subscription``: the one a ``consume`` uses)."""
        assert self.principal is not None
        self.front.security.authorize(self.principal, action, resource, self.peer, subscription)

    def success(self, request_id: int) -> None:
        self.send(T(type=T.SUCCESS, success=cmd.CommandSuccess(request_id=request_id)))

    def abort(self, reason: str, event: str = "protocol_error") -> None:
        """Close the connection now (a client that broke the protocol): one WARNING line; before CONNECT
        one per ``event`` and interval with a count, through the listener's budget (anyone can open such
        connections by the thousand)."""
        if self.closed:
            return
        if self.principal is None and self._admitted is not None:
            self._admitted.refusals.warning(event, "event=pulsar_connection_refused peer=%s reason=%s", self.peer,
                                            reason)
        else:
            log.warning("event=pulsar_connection_refused peer=%s reason=%s", self.peer, reason)
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.transport is not None:
            corked, self._corked = self._corked, None
            if corked:
                self.transport.write(b"".join(corked))
            self.transport.close()

    # ------------------------------------------------------------------ dispatch
    def _dispatch(self, command: cmd.BaseCommand, payload: memoryview) -> None:
        if not command.HasField("type"):
            self.abort("a command of a type this broker does not know")
            return
        kind = command.type
        if self.principal is None and kind != T.CONNECT:
            self.abort(f"{T.Type.Name(kind)} before CONNECT: a connection starts with CONNECT",
                       "command_before_connect")
            return
        name = _FIELD.get(kind)
        body = getattr(command, name) if name else None
        if body is None or not command.HasField(name):
            self.abort(f"{T.Type.Name(kind)} without its command body")
            return
        if not body.IsInitialized():
            self._malformed(kind, body, f"is missing required field(s) {', '.join(body.FindInitializationErrors())}")
            return
        if kind in HAS_TEXT:
            field = not_utf8(body)
            if field is not None:
                self._malformed(kind, body, f"has a {field} that is not UTF-8 text")
                return
        handler = self._handlers.get(kind)
        if handler is None and self.producers is None:
            self._serve_commands()
            handler = self._handlers.get(kind)
        if handler is None:
            self._unserved(kind, body)
            return
        if payload and kind != T.SEND:
            self.abort(f"{T.Type.Name(kind)} with a payload: only SEND carries one")
            return
        try:
            handler(body, payload) if kind == T.SEND else handler(body)
        except PulsarLikeError as exc:
            request_id = _request_id(body)
            if request_id is None:
                self.abort(f"{T.Type.Name(kind)} refused: {exc.message}")
            else:
                self.error(request_id, exc)

    def _malformed(self, kind: int, body, what: str) -> None:
        """A command that cannot be served as sent: ``NotAllowedError`` when it has a request id to answer,
        else the connection is closed."""
        request_id = _request_id(body)
        if request_id is None:
            self.abort(f"{T.Type.Name(kind)} {what}")
        else:
            self.error(request_id, NotAllowedError(f"{T.Type.Name(kind)} {what}"))

    def _unserved(self, kind: int, body) -> None:
        request_id = _request_id(body)
        what = T.Type.Name(kind)
        error = NotAllowedError(f"{what} is not supported by this broker (pulsarlike serves no transactions,"
                                " replication or topic watchers)")
        response = _TXN_RESPONSES.get(kind)
        if request_id is None or kind not in _UNSERVED:
            self.abort(f"{what}: a command a client does not send")
        elif response is not None:
            reply = T(type=kind + 1)
            body = getattr(reply, response)
            body.request_id, body.error, body.message = request_id, cmd.NotAllowedError, wire_message(error)
            self.send(reply)
        else:
            self.error(request_id, error)

    # ------------------------------------------------------------------ handshake and keep-alive
    def _connect(self, connect: cmd.CommandConnect) -> None:
        if self.principal is not None or self._authenticating:
            self.abort("a second CONNECT on one connection")
            return
        self._authenticating = True
        self._authentication.connect(connect, lambda principal: self._connected(connect, principal))

    def _connected(self, connect: cmd.CommandConnect, principal: Principal) -> None:
        """CONNECT's credentials passed: answer CONNECTED, then handle the frames that came after it."""
        self._authenticating = False
        self.principal = principal
        if self._handshake is not None:
            self._handshake.cancel()
        # as Pulsar: a frame is at most maxMessageSize plus 10 KiB of padding for its command and metadata
        self._reader.limit(self.config.maxMessageSize + FRAME_PADDING, "maxMessageSize plus framing")
        self.protocol_version = max(MIN_PROTOCOL_VERSION, min(connect.protocol_version, MAX_PROTOCOL_VERSION))
        self.entry_metadata = connect.feature_flags.supports_broker_entry_metadata
        self.consumer_errors = connect.feature_flags.pulsarlike_consumer_errors
        self.send(T(type=T.CONNECTED, connected=cmd.CommandConnected(
            server_version=SERVER_VERSION, protocol_version=self.protocol_version,
            max_message_size=self.config.maxMessageSize,
            feature_flags=cmd.FeatureFlags(supports_auth_refresh=True, supports_broker_entry_metadata=True,
                                           supports_partial_producer=True))))
        log.info("event=pulsar_client_connected peer=%s client_version=%s protocol_version=%d role=%s", self.peer,
                 connect.client_version[:128], self.protocol_version, principal.role)
        if self._turn is None and not self.paused:  # the frames held back, then reading again
            self._turn = asyncio.get_running_loop().call_soon(self._handle_frames)

    def _handshake_overdue(self) -> None:
        if self.principal is None:
            timeout = self.config.handshakeTimeoutSeconds
            self.abort(f"no CONNECT completed within {timeout} s of the connection's accept (handshakeTimeoutSeconds"
                       f"={timeout})", "handshake_timeout")

    def _ping(self, _ping: cmd.CommandPing) -> None:
        self.send(T(type=T.PONG, pong=cmd.CommandPong()))

    def _pong(self, _pong: cmd.CommandPong) -> None:
        """Any frame counts as a sign of life; nothing else to do."""

    def _schedule_keepalive(self) -> None:
        interval = self.config.keepAliveIntervalSeconds
        if interval > 0 and not self.closed:
            self._keepalive = asyncio.get_running_loop().call_later(interval, self._check_alive)

    def _check_alive(self) -> None:
        if self.closed:
            return
        if self._heard:
            self._heard = False
            self._silent_checks = 0
        else:
            self._silent_checks += 1
            if self._silent_checks >= 2:
                self.abort(f"silent for {2 * self.config.keepAliveIntervalSeconds} s (keepAliveIntervalSeconds="
                           f"{self.config.keepAliveIntervalSeconds})")
                return
            if self.principal is not None:
                self.send(T(type=T.PING, ping=cmd.CommandPing()))
        self._schedule_keepalive()


def _request_id(body) -> int | None:
    """The command's request id, when it has one set."""
    try:
        return body.request_id if body.HasField("request_id") else None
    except ValueError:  # a command without that field
        return None


def unexpected(exc: BaseException, peer: str) -> PulsarLikeError:
    """An error the client may see for a broker bug: an id to find the details in the broker's log (which
    holds the exception's text; it may name server paths, so the client never sees it)."""
    import uuid

    error_id = uuid.uuid4().hex[:12]
    log.error("event=unexpected_error peer=%s error_id=%s error_type=%s error=%s", peer, error_id,
              type(exc).__name__, exc, exc_info=exc)
    return UnknownError(f"internal broker error (error id {error_id}); the broker's log has the details",
                        error_id=error_id)
