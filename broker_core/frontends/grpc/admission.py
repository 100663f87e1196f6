"""What reaches a servicer: calls from clients the security layer knows and allows, within their limits,
with requests that decode.

A gRPC server interceptor wraps each method of every service the broker serves (its own and health):

- each call of the broker's own service is authenticated (:meth:`~broker_core.security.Security.
  authenticate_call_async`: its ``authorization: Bearer <token>`` or ``Basic`` metadata -- a password hashed
  on a worker thread --, else the TLS client certificate the listener verified, else anonymous) and
  authorized against :mod:`broker_core.frontends.grpc.rpc_access` (the action and resource of its request;
  a stream's first request) before the servicer does anything; a refusal is ``AuthenticationError`` /
  ``AuthorizationError`` (``TooManyRequests`` from an address blocked for failed Basic logins), as a status
  on unary calls and on a stream refused before it starts (initial metadata is sent first, so the client
  reads the typed error), in-band on a stream whose first request is refused. A stream whose token expires
  is ended with ``AuthenticationError`` at the next ``authenticationRefreshCheckSeconds`` check
  (:mod:`broker_core.security.credential_checks`);

- the call is counted against the client's limits (:mod:`broker_core.net.client_limits`), streams as
  streams and unary calls as requests, under the client's own address: gRPC sees the broker's port
  listener as every call's peer, and the listener's :class:`~broker_core.net.peers.PeerMap` says who is
  behind it (a call from an address the listener did not relay -- someone reaching the private gRPC port
  directly -- is refused with ``NotAllowedError``); one over a limit ends at once with
  :class:`~broker_core.errors.TooManyRequests` (status and trailing metadata, as every broker error on a
  unary call);
- requests reach the method as bytes and are decoded here, so garbage is a typed
  :class:`~broker_core.errors.InvalidMessage` -- not an exception inside gRPC, which logs a traceback for
  each one. A call whose (first) request does not decode fails with it and logs one WARNING line (peer,
  what was wrong); on a request stream the iterator raises it, and the stream's session ends with it
  in-band, logging its own one line.

Every wrapped method is a coroutine or an async generator (the broker's servicers are asyncio ones).
"""
from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any, AsyncIterator, Awaitable, Callable

import grpc
from google.protobuf.message import Error as ProtobufError

from broker_core.errors import (AuthenticationError, AuthorizationError, InvalidMessage, NotAllowedError,
                                PulsarLikeError, TooManyRequests)
from broker_core.protocol.status import grpc_status, trailing_metadata, wire_message
from broker_core.frontends.grpc import rpc_access
from broker_core.net.client_limits import ClientLimits
from broker_core.security.credential_checks import CredentialChecks
from broker_core.net.peers import ClientIdentity, PeerMap
from broker_core.security import Principal, Security

log = logging.getLogger(__name__)

Decode = Callable[[bytes], Any]


class Admission(grpc.aio.ServerInterceptor):
    """Wraps each method once, on its first call (see the module docstring)."""

    def __init__(self, limits: ClientLimits, peers: PeerMap | None = None, security: Security | None = None,
                 checks: CredentialChecks | None = None) -> None:
        """``peers``: the listener's relayed connections (None: gRPC's peer is the client, as in tests that
        serve gRPC directly); ``security``: None lets every call through (authentication off);
        ``checks``: where streams with expiring credentials are registered."""
        self._limits = limits
        self._peers = peers
        self._security = security or Security()
        self._checks = checks
        self._wrapped: dict[str, grpc.RpcMethodHandler] = {}

    def _identity(self, context: grpc.aio.ServicerContext) -> ClientIdentity:
        """The client: gRPC's peer, translated through the listener's map."""
        peer = context.peer()
        if self._peers is None:
            return ClientIdentity(peer)
        identity = self._peers.identity(peer)
        if identity is None:
            raise NotAllowedError("this port only serves the broker itself: connect to the broker's port",
                                  peer=peer)
        return identity

    def _peer(self, context: grpc.aio.ServicerContext) -> str:
        """The client's address (what its limits are counted under)."""
        return self._identity(context).address

    async def _principal(self, context: grpc.aio.ServicerContext, identity: ClientIdentity) -> Principal:
        authorization = None
        if self._security.authentication_enabled:
            for key, value in context.invocation_metadata() or ():
                if key == "authorization":
                    authorization = value if isinstance(value, str) else value.decode("ascii", "replace")
                    break
        return await self._security.authenticate_call_async(authorization, identity)

    def _authorize(self, principal: Principal, name: str, request: Any, peer: str) -> None:
        if not self._security.authorization_enabled:
            return
        action, resource = rpc_access.rule(name)
        if callable(action):
            action = action(request)
        self._security.authorize(principal, action, resource(request), peer, rpc_access.subscription_of(name, request))

    async def intercept_service(self, continuation: Callable[[Any], Awaitable[grpc.RpcMethodHandler]],
                                handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        method = handler_call_details.method
        wrapped = self._wrapped.get(method)
        if wrapped is not None:
            return wrapped
        handler = await continuation(handler_call_details)
        if handler is None or handler.request_deserializer is None:
            return handler
        name = method.rsplit("/", 1)[-1]
        checked = rpc_access.checked(method)
        decode, serialize = handler.request_deserializer, handler.response_serializer
        if handler.request_streaming and handler.response_streaming:
            wrapped = grpc.stream_stream_rpc_method_handler(
                self._stream(handler.stream_stream, decode, name, checked), None, serialize)
        elif not handler.request_streaming and not handler.response_streaming:
            wrapped = grpc.unary_unary_rpc_method_handler(
                self._unary(handler.unary_unary, decode, name, checked, stream=False), None, serialize)
        elif not handler.request_streaming and not inspect.isasyncgenfunction(handler.unary_stream):
            wrapped = grpc.unary_stream_rpc_method_handler(  # writes with context.write (health's Watch)
                self._unary(handler.unary_stream, decode, name, checked, stream=True), None, serialize)
        else:  # no method of the broker's services has another shape
            return handler
        self._wrapped[method] = wrapped
        return wrapped

    def _unary(self, behavior: Callable[[Any, Any], Awaitable[Any]], decode: Decode, name: str, checked: bool,
               *, stream: bool):
        limits = self._limits

        async def unary(data: bytes, context: grpc.aio.ServicerContext) -> Any:
            peer = context.peer()
            try:
                identity = self._identity(context)
                peer = identity.address
                request = _decode(decode, data, name)
                if checked:
                    self._authorize(await self._principal(context, identity), name, request, peer)
                limits.admit(peer, stream=stream)
            except InvalidMessage as exc:
                log.warning("event=bad_request method=%s peer=%s error=%s", name, peer, exc.message)
                return await _abort(context, exc)
            except (TooManyRequests, NotAllowedError, AuthenticationError, AuthorizationError) as exc:
                return await _abort(context, exc)
            except PulsarLikeError as exc:  # a resource name that does not parse
                return await _abort(context, exc)
            try:
                return await behavior(request, context)
            finally:
                limits.release(peer, stream=stream)
        return unary

    def _stream(self, behavior: Callable[[Any, Any], AsyncIterator[Any]], decode: Decode, name: str,
                checked: bool):
        limits = self._limits

        async def stream(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            try:
                identity = self._identity(context)
                peer = identity.address
                principal = await self._principal(context, identity) if checked else None
                limits.admit(peer, stream=True)
            except (TooManyRequests, NotAllowedError, AuthenticationError) as exc:
                # grpc quirk: a bidirectional stream refused before its initial metadata reaches the client
                # as a bare status without our trailing metadata; sent first, the typed error arrives
                await context.send_initial_metadata(())
                await _abort(context, exc)
                return
            expiry = forget = None
            if principal is not None and principal.expires_at_ms is not None and self._checks is not None:
                expiry = _Expiry(self._security, principal, peer, name)
                forget = self._checks.add(expiry.check)
            first = None
            if principal is not None and self._security.authorization_enabled:
                first = lambda request: self._authorize(principal, name, request, peer)  # noqa: E731
            responses = behavior(_decoded(requests, decode, name, first, expiry), context)
            try:
                async for response in responses:
                    yield response
                    if expiry is not None and expiry.error is not None:
                        break
            finally:
                if forget is not None:
                    forget()
                limits.release(peer, stream=True)
                await responses.aclose()
            if expiry is not None and expiry.error is not None:
                await _abort(context, expiry.error)
        return stream


class _Expiry:
    """A stream's expiring credentials: :meth:`check` (every ``authenticationRefreshCheckSeconds``) sets
    ``error`` once they expired, which ends the stream's requests (:func:`_decoded`) and responses; the
    stream's status is then ``error``."""

    def __init__(self, security: Security, principal: Principal, peer: str, method: str) -> None:
        self._security = security
        self._principal = principal
        self._peer = peer
        self._method = method
        self.error: AuthenticationError | None = None
        self.expired: asyncio.Future = asyncio.get_running_loop().create_future()

    def check(self) -> None:
        if self.error is not None or self._security.still_valid(self._principal):
            return
        log.info("event=stream_credentials_expired peer=%s role=%s method=%s", self._peer, self._principal.role,
                 self._method)
        self.error = AuthenticationError("authentication expired: the stream's token expired; the client "
                                         "reconnects when its token source gives a new token",
                                         reason="token expired", role=self._principal.role)
        self.expired.set_result(None)

    async def next(self, iterator: AsyncIterator[bytes]) -> bytes:
        """The next request; once expired, the end of the requests: the session ends as if the client had
        closed, and the stream then ends with ``error`` as its status (the client sees the typed error, and
        reconnects when its token source has a new token)."""
        if self.error is not None:
            raise StopAsyncIteration
        step = asyncio.ensure_future(iterator.__anext__())
        try:
            await asyncio.wait((step, self.expired), return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not step.done():
                step.cancel()
                step.add_done_callback(_retrieved)
        if step.done() and not step.cancelled():
            return step.result()  # StopAsyncIteration at the end of the requests
        raise StopAsyncIteration


def _retrieved(task: asyncio.Future) -> None:
    if not task.cancelled():
        task.exception()  # the read ended anyway (the client closed): nothing to report


async def _decoded(requests: AsyncIterator[bytes], decode: Decode, name: str,
                   first: Callable[[Any], None] | None = None, expiry: _Expiry | None = None) -> AsyncIterator[Any]:
    """The stream's requests, decoded; ``first`` checks the first one (authorization); ``expiry`` ends them
    once the stream's credentials expired."""
    index = 0
    iterator = requests.__aiter__()
    while True:
        try:
            data = await (iterator.__anext__() if expiry is None else expiry.next(iterator))
        except StopAsyncIteration:
            return
        index += 1
        request = _decode(decode, data, name, index)
        if index == 1 and first is not None:
            first(request)
        yield request


def _decode(decode: Decode, data: bytes, name: str, index: int = 0) -> Any:
    try:
        return decode(data)
    except ProtobufError as exc:
        where = f"request {index} on the {name} stream" if index else f"the {name} request"
        raise InvalidMessage(f"{where} is not a valid message ({exc}); is the client a pulsarlike client of"
                             " a compatible version?", method=name) from None


async def _abort(context: grpc.aio.ServicerContext, exc: PulsarLikeError) -> None:
    """End the call with ``exc`` (``context.abort`` raises)."""
    await context.abort(grpc_status(exc), wire_message(exc), trailing_metadata=trailing_metadata(exc))
