"""The broker's dynamic configuration, its backlog quota check and stats, and resource groups, for
:class:`~connector.client.admin.Admin` (``pulsar-admin brokers list-dynamic-config|get-all-dynamic-config|
get-runtime-config|update-dynamic-config|delete-dynamic-config|backlog-quota-check|namespaces``,
``broker-stats topics|monitoring-metrics``, ``resourcegroups list|get|create|update|delete``).

Served over Pulsar's admin REST API only (``Admin(admin_url=...)``; over a ``pulsar://`` service URL each raises
:class:`~connector.client.admin.wire.NotSupported` naming it), as the cluster and broker calls are; each sends
what Pulsar's Java admin sends:

==========================================  =====================================================================
``get_dynamic_configuration_names``         ``GET /admin/v2/brokers/configuration``
``get_all_dynamic_configurations``          ``GET .../configuration/values`` (``{key: value}`` as text)
``get_runtime_configurations``              ``GET .../configuration/runtime``
``update_dynamic_configuration``            ``POST .../configuration/{key}/{value}`` (412: not dynamic here,
                                            or a value the key does not take: ``InvalidConfiguration``)
``delete_dynamic_configuration``            ``DELETE .../configuration/{key}``
``backlog_quota_check``                     ``GET /admin/v2/brokers/backlog-quota-check``
``get_owned_namespaces``                    ``GET /admin/v2/brokers/{cluster}/{broker}/ownedNamespaces``
``get_broker_topics_stats``                 ``GET /admin/v2/broker-stats/topics``
``get_broker_metrics``                      ``GET /admin/v2/broker-stats/metrics``
``get_resource_groups`` ...                 ``GET|PUT|DELETE /admin/v2/resourcegroups[/{name}]``
==========================================  =====================================================================
"""
from __future__ import annotations

from typing import Any

from broker_core import errors

from connector.client.admin.rest import path
from connector.client.admin.wire import UnaryWire, rest_of

RESOURCE_GROUP_FIELDS = ("publishRateInMsgs", "publishRateInBytes", "dispatchRateInMsgs", "dispatchRateInBytes")


def _group(publish_rate_in_msgs: int | None, publish_rate_in_bytes: int | None, dispatch_rate_in_msgs: int | None,
           dispatch_rate_in_bytes: int | None) -> dict[str, int]:
    """Pulsar's ``ResourceGroup`` with the rates given (None: left out, -1 on create, unchanged on update)."""
    given = (publish_rate_in_msgs, publish_rate_in_bytes, dispatch_rate_in_msgs, dispatch_rate_in_bytes)
    group = {}
    for field, value in zip(RESOURCE_GROUP_FIELDS, given):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{field}={value!r} is not valid; use an int (-1: not limited)")
            group[field] = value
    return group


class BrokerConfigAdmin:
    """The calls above: a part of :class:`~connector.client.admin.Admin`, which serves its public methods."""

    def __init__(self, wire: UnaryWire) -> None:
        self._wire = wire

    def _call(self, name: str, method: str, *segments: str, body: Any = None, **kwargs: Any) -> Any:
        args = () if body is None else (body,)
        return rest_of(self._wire, name).call(method, path("admin", "v2", *segments), *args, **kwargs)

    # ------------------------------------------------------------------ dynamic configuration
    def get_dynamic_configuration_names(self) -> list[str]:
        """The keys that may be changed while the broker runs."""
        return list(self._call("get_dynamic_configuration_names", "GET", "brokers", "configuration") or [])

    def get_all_dynamic_configurations(self) -> dict[str, str]:
        """The keys set dynamically and their values (text)."""
        return dict(self._call("get_all_dynamic_configurations", "GET", "brokers", "configuration", "values") or {})

    def get_runtime_configurations(self) -> dict[str, str]:
        """Every key's value in force (text)."""
        return dict(self._call("get_runtime_configurations", "GET", "brokers", "configuration", "runtime") or {})

    def update_dynamic_configuration(self, key: str, value: Any) -> None:
        """Set ``key`` to ``value`` on the broker, kept across restarts and applied at once."""
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        self._call("update_dynamic_configuration", "POST", "brokers", "configuration", key, text,
                   refused=errors.InvalidConfiguration)

    def delete_dynamic_configuration(self, key: str) -> None:
        """Back to the value of the broker's configuration file."""
        self._call("delete_dynamic_configuration", "DELETE", "brokers", "configuration", key,
                   refused=errors.InvalidConfiguration)

    # ------------------------------------------------------------------ checks, namespaces, stats, shutdown
    def backlog_quota_check(self) -> None:
        """Enforce every loaded topic's backlog quota now."""
        self._call("backlog_quota_check", "GET", "brokers", "backlog-quota-check")

    def get_owned_namespaces(self, cluster: str, broker: str) -> dict[str, dict[str, Any]]:
        """The namespaces broker ``host:port`` serves, with Pulsar's ``NamespaceOwnershipStatus`` of each bundle
        (``{"tenant/ns/0x00000000_0xffffffff": {"broker_assignment": "shared", ...}}``)."""
        return dict(self._call("get_owned_namespaces", "GET", "brokers", cluster, broker, "ownedNamespaces",
                               not_found=errors.ClusterNotFound) or {})

    def get_broker_topics_stats(self) -> dict[str, Any]:
        """Every loaded topic's stats by namespace, bundle and domain (``broker-stats topics``)."""
        return dict(self._call("get_broker_topics_stats", "GET", "broker-stats", "topics") or {})

    def get_broker_metrics(self) -> list[dict[str, Any]]:
        """Pulsar's ``Metrics`` of each namespace with loaded topics (``broker-stats monitoring-metrics``)."""
        return list(self._call("get_broker_metrics", "GET", "broker-stats", "metrics") or [])

    # ------------------------------------------------------------------ resource groups
    def get_resource_groups(self) -> list[str]:
        return list(self._call("get_resource_groups", "GET", "resourcegroups") or [])

    def get_resource_group(self, name: str) -> dict[str, int]:
        """Pulsar's ``ResourceGroup``; ``ResourceGroupNotFound`` when there is none of that name."""
        return self._call("get_resource_group", "GET", "resourcegroups", name, not_found=errors.ResourceGroupNotFound)

    def create_resource_group(self, name: str, publish_rate_in_msgs: int | None = None,
                              publish_rate_in_bytes: int | None = None, dispatch_rate_in_msgs: int | None = None,
                              dispatch_rate_in_bytes: int | None = None) -> None:
        """A group whose topics together publish and dispatch at most these rates per second (None or -1: not
        limited that way). Pulsar creates or updates with the same call: so does this one."""
        self._call("create_resource_group", "PUT", "resourcegroups", name, body=_group(
            publish_rate_in_msgs, publish_rate_in_bytes, dispatch_rate_in_msgs, dispatch_rate_in_bytes))

    def update_resource_group(self, name: str, publish_rate_in_msgs: int | None = None,
                              publish_rate_in_bytes: int | None = None, dispatch_rate_in_msgs: int | None = None,
                              dispatch_rate_in_bytes: int | None = None) -> None:
        """Change the rates given (None: unchanged)."""
        self.get_resource_group(name)  # Pulsar's update of a group that does not exist is a 404
        self._call("update_resource_group", "PUT", "resourcegroups", name, body=_group(
            publish_rate_in_msgs, publish_rate_in_bytes, dispatch_rate_in_msgs, dispatch_rate_in_bytes))

    def delete_resource_group(self, name: str) -> None:
        """``ResourceGroupNotFound``; ``ResourceGroupInUse`` while a namespace or topic is attached to it."""
        self._call("delete_resource_group", "DELETE", "resourcegroups", name, not_found=errors.ResourceGroupNotFound,
                   conflict=errors.ResourceGroupInUse)
