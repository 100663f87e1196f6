"""``Admin``: the broker's unary admin calls, like ``pulsar-admin`` -- tenants and namespaces, topics,
subscriptions without consumers, operator calls (terminate, unload, examine, expire ...), offsets,
namespace/topic policies and permissions.

``Admin`` is composed of parts (:mod:`.namespaces`, :mod:`.topics`, :mod:`.operations`, :mod:`.offsets`,
:mod:`.policies`, :mod:`.namespace_policies`, :mod:`.permissions`, :mod:`.topic_messages`, :mod:`.topic_settings`) that share its wire (:mod:`.grpc_wire` over the broker's gRPC calls, or
:mod:`.rest_wire` over Pulsar's admin REST API: each answers the admin's own values, :mod:`.wire`). Each public method of ``Admin`` is a one-line delegate to the part that implements it, with
that method's name, signature and docstring: the list below is ``Admin``'s whole API.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Concatenate, ParamSpec, TypeVar

from connector.client.admin.broker_config import BrokerConfigAdmin
from connector.client.admin.clusters import ClustersAdmin
from connector.client.admin.core_policies import CorePoliciesAdmin
from connector.client.admin.grpc_wire import GrpcWire
from connector.client.admin.namespace_policies import NamespacePoliciesAdmin
from connector.client.admin.namespaces import NamespacesAdmin
from connector.client.admin.offsets import OffsetsAdmin
from connector.client.admin.operations import OperationsAdmin
from connector.client.admin.permissions import PermissionsAdmin
from connector.client.admin.policies import PoliciesAdmin
from connector.client.admin.rates import RatesAdmin
from connector.client.admin.topic_messages import TopicMessagesAdmin
from connector.client.admin.topic_settings import TopicSettingsAdmin
from connector.client.admin.topics import TopicsAdmin
from connector.client.admin.wire import UnaryWire
from connector.client.security.authentication import Authentication
from connector.client.transport.grpc.connection import Connection
from connector.client.security import Security

P = ParamSpec("P")
R = TypeVar("R")
PARTS = (NamespacesAdmin, TopicsAdmin, OperationsAdmin, OffsetsAdmin, PoliciesAdmin, PermissionsAdmin,
         ClustersAdmin, NamespacePoliciesAdmin, TopicMessagesAdmin, TopicSettingsAdmin, CorePoliciesAdmin, RatesAdmin,
         BrokerConfigAdmin)


def _part(method: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Admin, P], R]:
    """``Admin``'s method calling ``method`` on the admin's part of ``method``'s class."""
    owner, _, name = method.__qualname__.rpartition(".")

    @functools.wraps(method)
    def delegate(self: Admin, *args: P.args, **kwargs: P.kwargs) -> R:
        return getattr(self._parts[owner], name)(*args, **kwargs)
    return delegate


class Admin:
    """Manage tenants, namespaces, topics, subscriptions and policies. Errors are the typed exceptions of
    :mod:`broker_core.errors` (``TopicNotFound``, ``NamespaceNotFound``, ``TopicAlreadyExists``,
    ``NamespaceNotEmpty``, ``InvalidConfiguration`` ...).

    ``retry_while_unavailable=True``: a call made while the broker cannot be reached or is not ready (it is
    restarting) is tried again with backoff until ``operation_timeout_seconds`` (then ``ConnectError`` or
    ``Timeout``), as the client's lookups are. Meant for idempotent calls (reads, ``acknowledge_up_to``):
    a create retried after an attempt that did reach the broker reports ``TopicAlreadyExists`` and the like.

    ``admin_url="http://HOST:8080"`` (or ``https://HOST:8443``; as pulsar-admin's ``--admin-url``): the same
    methods over Pulsar's admin REST API instead (:mod:`connector.client.admin.rest_wire`), so the admin
    works against a pulsarlike broker's web service port or an Apache Pulsar cluster. A method with no REST
    equivalent (``acknowledge_up_to``, ``get_offset_bounds``, ``offset_for_timestamp``) raises
    :class:`~connector.client.admin.wire.NotSupported` naming it; the cluster and broker methods are served
    over REST only. The schema methods answer the same over both."""

    def __init__(self, service_url: str | None = None, operation_timeout_seconds: float = 30,
                 connection_timeout_ms: int = 10000, authentication: Authentication | None = None,
                 tls_trust_certs_file_path: str | None = None, tls_allow_insecure_connection: bool = False,
                 tls_validate_hostname: bool = False, tls_certificate_file_path: str | None = None,
                 tls_private_key_file_path: str | None = None, retry_while_unavailable: bool = False,
                 admin_url: str | None = None) -> None:
        """``authentication`` and the ``tls_*`` options as :class:`~connector.Client` takes them (a
        ``pulsar+ssl://`` URL for the broker's TLS port, an ``https://`` ``admin_url``). One of
        ``service_url`` and ``admin_url``."""
        if (service_url is None) == (admin_url is None):
            raise ValueError("Admin takes a service_url (pulsar://HOST:6650) or an admin_url (http://HOST:8080)")
        if admin_url is not None:
            from connector.client.admin.rest import RestTransport
            from connector.client.admin.rest_wire import RestWire
            wire = RestWire(RestTransport(admin_url, authentication, operation_timeout_seconds,
                                          tls_trust_certs_file_path, tls_allow_insecure_connection,
                                          tls_validate_hostname, tls_certificate_file_path,
                                          tls_private_key_file_path), retry_while_unavailable)
            self._connection: Any = wire
            self._parts = {part.__qualname__: part(wire) for part in PARTS}
            return
        assert service_url is not None
        security = Security.of(service_url, authentication, False, tls_trust_certs_file_path,
                               tls_allow_insecure_connection, tls_validate_hostname, tls_certificate_file_path,
                               tls_private_key_file_path)
        self._use(Connection(service_url, operation_timeout_seconds, connection_timeout_ms / 1000.0, security),
                  retry_while_unavailable)

    @classmethod
    def on_connection(cls, connection: Connection, retry_while_unavailable: bool = False) -> "Admin":
        """An admin whose calls go over ``connection`` (shared with entry streams:
        :mod:`connector.client.entry_stream`); :meth:`close` closes it."""
        admin = cls.__new__(cls)
        admin._use(connection, retry_while_unavailable)
        return admin

    def _use(self, connection: Connection, retry: bool) -> None:
        wire: UnaryWire = GrpcWire(connection, retry)
        self._connection = connection
        self._parts: dict[str, Any] = {part.__qualname__: part(wire) for part in PARTS}

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> "Admin":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # tenants and namespaces (pulsar-admin tenants, namespaces create|list|delete)
    list_tenants = _part(NamespacesAdmin.list_tenants)
    get_tenant = _part(NamespacesAdmin.get_tenant)
    create_tenant = _part(NamespacesAdmin.create_tenant)
    update_tenant = _part(NamespacesAdmin.update_tenant)
    delete_tenant = _part(NamespacesAdmin.delete_tenant)
    list_namespaces = _part(NamespacesAdmin.list_namespaces)
    list_namespace_topics = _part(NamespacesAdmin.list_namespace_topics)
    create_namespace = _part(NamespacesAdmin.create_namespace)
    delete_namespace = _part(NamespacesAdmin.delete_namespace)

    # topics, stats and subscriptions (pulsar-admin topics ...)
    create_partitioned_topic = _part(TopicsAdmin.create_partitioned_topic)
    update_partitioned_topic = _part(TopicsAdmin.update_partitioned_topic)
    list_partitioned_topics = _part(TopicsAdmin.list_partitioned_topics)
    get_partitioned_topic_metadata = _part(TopicsAdmin.get_partitioned_topic_metadata)
    create_topic = _part(TopicsAdmin.create_topic)
    list_topics = _part(TopicsAdmin.list_topics)
    delete_topic = _part(TopicsAdmin.delete_topic)
    topic_stats = _part(TopicsAdmin.topic_stats)
    partitioned_topic_stats = _part(TopicsAdmin.partitioned_topic_stats)
    topic_internal_stats = _part(TopicsAdmin.topic_internal_stats)
    list_subscriptions = _part(TopicsAdmin.list_subscriptions)
    delete_subscription = _part(TopicsAdmin.delete_subscription)
    create_subscription = _part(TopicsAdmin.create_subscription)
    reset_cursor = _part(TopicsAdmin.reset_cursor)
    acknowledge_up_to = _part(TopicsAdmin.acknowledge_up_to)
    skip_messages = _part(TopicsAdmin.skip_messages)
    clear_backlog = _part(TopicsAdmin.clear_backlog)
    peek_messages = _part(TopicsAdmin.peek_messages)

    # operator calls (topics terminate|unload|examine-message|lookup|expire-messages, namespaces clear-backlog)
    terminate_topic = _part(OperationsAdmin.terminate_topic)
    unload_topic = _part(OperationsAdmin.unload_topic)
    trigger_compaction = _part(OperationsAdmin.trigger_compaction)
    compaction_status = _part(OperationsAdmin.compaction_status)
    get_last_message_id = _part(OperationsAdmin.get_last_message_id)
    examine_message = _part(OperationsAdmin.examine_message)
    lookup_topic = _part(OperationsAdmin.lookup_topic)
    expire_messages = _part(OperationsAdmin.expire_messages)
    expire_messages_for_all_subscriptions = _part(OperationsAdmin.expire_messages_for_all_subscriptions)
    clear_namespace_backlog = _part(OperationsAdmin.clear_namespace_backlog)
    unsubscribe_namespace = _part(OperationsAdmin.unsubscribe_namespace)
    verify_topic = _part(OperationsAdmin.verify_topic)
    verify_all_topics = _part(OperationsAdmin.verify_all_topics)

    # stored messages, backlogs, storage, subscription properties (pulsar-admin topics get-message-by-id ...)
    get_message_by_id = _part(TopicMessagesAdmin.get_message_by_id)
    get_message_id_by_timestamp = _part(TopicMessagesAdmin.get_message_id_by_timestamp)
    get_message_id_by_index = _part(TopicMessagesAdmin.get_message_id_by_index)
    get_backlog_size = _part(TopicMessagesAdmin.get_backlog_size)
    analyze_backlog = _part(TopicMessagesAdmin.analyze_backlog)
    trim_topic = _part(TopicMessagesAdmin.trim_topic)
    create_missed_partitions = _part(TopicMessagesAdmin.create_missed_partitions)
    get_internal_info = _part(TopicMessagesAdmin.get_internal_info)
    truncate_topic = _part(TopicMessagesAdmin.truncate_topic)
    get_subscription_properties = _part(TopicMessagesAdmin.get_subscription_properties)
    update_subscription_properties = _part(TopicMessagesAdmin.update_subscription_properties)

    # a topic's properties and backlog quotas (pulsar-admin topics get-properties|set-backlog-quota ...)
    get_topic_properties = _part(TopicSettingsAdmin.get_topic_properties)
    update_topic_properties = _part(TopicSettingsAdmin.update_topic_properties)
    remove_topic_properties = _part(TopicSettingsAdmin.remove_topic_properties)
    get_topic_backlog_quotas = _part(TopicSettingsAdmin.get_topic_backlog_quotas)
    set_topic_backlog_quota = _part(TopicSettingsAdmin.set_topic_backlog_quota)
    remove_topic_backlog_quota = _part(TopicSettingsAdmin.remove_topic_backlog_quota)
    get_schema_version = _part(TopicSettingsAdmin.get_schema_version)

    # offsets
    get_offset_bounds = _part(OffsetsAdmin.get_offset_bounds)
    offset_for_timestamp = _part(OffsetsAdmin.offset_for_timestamp)
    create_subscription_at_offset = _part(OffsetsAdmin.create_subscription_at_offset)

    # policies (namespaces|topics set-*|get-*|remove-*)
    set_namespace_deduplication = _part(PoliciesAdmin.set_namespace_deduplication)
    get_namespace_deduplication = _part(PoliciesAdmin.get_namespace_deduplication)
    set_topic_deduplication = _part(PoliciesAdmin.set_topic_deduplication)
    get_topic_deduplication = _part(PoliciesAdmin.get_topic_deduplication)
    remove_topic_deduplication = _part(PoliciesAdmin.remove_topic_deduplication)
    set_namespace_retention = _part(PoliciesAdmin.set_namespace_retention)
    get_namespace_retention = _part(PoliciesAdmin.get_namespace_retention)
    remove_namespace_retention = _part(PoliciesAdmin.remove_namespace_retention)
    set_topic_retention = _part(PoliciesAdmin.set_topic_retention)
    get_topic_retention = _part(PoliciesAdmin.get_topic_retention)
    remove_topic_retention = _part(PoliciesAdmin.remove_topic_retention)
    set_namespace_message_ttl = _part(PoliciesAdmin.set_namespace_message_ttl)
    get_namespace_message_ttl = _part(PoliciesAdmin.get_namespace_message_ttl)
    remove_namespace_message_ttl = _part(PoliciesAdmin.remove_namespace_message_ttl)
    set_topic_message_ttl = _part(PoliciesAdmin.set_topic_message_ttl)
    get_topic_message_ttl = _part(PoliciesAdmin.get_topic_message_ttl)
    remove_topic_message_ttl = _part(PoliciesAdmin.remove_topic_message_ttl)
    set_namespace_subscription_expiration_time = _part(PoliciesAdmin.set_namespace_subscription_expiration_time)
    get_namespace_subscription_expiration_time = _part(PoliciesAdmin.get_namespace_subscription_expiration_time)
    remove_namespace_subscription_expiration_time = _part(PoliciesAdmin.remove_namespace_subscription_expiration_time)
    set_namespace_max_producers_per_topic = _part(PoliciesAdmin.set_namespace_max_producers_per_topic)
    get_namespace_max_producers_per_topic = _part(PoliciesAdmin.get_namespace_max_producers_per_topic)
    remove_namespace_max_producers_per_topic = _part(PoliciesAdmin.remove_namespace_max_producers_per_topic)
    set_namespace_max_consumers_per_topic = _part(PoliciesAdmin.set_namespace_max_consumers_per_topic)
    get_namespace_max_consumers_per_topic = _part(PoliciesAdmin.get_namespace_max_consumers_per_topic)
    remove_namespace_max_consumers_per_topic = _part(PoliciesAdmin.remove_namespace_max_consumers_per_topic)
    set_topic_max_producers = _part(PoliciesAdmin.set_topic_max_producers)
    get_topic_max_producers = _part(PoliciesAdmin.get_topic_max_producers)
    remove_topic_max_producers = _part(PoliciesAdmin.remove_topic_max_producers)
    set_topic_max_consumers = _part(PoliciesAdmin.set_topic_max_consumers)
    get_topic_max_consumers = _part(PoliciesAdmin.get_topic_max_consumers)
    remove_topic_max_consumers = _part(PoliciesAdmin.remove_topic_max_consumers)
    set_namespace_compaction_threshold = _part(PoliciesAdmin.set_namespace_compaction_threshold)
    get_namespace_compaction_threshold = _part(PoliciesAdmin.get_namespace_compaction_threshold)
    remove_namespace_compaction_threshold = _part(PoliciesAdmin.remove_namespace_compaction_threshold)
    set_topic_compaction_threshold = _part(PoliciesAdmin.set_topic_compaction_threshold)
    get_topic_compaction_threshold = _part(PoliciesAdmin.get_topic_compaction_threshold)
    remove_topic_compaction_threshold = _part(PoliciesAdmin.remove_topic_compaction_threshold)
    namespace_policies = _part(PoliciesAdmin.namespace_policies)
    topic_policies = _part(PoliciesAdmin.topic_policies)

    # namespaces' later policies, unload, bundles, properties, subscription permissions (pulsar-admin namespaces)
    set_namespace_max_consumers_per_subscription = _part(NamespacePoliciesAdmin.set_namespace_max_consumers_per_subscription)
    get_namespace_max_consumers_per_subscription = _part(NamespacePoliciesAdmin.get_namespace_max_consumers_per_subscription)
    remove_namespace_max_consumers_per_subscription = _part(NamespacePoliciesAdmin.remove_namespace_max_consumers_per_subscription)
    set_namespace_max_unacked_messages_per_consumer = _part(NamespacePoliciesAdmin.set_namespace_max_unacked_messages_per_consumer)
    get_namespace_max_unacked_messages_per_consumer = _part(NamespacePoliciesAdmin.get_namespace_max_unacked_messages_per_consumer)
    remove_namespace_max_unacked_messages_per_consumer = _part(NamespacePoliciesAdmin.remove_namespace_max_unacked_messages_per_consumer)
    set_namespace_max_unacked_messages_per_subscription = _part(NamespacePoliciesAdmin.set_namespace_max_unacked_messages_per_subscription)
    get_namespace_max_unacked_messages_per_subscription = _part(NamespacePoliciesAdmin.get_namespace_max_unacked_messages_per_subscription)
    remove_namespace_max_unacked_messages_per_subscription = _part(NamespacePoliciesAdmin.remove_namespace_max_unacked_messages_per_subscription)
    set_namespace_max_subscriptions_per_topic = _part(NamespacePoliciesAdmin.set_namespace_max_subscriptions_per_topic)
    get_namespace_max_subscriptions_per_topic = _part(NamespacePoliciesAdmin.get_namespace_max_subscriptions_per_topic)
    remove_namespace_max_subscriptions_per_topic = _part(NamespacePoliciesAdmin.remove_namespace_max_subscriptions_per_topic)
    set_namespace_max_topics_per_namespace = _part(NamespacePoliciesAdmin.set_namespace_max_topics_per_namespace)
    get_namespace_max_topics_per_namespace = _part(NamespacePoliciesAdmin.get_namespace_max_topics_per_namespace)
    remove_namespace_max_topics_per_namespace = _part(NamespacePoliciesAdmin.remove_namespace_max_topics_per_namespace)
    set_namespace_auto_subscription_creation = _part(NamespacePoliciesAdmin.set_namespace_auto_subscription_creation)
    get_namespace_auto_subscription_creation = _part(NamespacePoliciesAdmin.get_namespace_auto_subscription_creation)
    remove_namespace_auto_subscription_creation = _part(NamespacePoliciesAdmin.remove_namespace_auto_subscription_creation)
    set_namespace_subscription_types_enabled = _part(NamespacePoliciesAdmin.set_namespace_subscription_types_enabled)
    get_namespace_subscription_types_enabled = _part(NamespacePoliciesAdmin.get_namespace_subscription_types_enabled)
    remove_namespace_subscription_types_enabled = _part(NamespacePoliciesAdmin.remove_namespace_subscription_types_enabled)
    set_namespace_subscription_auth_mode = _part(NamespacePoliciesAdmin.set_namespace_subscription_auth_mode)
    get_namespace_subscription_auth_mode = _part(NamespacePoliciesAdmin.get_namespace_subscription_auth_mode)
    grant_subscription_permission = _part(NamespacePoliciesAdmin.grant_subscription_permission)
    revoke_subscription_permission = _part(NamespacePoliciesAdmin.revoke_subscription_permission)
    get_subscription_permissions = _part(NamespacePoliciesAdmin.get_subscription_permissions)
    set_namespace_delayed_delivery = _part(NamespacePoliciesAdmin.set_namespace_delayed_delivery)
    get_namespace_delayed_delivery = _part(NamespacePoliciesAdmin.get_namespace_delayed_delivery)
    remove_namespace_delayed_delivery = _part(NamespacePoliciesAdmin.remove_namespace_delayed_delivery)
    set_namespace_inactive_topic_policies = _part(NamespacePoliciesAdmin.set_namespace_inactive_topic_policies)
    get_namespace_inactive_topic_policies = _part(NamespacePoliciesAdmin.get_namespace_inactive_topic_policies)
    remove_namespace_inactive_topic_policies = _part(NamespacePoliciesAdmin.remove_namespace_inactive_topic_policies)
    set_namespace_deduplication_snapshot_interval = _part(NamespacePoliciesAdmin.set_namespace_deduplication_snapshot_interval)
    get_namespace_deduplication_snapshot_interval = _part(NamespacePoliciesAdmin.get_namespace_deduplication_snapshot_interval)
    remove_namespace_deduplication_snapshot_interval = _part(NamespacePoliciesAdmin.remove_namespace_deduplication_snapshot_interval)
    set_namespace_encryption_required = _part(NamespacePoliciesAdmin.set_namespace_encryption_required)
    get_namespace_encryption_required = _part(NamespacePoliciesAdmin.get_namespace_encryption_required)
    set_namespace_schema_validation_enforced = _part(NamespacePoliciesAdmin.set_namespace_schema_validation_enforced)
    get_namespace_schema_validation_enforced = _part(NamespacePoliciesAdmin.get_namespace_schema_validation_enforced)
    set_namespace_is_allow_auto_update_schema = _part(NamespacePoliciesAdmin.set_namespace_is_allow_auto_update_schema)
    get_namespace_is_allow_auto_update_schema = _part(NamespacePoliciesAdmin.get_namespace_is_allow_auto_update_schema)
    set_namespace_schema_auto_update_strategy = _part(NamespacePoliciesAdmin.set_namespace_schema_auto_update_strategy)
    get_namespace_schema_auto_update_strategy = _part(NamespacePoliciesAdmin.get_namespace_schema_auto_update_strategy)
    set_topic_max_consumers_per_subscription = _part(NamespacePoliciesAdmin.set_topic_max_consumers_per_subscription)
    get_topic_max_consumers_per_subscription = _part(NamespacePoliciesAdmin.get_topic_max_consumers_per_subscription)
    remove_topic_max_consumers_per_subscription = _part(NamespacePoliciesAdmin.remove_topic_max_consumers_per_subscription)
    set_topic_max_unacked_messages_per_consumer = _part(NamespacePoliciesAdmin.set_topic_max_unacked_messages_per_consumer)
    get_topic_max_unacked_messages_per_consumer = _part(NamespacePoliciesAdmin.get_topic_max_unacked_messages_per_consumer)
    remove_topic_max_unacked_messages_per_consumer = _part(NamespacePoliciesAdmin.remove_topic_max_unacked_messages_per_consumer)
    set_topic_max_unacked_messages_per_subscription = _part(NamespacePoliciesAdmin.set_topic_max_unacked_messages_per_subscription)
    get_topic_max_unacked_messages_per_subscription = _part(NamespacePoliciesAdmin.get_topic_max_unacked_messages_per_subscription)
    remove_topic_max_unacked_messages_per_subscription = _part(NamespacePoliciesAdmin.remove_topic_max_unacked_messages_per_subscription)
    set_topic_max_subscriptions_per_topic = _part(NamespacePoliciesAdmin.set_topic_max_subscriptions_per_topic)
    get_topic_max_subscriptions_per_topic = _part(NamespacePoliciesAdmin.get_topic_max_subscriptions_per_topic)
    remove_topic_max_subscriptions_per_topic = _part(NamespacePoliciesAdmin.remove_topic_max_subscriptions_per_topic)
    set_topic_max_message_size = _part(NamespacePoliciesAdmin.set_topic_max_message_size)
    get_topic_max_message_size = _part(NamespacePoliciesAdmin.get_topic_max_message_size)
    remove_topic_max_message_size = _part(NamespacePoliciesAdmin.remove_topic_max_message_size)
    set_topic_delayed_delivery = _part(NamespacePoliciesAdmin.set_topic_delayed_delivery)
    get_topic_delayed_delivery = _part(NamespacePoliciesAdmin.get_topic_delayed_delivery)
    remove_topic_delayed_delivery = _part(NamespacePoliciesAdmin.remove_topic_delayed_delivery)
    set_topic_inactive_topic_policies = _part(NamespacePoliciesAdmin.set_topic_inactive_topic_policies)
    get_topic_inactive_topic_policies = _part(NamespacePoliciesAdmin.get_topic_inactive_topic_policies)
    remove_topic_inactive_topic_policies = _part(NamespacePoliciesAdmin.remove_topic_inactive_topic_policies)
    set_topic_subscription_types_enabled = _part(NamespacePoliciesAdmin.set_topic_subscription_types_enabled)
    get_topic_subscription_types_enabled = _part(NamespacePoliciesAdmin.get_topic_subscription_types_enabled)
    remove_topic_subscription_types_enabled = _part(NamespacePoliciesAdmin.remove_topic_subscription_types_enabled)
    set_topic_auto_subscription_creation = _part(NamespacePoliciesAdmin.set_topic_auto_subscription_creation)
    get_topic_auto_subscription_creation = _part(NamespacePoliciesAdmin.get_topic_auto_subscription_creation)
    remove_topic_auto_subscription_creation = _part(NamespacePoliciesAdmin.remove_topic_auto_subscription_creation)
    set_topic_deduplication_snapshot_interval = _part(NamespacePoliciesAdmin.set_topic_deduplication_snapshot_interval)
    get_topic_deduplication_snapshot_interval = _part(NamespacePoliciesAdmin.get_topic_deduplication_snapshot_interval)
    remove_topic_deduplication_snapshot_interval = _part(NamespacePoliciesAdmin.remove_topic_deduplication_snapshot_interval)
    set_topic_schema_compatibility_strategy = _part(NamespacePoliciesAdmin.set_topic_schema_compatibility_strategy)
    get_topic_schema_compatibility_strategy = _part(NamespacePoliciesAdmin.get_topic_schema_compatibility_strategy)
    remove_topic_schema_compatibility_strategy = _part(NamespacePoliciesAdmin.remove_topic_schema_compatibility_strategy)
    set_topic_schema_validation_enforced = _part(NamespacePoliciesAdmin.set_topic_schema_validation_enforced)
    get_topic_schema_validation_enforced = _part(NamespacePoliciesAdmin.get_topic_schema_validation_enforced)
    unload_namespace = _part(NamespacePoliciesAdmin.unload_namespace)
    get_namespace_bundles = _part(NamespacePoliciesAdmin.get_namespace_bundles)
    get_namespace_properties = _part(NamespacePoliciesAdmin.get_namespace_properties)
    set_namespace_properties = _part(NamespacePoliciesAdmin.set_namespace_properties)
    clear_namespace_properties = _part(NamespacePoliciesAdmin.clear_namespace_properties)
    set_namespace_property = _part(NamespacePoliciesAdmin.set_namespace_property)
    get_namespace_property = _part(NamespacePoliciesAdmin.get_namespace_property)
    remove_namespace_property = _part(NamespacePoliciesAdmin.remove_namespace_property)

    # backlog quotas, schema compatibility strategy, auto topic creation; partitioned terminate
    set_namespace_backlog_quota = _part(CorePoliciesAdmin.set_namespace_backlog_quota)
    get_namespace_backlog_quotas = _part(CorePoliciesAdmin.get_namespace_backlog_quotas)
    remove_namespace_backlog_quota = _part(CorePoliciesAdmin.remove_namespace_backlog_quota)
    set_namespace_schema_compatibility_strategy = _part(CorePoliciesAdmin.set_namespace_schema_compatibility_strategy)
    get_namespace_schema_compatibility_strategy = _part(CorePoliciesAdmin.get_namespace_schema_compatibility_strategy)
    set_namespace_auto_topic_creation = _part(CorePoliciesAdmin.set_namespace_auto_topic_creation)
    get_namespace_auto_topic_creation = _part(CorePoliciesAdmin.get_namespace_auto_topic_creation)
    remove_namespace_auto_topic_creation = _part(CorePoliciesAdmin.remove_namespace_auto_topic_creation)
    terminate_partitioned_topic = _part(CorePoliciesAdmin.terminate_partitioned_topic)

    # rate limits and resource group attachments (namespaces|topics|topicPolicies set-dispatch-rate ...)
    set_namespace_dispatch_rate = _part(RatesAdmin.set_namespace_dispatch_rate)
    get_namespace_dispatch_rate = _part(RatesAdmin.get_namespace_dispatch_rate)
    remove_namespace_dispatch_rate = _part(RatesAdmin.remove_namespace_dispatch_rate)
    set_namespace_subscription_dispatch_rate = _part(RatesAdmin.set_namespace_subscription_dispatch_rate)
    get_namespace_subscription_dispatch_rate = _part(RatesAdmin.get_namespace_subscription_dispatch_rate)
    remove_namespace_subscription_dispatch_rate = _part(RatesAdmin.remove_namespace_subscription_dispatch_rate)
    set_namespace_publish_rate = _part(RatesAdmin.set_namespace_publish_rate)
    get_namespace_publish_rate = _part(RatesAdmin.get_namespace_publish_rate)
    remove_namespace_publish_rate = _part(RatesAdmin.remove_namespace_publish_rate)
    set_namespace_subscribe_rate = _part(RatesAdmin.set_namespace_subscribe_rate)
    get_namespace_subscribe_rate = _part(RatesAdmin.get_namespace_subscribe_rate)
    remove_namespace_subscribe_rate = _part(RatesAdmin.remove_namespace_subscribe_rate)
    set_namespace_resource_group = _part(RatesAdmin.set_namespace_resource_group)
    get_namespace_resource_group = _part(RatesAdmin.get_namespace_resource_group)
    remove_namespace_resource_group = _part(RatesAdmin.remove_namespace_resource_group)
    set_topic_dispatch_rate = _part(RatesAdmin.set_topic_dispatch_rate)
    get_topic_dispatch_rate = _part(RatesAdmin.get_topic_dispatch_rate)
    remove_topic_dispatch_rate = _part(RatesAdmin.remove_topic_dispatch_rate)
    set_topic_subscription_dispatch_rate = _part(RatesAdmin.set_topic_subscription_dispatch_rate)
    get_topic_subscription_dispatch_rate = _part(RatesAdmin.get_topic_subscription_dispatch_rate)
    remove_topic_subscription_dispatch_rate = _part(RatesAdmin.remove_topic_subscription_dispatch_rate)
    set_topic_publish_rate = _part(RatesAdmin.set_topic_publish_rate)
    get_topic_publish_rate = _part(RatesAdmin.get_topic_publish_rate)
    remove_topic_publish_rate = _part(RatesAdmin.remove_topic_publish_rate)
    set_topic_subscribe_rate = _part(RatesAdmin.set_topic_subscribe_rate)
    get_topic_subscribe_rate = _part(RatesAdmin.get_topic_subscribe_rate)
    remove_topic_subscribe_rate = _part(RatesAdmin.remove_topic_subscribe_rate)
    set_topic_resource_group = _part(RatesAdmin.set_topic_resource_group)
    get_topic_resource_group = _part(RatesAdmin.get_topic_resource_group)
    remove_topic_resource_group = _part(RatesAdmin.remove_topic_resource_group)

    # the broker's dynamic configuration, stats, resource groups (brokers, broker-stats, resourcegroups)
    get_dynamic_configuration_names = _part(BrokerConfigAdmin.get_dynamic_configuration_names)
    get_all_dynamic_configurations = _part(BrokerConfigAdmin.get_all_dynamic_configurations)
    get_runtime_configurations = _part(BrokerConfigAdmin.get_runtime_configurations)
    update_dynamic_configuration = _part(BrokerConfigAdmin.update_dynamic_configuration)
    delete_dynamic_configuration = _part(BrokerConfigAdmin.delete_dynamic_configuration)
    backlog_quota_check = _part(BrokerConfigAdmin.backlog_quota_check)
    get_owned_namespaces = _part(BrokerConfigAdmin.get_owned_namespaces)
    get_broker_topics_stats = _part(BrokerConfigAdmin.get_broker_topics_stats)
    get_broker_metrics = _part(BrokerConfigAdmin.get_broker_metrics)
    get_resource_groups = _part(BrokerConfigAdmin.get_resource_groups)
    get_resource_group = _part(BrokerConfigAdmin.get_resource_group)
    create_resource_group = _part(BrokerConfigAdmin.create_resource_group)
    update_resource_group = _part(BrokerConfigAdmin.update_resource_group)
    delete_resource_group = _part(BrokerConfigAdmin.delete_resource_group)

    # permissions (namespaces|topics grant-permission|revoke-permission|permissions)
    grant_namespace_permission = _part(PermissionsAdmin.grant_namespace_permission)
    revoke_namespace_permission = _part(PermissionsAdmin.revoke_namespace_permission)
    get_namespace_permissions = _part(PermissionsAdmin.get_namespace_permissions)
    grant_topic_permission = _part(PermissionsAdmin.grant_topic_permission)
    revoke_topic_permission = _part(PermissionsAdmin.revoke_topic_permission)
    get_topic_permissions = _part(PermissionsAdmin.get_topic_permissions)

    # clusters and brokers (admin_url only) and schemas (pulsar-admin clusters|brokers|schemas)
    list_clusters = _part(ClustersAdmin.list_clusters)
    get_cluster = _part(ClustersAdmin.get_cluster)
    list_brokers = _part(ClustersAdmin.list_brokers)
    broker_healthcheck = _part(ClustersAdmin.broker_healthcheck)
    get_broker_version = _part(ClustersAdmin.get_broker_version)
    get_leader_broker = _part(ClustersAdmin.get_leader_broker)
    get_schema = _part(ClustersAdmin.get_schema)
    get_all_schemas = _part(ClustersAdmin.get_all_schemas)
    upload_schema = _part(ClustersAdmin.upload_schema)
    delete_schema = _part(ClustersAdmin.delete_schema)
    test_schema_compatibility = _part(ClustersAdmin.test_schema_compatibility)

