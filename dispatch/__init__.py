"""Dispatch: subscriptions, their consumers and the dispatchers of each subscription type."""
from dispatch.consumer import Consumer, Delivery, PendingAcks
from dispatch.dispatcher import Dispatcher
from dispatch.single_active import SingleActiveDispatcher, pick_active
from dispatch.source import Cursor, EntrySource
from dispatch.subscription import Subscription
from dispatch.types import SubType

__all__ = ["Consumer", "Cursor", "Delivery", "Dispatcher", "EntrySource", "PendingAcks",
           "SingleActiveDispatcher", "SubType", "Subscription", "pick_active"]
