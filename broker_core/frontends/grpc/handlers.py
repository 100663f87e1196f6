"""The ``PulsarLike`` service's method handlers, built from the proto's service descriptor and the objects
that serve its calls.

The servicer is assembled from plain components (:mod:`~broker_core.frontends.grpc.admin_rpcs`,
:mod:`~broker_core.frontends.grpc.topic_rpcs`, :mod:`~broker_core.frontends.grpc.subscription_rpcs` and the
servicer's own two streams); each RPC of the service is served by exactly one of them, the one with a method
of the RPC's name, and :func:`method_handlers` refuses a service where an RPC has no server or two. The
descriptor says each RPC's shape and message classes, so nothing here repeats the proto:

- a unary RPC's method takes the request and returns the reply, or a coroutine of it; it knows nothing of
  gRPC. :func:`answer` runs it: the one place where a broker error becomes a gRPC status (its code in the
  trailing metadata) and an unexpected one a generic ``UnknownError`` with an id (details in the log);
- a streaming RPC's method takes ``(requests, context)`` and is registered as it is (its errors travel
  in-band).

Admission (:mod:`~broker_core.frontends.grpc.admission`) wraps these handlers as it wraps any.
"""
from __future__ import annotations

import inspect
from typing import Any, Awaitable, Callable, Iterable, TypeVar

import grpc
from google.protobuf.message_factory import GetMessageClass

from broker_core.errors import PulsarLikeError
from broker_core.frontends.grpc.streams import unexpected
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol.status import grpc_status, trailing_metadata, wire_message

T = TypeVar("T")

SERVICE = pb.DESCRIPTOR.services_by_name["PulsarLike"]
SERVICE_NAME = SERVICE.full_name
"""``pulsarlike.v1.PulsarLike``."""


async def answer(context: grpc.aio.ServicerContext, call: Callable[[Any], Awaitable[T] | T], request: Any) -> T:
    """``call(request)``'s reply; a failure ends the call with its status (``context.abort`` raises)."""
    try:
        result = call(request)
        if inspect.isawaitable(result):
            result = await result
        return result  # type: ignore[return-value]
    except PulsarLikeError as exc:
        await context.abort(grpc_status(exc), wire_message(exc), trailing_metadata=trailing_metadata(exc))
    except Exception as exc:
        err = unexpected(exc)
        await context.abort(grpc_status(err), wire_message(err), trailing_metadata=trailing_metadata(err))
    raise AssertionError("unreachable: context.abort raises")


def served_by(components: Iterable[object]) -> dict[str, object]:
    """RPC name -> the one component serving it; ``TypeError`` naming every RPC with none or several (a
    wiring bug: the broker must not start serving half a service)."""
    components = list(components)
    owners: dict[str, object] = {}
    wrong: list[str] = []
    for method in SERVICE.methods:
        found = [c for c in components if callable(getattr(c, method.name, None))]
        if len(found) != 1:
            wrong.append(f"{method.name} ({', '.join(type(c).__name__ for c in found) or 'none'})")
            continue
        owners[method.name] = found[0]
    if wrong:
        raise TypeError(f"each RPC of {SERVICE_NAME} needs exactly one component serving it: {'; '.join(wrong)}")
    return owners


def method_handlers(components: Iterable[object]) -> dict[str, grpc.RpcMethodHandler]:
    """The service's handlers by RPC name, each calling its component's method (see the module docstring)."""
    handlers: dict[str, grpc.RpcMethodHandler] = {}
    for name, component in served_by(components).items():
        method = SERVICE.methods_by_name[name]
        serve = getattr(component, name)
        decode = GetMessageClass(method.input_type).FromString
        encode = GetMessageClass(method.output_type).SerializeToString
        if method.client_streaming and method.server_streaming:
            handlers[name] = grpc.stream_stream_rpc_method_handler(serve, decode, encode)
        elif method.client_streaming:
            handlers[name] = grpc.stream_unary_rpc_method_handler(serve, decode, encode)
        elif method.server_streaming:
            handlers[name] = grpc.unary_stream_rpc_method_handler(serve, decode, encode)
        else:
            handlers[name] = grpc.unary_unary_rpc_method_handler(_unary(serve), decode, encode)
    return handlers


def register(server: grpc.aio.Server, components: Iterable[object]) -> None:
    """Serve the ``PulsarLike`` service on ``server`` from ``components``."""
    handlers = method_handlers(components)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))
    # as the generated code does: gRPC then finds each method without asking the generic handler
    server.add_registered_method_handlers(SERVICE_NAME, handlers)


def _unary(serve: Callable[[Any], Any]) -> Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]:
    async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await answer(context, serve, request)
    return unary
