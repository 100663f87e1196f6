"""Core value types shared by the broker and the client: topic names and message ids (one ``MessageId``).

The name rules live here, once, for the broker and the client alike (Pulsar's ``NamedEntity`` rules, made
strict enough that every name is safe as a folder name under the data dir):

- a tenant or namespace holds ASCII letters, digits and ``-=:._`` (Pulsar's ``[-=:.\\w]`` with Java's
  ASCII-only ``\\w``), at least one letter or digit (so never ``.``, ``..`` or ``:::``), at most 255 bytes;
- a topic's local name holds the same characters plus ``%`` (which must start a ``%XX`` escape of UTF-8);
  once percent-decoded it is not ``.``/``..``, holds no ``/`` and no control character, and has a letter
  or digit; its folder name (the local name percent-encoded) is at most 255 bytes, and so is every
  partition's (``<local name>-partition-<i>``) of a partitioned topic.

255 bytes is a path component's limit on the usual file systems (ext4, xfs, btrfs, APFS).
"""
from __future__ import annotations

import re
from typing import ClassVar, NamedTuple
from urllib.parse import quote, unquote

from broker_core.errors import InvalidConfiguration, InvalidTopicName

PERSISTENT = "persistent"
NON_PERSISTENT = "non-persistent"
PARTITION_SUFFIX = "-partition-"
MAX_NAME_BYTES = 255
"""The longest tenant, namespace or topic folder name (a path component's limit on the usual file systems)."""

_ENTITY = re.compile(r"[-=:.\w]+", re.ASCII)
_LOCAL = re.compile(r"[-=:.%\w]+", re.ASCII)
_LONE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_ALNUM = re.compile(r"[A-Za-z0-9]")
_PARTITION = re.compile(r"^(?P<base>.+)-partition-(?P<index>0|[1-9]\d{0,8})$")
"""A partition's name; an index of ten digits or more (beyond any partition count, and beyond int32 on the
wire) makes an ordinary topic name, as an unparseable index does in Pulsar."""
ACKNOWLEDGED_HEADER = "X-Pulsarlike-Acknowledged"
"""The header of the admin REST answers to skip, clear-backlog and expire (a subscription's, every
subscription's, a namespace's) counting the messages they acknowledged: a pulsarlike extension (Pulsar answers
204 with nothing), read by ``Admin(admin_url=...)`` so it needs no stats read before and after the call."""

_SHOWN = 80
"""Names are cut to this many characters in error messages (a 10 MB name makes no useful message)."""


def _shown(value: str) -> str:
    return repr(value if len(value) <= _SHOWN else value[:_SHOWN] + "...")


def folder_name(local_name: str) -> str:
    """The folder a topic's local name is stored in: percent-encoded, so any valid name is one plain
    component (``:`` becomes ``%3A``, ``%`` becomes ``%25``)."""
    return quote(local_name, safe="")


def entity_name_problem(label: str, value: str) -> str | None:
    """Why ``value`` is not a valid tenant or namespace name (``label`` says which), or None."""
    if not isinstance(value, str) or not value:
        return f"{label} is empty"
    if len(value.encode()) > MAX_NAME_BYTES:
        return f"{label} is {len(value.encode())} bytes long; the limit is {MAX_NAME_BYTES}"
    if not _ENTITY.fullmatch(value):
        return f"{label} {_shown(value)} may only contain ASCII letters, digits and -=:._"
    if not _ALNUM.search(value):
        return f"{label} {_shown(value)} must contain a letter or a digit"
    return None


def local_name_problem(local: str) -> str | None:
    """Why ``local`` is not a valid topic local name (partition suffix included), or None."""
    if not local:
        return "topic is empty"
    size = len(folder_name(local).encode())
    if size > MAX_NAME_BYTES:
        return (f"topic is {size} bytes long once percent-encoded for its folder; the limit is"
                f" {MAX_NAME_BYTES}")
    if not _LOCAL.fullmatch(local):
        return f"topic {_shown(local)} may only contain ASCII letters, digits and -=:._%"
    if _LONE_PERCENT.search(local):
        return f"topic {_shown(local)} has a '%' that does not start a %XX escape"
    try:
        decoded = unquote(local, errors="strict")
    except UnicodeDecodeError:
        return f"topic {_shown(local)} has %XX escapes that are not UTF-8"
    if decoded in (".", ".."):
        shown = f"topic {_shown(local)}" + (f" is {decoded!r} once percent-decoded:" if decoded != local else ":")
        return f"{shown} '.' and '..' are not topic names"
    if "/" in decoded:
        return f"topic {_shown(local)} holds '/' once percent-decoded"
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in decoded):
        return f"topic {_shown(local)} holds a control character once percent-decoded"
    if not any(c.isalnum() for c in decoded):
        return f"topic {_shown(local)} must contain a letter or a digit"
    return None


def check_tenant_name(tenant: str) -> str:
    """``tenant``, or ``InvalidConfiguration`` saying why it is not a valid tenant name."""
    problem = entity_name_problem("tenant", tenant)
    if problem:
        raise InvalidConfiguration(f"tenant name {_shown(str(tenant))} is not valid: {problem}",
                                   tenant=str(tenant)[:_SHOWN], reason=problem)
    return tenant


def check_namespace_name(namespace: str) -> tuple[str, str]:
    """``(tenant, local name)`` of ``tenant/namespace``; ``InvalidConfiguration`` saying why when not valid."""
    parts = namespace.split("/") if isinstance(namespace, str) else []
    problem = ("expected tenant/namespace" if len(parts) != 2 else
               entity_name_problem("tenant", parts[0]) or entity_name_problem("namespace", parts[1]))
    if problem:
        raise InvalidConfiguration(f"namespace {_shown(str(namespace))} is not valid ({problem}); use"
                                   " tenant/namespace, each part of ASCII letters, digits and _-=:.",
                                   namespace=str(namespace)[:_SHOWN], reason=problem)
    return parts[0], parts[1]


def check_partition_names(name: "TopicName", partitions: int) -> None:
    """``InvalidTopicName`` when the partitions of ``name`` would have folder names over the limit."""
    last = name.partition(max(partitions - 1, 0)).local_name
    size = len(folder_name(last).encode())
    if size > MAX_NAME_BYTES:
        raise _invalid(str(name), f"its partition folder names would be up to {size} bytes once percent-encoded"
                                  f" (the limit is {MAX_NAME_BYTES}): use a shorter name or fewer partitions")


class TopicName(NamedTuple):
    """A fully qualified topic: ``{domain}://{tenant}/{namespace}/{local_name}``."""

    domain: str
    """``persistent`` or ``non-persistent``."""
    tenant: str
    namespace: str
    """The namespace's own name (without the tenant)."""
    local_name: str
    """The topic's name inside the namespace, including ``-partition-<i>`` for a partition."""

    @classmethod
    def parse(cls, name: str) -> "TopicName":
        """Parse ``name`` in the forms Pulsar's ``TopicName`` takes:

        - ``my-topic`` -> ``persistent://public/default/my-topic`` (empty segments around it are dropped, as
          Pulsar splits a short name: ``/my-topic`` is the same topic);
        - ``tenant/namespace/topic`` -> ``persistent://tenant/namespace/topic``;
        - ``{persistent|non-persistent}://tenant/namespace/topic`` (the domain in any case, as Pulsar's
          ``TopicDomain``; stored and shown lower-case).

        Refused with :class:`InvalidTopicName` naming why: any other number of short-name segments (Pulsar:
        ``<tenant>/<namespace>/<topic> or <topic>``), another domain, and the V1 form
        ``{domain}://tenant/cluster/namespace/topic`` -- Pulsar reads it as a topic of the cluster-scoped
        namespace ``tenant/cluster/namespace`` (its old global/cluster namespaces), which pulsarlike's
        namespaces (``tenant/namespace``) never are -- and names that break the rules of the module docstring.
        """
        if not isinstance(name, str) or not name:
            raise InvalidTopicName(f"invalid topic name {name!r}: empty", topic=str(name), reason="empty")
        full = name
        if "://" not in name:
            segments = [segment for segment in name.split("/") if segment]
            if len(segments) == 1:
                full = f"{PERSISTENT}://public/default/{segments[0]}"
            elif len(segments) == 3:
                full = f"{PERSISTENT}://{name}"  # empty segments left in are refused below, as Pulsar's are
            else:
                raise _invalid(name, f"a short name is <topic> or <tenant>/<namespace>/<topic>, not {len(segments)} "
                                     "segments; or use the full form {persistent|non-persistent}://tenant/"
                                     "namespace/topic")
        domain, _, rest = full.partition("://")
        domain = domain.lower()
        if domain not in (PERSISTENT, NON_PERSISTENT):
            raise _invalid(name, f"domain must be 'persistent' or 'non-persistent', not {_shown(domain)}")
        parts = rest.split("/", 3)
        if len(parts) == 4 and all(parts):
            raise _invalid(name, f"{domain}://tenant/cluster/namespace/topic is Pulsar's V1 form, a topic of the "
                                 f"cluster-scoped namespace {_shown('/'.join(parts[:3]))}; pulsarlike's namespaces "
                                 f"are tenant/namespace: use {domain}://tenant/namespace/topic (a topic name "
                                 "holds no '/')")
        if len(parts) != 3:
            raise _invalid(name, "expected {persistent|non-persistent}://tenant/namespace/topic" +
                           (", each segment non-empty" if len(parts) == 4 else ""))
        tenant, namespace, local = parts
        problem = (entity_name_problem("tenant", tenant) or entity_name_problem("namespace", namespace)
                   or local_name_problem(local))
        if problem:
            raise _invalid(name, problem)
        return cls(domain, tenant, namespace, local)

    def __str__(self) -> str:
        return f"{self.domain}://{self.tenant}/{self.namespace}/{self.local_name}"

    @property
    def persistent(self) -> bool:
        return self.domain == PERSISTENT

    @property
    def namespace_name(self) -> str:
        """``tenant/namespace``."""
        return f"{self.tenant}/{self.namespace}"

    @property
    def partition_index(self) -> int:
        """The partition index when this is ``<base>-partition-<i>``, else -1."""
        m = _PARTITION.match(self.local_name)
        return int(m.group("index")) if m else -1

    @property
    def partitioned_base(self) -> "TopicName":
        """The partitioned topic this partition belongs to (itself when not a partition)."""
        m = _PARTITION.match(self.local_name)
        return self._replace(local_name=m.group("base")) if m else self

    def partition(self, index: int) -> "TopicName":
        return self._replace(local_name=f"{self.local_name}{PARTITION_SUFFIX}{index}")


def _invalid(name: str, reason: str) -> InvalidTopicName:
    return InvalidTopicName(f"invalid topic name {_shown(name)}: {reason}", topic=name[:_SHOWN], reason=reason)


_I64_MAX = (1 << 63) - 1


class MessageId:
    """Identifies one message of one topic partition, as pulsar-client's ``MessageId``: ``MessageId(partition=-1,
    ledger_id=-1, entry_id=-1, batch_index=-1)``, with its accessors (``ledger_id()``, ``entry_id()``,
    ``partition()``, ``batch_index()``), ``serialize()``/``deserialize()`` and sentinels. The only message id
    class: the broker's own ids and the client's (:mod:`connector.client.message_id` re-exports it).

    In pulsarlike ``entry_id`` is the offset of the entry's first message in its topic partition and
    ``ledger_id`` the base offset of the segment holding it, so a message's offset is ``entry_id +
    max(batch_index, 0)`` (:meth:`offset`). The rest follows pulsar-client 3.x exactly:

    - ``str(mid)`` is ``(ledger,entry,partition,batch)``; ``MessageId.earliest`` is ``(-1,-1,-1,-1)`` (also what
      ``MessageId()`` is), ``MessageId.latest`` ``(2**63-1,2**63-1,-1,-1)``.
    - ``serialize()`` writes Pulsar's ``MessageIdData`` bytes (:func:`broker_core.protocol.entry.message_id_bytes`)
      and ``MessageId.deserialize(data, topic=None)`` reads them (``ValueError`` for other bytes): ids saved by
      pulsar-client load here, and back.
    - Ids order by ledger, entry, batch index (the partition is not compared), and are equal when all four are.
    """

    __slots__ = ("_ledger_id", "_entry_id", "_partition", "_batch_index", "_batch_size", "_topic")

    earliest: ClassVar["MessageId"]
    latest: ClassVar["MessageId"]

    def __init__(self, partition: int = -1, ledger_id: int = -1, entry_id: int = -1,
                 batch_index: int = -1) -> None:
        for name, value in (("partition", partition), ("ledger_id", ledger_id), ("entry_id", entry_id),
                            ("batch_index", batch_index)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name}={value!r} is not valid; use an int")
        self._partition = partition
        self._ledger_id = ledger_id
        self._entry_id = entry_id
        self._batch_index = batch_index
        self._batch_size = 0
        self._topic: str | None = None

    @classmethod
    def of(cls, ledger_id: int, entry_id: int, partition: int, batch_index: int = -1, batch_size: int = 0,
           topic: str | None = None) -> "MessageId":
        """An id as the broker and the client make them (with the batch size and the topic it came from),
        without the argument checks: producers and consumers make one per message."""
        mid = object.__new__(cls)
        mid._ledger_id = ledger_id
        mid._entry_id = entry_id
        mid._partition = partition
        mid._batch_index = batch_index
        mid._batch_size = batch_size
        mid._topic = topic
        return mid

    # --- pulsar-client's accessors --------------------------------------------------------------------
    def ledger_id(self) -> int:
        return self._ledger_id

    def entry_id(self) -> int:
        return self._entry_id

    def batch_index(self) -> int:
        return self._batch_index

    def partition(self) -> int:
        return self._partition

    def serialize(self) -> bytes:
        """Pulsar's ``MessageIdData`` bytes (store them, load them with :meth:`deserialize`)."""
        from broker_core.protocol.entry import message_id_bytes

        return message_id_bytes(self._ledger_id, self._entry_id, self._partition, self._batch_index,
                                self._batch_size)

    @staticmethod
    def deserialize(message_id_bytes: bytes, topic: str | None = None) -> "MessageId":
        """The id ``serialize()`` wrote (here or by pulsar-client); ``topic`` names the topic partition it
        belongs to, for a consumer of several topics. ``ValueError`` for bytes that are not a message id.
        The argument's name is pulsar-client's (``deserialize(message_id_bytes=...)``)."""
        from broker_core.protocol.entry import parse_message_id

        ledger_id, entry_id, partition, batch_index, batch_size = parse_message_id(message_id_bytes)
        return MessageId.of(ledger_id, entry_id, partition, batch_index, batch_size, topic)

    @classmethod
    def wrap(cls, msg_id: "MessageId") -> "MessageId":
        """pulsar-client's ``MessageId.wrap(_pulsar.MessageId)``, which makes the Python id of the binding's:
        here both are this class, so the id itself (``ValueError`` for anything else)."""
        if not isinstance(msg_id, MessageId):
            raise ValueError(f"MessageId.wrap takes a MessageId, not {type(msg_id).__name__}")
        return msg_id

    # --- pulsarlike's additions -----------------------------------------------------------------------
    def offset(self) -> int:
        """The message's offset in its topic partition."""
        return self._entry_id + (self._batch_index if self._batch_index > 0 else 0)

    def batch_size(self) -> int:
        """How many messages the batch holding this one has (0: not in a batch)."""
        return self._batch_size

    def topic_name(self) -> str | None:
        """The topic partition the id belongs to, when known (ids of received or sent messages)."""
        return self._topic

    def is_earliest(self) -> bool:
        return self._ledger_id == -1 and self._entry_id == -1

    def is_latest(self) -> bool:
        return self._ledger_id == _I64_MAX and self._entry_id == _I64_MAX

    # --- comparison, as pulsar-client's -----------------------------------------------------------------
    def _order(self) -> tuple[int, int, int]:
        return self._ledger_id, self._entry_id, self._batch_index

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MessageId):
            return NotImplemented
        return self._order() == other._order() and self._partition == other._partition

    def __hash__(self) -> int:
        return hash((self._ledger_id, self._entry_id, self._partition, self._batch_index))

    def __lt__(self, other: "MessageId") -> bool:
        return self._order() < other._order()

    def __le__(self, other: "MessageId") -> bool:
        return self < other or self == other

    def __gt__(self, other: "MessageId") -> bool:
        return not self <= other

    def __ge__(self, other: "MessageId") -> bool:
        return not self < other

    def __str__(self) -> str:
        return f"({self._ledger_id},{self._entry_id},{self._partition},{self._batch_index})"

    def __repr__(self) -> str:
        return f"MessageId{self}"


MessageId.earliest = MessageId()
MessageId.latest = MessageId(-1, _I64_MAX, _I64_MAX, -1)
