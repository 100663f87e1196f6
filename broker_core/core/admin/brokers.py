"""The broker's own admin calls (Pulsar's ``brokers`` and ``broker-stats`` resources) beside
:class:`~broker_core.core.admin.clusters.ClusterAdmin`'s: the dynamic configuration
(:mod:`broker_core.core.dynamic_config`), a backlog quota check on demand, and the stats of every loaded topic
by namespace.

- ``configuration``: the keys that may be changed; ``configuration/values``: those set; ``configuration/runtime``:
  every key's value in force (text, as Pulsar's maps); an update or a delete of a key that is not dynamic here is
  Pulsar's 412 (``InvalidConfiguration``) with the reason;
- ``backlog-quota-check``: every loaded topic's backlog quota enforced now (204);
- ``broker-stats/topics`` (and its older name ``destinations``): ``{namespace: {bundle: {domain: {topic:
  TopicStats}}}}`` over the loaded topic partitions, with this broker's one bundle per namespace;
- ``broker-stats/metrics``: Pulsar's ``Metrics`` (``{"metrics": {...}, "dimensions": {...}}``), one per namespace
  with loaded topics: rates, counts and sizes summed (``brk_in_rate``, ``brk_no_of_producers`` ...);
- ``brokers/{cluster}/{broker}/ownedNamespaces``: every namespace's one bundle, this broker being the only one
  that serves them, with Pulsar's ``NamespaceOwnershipStatus``; another cluster is ``ClusterNotFound``, another
  broker ``TopicNotFound`` (404 both).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker_core.core.admin.clusters import ClusterAdmin
from broker_core.core.admin.topic_stats import topic_stats
from broker_core.errors import TopicNotFound

if TYPE_CHECKING:
    from broker_core.core.registry import TopicRegistry

BUNDLE = "0x00000000_0xffffffff"
"""The one bundle of each namespace on this broker (Pulsar's full range)."""


class BrokerAdmin:
    """The broker of ``registry``."""

    def __init__(self, registry: "TopicRegistry") -> None:
        self._registry = registry
        self._dynamic = registry.dynamic

    # ------------------------------------------------------------------ dynamic configuration
    def dynamic_names(self) -> list[str]:
        return self._dynamic.names()

    def dynamic_values(self) -> dict[str, str]:
        return self._dynamic.values()

    def runtime(self) -> dict[str, str]:
        return self._dynamic.runtime()

    def update_dynamic(self, key: str, value: str) -> None:
        self._dynamic.update(key, value)

    def delete_dynamic(self, key: str) -> None:
        self._dynamic.delete(key)

    # ------------------------------------------------------------------ checks and stats
    def backlog_quota_check(self) -> int:
        """Enforce every loaded topic's backlog quota now; messages evicted plus producers closed."""
        return self._registry.quotas.check()

    def topics(self) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
        """Every loaded topic partition's stats by namespace, bundle and domain."""
        found: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
        for name, topic in sorted(self._registry.loaded_topics().items()):
            if topic.closed:
                continue
            domains = found.setdefault(topic.name.namespace_name, {}).setdefault(BUNDLE, {})
            domains.setdefault(topic.name.domain, {})[name] = topic_stats(topic)
        return found

    def owned_namespaces(self, clusters: ClusterAdmin, cluster: str, broker_id: str) -> dict[str, dict[str, Any]]:
        """``{"tenant/ns/bundle": NamespaceOwnershipStatus}`` of broker ``broker_id`` in ``cluster``."""
        if broker_id not in clusters.active_brokers(cluster):  # ClusterNotFound for another cluster
            raise TopicNotFound(f"broker {broker_id[:100]} is not an active broker of cluster {cluster[:64]}:"
                                f" {', '.join(clusters.active_brokers(cluster))} is", broker=broker_id[:100])
        return {f"{namespace}/{BUNDLE}": {"broker_assignment": "shared", "is_controlled": False, "is_active": True}
                for namespace in self._registry.namespaces.all_namespaces()}

    def metrics(self) -> list[dict[str, Any]]:
        """Pulsar's ``Metrics`` of each namespace with loaded topics."""
        cluster = self._registry.config.clusterName
        out = []
        for namespace, bundles in self.topics().items():
            totals = dict.fromkeys(("brk_in_rate", "brk_in_tp_rate", "brk_out_rate", "brk_out_tp_rate",
                                    "brk_storage_size", "brk_msg_backlog", "brk_no_of_producers",
                                    "brk_no_of_subscriptions", "brk_no_of_consumers", "brk_no_of_topics"), 0)
            for domains in bundles.values():
                for topics in domains.values():
                    for stats in topics.values():
                        subs = stats.get("subscriptions") or {}
                        totals["brk_in_rate"] += stats.get("msgRateIn") or 0.0
                        totals["brk_in_tp_rate"] += stats.get("msgThroughputIn") or 0.0
                        totals["brk_out_rate"] += stats.get("msgRateOut") or 0.0
                        totals["brk_out_tp_rate"] += stats.get("msgThroughputOut") or 0.0
                        totals["brk_storage_size"] += stats.get("storageSize") or 0
                        totals["brk_msg_backlog"] += sum(s.get("msgBacklog") or 0 for s in subs.values())
                        totals["brk_no_of_producers"] += len(stats.get("publishers") or ())
                        totals["brk_no_of_subscriptions"] += len(subs)
                        totals["brk_no_of_consumers"] += sum(len(s.get("consumers") or ()) for s in subs.values())
                        totals["brk_no_of_topics"] += 1
            out.append({"metrics": totals, "dimensions": {"cluster": cluster, "namespace": namespace}})
        return out
