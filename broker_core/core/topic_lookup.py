"""Where a topic lives and what a namespace holds, as every front end answers it: the transport-free part of
Pulsar's lookup, shared by the binary protocol's LOOKUP / GET_TOPICS_OF_NAMESPACE
(:mod:`broker_core.frontends.pulsar.lookups`) and the web service's ``/lookup/v2/topic/...`` and
``namespaces/{tenant}/{ns}/topics`` (:mod:`broker_core.frontends.http.admin.lookup_routes`).

This broker is the only one, so every lookup that is admitted answers the broker's own URLs:

- :func:`check_lookup` refuses what Pulsar's lookup refuses -- a disabled domain, a missing namespace
  (``NamespaceNotFound``), a topic that does not exist while ``allowAutoTopicCreation=false``
  (``TopicNotFound``); a partition of an existing partitioned topic exists;
- :func:`broker_urls` picks the URLs: the advertised ones (``advertisedAddress``) for a lookup naming no
  listener (an empty name is no name, as Pulsar reads some clients' blank field), that listener's from
  ``advertisedListeners`` otherwise, and ``ServiceNotReady`` ("the broker does not have listener ...") for a
  listener the broker does not have, as Pulsar refuses it.

Authorization (the ``lookup`` action on the topic) is the front end's: each checks it with the broker's
security layer before calling here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker_core.errors import InvalidConfiguration, ServiceNotReady, TopicNotFound
from broker_core.types import NON_PERSISTENT, PERSISTENT, TopicName

if TYPE_CHECKING:
    from broker_core.config import BrokerConfig
    from broker_core.core.registry import TopicRegistry

MODES: dict[str, tuple[str, ...]] = {"PERSISTENT": (PERSISTENT,), "NON_PERSISTENT": (NON_PERSISTENT,),
                                     "ALL": (PERSISTENT, NON_PERSISTENT)}
"""Pulsar's ``CommandGetTopicsOfNamespace.Mode`` (and the REST ``?mode=``): the domains each lists."""


@dataclass(frozen=True)
class BrokerUrls:
    """The binary protocol's addresses a lookup answers; either may be empty (no such port)."""

    broker_url: str
    """``pulsar://host:port``."""
    broker_url_tls: str = ""
    """``pulsar+ssl://host:port``."""


def check_lookup(registry: TopicRegistry, name: TopicName) -> None:
    """Refuse a lookup of ``name`` as Pulsar does (see the module docstring); returns when it is admitted."""
    registry.lookup_partitions(name)  # a missing namespace (or a disabled domain) is refused here
    if registry.auto_topic_creation(name)[0] or registry.exists(name):  # the namespace's override first
        return
    if registry.partitions_of(name) or (name.partition_index >= 0 and registry.partitions_of(name.partitioned_base)):
        return
    raise TopicNotFound(f"topic {name} does not exist (allowAutoTopicCreation=false)", topic=str(name))


def broker_urls(config: BrokerConfig, advertised: BrokerUrls, listener_name: str | None) -> BrokerUrls:
    """The URLs a lookup naming ``listener_name`` (None or empty: none) is answered."""
    if not listener_name:
        return advertised
    listener = config.advertised_listeners.get(listener_name)
    if listener is None:
        raise ServiceNotReady(f"the broker does not have listener {listener_name[:64]!r}"
                              " (advertisedListeners names the ones it has)", listener=listener_name[:64])
    return BrokerUrls(listener.broker_url, listener.broker_url_tls)


def lookup(registry: TopicRegistry, name: TopicName, advertised: BrokerUrls, listener_name: str | None) -> BrokerUrls:
    """:func:`check_lookup` then :func:`broker_urls`: where a client reaches ``name``."""
    check_lookup(registry, name)
    return broker_urls(registry.config, advertised, listener_name)


def namespace_topics(registry: TopicRegistry, namespace: str, mode: str = "PERSISTENT") -> list[str]:
    """The topic partitions and non-partitioned topics of ``namespace`` in the domains of ``mode`` (a key of
    :data:`MODES`; ``InvalidConfiguration`` naming it otherwise), sorted; ``NamespaceNotFound`` without it."""
    domains = MODES.get(mode.upper())
    if domains is None:
        raise InvalidConfiguration(f"mode: expected one of {', '.join(MODES)}, got {mode[:64]!r}", key="mode")
    return [t for t in registry.list(namespace) if t.split("://", 1)[0] in domains]
