"""pulsar-client's exception names (``pulsar.exceptions``): ``from connector.exceptions import Timeout``.

Every error pulsarlike raises is a :class:`PulsarException` (the base of :mod:`broker_core.errors`, whose
classes carry pulsar-client's names where one exists). Two names differ and are aliases here:
``ServiceUnitNotReady`` is pulsarlike's ``ServiceNotReady`` and ``TooManyLookupRequestException`` its
``TooManyRequests``. The names pulsarlike never raises (transactions ...) are
defined too, so that code written for pulsar-client catches them unchanged.
"""
from __future__ import annotations

from broker_core.errors import (
    AlreadyClosed, AuthenticationError, AuthorizationError, BrokerPersistenceError, ChecksumError, ConnectError,
    ConsumerAssignError, ConsumerBusy,
    CumulativeAcknowledgementNotAllowedError, IncompatibleSchema, InvalidConfiguration, InvalidMessage,
    InvalidTopicName, MessageTooBig, NotAllowedError, NotConnected, ProducerBlockedQuotaExceededError,
    ProducerBlockedQuotaExceededException, ProducerBusy, ProducerFenced,
    ProducerQueueIsFull, PulsarLikeError, ServiceNotReady, SubscriptionNotFound, Timeout, TooManyRequests,
    TopicNotFound, TopicTerminated, UnknownError)

from connector.client.interrupts import Interrupted  # noqa: F401  (a blocking call interrupted by Ctrl-C)

from connector.client.security.crypto_keys import CryptoError  # noqa: F401  (raised by end-to-end encryption)

PulsarException = PulsarLikeError
ServiceUnitNotReady = ServiceNotReady
TooManyLookupRequestException = TooManyRequests


class _NeverRaised(PulsarException):
    """A pulsar-client error for a feature pulsarlike does not have; never raised here."""


class LookupError(_NeverRaised):  # noqa: A001  (pulsar-client's name)
    pass


class ReadError(_NeverRaised):
    pass


class ErrorGettingAuthenticationData(_NeverRaised):
    pass


class BrokerMetadataError(_NeverRaised):
    pass


class ConsumerNotInitialized(_NeverRaised):
    pass


class ProducerNotInitialized(_NeverRaised):
    pass


class InvalidUrl(_NeverRaised):
    pass


class OperationNotSupported(_NeverRaised):
    pass


class ConsumerNotFound(_NeverRaised):
    pass


class UnsupportedVersionError(_NeverRaised):
    pass




class TransactionCoordinatorNotFoundError(_NeverRaised):
    pass


class InvalidTxnStatusError(_NeverRaised):
    pass


class TransactionConflict(_NeverRaised):
    pass


class TransactionNotFound(_NeverRaised):
    pass


class MemoryBufferIsFull(_NeverRaised):
    pass


__all__ = [
    "PulsarException", "UnknownError", "InvalidConfiguration", "Timeout", "LookupError", "ConnectError",
    "ReadError", "AuthenticationError", "AuthorizationError", "ErrorGettingAuthenticationData",
    "BrokerMetadataError", "BrokerPersistenceError", "ChecksumError", "ConsumerBusy", "NotConnected",
    "AlreadyClosed", "InvalidMessage", "ConsumerNotInitialized", "ProducerNotInitialized", "ProducerBusy",
    "TooManyLookupRequestException", "InvalidTopicName", "InvalidUrl", "ServiceUnitNotReady",
    "OperationNotSupported", "ProducerBlockedQuotaExceededError", "ProducerBlockedQuotaExceededException",
    "ProducerQueueIsFull", "MessageTooBig", "TopicNotFound", "SubscriptionNotFound", "ConsumerNotFound",
    "UnsupportedVersionError", "TopicTerminated", "CryptoError", "IncompatibleSchema", "ConsumerAssignError",
    "CumulativeAcknowledgementNotAllowedError", "TransactionCoordinatorNotFoundError", "InvalidTxnStatusError",
    "NotAllowedError", "TransactionConflict", "TransactionNotFound", "ProducerFenced", "MemoryBufferIsFull",
    "Interrupted",
]
