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
    errors.TopicAlreadyExists: cmd.NotAllowedError,
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
