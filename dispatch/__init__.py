"""Dispatch: subscriptions, their consumers and the dispatchers of each subscription type.

The names below are re-exported on first use (PEP 562): importing a value type (:mod:`dispatch.types`) at the
broker's start does not import the dispatchers."""
from __future__ import annotations

from typing import TYPE_CHECKING

from broker_core.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from dispatch.consumer import Consumer, Delivery, PendingAcks
    from dispatch.dispatcher import Dispatcher
    from dispatch.single_active import SingleActiveDispatcher, pick_active
    from dispatch.source import Cursor, EntrySource
    from dispatch.subscription import Subscription
    from dispatch.types import SubType

_EXPORTS = {"Consumer": "consumer", "Delivery": "consumer", "PendingAcks": "consumer", "Dispatcher": "dispatcher",
            "SingleActiveDispatcher": "single_active", "pick_active": "single_active", "Cursor": "source",
            "EntrySource": "source", "Subscription": "subscription", "SubType": "types"}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
