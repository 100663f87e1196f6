"""``Admin`` (like ``pulsar-admin``): tenants and namespaces, topics, subscriptions, policies."""
from connector.client.admin.admin import Admin
from connector.client.admin.offsets import OffsetBounds
from connector.client.admin.peek import PeekedMessage
from connector.client.admin.wire import NotSupported

__all__ = ["Admin", "NotSupported", "OffsetBounds", "PeekedMessage"]
