"""What a range read of pulsarlike asks the broker beside its entries, over the range's one transport (the one
its entries come over: gRPC or Pulsar's binary protocol, option ``transport``):

- ``bounds(topic)``: the partition's first stored offset and its end, from the transport's last message
  (gRPC's ``GetLastMessageId``; the binary protocol's ``GET_LAST_MESSAGE_ID``, whose mark-delete position of a
  reader at the earliest is the one before the first stored message);
- ``lookup``: the client's :class:`~connector.client.lookup.Lookup` on it (schemas, a compacted view's end);
- ``stats(topic)``: the partition's stats, asked only to explain a loss or to check a readCompacted snapshot.
  The binary protocol has no stats call: over it they come from an admin of their own, opened on first use
  (never on a read that loses nothing and is no snapshot).

Example: a range ``[40, 60)`` over the binary protocol of a partition whose retention deleted offsets up to 49
and whose end is 55: ``bounds`` answers ``(50, 55)`` over the range's binary connection, the read loses 40..49
(asking ``stats`` once, for why) and 55..59, and reads 50..54 -- every answer but the stats over one connection.
"""
from __future__ import annotations

from typing import Any, Callable

from connector.client.admin import Admin
from connector.client.lookup import Lookup
from connector.client.transport import Transport
from connector.spark.source_admin import close_later


class RangeCalls:
    """The broker calls of one range read over ``transport``; ``admin_of()`` makes the admin its stats come
    from: an admin on ``transport`` itself when that is gRPC (``owns_admin`` False: closing the transport
    closes it), else one of its own (``owns_admin``: :meth:`close` closes it)."""

    def __init__(self, transport: Transport, admin_of: Callable[[], Admin], owns_admin: bool) -> None:
        self.transport = transport
        self.lookup = Lookup(transport)
        self._admin_of = admin_of
        self._owns_admin = owns_admin
        self._admin: Admin | None = None

    def bounds(self, topic: str) -> tuple[int, int]:
        """``(first stored offset, end)`` of a topic partition (``start == end``: it holds no message);
        ``TopicNotFound`` when it does not exist."""
        last = self.lookup.last_message(topic)
        return last.start_offset, max(last.last_offset + 1, last.start_offset)

    def stats(self, topic: str) -> dict[str, Any]:
        """The partition's stats (``Admin.topic_stats``)."""
        if self._admin is None:
            self._admin = self._admin_of()
        return self._admin.topic_stats(topic)

    def close(self) -> None:
        """Close the stats' own admin, if one was opened (the transport is the range's to close)."""
        if self._admin is not None and self._owns_admin:
            close_later(self._admin)
        self._admin = None
