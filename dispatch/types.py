"""Value types of the dispatch layer."""
from __future__ import annotations

import enum


class SubType(str, enum.Enum):
    """A subscription's type; the value is Pulsar's name, as topic stats report it."""

    EXCLUSIVE = "Exclusive"
    FAILOVER = "Failover"
    SHARED = "Shared"
    KEY_SHARED = "Key_Shared"

    def __str__(self) -> str:
        return self.value
