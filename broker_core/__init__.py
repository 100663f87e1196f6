"""pulsarlike's broker. ``from broker_core import Broker`` starts one in-process."""
from __future__ import annotations

from typing import Any

__all__ = ["Broker"]


def __getattr__(name: str) -> Any:
    # Lazy, so that importing broker_core.types (as the client does) does not load the server.
    if name == "Broker":
        from broker_core.broker import Broker

        return Broker
    raise AttributeError(name)
