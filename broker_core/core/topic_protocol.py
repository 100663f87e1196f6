"""The ``Topic`` protocol: what every topic partition offers the front ends and the admin operations.

Two classes implement it: :class:`~broker_core.core.persistent.topic.PersistentTopic` (a stored log, cursors,
retention, termination) and :class:`~broker_core.core.nonpersistent.topic.NonPersistentTopic` (in memory:
entries go to the consumers connected at that moment, then are forgotten). Code outside those two modules
holds a ``Topic`` and never asks which class it is: where the two differ, the topic answers a capability
question (:attr:`Topic.persistent`) or refuses the operation itself with the typed error Pulsar gives
(``NotAllowedError`` for what needs stored data on a non-persistent topic), so both front ends refuse it the
same way. ``tests/unit/test_topic_protocol.py`` checks that both classes declare every member with a
compatible signature, and that no module outside the topic modules branches on the topic classes.

:class:`StoredTopic` declares what a persistent topic adds (its log, compaction, retention, expiry, unloading):
what the admin core (:mod:`broker_core.core.admin`) and the registry's helpers use once :func:`stored` has
checked that a topic keeps its messages. Only the registry builds topics, so only it names the two classes.

This module depends on nothing of the service layer at run time (the types are for checkers only), so it
can move with the topic model as it is.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Protocol, Sequence, cast, runtime_checkable

from broker_core.errors import NotAllowedError

if TYPE_CHECKING:
    from broker_core.core.access import AccessMode, ProducerAccess
    from broker_core.core.producers import ProducerInfo
    from broker_core.core.rates import TopicRates
    from broker_core.core.throttling import TopicThrottling
    from broker_core.core.write_fault import WriteFault
    from broker_core.core.retention_rules import RetentionPolicy
    from broker_core.core.topic_policies import TopicPolicies
    from broker_core.core.subscription_expiry import SubscriptionActivity
    from broker_core.errors import DataLost, PulsarLikeError
    from broker_core.storage.log import StoredEntry
    from broker_core.types import TopicName
    from dispatch.consumer import Consumer
    from dispatch.types import SubType


class EndOfTopic(Protocol):
    """A topic's termination state and its consumers' end-of-topic notifications
    (:class:`~broker_core.core.termination.Termination`; a non-persistent topic's is never terminated)."""

    @property
    def terminated(self) -> bool:
        """True once the topic takes no more messages, ever."""

    @property
    def end_offset(self) -> Optional[int]:
        """One past the last message of a terminated topic; None while it is not terminated."""

    def watch(self, consumer: "Consumer", notify: Callable[[], None]) -> None:
        """Call ``notify()`` once ``consumer`` has received everything up to the end of a terminated topic."""

    def forget(self, consumer: "Consumer") -> None:
        """``consumer`` left: notify it no more."""

    def rewound(self, sub: Any) -> None:
        """``sub`` was sought back: its consumers reach the end again."""

    def refuse(self) -> None:
        """Raise ``TopicTerminated`` when the topic is terminated."""


@runtime_checkable
class Topic(Protocol):
    """One topic partition (or non-partitioned topic), persistent or not."""

    name: "TopicName"
    """The parsed name; ``topic`` is its string form, ``partition_index`` its partition (-1: none)."""
    topic: str
    partition_index: int
    persistent: bool
    """True when the topic stores its messages (``persistent://``): positions, cursors, retention,
    termination and internal stats exist. False for a ``non-persistent://`` topic, which keeps nothing:
    operations on stored data refuse it with ``NotAllowedError`` (as Pulsar does)."""
    max_producers: int
    """Most producers at once (0: no limit); the registry applies namespace and topic policies."""
    max_consumers: int
    """Most consumers at once over every subscription (0: no limit)."""
    policies: "TopicPolicies"
    """What the topic enforces on subscribes and sent entries (:mod:`broker_core.core.topic_policies`); the
    registry sets it when the topic loads and when a policy changes. Persistent: its subscriptions' unacked
    limits and delayed delivery follow."""
    closed: bool
    """True once the topic is closing: publishing, adding producers and subscribing are refused."""
    last_used_ms: int
    """When the registry last handed the topic out (idle unloading)."""

    # ------------------------------------------------------------------ state the front ends read
    @property
    def subscriptions(self) -> Mapping[str, Any]:
        """Durable subscriptions by name. Persistent: their cursors are stored. Non-persistent: held in memory
        (with their drop counters) until unsubscribed; readers' subscriptions are here too, with
        ``durable`` False, and go with their consumer."""

    @property
    def readers(self) -> Mapping[str, Any]:
        """Readers' (non-durable) subscriptions kept apart from ``subscriptions``. Persistent: a name may be
        used once by each. Non-persistent: always empty (its readers' subscriptions are in
        ``subscriptions``)."""

    @property
    def producers(self) -> Mapping[int, "ProducerInfo"]:
        """The connected producers by broker-wide producer id."""

    @property
    def access(self) -> "ProducerAccess":
        """The producer access modes' state (Exclusive, WaitForExclusive, fencing), waiting producers too."""

    @property
    def termination(self) -> EndOfTopic:
        """Termination state. Persistent: terminated by ``terminate()``, kept across restarts.
        Non-persistent: never terminated (``terminate()`` is refused)."""

    @property
    def writes(self) -> Optional["WriteFault"]:
        """Whether the topic can write now (a full disk, a failed fsync). Non-persistent: None, it never
        writes."""

    @property
    def rates(self) -> "TopicRates":
        """Rates over the last stats interval."""

    @property
    def throttling(self) -> "TopicThrottling":
        """The rate limits it enforces (publish, dispatch, subscribe); the registry sets them. Non-persistent:
        a dispatch rate drops what comes over it (nothing waits)."""

    @property
    def has_clients(self) -> bool:
        """A producer or a consumer is connected."""

    # ------------------------------------------------------------------ positions
    @property
    def start_offset(self) -> int:
        """Offset of the first message kept. Non-persistent: the next offset (nothing is kept)."""

    @property
    def end_offset(self) -> int:
        """Offset one past the last message accepted (confirmed or not). Non-persistent: the next offset."""

    @property
    def confirmed_end_offset(self) -> int:
        """Offset one past the last message a consumer may read (synced per ``journalSyncMode``).
        Non-persistent: the next offset."""

    def offset_for_timestamp(self, publish_time_ms: int) -> int:
        """The first offset published at or after ``publish_time_ms``. Non-persistent: the next offset."""

    def entry_containing(self, offset: int) -> Optional["StoredEntry"]:
        """The stored entry holding ``offset`` (None: not stored). Non-persistent: always None."""

    def last_message_id(self) -> Any:
        """The id of the last readable message, None when there is none. Non-persistent: always None."""

    def unreadable_at(self, offset: int, entries: int = 1) -> Optional["DataLost"]:
        """The error a read of the ``entries`` entries from the one holding ``offset`` meets when one is in a
        damaged stored range (None: they are readable, or not stored yet). Non-persistent: always None."""

    # ------------------------------------------------------------------ producers and publishing
    def add_producer(self, producer_name: str, properties: dict[str, str],
                     access_mode: "AccessMode" = ..., *,
                     fence: Callable[[Any], None] = ...,
                     granted: Callable[[], None] = ...) -> tuple["ProducerInfo", bool]:
        """Register a producer under the access modes' rules: its info, and whether it may publish now
        (False: queued by WaitForExclusive; ``granted`` runs later). Persistent: ``TopicTerminated`` on a
        terminated topic."""

    def remove_producer(self, info: "ProducerInfo") -> None:
        """The producer left (a waiting exclusive producer may get its turn). Non-persistent: the topic goes
        once idle."""

    def last_sequence_id(self, producer_name: str) -> int:
        """Highest sequence id stored for ``producer_name`` (-1: unknown, deduplication off, or
        non-persistent)."""

    def set_deduplication(self, enabled: bool) -> None:
        """Turn deduplication on or off. Non-persistent: ignored (as in Pulsar)."""

    def publish(self, producer: "ProducerInfo", entries: Sequence,
                on_done: Callable[[list, Optional[BaseException]], None]) -> None:
        """Check ``entries`` and accept the good ones; ``on_done(results, error)`` runs once they are
        confirmed (persistent: stored per ``journalSyncMode``; non-persistent: handed to the connected
        consumers, or dropped)."""

    # ------------------------------------------------------------------ subscriptions
    def subscribe(self, subscription: str, sub_type: "SubType", consumer: "Consumer", *, durable: bool,
                  start_offset: int) -> Any:
        """Attach ``consumer`` and return its subscription. Persistent: a new one starts at
        ``start_offset``. Non-persistent: ``start_offset`` is ignored, it receives what comes next."""

    def consumer_left(self, sub: Any, consumer: "Consumer", *, keep_reader: bool = False) -> None:
        """``consumer`` left ``sub``. A reader's subscription goes with its last consumer, unless
        ``keep_reader`` (a seek closed the consumer, which subscribes again): persistent keeps it, to be
        dropped by :meth:`drop_idle_reader`; non-persistent has nothing to keep and drops it."""

    def drop_idle_reader(self, sub: Any) -> None:
        """Drop reader subscription ``sub`` kept by ``consumer_left(keep_reader=True)`` if no consumer came
        back for it. Non-persistent: nothing is ever kept, so nothing to do."""

    def unsubscribe(self, subscription: str, *, requester: Optional["Consumer"] = None, force: bool = False,
                    durable: bool = True) -> None:
        """Delete a subscription (``SubscriptionNotFound``; ``NotAllowedError`` while other consumers are
        connected, unless ``force``)."""

    def create_subscription(self, name: str, start_offset: int) -> None:
        """Create durable subscription ``name`` without a consumer (pulsar-admin create-subscription).
        Non-persistent: ``NotAllowedError`` (its subscriptions are its consumers')."""

    def durable_subscription(self, name: str) -> Any:
        """Durable subscription ``name`` (``SubscriptionNotFound``). Non-persistent: ``NotAllowedError``
        (no stored subscription to reset or acknowledge without a consumer)."""

    def acknowledge_up_to(self, name: str, end_offset: int) -> int:
        """Acknowledge every message below ``end_offset`` on durable subscription ``name``; its new
        mark-delete offset + 1. Non-persistent: ``NotAllowedError``."""

    def touch_subscription(self, name: str) -> None:
        """Record activity on durable subscription ``name`` (subscription expiration). Non-persistent:
        nothing to record."""

    # ------------------------------------------------------------------ termination
    def terminate(self) -> int:
        """Take no more messages, ever; the offset one past the last one. Non-persistent:
        ``NotAllowedError`` (it stores nothing to end)."""

    def check_end_of_topic(self) -> None:
        """Tell the consumers that now have everything that they reached the end (terminated topics only;
        non-persistent: nothing to do)."""

    # ------------------------------------------------------------------ stats and lifecycle
    def stats(self) -> dict:
        """Pulsar's topic stats (``isPersistent`` tells which), rates included."""

    def raw_stats(self) -> dict:
        """The stats without rates."""

    async def close(self) -> None:
        """Close the topic: its subscriptions stop dispatching. Persistent: state saved, files closed."""

    async def delete(self) -> None:
        """End every client's session (they reconnect, as Pulsar's do), then close the topic; persistent:
        remove its folder."""


@runtime_checkable
class StoredTopic(Topic, Protocol):
    """A persistent topic partition: a :class:`Topic` that stores its messages in a log with cursors
    (:class:`~broker_core.core.persistent.topic.PersistentTopic`). Get one from a ``Topic`` with
    :func:`stored`, never by asking for its class."""

    log: Any
    """The topic's :class:`~broker_core.storage.log.ManagedLog` (the registry's helpers read its segments)."""
    compaction: Any
    """Its :class:`~broker_core.core.persistent.compaction_runs.TopicCompaction`: ``trigger()``, ``status``,
    ``last_error``, ``record`` (Pulsar's ``CompactionRecord``), ``threshold``."""
    producer_check: Callable[[], None]
    """Runs before a producer is admitted (the registry sets it: a backlog quota's refusal)."""

    @property
    def compacted(self) -> Any:
        """The current compacted ledger (``horizon``, ``size_bytes``, ``len()``); None: never compacted."""

    @property
    def size_bytes(self) -> int:
        """Bytes stored in the log's segments."""

    @property
    def activity(self) -> "SubscriptionActivity":
        """Each durable subscription's last activity (subscription expiration)."""

    @property
    def msg_expired(self) -> dict[str, int]:
        """Messages expired per durable subscription (``totalMsgExpired``); admin expiry counts there too."""

    @property
    def retention(self) -> "RetentionPolicy":
        """The retention policy in force."""

    deduplication_snapshot_seconds: int
    """Deduplication state is snapshotted by time too (0: by entries only); the registry sets it."""

    @property
    def subscription_expiration_minutes(self) -> int:
        """Durable subscriptions without consumers idle this long are deleted (0: never)."""

    @property
    def quiescent(self) -> bool:
        """No clients, no fsync waited for, no removal or compaction running: :meth:`unload` may close it."""

    def read(self, start_offset: int, max_entries: int, end_offset: int) -> list["StoredEntry"]:
        """Stored entries from the one holding ``start_offset``, at most ``max_entries``, below ``end_offset``."""

    def segments(self) -> list[dict]:
        """Per-segment figures: ``ledgerId`` (base offset), ``entries``, ``size``, ``firstOffset``,
        ``lastOffset`` (and ``damaged`` ranges when some are)."""

    def set_retention_policies(self, retention: "RetentionPolicy", message_ttl_seconds: int) -> None:
        """Apply the effective retention and message TTL (resolved by the registry)."""

    def expire_subscriptions(self) -> list[str]:
        """Delete the durable subscriptions idle past their expiration time; their names."""

    def flush_cursors(self) -> None:
        """Persist every changed durable cursor."""

    def disconnect_clients(self, error: "PulsarLikeError", *, consumers: bool = True) -> int:
        """End every producer's (and consumer's) session with ``error``; how many were ended."""

    def unload(self) -> bool:
        """Close a quiescent topic at once, state saved (False, nothing done, when it is not quiescent)."""

    async def truncate(self) -> int:
        """Every subscription acknowledges everything, then every segment but the active one is removed;
        how many were."""


def stored(topic: Topic, verb: str) -> StoredTopic:
    """``topic`` as a :class:`StoredTopic`; ``NotAllowedError`` naming ``verb`` when it is non-persistent (it
    stores nothing), as Pulsar refuses operations on stored data there."""
    if not topic.persistent:
        raise NotAllowedError(f"{verb}: {topic.topic} is non-persistent: it stores nothing", topic=topic.topic)
    return cast(StoredTopic, topic)
