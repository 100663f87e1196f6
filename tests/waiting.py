"""Waiting in integration tests: poll a condition with a deadline (never a fixed sleep for correctness)."""
from __future__ import annotations

import time
from typing import Any, Callable, TypeVar

T = TypeVar("T")


def wait_until(check: Callable[[], T], timeout_s: float = 10.0, interval_s: float = 0.02) -> T:
    """Call ``check()`` until it returns something truthy or ``timeout_s`` passes; returns its last value
    (so the caller's assert shows what was seen)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval_s)


def backlog(admin: Any, topic: str, subscription: str) -> int:
    return admin.topic_stats(topic)["subscriptions"][subscription]["msgBacklog"]


def wait_for_backlog(admin: Any, topic: str, subscription: str, expected: int, timeout_s: float = 10.0) -> int:
    """The subscription's backlog once it equals ``expected`` (acks are grouped and asynchronous), or the
    last one seen after ``timeout_s``."""
    seen = [backlog(admin, topic, subscription)]

    def reached() -> bool:
        seen[0] = backlog(admin, topic, subscription)
        return seen[0] == expected
    wait_until(reached, timeout_s)
    return seen[0]
