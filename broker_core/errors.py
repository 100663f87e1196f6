"""The one exception tree of pulsarlike.

Every error has a stable ``code`` (its class name, which is also the name the official ``pulsar-client``
uses where one exists) and a ``retriable`` flag. Structured fields (``MessageTooBig(size, limit)``) travel
over the wire as JSON, so the client raises the same class with the same fields the broker raised.
The mapping to gRPC status codes lives in :mod:`broker_core.protocol.status`, and only there.
"""
from __future__ import annotations

from typing import Any, ClassVar


class PulsarLikeError(Exception):
    """Base class. ``fields`` are the structured details, also available as attributes."""

    retriable: ClassVar[bool] = False

    def __init__(self, message: str = "", **fields: Any) -> None:
        super().__init__(message or self.__class__.__name__)
        self.message = message or self.__class__.__name__
        self.fields = fields
        for key, value in fields.items():
            setattr(self, key, value)

    @property
    def code(self) -> str:
        return type(self).__name__


class UnknownError(PulsarLikeError):
    """An unexpected failure inside the broker; the broker keeps serving others."""


class InvalidConfiguration(PulsarLikeError):
    """A wrong option or configuration value."""


class NotSupported(InvalidConfiguration):
    """A pulsar-client feature (an option, a class, a method) that pulsarlike does not have: refused by name
    instead of being ignored. A subclass of :class:`InvalidConfiguration`, which the client raised for these
    before the name existed."""


class InvalidTopicName(PulsarLikeError):
    """A topic name that does not parse; ``reason`` says why."""


class TopicNotFound(PulsarLikeError):
    """The topic does not exist and auto-creation is off (or the request does not create topics)."""


class TopicAlreadyExists(PulsarLikeError):
    """Creating a topic (or partitioned topic) that already exists."""


class SubscriptionNotFound(PulsarLikeError):
    pass


class MessageNotFound(PulsarLikeError):
    """No stored message where an admin call looked (a peek past the subscription's last unacknowledged
    entry: Pulsar's 404 "Message not found")."""


class ClusterNotFound(TopicNotFound):
    """A cluster other than the broker's one (``clusterName``): Pulsar's 404 "Cluster does not exist";
    ``cluster`` names it."""


class ResourceGroupNotFound(TopicNotFound):
    """A resource group that does not exist (Pulsar's 404 "ResourceGroup does not exist"); ``resourcegroup``
    names it."""


class NamespaceNotFound(TopicNotFound):
    """The namespace (``tenant/namespace``) does not exist: topics in it cannot be looked up, created or
    listed (Pulsar answers 404 "Namespace does not exist"). A subclass of :class:`TopicNotFound`, so code
    that handles a missing topic handles a topic in a missing namespace too. ``namespace`` names it."""


class TenantNotFound(NamespaceNotFound):
    """The tenant does not exist (so neither does any namespace of it); ``tenant`` names it."""


class TenantAlreadyExists(PulsarLikeError):
    """Creating a tenant that already exists; ``tenant`` names it."""


class NamespaceAlreadyExists(PulsarLikeError):
    """Creating a namespace that already exists; ``namespace`` names it."""


class ConsumerBusy(PulsarLikeError):
    """A second consumer on an Exclusive subscription, or a subscription type that does not match."""


class ConsumerAssignError(PulsarLikeError):
    pass


class ProducerBusy(PulsarLikeError):
    pass


class ProducerFenced(PulsarLikeError):
    pass


class ProducerBlockedQuotaExceededException(PulsarLikeError):
    """The topic's backlog is over its backlog quota and the quota's policy is ``producer_exception``: new
    producers are refused and connected ones closed until consumers catch up (Pulsar's exception of that
    name). ``topic``, ``quota`` (``destination_storage`` or ``message_age``) and ``limit`` name it."""


class ProducerBlockedQuotaExceededError(ProducerBlockedQuotaExceededException):
    """The same under the ``producer_request_hold`` policy (Pulsar's ``ProducerBlockedQuotaExceededError``,
    which its clients retry)."""

    retriable = True


class ProducerQueueIsFull(PulsarLikeError):
    retriable = True


class TooManyRequests(PulsarLikeError):
    """The broker refused a call because this client (its connection or IP address) or the broker as a
    whole is at a limit: ``limit`` names the configuration key, ``allowed`` its value. Retry later, close
    producers, consumers or clients you no longer use, or raise the limit on the broker (Pulsar's
    ``TooManyLookupRequestException``)."""

    retriable = True


class NotAllowedError(PulsarLikeError):
    pass


class SubscriptionAlreadyExists(NotAllowedError):
    """Creating a durable subscription (``create-subscription``) that exists on the topic, or on a partition of
    the partitioned topic (Pulsar: 409 "Subscription already exists"); ``subscription`` and ``topic`` name it. A
    subclass of :class:`NotAllowedError`, which the broker raised for it before the name existed."""


class InvalidPartitionCount(NotAllowedError):
    """A partitioned topic created or grown with a partition count the broker does not accept: 0 or less, or
    more than it allows (Pulsar: 406 "Number of partitions should be more than 0"); ``partitions`` is the count
    asked for, ``limit`` the most allowed."""


class CompactionAlreadyRunning(NotAllowedError):
    """A compaction was asked for while one runs on the topic (Pulsar's 409 "Compaction already in progress")."""


class EncryptionRequired(NotAllowedError):
    """A producer or a message that is not encrypted, on a topic whose namespace requires encryption (its
    ``encryptionRequired`` policy: "Messages must be encrypted", which Pulsar answers with ``MetadataError``
    and pulsarlike with ``NotAllowedError``, the code its clients map back to an error that is not retried). Produce
    with an encryption key (pulsar-client's ``encryption_key`` and ``crypto_key_reader``), or turn the policy
    off (``pulsarlike admin namespaces set-encryption-required -d``); ``topic`` names it."""


class AuthenticationError(PulsarLikeError):
    """The broker does not know who the client is: no credentials where they are required, or credentials
    it refuses (an expired, tampered or garbage token, a token for another audience, a client certificate
    from an unknown CA). ``reason`` says which, never the token itself. Fix the client's ``authentication``
    (or ``tls_*``) settings; a stream whose token expired ends with it (pulsar-client's name)."""


class AuthorizationError(PulsarLikeError):
    """The client is known (``role``) but may not do ``action`` on ``resource``: ask an operator for a
    grant (``pulsarlike admin namespaces grant-permission``) or the tenant's admin role (pulsar-client's
    name)."""


class TopicTerminated(PulsarLikeError):
    """The topic was terminated (``pulsarlike admin topics terminate``): it takes no more messages, ever
    (pulsar-client's ``TopicTerminated``). Its consumers read what it holds, then
    ``has_reached_end_of_topic()`` is true. ``topic`` names it."""


class CumulativeAcknowledgementNotAllowedError(NotAllowedError):
    pass


class NamespaceNotEmpty(NotAllowedError):
    """Deleting a namespace that still has topics without ``force`` (Pulsar: 409 "Cannot delete non empty
    namespace"); ``namespace`` and ``topics`` (how many) say which."""


class ResourceGroupInUse(NotAllowedError):
    """Deleting a resource group a namespace or a topic is attached to (Pulsar's 409 "ResourceGroup is in
    use"): detach it first; ``resourcegroup`` names it, ``used_by`` one that holds it."""


class TenantNotEmpty(NotAllowedError):
    """Deleting a tenant that still has namespaces without ``force`` (Pulsar: 409 "The tenant still has
    active namespaces"); ``tenant`` and ``namespaces`` (their names) say which."""


class InvalidMessage(PulsarLikeError):
    """A message or message id that cannot be used here (e.g. acknowledging one never received)."""


class MessageTooBig(PulsarLikeError):
    """``size`` bytes exceed the broker's ``limit`` (``maxMessageSize``)."""

    def __init__(self, message: str = "", *, size: int, limit: int, **fields: Any) -> None:
        super().__init__(
            message or f"message of {size} bytes exceeds maxMessageSize={limit} bytes;"
            " send smaller messages or enable chunking",
            size=size, limit=limit, **fields)


class ChecksumError(PulsarLikeError):
    """An entry whose CRC32C does not match its bytes."""


class CorruptLog(PulsarLikeError):
    """A stored frame in the middle of a segment failed verification; ``path`` and ``position`` say where."""


class DataLost(CorruptLog):
    """Messages ``start_offset`` to ``end_offset - 1`` of ``topic`` cannot be read: the stored bytes that held
    them are damaged or gone (``path``: the segment file's name, ``position``: the byte where the damage
    starts, ``reason``: which check failed). Only that range is lost: reads before and after it succeed.
    A consumer or reader whose next message is inside it gets this error once; move it past the range
    (``pulsarlike admin topics skip``/``reset-cursor`` for a subscription, a new reader or a seek at
    ``end_offset``), set the broker's ``autoSkipNonRecoverableData=true`` to have it skipped (Pulsar's key),
    or restore the segment from a backup. Not retriable: reading again fails the same way."""

    def __init__(self, message: str = "", *, topic: str, start_offset: int, end_offset: int, **fields: Any) -> None:
        super().__init__(
            message or (f"{topic}: messages {start_offset}..{end_offset - 1} ({end_offset - start_offset}) cannot"
                        f" be read: {fields.get('reason') or 'the stored bytes are damaged'}; move the consumer"
                        f" past them (skip, reset-cursor, or a seek or new reader at offset {end_offset}), or set"
                        " autoSkipNonRecoverableData=true to skip them; restore the segment from a backup to"
                        " recover them"),
            topic=topic, start_offset=start_offset, end_offset=end_offset, **fields)


class UnsafePath(PulsarLikeError):
    """A folder the broker refuses to use or remove: it would lie outside the data dir (or be the data dir
    itself), or it is a symbolic link. Names are validated before they become paths, so this means a bug or
    a tampered data dir; the message never holds the path (the broker's log does)."""


class DataDirLocked(PulsarLikeError):
    """Another broker holds the data dir's lock; ``pid`` is its process id (0 when it could not be read).
    Stop that broker first, or give this one another data dir."""


class PersistenceError(PulsarLikeError):
    """The broker could not store or sync an entry (disk full, I/O error): that send fails, the producer
    stays usable and may retry once the cause is gone (Pulsar's ``PersistenceError``)."""

    retriable = True


BrokerPersistenceError = PersistenceError
"""The name this error had before pulsarlike took Pulsar's."""


class Timeout(PulsarLikeError):
    retriable = True


class ConnectError(PulsarLikeError):
    retriable = True


class ServiceNotReady(PulsarLikeError):
    retriable = True


class AlreadyClosed(PulsarLikeError):
    pass


class NotConnected(PulsarLikeError):
    retriable = True


class IncompatibleSchema(PulsarLikeError):
    pass


class InvalidSchema(IncompatibleSchema):
    """A schema the broker does not register whatever the topic holds: a definition over ``limit`` bytes, a
    topic already at ``limit`` versions, or KeyValue data that is not two length-prefixed schemas. A
    subclass of :class:`IncompatibleSchema`, so Pulsar's clients see ``IncompatibleSchema``."""


class MessageDecodeError(InvalidMessage):
    """A received entry that cannot be turned into messages (undecompressable payload, unknown compression
    type, bad chunk sizes): raised once by ``receive()`` at that message's place in the queue. ``topic``,
    ``message_id``, ``offsets`` (every offset the entry or chunked message covers) and ``reason`` say which
    and why. As Pulsar's client does with a corrupted message, the consumer acknowledges it: it is not
    redelivered, but stays readable with a Reader while retention keeps it."""


_BY_CODE: dict[str, type[PulsarLikeError]] = {}


def _register(cls: type[PulsarLikeError]) -> None:
    _BY_CODE[cls.__name__] = cls
    for sub in cls.__subclasses__():
        _register(sub)


_register(PulsarLikeError)


def error_class(code: str) -> type[PulsarLikeError]:
    """The class for a wire code; unknown codes (a newer broker) become :class:`UnknownError`."""
    return _BY_CODE.get(code, UnknownError)


def from_code(code: str, message: str, fields: dict[str, Any] | None = None) -> PulsarLikeError:
    """Rebuild the typed exception the broker raised from its wire form."""
    cls = error_class(code)
    fields = dict(fields or {})
    try:
        return cls(message, **fields)
    except TypeError:  # fields the class does not take (version skew): keep the message
        err = cls.__new__(cls)
        PulsarLikeError.__init__(err, message, **fields)
        return err
