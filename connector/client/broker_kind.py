"""What a driver -- the Spark source's, a job's, the CLI's -- needs of a broker beside producers and consumers,
as the client's public API (so none of them builds a transport of its own):

- :func:`is_pulsarlike`: whether the broker numbers messages densely (pulsarlike) or by ``(ledger, entry,
  batch index)`` (Apache Pulsar, pulsar-lite). One binary ``CONNECT`` decides, as ``transport="auto"`` does
  (:mod:`connector.client.transport.choice`): its ``CONNECTED.server_version`` names the broker.
- :func:`open_transport`: a transport by name (``auto``, ``grpc``, ``binary``), for a raw entry stream
  (:func:`~connector.client.entry_stream.open_entry_stream`).
- :class:`DriverSubscriptions`: durable subscriptions held without taking messages (a query's or a job's
  committed position on a broker without dense offsets), on a binary transport of their own.
- :func:`health_status`: what the broker's standard gRPC health service answers (``pulsarlike health``).
"""
from __future__ import annotations

from connector.client.security import Security
from connector.client.transport import Transport
from connector.client.transport.choice import open_transport

__all__ = ["DriverSubscriptions", "LastId", "health_status", "is_pulsarlike", "open_transport"]

LastId = tuple[int, int, int] | None
"""``(ledger, entry, batch index)`` of a topic's last message (batch -1: the whole entry); None when it has none."""


def is_pulsarlike(service_url: str, timeout_s: float, security: Security) -> bool:
    """Whether the broker at ``service_url`` is pulsarlike (dense offsets); ``ConnectError``/``Timeout`` when it
    does not answer a ``CONNECT`` within ``timeout_s``."""
    transport = open_transport("binary", service_url, timeout_s, timeout_s, security)
    try:
        transport.ensure_ready()
        return bool(transport.positions.dense)
    finally:
        transport.close()


def health_status(service_url: str, service: str, timeout_s: float, security: Security) -> str:
    """``SERVING``, ``NOT_SERVING`` or ``SERVICE_UNKNOWN``: the gRPC health service's answer for ``service``
    (pulsarlike's; an Apache Pulsar broker has none); ``ConnectError`` when none comes within ``timeout_s``."""
    from connector.client.transport.grpc.connection import health_status as ask

    return ask(service_url, service, timeout_s, security)


class DriverSubscriptions:
    """Per (topic partition, subscription) a durable Failover consumer that is never given permits: it pins
    retention and records a committed position, moved by cumulative acknowledgments to any message id (a
    client consumer acknowledges only up to what it received). Created at the earliest message when missing;
    a consumer whose connection ended is subscribed again on next use."""

    def __init__(self, service_url: str, timeout_s: float, security: Security) -> None:
        from connector.client.transport.binary.held_subscriptions import HeldSubscriptions

        self._transport: Transport = open_transport("binary", service_url, timeout_s, timeout_s, security)
        self._held = HeldSubscriptions(self._transport, timeout_s)

    def open(self, topic: str, subscription: str) -> None:
        """Hold ``subscription`` on ``topic`` (a partition's name), creating it at the earliest message."""
        self._held.open(topic, subscription)

    def acknowledge(self, topic: str, subscription: str, ledger: int, entry: int) -> None:
        """Acknowledge cumulatively every message up to and including the entry ``(ledger, entry)``."""
        self._held.acknowledge(topic, subscription, ledger, entry)

    def last_id(self, topic: str, subscription: str | None) -> LastId:
        """The topic's last message id, asked on the held subscription (None: on a short-lived reader)."""
        return self._held.last_id(topic, subscription)

    def close(self) -> None:
        try:
            self._held.close()
        finally:
            self._transport.close()
