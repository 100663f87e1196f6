"""Value types of the dispatch layer (cheap to import: the broker's policies read them at start)."""
from __future__ import annotations

import enum
from dataclasses import dataclass


class SubType(str, enum.Enum):
    """A subscription's type; the value is Pulsar's name, as topic stats report it."""

    EXCLUSIVE = "Exclusive"
    FAILOVER = "Failover"
    SHARED = "Shared"
    KEY_SHARED = "Key_Shared"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class DelayedDelivery:
    """Broker settings for delayed delivery (Pulsar's names)."""

    enabled: bool = True
    """``delayedDeliveryEnabled``: off, delayed messages are delivered at once."""
    tick_ms: int = 1000
    """``delayedDeliveryTickTimeMillis``."""
    strict: bool = False
    """``isDelayedDeliveryDeliverAtTimeStrict``."""
