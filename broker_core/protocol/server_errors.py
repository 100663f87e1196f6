"""Pulsar's ``ServerError`` codes for the broker's errors: what the binary protocol front end answers.

The companion of :mod:`broker_core.protocol.status` (errors to gRPC statuses): one table, nearest
registered base class wins, as there. The codes are the ones Pulsar's clients act on:
``ServiceNotReady`` and ``TooManyRequests`` make them retry (after a fresh lookup), ``ChecksumError`` on a
send makes them re-send the message, ``ProducerFenced`` closes the producer for good, ``TopicTerminatedError``
fails sends with ``TopicTerminated``. Any other code on a SEND_ERROR makes the C++ client reconnect and
re-send its pending messages, so a refused entry (too big, malformed) is answered with the code that says
what it is and the client surfaces it.
"""
from __future__ import annotations

from broker_core import errors
from broker_core.protocol import pulsar_commands_pb2 as cmd

ServerError = cmd.ServerError

_CODES: dict[type[errors.PulsarLikeError], int] = {
    errors.UnknownError: cmd.UnknownError,
    errors.InvalidTopicName: cmd.InvalidTopicName,
    errors.InvalidConfiguration: cmd.NotAllowedError,
    errors.TopicNotFound: cmd.TopicNotFound,  # NamespaceNotFound and TenantNotFound too, as in Pulsar
    errors.SubscriptionNotFound: cmd.SubscriptionNotFound,
    errors.MessageNotFound: cmd.NotAllowedError,
    errors.TopicAlreadyExists: cmd.NotAllowedError,
    errors.SubscriptionAlreadyExists: cmd.NotAllowedError,
    errors.InvalidPartitionCount: cmd.NotAllowedError,
    errors.ConsumerBusy: cmd.ConsumerBusy,
    errors.ConsumerAssignError: cmd.ConsumerAssignError,
    errors.ProducerBusy: cmd.ProducerBusy,
    errors.ProducerFenced: cmd.ProducerFenced,
    errors.ProducerBlockedQuotaExceededException: cmd.ProducerBlockedQuotaExceededException,
    errors.ProducerBlockedQuotaExceededError: cmd.ProducerBlockedQuotaExceededError,
    errors.ProducerQueueIsFull: cmd.TooManyRequests,
    errors.TooManyRequests: cmd.TooManyRequests,
    errors.NotAllowedError: cmd.NotAllowedError,
    errors.AuthenticationError: cmd.AuthenticationError,
    errors.AuthorizationError: cmd.AuthorizationError,
    errors.TopicTerminated: cmd.TopicTerminatedError,
    errors.InvalidMessage: cmd.NotAllowedError,
    errors.MessageTooBig: cmd.NotAllowedError,
    errors.ChecksumError: cmd.ChecksumError,
    errors.CorruptLog: cmd.PersistenceError,
    errors.DataLost: cmd.NotAllowedError,  # fatal to a Pulsar client: a subscribe inside a damaged range fails once
    errors.PersistenceError: cmd.PersistenceError,
    errors.ServiceNotReady: cmd.ServiceNotReady,
    errors.Timeout: cmd.ServiceNotReady,
    errors.IncompatibleSchema: cmd.IncompatibleSchema,
    errors.AlreadyClosed: cmd.NotAllowedError,
    errors.UnsafePath: cmd.NotAllowedError,
}


def server_error(exc: errors.PulsarLikeError) -> int:
    """The ``ServerError`` code for a broker error (``UnknownError`` when nothing closer is registered)."""
    for cls in type(exc).__mro__:
        code = _CODES.get(cls)  # type: ignore[call-overload]
        if code is not None:
            return code
    return cmd.UnknownError


# The reverse, for the client's binary transport: the error a client raises for a code a broker answered.
# Several errors share a code (NotAllowedError, ServiceNotReady ...): a code gives back its most general one.
_ERRORS: dict[int, type[errors.PulsarLikeError]] = {
    cmd.UnknownError: errors.UnknownError,
    cmd.MetadataError: errors.PersistenceError,
    cmd.PersistenceError: errors.PersistenceError,
    cmd.AuthenticationError: errors.AuthenticationError,
    cmd.AuthorizationError: errors.AuthorizationError,
    cmd.ConsumerBusy: errors.ConsumerBusy,
    cmd.ServiceNotReady: errors.ServiceNotReady,
    cmd.ProducerBlockedQuotaExceededError: errors.ProducerBlockedQuotaExceededError,
    cmd.ProducerBlockedQuotaExceededException: errors.ProducerBlockedQuotaExceededException,
    cmd.ChecksumError: errors.ChecksumError,
    cmd.UnsupportedVersionError: errors.NotSupported,
    cmd.TopicNotFound: errors.TopicNotFound,
    cmd.SubscriptionNotFound: errors.SubscriptionNotFound,
    cmd.ConsumerNotFound: errors.NotConnected,
    cmd.TooManyRequests: errors.TooManyRequests,
    cmd.TopicTerminatedError: errors.TopicTerminated,
    cmd.ProducerBusy: errors.ProducerBusy,
    cmd.InvalidTopicName: errors.InvalidTopicName,
    cmd.IncompatibleSchema: errors.IncompatibleSchema,
    cmd.ConsumerAssignError: errors.ConsumerAssignError,
    cmd.NotAllowedError: errors.NotAllowedError,
    cmd.ProducerFenced: errors.ProducerFenced,
}


def error_of(code: int, message: str = "") -> errors.PulsarLikeError:
    """The typed error for a ``ServerError`` code a broker answered with ``message`` (a code without an
    error of its own -- the transaction ones -- is ``UnknownError`` naming it)."""
    cls = _ERRORS.get(code)
    if cls is None:
        name = ServerError.Name(code) if code in ServerError.values() else str(code)
        return errors.UnknownError(f"{name}: {message}" if message else name, server_error=name)
    if cls is errors.TopicNotFound and message:
        cls = _refined_not_found(message)
    return cls(message or ServerError.Name(code))


def _refined_not_found(message: str) -> type[errors.PulsarLikeError]:
    """Pulsar has one code for a missing topic, namespace or tenant (``TopicNotFound``); pulsarlike's messages
    say which (:mod:`broker_core.core.namespaces`), so its clients get the same subclass over the binary
    protocol as over gRPC. Any other broker's message reads as ``TopicNotFound``."""
    if message.startswith("tenant ") or " nor does its tenant " in message:
        return errors.TenantNotFound
    if message.startswith("namespace "):
        return errors.NamespaceNotFound
    return errors.TopicNotFound
