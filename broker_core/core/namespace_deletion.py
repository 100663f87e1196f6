"""Deleting a namespace or a tenant: refused while it holds topics (or namespaces), or with ``force``
every topic in it deleted first, connected clients or not, as Pulsar's force deletion does."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Iterable

from broker_core.core.namespaces import check_namespace_name
from broker_core.errors import NamespaceNotEmpty, TenantNotEmpty, TopicNotFound
from broker_core.storage.paths import namespace_dir, remove_tree, tenant_dir
from broker_core.types import NON_PERSISTENT, PERSISTENT, TopicName

if TYPE_CHECKING:
    from broker_core.core.registry import TopicRegistry

log = logging.getLogger("broker_core.core.registry")  # the registry's events keep their logger name


def namespace_topics(registry: TopicRegistry, namespace: str) -> list[str]:
    """The namespace's topics as deletion sees them: partitioned topics by their base name, then every
    other topic (non-partitioned, or a partition whose partitioned topic is gone)."""
    bases = sorted(b for b in registry.partitioned.topics() if TopicName.parse(b).namespace_name == namespace)
    partitions = {str(TopicName.parse(b).partition(i)) for b in bases for i in range(registry.partitions_of(
        TopicName.parse(b)))}
    return bases + [t for t in registry.list(namespace) if t not in partitions]


async def delete_namespace(registry: TopicRegistry, namespace: str, *, force: bool) -> None:
    """Delete an empty namespace, or (``force``) every topic in it first, connected clients or not."""
    tenant, ns = check_namespace_name(namespace)
    registry.namespaces.check_exists(namespace)
    topics = registry.namespace_topics(namespace)
    if topics and not force:
        shown = ", ".join(topics[:5]) + (", ..." if len(topics) > 5 else "")
        raise NamespaceNotEmpty(
            f"namespace {namespace} still has {len(topics)} topic(s) ({shown}): delete them first, or delete"
            f" the namespace with force (`pulsarlike admin namespaces delete --force {namespace}`) to delete"
            " them too",
            namespace=namespace, topics=len(topics))
    registry.namespaces.deleting.add(namespace)  # no topic is created there while its topics go
    try:
        await _delete_topics(registry, topics)
        registry.policies.forget_namespace(namespace)
        registry.namespaces.deleting.discard(namespace)
        registry.namespaces.delete_namespace(namespace)
    finally:
        registry.namespaces.deleting.discard(namespace)
    root = registry.topics_root
    for domain in (PERSISTENT, NON_PERSISTENT):
        remove_tree(root, namespace_dir(root, domain, tenant, ns))
        registry.schemas.delete_namespace(domain, tenant, ns)
    log.info("event=namespace_deleted namespace=%s force=%s topics_deleted=%d", namespace, force, len(topics))


async def _delete_topics(registry: TopicRegistry, topics: Iterable[str]) -> None:
    for topic in topics:
        try:
            await registry.delete(TopicName.parse(topic), force=True)
        except TopicNotFound:  # a non-persistent topic that went idle meanwhile
            pass


async def delete_tenant(registry: TopicRegistry, tenant: str, *, force: bool) -> None:
    """Delete a tenant without namespaces, or (``force``) its namespaces and their topics first."""
    namespaces = registry.namespaces.namespaces(tenant)
    if namespaces and not force:
        raise TenantNotEmpty(
            f"tenant {tenant} still has namespaces ({', '.join(namespaces)}): delete them first, or delete"
            f" the tenant with force (`pulsarlike admin tenants delete --force {tenant}`) to delete them and"
            " their topics too", tenant=tenant, namespaces=namespaces)
    for namespace in namespaces:
        await registry.delete_namespace(namespace, force=True)
    registry.namespaces.delete_tenant(tenant)
    root = registry.topics_root
    for domain in (PERSISTENT, NON_PERSISTENT):
        remove_tree(root, tenant_dir(root, domain, tenant))
    log.info("event=tenant_deleted tenant=%s force=%s", tenant, force)
