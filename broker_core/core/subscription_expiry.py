"""Subscription expiration (Pulsar's ``subscriptionExpirationTimeMinutes``): a durable subscription that
nobody uses any more is deleted, so it stops holding data back from retention.

**The rule.** A durable subscription with no connected consumer whose last activity is more than N minutes
ago is deleted (logged at INFO, ``event=subscription_expired``). N is the ``subscriptionExpirationTimeMinutes``
policy of the topic's namespace (or of the topic), else the broker's ``subscriptionExpirationTimeMinutes``;
0 (the default) means never, as in Pulsar. Non-durable subscriptions (readers) go with their last consumer
anyway.

**Activity** (Pulsar's ``cursor.getLastActive()``): a consumer subscribing or leaving, ``CreateSubscription``,
``ResetCursor``, and every ``AcknowledgeUpTo`` -- even one that moves nothing, so a client that keeps its
subscription with unary calls only (the Spark source) keeps it alive by re-acknowledging its position. A
subscription is never expired while a consumer is connected, so consuming and acknowledging through a
consumer count through its leaving.

**Where it is kept.** In memory per loaded topic, and in the cursor's properties (``pulsarlike.lastActiveMs``)
so it survives unloads and restarts: stamped whenever the cursor is saved anyway, saved on its own when it
moved by :data:`PERSIST_STEP_MS` or more, and saved when the topic is unloaded or closed. A cursor saved
before the property existed counts its file's modification time (its last acknowledgment).

**When it is checked.**

1. Loaded topics: every ``subscriptionExpiryCheckIntervalInMinutes`` (or ``...InSeconds``), on each
   topic's periodic checks (:meth:`~broker_core.core.persistent.retention.TopicRetention.expire_subscriptions`).
2. A topic being loaded (an idle topic is unloaded after ``brokerTopicIdleUnloadSeconds``): at load, before
   any client attaches.
3. Topics on disk and not loaded: :class:`StoredSubscriptionSweep` walks the data dir's persistent topic
   folders at the same interval, a bounded number of topics per event-loop turn, reading only their cursor
   files (never their logs), and deletes the expired cursor files. Retention frees what they held the next
   time the topic is loaded.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Iterable, Iterator, Mapping

from broker_core.clock import Clock
from broker_core.errors import PulsarLikeError
from broker_core.types import PERSISTENT, TopicName

if TYPE_CHECKING:
    from broker_core.storage.cursor import ManagedCursor
    from broker_core.storage.cursor_store import CursorStore
    from broker_core.core.registry import TopicRegistry
    from dispatch.subscription import Subscription

log = logging.getLogger(__name__)

LAST_ACTIVE = "pulsarlike.lastActiveMs"
"""The cursor property holding the subscription's last activity (ms since the epoch)."""
PERSIST_STEP_MS = 60_000
"""Activity alone rewrites a cursor file at most this often (the limit is counted in minutes)."""
SWEEP_BATCH = 100
"""Stored topics the sweep looks at per event-loop turn."""


def is_expired(last_active_ms: int, limit_minutes: int, now_ms: int) -> bool:
    """Whether a subscription unused since ``last_active_ms`` has expired under ``limit_minutes`` (0: never)."""
    return limit_minutes > 0 and now_ms - last_active_ms > limit_minutes * 60_000


def stored_last_active(cursor: ManagedCursor, saved_at_ms: int) -> int:
    """The last activity a saved cursor records; ``saved_at_ms`` (its file's time) when it records none."""
    try:
        return int(cursor.properties[LAST_ACTIVE])
    except (KeyError, ValueError):
        return saved_at_ms


class SubscriptionActivity:
    """The last activity of each durable subscription of one topic partition."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._last: dict[str, int] = {}

    def loaded(self, cursor: ManagedCursor, saved_at_ms: int) -> None:
        self._last[cursor.name] = stored_last_active(cursor, saved_at_ms)

    def touch(self, cursor: ManagedCursor) -> bool:
        """Record activity now; True when the cursor should be saved for it (its stored value is a
        :data:`PERSIST_STEP_MS` or more behind)."""
        now = self._clock.now_ms()
        self._last[cursor.name] = now
        return now - stored_last_active(cursor, -PERSIST_STEP_MS) >= PERSIST_STEP_MS

    def last_active_ms(self, name: str) -> int:
        return self._last.get(name, self._clock.now_ms())

    def stamp(self, cursor: ManagedCursor) -> None:
        """Write the last activity into the cursor's properties (just before it is saved)."""
        last = self._last.get(cursor.name)
        if last is not None:
            cursor.properties[LAST_ACTIVE] = str(last)

    def unsaved(self, cursors: Iterable[ManagedCursor]) -> list[str]:
        """Names of the cursors whose stored activity is behind (saved when the topic is unloaded)."""
        return [c.name for c in cursors if c.name in self._last
                and c.properties.get(LAST_ACTIVE) != str(self._last[c.name])]

    def forget(self, name: str) -> None:
        self._last.pop(name, None)

    def expired(self, subscriptions: Mapping[str, "Subscription"], limit_minutes: int) -> list[tuple[str, int]]:
        """``(name, idle ms)`` of the durable subscriptions without consumers that expired."""
        if limit_minutes <= 0:
            return []
        now = self._clock.now_ms()
        return [(name, now - self.last_active_ms(name)) for name, sub in subscriptions.items()
                if sub.durable and not sub.consumers
                and is_expired(self.last_active_ms(name), limit_minutes, now)]


def expire_stored(store: CursorStore, limit_minutes: int, now_ms: int) -> list[str]:
    """Delete the expired cursors of a topic that is not loaded (nobody is connected to it); returns their
    names."""
    if limit_minutes <= 0:
        return []
    expired = []
    for name, cursor in store.load_all().items():
        if is_expired(stored_last_active(cursor, store.saved_at_ms(name)), limit_minutes, now_ms):
            store.delete(name)
            expired.append(name)
    return expired


class StoredSubscriptionSweep:
    """Every ``interval_s``: expire the subscriptions of the persistent topics that are on disk and not
    loaded, :data:`SWEEP_BATCH` topics per event-loop turn. Runs on the broker's event loop, where topics
    are loaded, so no topic is loaded while its cursor files are looked at."""

    def __init__(self, registry: "TopicRegistry", clock: Clock, interval_s: float) -> None:
        self._registry = registry
        self._clock = clock
        self._interval_s = interval_s
        self._handle: asyncio.TimerHandle | None = None
        self._walk: Iterator[TopicName] | None = None
        self.expired = 0
        """Subscriptions this sweep deleted (since the broker started)."""

    def start(self) -> None:
        self._handle = asyncio.get_running_loop().call_later(self._interval_s, self._turn)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _turn(self) -> None:
        try:
            done = self.step()
        except Exception:  # a failed turn must not stop the next sweeps
            log.exception("event=subscription_sweep_failed")
            done = True
        self._handle = asyncio.get_running_loop().call_later(self._interval_s if done else 0, self._turn)

    def step(self, batch: int = SWEEP_BATCH) -> bool:
        """Look at the next ``batch`` stored topics; True when the sweep went through all of them."""
        if self._walk is None:
            self._walk = self._registry.stored_topics(PERSISTENT)
        now = self._clock.now_ms()
        for _ in range(batch):
            name = next(self._walk, None)
            if name is None:
                self._walk = None
                return True
            if self._registry.loaded(name) is not None:
                continue  # a loaded topic checks its own subscriptions
            limit = self._registry.subscription_expiration_minutes(name)
            if limit <= 0:
                continue
            try:
                store = self._registry.cursor_store(name)
                expired = expire_stored(store, limit, now) if store is not None else []
            except (OSError, PulsarLikeError) as exc:  # a damaged cursor file: its topic's load reports it
                log.warning("event=subscription_sweep_skipped topic=%s error=%r", name, exc)
                continue
            for subscription in expired:
                self.expired += 1
                log.info("event=subscription_expired topic=%s subscription=%s limit_minutes=%d loaded=false",
                         name, subscription, limit)
        return False
