"""What one write task of the sink asks the broker besides sending: :class:`TaskBroker`.

- The client and the admin: option ``transport=auto`` asks with one binary CONNECT, as the source does
  (:func:`connector.spark.any_broker.dense_offsets`). On pulsarlike the task uses its gRPC service, which
  also answers the admin calls (topic partitions, deduplication). On any other broker (or with
  ``transport=binary``) it speaks Pulsar's binary protocol only, and its admin is the REST API of option
  ``admin.url`` when given, else none.
- A topic's partitions: the gRPC admin on pulsarlike, else the client's PARTITIONED_METADATA lookup.
- Deduplication for effectively-once, turned on per topic through the admin, or else the
  ``event=sink_deduplication_unchecked`` line: step 3 of :mod:`connector.spark.sink_task`.
"""
from __future__ import annotations

import logging
from typing import Any

from broker_core import errors
from broker_core.types import TopicName

from connector.spark.sink_options import SinkOptions
from connector.spark.sink_rows import SinkDataError

log = logging.getLogger(__name__)

_UNCHECKED_LOGGED: set[str] = set()
"""Service URLs the "deduplication unchecked" line was logged for in this process (once each, not per task)."""


class TaskBroker:
    """The task's client and admin (module docstring), opened at once; ``close()`` closes both."""

    def __init__(self, options: SinkOptions, effectively_once: bool) -> None:
        from connector import Admin, Client

        timeout_s = options.operation_timeout_ms / 1000.0
        url = options.service_url
        security = options.security.client_kwargs(url)
        transport = options.transport
        if transport == "auto":  # one binary CONNECT decides, as the source does (any_broker.dense_offsets)
            from connector.spark.any_broker import dense_offsets

            # pulsarlike: its gRPC service, which also turns the topic's deduplication on and counts by offsets
            # (transport=binary there is the any-broker path); any other broker: the binary protocol
            dense = dense_offsets(url, options.operation_timeout_ms, options.security)
            transport = "grpc" if dense else "binary"
        self.pulsar_protocol_only = transport == "binary"
        """Pulsar's binary protocol only (another broker, or option ``transport=binary``): no gRPC admin."""
        self.admin: Any = None
        """pulsarlike's gRPC admin, the REST one of ``admin.url``, or None (deduplication cannot be asked)."""
        self.client: Any = Client(url, operation_timeout_seconds=timeout_s,
                                  connection_timeout_ms=options.operation_timeout_ms, transport=transport, **security)
        if not self.pulsar_protocol_only:
            self.admin = Admin(url, operation_timeout_seconds=timeout_s,
                               connection_timeout_ms=options.operation_timeout_ms, **security)
        elif options.admin_url is not None:
            self.admin = Admin(admin_url=options.admin_url, operation_timeout_seconds=timeout_s,
                               **options.security.client_kwargs(options.admin_url))
        elif effectively_once and url not in _UNCHECKED_LOGGED:
            _UNCHECKED_LOGGED.add(url)
            log.warning("event=sink_deduplication_unchecked service_url=%s: effectively-once holds only if "
                        "deduplication is enabled on the broker (brokerDeduplicationEnabled=true, or the "
                        "namespace's or topic's deduplication policy): Pulsar's binary protocol cannot ask; "
                        "give option admin.url to have the sink check and turn it on per topic, or set "
                        "effectivelyOnce=false to say at-least-once", url)

    def partitions(self, topic: str) -> int:
        """How many partitions ``topic`` has (0: not partitioned)."""
        if not self.pulsar_protocol_only:
            return int(self.admin.get_partitioned_topic_metadata(topic)["partitions"])
        names = self.client.get_topic_partitions(topic)
        return 0 if names == [topic] else len(names)

    def enable_deduplication(self, topic: str) -> None:
        """Deduplication on for ``topic``'s base topic, unless the topic turned it off (refused): needs the
        admin."""
        admin = self.admin
        base = str(TopicName.parse(topic).partitioned_base)
        try:
            setting = admin.get_topic_deduplication(base)
        except errors.TopicNotFound:  # the REST API asks a topic's policies of an existing topic only
            self._create_topic(base)
            setting = admin.get_topic_deduplication(base)
        if setting is False:
            raise SinkDataError(f"deduplication is turned off on topic {base} (set_topic_deduplication(topic, "
                                "False)); the sink's effectively-once needs it: remove that setting "
                                "(Admin.remove_topic_deduplication) or set effectivelyOnce=false")
        if setting is None:
            try:
                admin.set_topic_deduplication(base, True)
            except errors.AuthorizationError:
                raise SinkDataError(f"the sink's role may not turn deduplication on for {base} (only the tenant's "
                                    "admins may): have an admin turn it on for the topic (Admin.set_topic_"
                                    "deduplication(topic, True)) or set effectivelyOnce=false") from None
            except errors.TopicNotFound:  # a policy needs the topic: make it as a producer would
                self._create_topic(base)
                admin.set_topic_deduplication(base, True)

    def _create_topic(self, base: str) -> None:
        try:
            self.admin.create_topic(base)
        except errors.TopicAlreadyExists:
            pass  # another task made it first

    def close(self) -> None:
        for closeable in (self.client, self.admin):
            if closeable is not None:
                try:
                    closeable.close()
                except Exception:  # closing after a failure: the original error matters
                    log.debug("closing after the task failed", exc_info=True)
