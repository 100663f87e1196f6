"""The one mapping between :mod:`broker_core.errors` and the wire, used by both broker and client.

Unary calls fail with a gRPC status whose trailing metadata carries ``pulsarlike-error-code`` (the error
class name) and ``pulsarlike-error-fields`` (JSON of its structured fields). Streams carry the same
information in-band as a ``broker_pb2.Error`` message. Either way the client raises the class the broker
raised, with the same fields.
"""
from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from broker_core import errors

if TYPE_CHECKING:
    import grpc

    from broker_core.protocol import broker_pb2

_TOO_BIG = re.compile(r"Received message larger than max \((\d+) vs\. (\d+)\)")
CODE_KEY = "pulsarlike-error-code"
FIELDS_KEY = "pulsarlike-error-fields"

_STATUS_NAMES: dict[type[errors.PulsarLikeError], str] = {
    errors.InvalidTopicName: "INVALID_ARGUMENT",
    errors.InvalidConfiguration: "INVALID_ARGUMENT",
    errors.InvalidMessage: "INVALID_ARGUMENT",
    errors.ChecksumError: "DATA_LOSS",
    errors.CorruptLog: "DATA_LOSS",
    errors.MessageTooBig: "RESOURCE_EXHAUSTED",
    errors.ProducerQueueIsFull: "RESOURCE_EXHAUSTED",
    errors.TooManyRequests: "RESOURCE_EXHAUSTED",
    errors.TopicNotFound: "NOT_FOUND",
    errors.SubscriptionNotFound: "NOT_FOUND",
    errors.MessageNotFound: "NOT_FOUND",
    errors.TopicAlreadyExists: "ALREADY_EXISTS",
    errors.TenantAlreadyExists: "ALREADY_EXISTS",
    errors.NamespaceAlreadyExists: "ALREADY_EXISTS",
    errors.SubscriptionAlreadyExists: "ALREADY_EXISTS",
    errors.InvalidPartitionCount: "INVALID_ARGUMENT",
    errors.ConsumerBusy: "FAILED_PRECONDITION",
    errors.ProducerBusy: "FAILED_PRECONDITION",
    errors.ProducerFenced: "FAILED_PRECONDITION",
    errors.ProducerBlockedQuotaExceededException: "RESOURCE_EXHAUSTED",
    errors.ConsumerAssignError: "FAILED_PRECONDITION",
    errors.NotAllowedError: "FAILED_PRECONDITION",
    errors.AuthenticationError: "UNAUTHENTICATED",
    errors.AuthorizationError: "PERMISSION_DENIED",
    errors.TopicTerminated: "FAILED_PRECONDITION",
    errors.AlreadyClosed: "FAILED_PRECONDITION",
    errors.Timeout: "DEADLINE_EXCEEDED",
    errors.ServiceNotReady: "UNAVAILABLE",
    errors.BrokerPersistenceError: "UNAVAILABLE",
}
"""Each error's gRPC status, by name: gRPC (~25 ms and its C core) is imported by the first gRPC call, not by
the Pulsar binary protocol front end, which uses this module's :func:`wire_message` only."""


def grpc_status(exc: errors.PulsarLikeError) -> grpc.StatusCode:
    """The gRPC status for a broker error (the nearest registered base class decides)."""
    import grpc

    for cls in type(exc).__mro__:
        if cls in _STATUS_NAMES:
            return grpc.StatusCode[_STATUS_NAMES[cls]]  # type: ignore[index]
    return grpc.StatusCode.INTERNAL


MAX_TEXT = 1024
"""Longest message or string field sent with an error: a refusal may quote what the client sent (a name,
a policy value), and gRPC refuses trailing metadata over 16 KiB, which would turn the typed error into a
transport one."""


def _cut(value: object) -> object:
    if isinstance(value, str) and len(value) > MAX_TEXT:
        return f"{value[:MAX_TEXT]}... ({len(value)} characters)"
    if isinstance(value, (list, tuple)):
        return [_cut(v) for v in value[:64]]
    return value


def fields_json(exc: errors.PulsarLikeError) -> str:
    """An error's structured fields as the wire carries them (JSON; long values cut)."""
    if not exc.fields:
        return ""
    return json.dumps({str(k)[:MAX_TEXT]: _cut(v) for k, v in exc.fields.items()}, default=lambda v: _cut(str(v)))


def wire_message(exc: errors.PulsarLikeError) -> str:
    """``exc.message`` as sent to the client (long ones cut, see :data:`MAX_TEXT`)."""
    return _cut(exc.message)  # type: ignore[return-value]


def trailing_metadata(exc: errors.PulsarLikeError) -> tuple[tuple[str, str], ...]:
    return ((CODE_KEY, exc.code), (FIELDS_KEY, fields_json(exc)))


def error_to_proto(exc: errors.PulsarLikeError) -> broker_pb2.Error:
    from broker_core.protocol import broker_pb2

    return broker_pb2.Error(code=exc.code, message=wire_message(exc), fields_json=fields_json(exc))


def error_from_proto(msg: broker_pb2.Error | Any) -> errors.PulsarLikeError:
    """The typed error of a ``broker_pb2.Error`` (or any message with its ``code``, ``message`` and
    ``fields_json``: the binary protocol's ``PulsarlikeError``)."""
    return errors.from_code(msg.code, msg.message, _load(msg.fields_json))


def error_from_rpc(err: grpc.RpcError) -> errors.PulsarLikeError:
    """Turn a failed call into the typed error: broker errors by their code, transport failures into
    :class:`~broker_core.errors.ConnectError` / :class:`~broker_core.errors.Timeout`."""
    import grpc

    code = err.code() if hasattr(err, "code") else None
    details = err.details() if hasattr(err, "details") else str(err)
    metadata = dict(err.trailing_metadata() or ()) if hasattr(err, "trailing_metadata") else {}
    if CODE_KEY in metadata:
        return errors.from_code(str(metadata[CODE_KEY]), details or "", _load(metadata.get(FIELDS_KEY, "")))
    too_big = _TOO_BIG.search(details or "") if code == grpc.StatusCode.RESOURCE_EXHAUSTED else None
    if too_big:  # gRPC itself refused a request above the broker's read limit, before decoding it
        size, limit = int(too_big.group(1)), int(too_big.group(2))
        return errors.MessageTooBig(f"a request of {size} bytes exceeds the {limit} bytes the broker reads "
                                    "(its maxMessageSize plus framing); send smaller messages or batches",
                                    size=size, limit=limit)
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return errors.Timeout(f"the broker did not answer in time ({details})")
    if code == grpc.StatusCode.UNAVAILABLE:
        return errors.ConnectError(f"cannot reach the broker: {details}")
    if code == grpc.StatusCode.CANCELLED:
        return errors.AlreadyClosed(f"call cancelled: {details}")
    return errors.UnknownError(f"{code}: {details}")


def _load(text: str | bytes) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
