"""Subscription expiration (subscriptionExpirationTimeMinutes): an abandoned durable subscription -- no
consumer, no activity for the limit -- is deleted, on loaded topics, at load, and on topics only on disk;
its last activity survives an unload. A fake clock moves time; nothing sleeps."""
from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Awaitable, Callable

from broker_core.clock import FakeClock
from broker_core.config import BrokerConfig
from broker_core.core.policies import NAMESPACE
from broker_core.core.subscription_expiry import (LAST_ACTIVE, StoredSubscriptionSweep, expire_stored,
                                                     is_expired)
from broker_core.core.registry import TopicRegistry
from broker_core.storage.cursor import ManagedCursor
from broker_core.storage.cursor_store import CursorStore
from broker_core.types import TopicName
from dispatch.consumer import Consumer
from dispatch.types import SubType

NAME = TopicName.parse("persistent://public/default/orders")
MINUTE = 60_000


def run(tmp_path: Path, scenario: Callable[[TopicRegistry, FakeClock], Awaitable[Any]], **config: Any) -> Any:
    """``scenario(registry, clock)`` on an event loop, with a registry on ``tmp_path`` (expiration after 60
    minutes unless ``config`` says otherwise)."""
    clock = FakeClock()

    async def main() -> Any:
        with ThreadPoolExecutor(2) as executor:
            registry = TopicRegistry(tmp_path, BrokerConfig(**{"journalSyncMode": "never",
                                                              "subscriptionExpirationTimeMinutes": 60, **config}),
                                     executor, clock)
            try:
                return await scenario(registry, clock)
            finally:
                await registry.close()
    return asyncio.run(main())


def test_a_subscription_expires_once_idle_for_longer_than_the_limit_and_never_when_the_limit_is_0() -> None:
    assert not is_expired(0, 60, 60 * MINUTE)
    assert is_expired(0, 60, 60 * MINUTE + 1)
    assert not is_expired(0, 0, 10**12)


def test_an_abandoned_subscription_is_deleted_and_logged(tmp_path, caplog) -> None:
    async def scenario(registry: TopicRegistry, clock: FakeClock) -> tuple[list[str], list[str]]:
        topic = registry.get(NAME, create=True)
        topic.create_subscription("abandoned", 0)
        topic.create_subscription("recent", 0)
        clock.advance(30 * MINUTE)
        topic.acknowledge_up_to("recent", 0)
        clock.advance(31 * MINUTE)
        return topic.expire_subscriptions(), sorted(topic.subscriptions)

    with caplog.at_level(logging.INFO):
        expired, left = run(tmp_path, scenario)
    assert (expired, left) == (["abandoned"], ["recent"])
    assert any("event=subscription_expired" in r.getMessage() and "subscription=abandoned" in r.getMessage()
               and r.levelno == logging.INFO for r in caplog.records)


def test_a_subscription_with_a_connected_consumer_never_expires(tmp_path) -> None:
    async def scenario(registry: TopicRegistry, clock: FakeClock) -> list[str]:
        topic = registry.get(NAME, create=True)
        topic.subscribe("busy", SubType.EXCLUSIVE, Consumer(1, "c", lambda deliveries: None), durable=True,
                        start_offset=0)
        clock.advance(24 * 60 * MINUTE)
        return topic.expire_subscriptions()

    assert run(tmp_path, scenario) == []


def test_the_clock_starts_when_the_last_consumer_leaves(tmp_path) -> None:
    async def scenario(registry: TopicRegistry, clock: FakeClock) -> tuple[list[str], list[str]]:
        topic = registry.get(NAME, create=True)
        consumer = Consumer(1, "c", lambda deliveries: None)
        sub = topic.subscribe("s", SubType.EXCLUSIVE, consumer, durable=True, start_offset=0)
        clock.advance(120 * MINUTE)
        topic.consumer_left(sub, consumer)
        clock.advance(59 * MINUTE)
        before = topic.expire_subscriptions()
        clock.advance(2 * MINUTE)
        return before, topic.expire_subscriptions()

    assert run(tmp_path, scenario) == ([], ["s"])


def test_an_acknowledge_up_to_that_moves_nothing_still_keeps_a_subscription_alive(tmp_path) -> None:
    async def scenario(registry: TopicRegistry, clock: FakeClock) -> list[str]:
        topic = registry.get(NAME, create=True)
        topic.create_subscription("spark", 0)
        for _ in range(5):
            clock.advance(50 * MINUTE)
            topic.acknowledge_up_to("spark", 0)
        clock.advance(50 * MINUTE)
        return topic.expire_subscriptions()

    assert run(tmp_path, scenario) == []


def test_last_activity_survives_an_unload_and_expiry_happens_at_load(tmp_path) -> None:
    async def scenario(registry: TopicRegistry, clock: FakeClock) -> tuple[list[str], list[str]]:
        topic = registry.get(NAME, create=True)
        topic.create_subscription("s", 0)
        clock.advance(30 * MINUTE)
        topic.acknowledge_up_to("s", 0)  # activity at minute 30, saved with the cursor when unloading
        assert registry.unload(str(NAME))
        clock.advance(40 * MINUTE)
        kept = sorted(registry.get(NAME, create=False).subscriptions)  # idle 40 minutes: kept
        assert registry.unload(str(NAME))
        clock.advance(21 * MINUTE)
        return kept, sorted(registry.get(NAME, create=False).subscriptions)  # idle 61 minutes: expired at load

    assert run(tmp_path, scenario) == (["s"], [])


def test_a_topic_that_is_not_loaded_has_its_abandoned_subscriptions_swept_from_disk(tmp_path) -> None:
    async def scenario(registry: TopicRegistry, clock: FakeClock) -> tuple[bool, int, list[str]]:
        topic = registry.get(NAME, create=True)
        topic.create_subscription("gone", 0)
        assert registry.unload(str(NAME))
        clock.advance(61 * MINUTE)
        sweep = StoredSubscriptionSweep(registry, clock, 60)
        done = sweep.step()
        assert registry.loaded(NAME) is None  # the sweep never loads a topic
        return done, sweep.expired, sorted(registry.cursor_store(NAME).load_all())

    assert run(tmp_path, scenario) == (True, 1, [])


def test_the_sweep_leaves_loaded_topics_to_their_own_checks(tmp_path) -> None:
    async def scenario(registry: TopicRegistry, clock: FakeClock) -> tuple[int, list[str]]:
        topic = registry.get(NAME, create=True)
        topic.create_subscription("s", 0)
        clock.advance(61 * MINUTE)
        sweep = StoredSubscriptionSweep(registry, clock, 60)
        sweep.step()
        return sweep.expired, sorted(topic.subscriptions)

    assert run(tmp_path, scenario) == (0, ["s"])


def test_a_cursor_saved_without_its_last_activity_counts_its_file_time(tmp_path) -> None:
    store = CursorStore(tmp_path / "cursors")
    store.save(ManagedCursor("old", 4))
    cursor = store.load_all()["old"]
    assert LAST_ACTIVE not in cursor.properties
    saved = store.saved_at_ms("old")
    assert expire_stored(store, 60, saved + 60 * MINUTE) == []
    assert expire_stored(store, 60, saved + 60 * MINUTE + 1) == ["old"]
    assert store.load_all() == {}


def test_a_namespace_policy_wins_over_the_broker_setting(tmp_path) -> None:
    async def scenario(registry: TopicRegistry, clock: FakeClock) -> tuple[list[str], list[str]]:
        registry.set_policy(NAMESPACE, "public/default", "subscriptionExpirationTimeMinutes", 0)
        topic = registry.get(NAME, create=True)
        topic.create_subscription("s", 0)
        clock.advance(10 * 60 * MINUTE)
        never = topic.expire_subscriptions()
        registry.set_policy(NAMESPACE, "public/default", "subscriptionExpirationTimeMinutes", 5)
        return never, topic.expire_subscriptions()

    assert run(tmp_path, scenario) == ([], ["s"])
