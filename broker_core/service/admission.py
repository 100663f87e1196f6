"""What reaches a servicer: calls within the client's limits, requests that decode.

A gRPC server interceptor wraps each method of every service the broker serves (its own and health):

- the call is counted against the client's limits (:mod:`broker_core.service.client_limits`), streams as
  streams and unary calls as requests, under the client's own address: gRPC sees the broker's port
  listener as every call's peer, and the listener's :class:`~broker_core.service.peers.PeerMap` says who is
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

import inspect
import logging
from typing import Any, AsyncIterator, Awaitable, Callable

import grpc
from google.protobuf.message import Error as ProtobufError

from broker_core.errors import InvalidMessage, NotAllowedError, PulsarLikeError, TooManyRequests
from broker_core.protocol.status import grpc_status, trailing_metadata, wire_message
from broker_core.service.client_limits import ClientLimits
from broker_core.service.peers import PeerMap

log = logging.getLogger(__name__)

Decode = Callable[[bytes], Any]


class Admission(grpc.aio.ServerInterceptor):
    """Wraps each method once, on its first call (see the module docstring)."""

    def __init__(self, limits: ClientLimits, peers: PeerMap | None = None) -> None:
        """``peers``: the listener's relayed connections (None: gRPC's peer is the client, as in tests that
        serve gRPC directly)."""
        self._limits = limits
        self._peers = peers
        self._wrapped: dict[str, grpc.RpcMethodHandler] = {}

    def _peer(self, context: grpc.aio.ServicerContext) -> str:
        """The client's address: gRPC's peer, translated through the listener's map."""
        peer = context.peer()
        if self._peers is None:
            return peer
        identity = self._peers.identity(peer)
        if identity is None:
            raise NotAllowedError("this port only serves the broker itself: connect to the broker's port",
                                  peer=peer)
        return identity.address

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
        decode, serialize = handler.request_deserializer, handler.response_serializer
        if handler.request_streaming and handler.response_streaming:
            wrapped = grpc.stream_stream_rpc_method_handler(
                self._stream(handler.stream_stream, decode, name), None, serialize)
        elif not handler.request_streaming and not handler.response_streaming:
            wrapped = grpc.unary_unary_rpc_method_handler(
                self._unary(handler.unary_unary, decode, name, stream=False), None, serialize)
        elif not handler.request_streaming and not inspect.isasyncgenfunction(handler.unary_stream):
            wrapped = grpc.unary_stream_rpc_method_handler(  # writes with context.write (health's Watch)
                self._unary(handler.unary_stream, decode, name, stream=True), None, serialize)
        else:  # no method of the broker's services has another shape
            return handler
        self._wrapped[method] = wrapped
        return wrapped

    def _unary(self, behavior: Callable[[Any, Any], Awaitable[Any]], decode: Decode, name: str, *, stream: bool):
        limits = self._limits

        async def unary(data: bytes, context: grpc.aio.ServicerContext) -> Any:
            peer = context.peer()
            try:
                peer = self._peer(context)
                request = _decode(decode, data, name)
                limits.admit(peer, stream=stream)
            except InvalidMessage as exc:
                log.warning("event=bad_request method=%s peer=%s error=%s", name, peer, exc.message)
                return await _abort(context, exc)
            except (TooManyRequests, NotAllowedError) as exc:
                return await _abort(context, exc)
            try:
                return await behavior(request, context)
            finally:
                limits.release(peer, stream=stream)
        return unary

    def _stream(self, behavior: Callable[[Any, Any], AsyncIterator[Any]], decode: Decode, name: str):
        limits = self._limits

        async def stream(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            try:
                peer = self._peer(context)
                limits.admit(peer, stream=True)
            except (TooManyRequests, NotAllowedError) as exc:
                await _abort(context, exc)
                return
            responses = behavior(_decoded(requests, decode, name), context)
            try:
                async for response in responses:
                    yield response
            finally:
                limits.release(peer, stream=True)
                await responses.aclose()
        return stream


async def _decoded(requests: AsyncIterator[bytes], decode: Decode, name: str) -> AsyncIterator[Any]:
    index = 0
    async for data in requests:
        index += 1
        request = _decode(decode, data, name, index)
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
