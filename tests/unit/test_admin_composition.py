"""``Admin`` is composed of parts, not a stack of mixins (issue 19), and kept its public API exactly: the same
methods, with the same parameters and defaults (the list below was taken from the mixin ``Admin`` before the
change), each reaching the broker as it did."""
from __future__ import annotations

import inspect
from typing import Any

import pytest

from broker_core.protocol import broker_pb2 as pb
from connector import MessageId
from connector.client.admin import Admin
from connector.client.admin.admin import PARTS

API_BEFORE = {  # method: its parameters after self (defaults that are not plain values as <type>)
    "acknowledge_up_to": "topic, subscription, end_offset",
    "clear_backlog": "topic, subscription",
    "clear_namespace_backlog": "namespace, subscription=None",
    "close": "",
    "create_namespace": "namespace",
    "create_partitioned_topic": "topic, partitions",
    "create_subscription": "topic, subscription, message_id=<MessageId>",
    "create_subscription_at_offset": "topic, subscription, offset",
    "create_tenant": "tenant, admin_roles=None, allowed_clusters=None",
    "create_topic": "topic",
    "delete_namespace": "namespace, force=False",
    "delete_subscription": "topic, subscription, force=False",
    "delete_tenant": "tenant, force=False",
    "delete_topic": "topic, force=False",
    "examine_message": "topic, initial_position='latest', message_position=1",
    "expire_messages": "topic, subscription, expire_time_seconds=None, message_id=None",
    "expire_messages_for_all_subscriptions": "topic, expire_time_seconds",
    "get_last_message_id": "topic",
    "get_namespace_deduplication": "namespace",
    "get_namespace_max_consumers_per_topic": "namespace",
    "get_namespace_max_producers_per_topic": "namespace",
    "get_namespace_message_ttl": "namespace",
    "get_namespace_permissions": "namespace",
    "get_namespace_retention": "namespace",
    "get_namespace_subscription_expiration_time": "namespace",
    "get_offset_bounds": "topic",
    "get_partitioned_topic_metadata": "topic",
    "get_tenant": "tenant",
    "get_topic_deduplication": "topic",
    "get_topic_max_consumers": "topic",
    "get_topic_max_producers": "topic",
    "get_topic_message_ttl": "topic",
    "get_topic_permissions": "topic",
    "get_topic_retention": "topic",
    "grant_namespace_permission": "namespace, role, actions",
    "grant_topic_permission": "topic, role, actions",
    "list_namespaces": "tenant",
    "list_partitioned_topics": "namespace='public/default'",
    "list_subscriptions": "topic",
    "list_tenants": "",
    "list_topics": "namespace='public/default'",
    "lookup_topic": "topic",
    "namespace_policies": "namespace",
    "offset_for_timestamp": "topic, publish_time_ms",
    "partitioned_topic_stats": "topic, per_partition=False, get_precise_backlog=False, subscription_backlog_size=True, "
                               "get_earliest_time_in_backlog=False",
    "peek_messages": "topic, subscription, count=1",
    "remove_namespace_max_consumers_per_topic": "namespace",
    "remove_namespace_max_producers_per_topic": "namespace",
    "remove_namespace_message_ttl": "namespace",
    "remove_namespace_retention": "namespace",
    "remove_namespace_subscription_expiration_time": "namespace",
    "remove_topic_deduplication": "topic",
    "remove_topic_max_consumers": "topic",
    "remove_topic_max_producers": "topic",
    "remove_topic_message_ttl": "topic",
    "remove_topic_retention": "topic",
    "reset_cursor": "topic, subscription, message_id=None, timestamp_ms=None",
    "revoke_namespace_permission": "namespace, role",
    "revoke_topic_permission": "topic, role",
    "set_namespace_deduplication": "namespace, enabled",
    "set_namespace_max_consumers_per_topic": "namespace, max_consumers",
    "set_namespace_max_producers_per_topic": "namespace, max_producers",
    "set_namespace_message_ttl": "namespace, seconds",
    "set_namespace_retention": "namespace, retention_time_minutes, retention_size_mb",
    "set_namespace_subscription_expiration_time": "namespace, minutes",
    "set_topic_deduplication": "topic, enabled",
    "set_topic_max_consumers": "topic, max_consumers",
    "set_topic_max_producers": "topic, max_producers",
    "set_topic_message_ttl": "topic, seconds",
    "set_topic_retention": "topic, retention_time_minutes, retention_size_mb",
    "skip_messages": "topic, subscription, count",
    "terminate_topic": "topic",
    "topic_internal_stats": "topic",
    "topic_policies": "topic",
    "topic_stats": "topic, get_precise_backlog=False, subscription_backlog_size=True, "
                   "get_earliest_time_in_backlog=False",
    "unload_topic": "topic",
    "unsubscribe_namespace": "namespace, subscription",
    "update_partitioned_topic": "topic, partitions",
    "update_tenant": "tenant, admin_roles=None, allowed_clusters=None",
}


def _parameters(function: Any) -> str:
    out = []
    for p in list(inspect.signature(function).parameters.values())[1:]:
        if p.default is inspect.Parameter.empty:
            out.append(p.name)
        elif p.default is None or isinstance(p.default, (str, int, float, bool)):
            out.append(f"{p.name}={p.default!r}")
        else:
            out.append(f"{p.name}=<{type(p.default).__name__}>")
    return ", ".join(out)


class RecordingWire:
    """A connection that records each unary call and answers it with ``replies[method]`` (``Empty`` for the
    others: their callers read nothing of it)."""

    def __init__(self, **replies: Any) -> None:
        self.calls: list[tuple[str, Any, bool]] = []
        self.replies = replies
        self.closed = False

    def unary(self, method: str, request: Any, timeout_s: float | None = None, retry: bool = False) -> Any:
        self.calls.append((method, request, retry))
        return self.replies.get(method, pb.Empty())

    def close(self) -> None:
        self.closed = True


def test_admin_keeps_every_public_method_it_had_before():
    # methods are added as the API grows (REST schemas, clusters, compaction); none of these may go away
    public = {name for name in dir(Admin) if not name.startswith("_") and name != "on_connection"}
    assert set(API_BEFORE) <= public, f"gone: {sorted(set(API_BEFORE) - public)}"


@pytest.mark.parametrize("name", sorted(API_BEFORE))
def test_each_public_method_keeps_its_parameters_and_defaults(name):
    assert _parameters(getattr(Admin, name)) == API_BEFORE[name]


def test_create_subscription_still_starts_at_latest_by_default():
    assert inspect.signature(Admin.create_subscription).parameters["message_id"].default is MessageId.latest


def test_admin_is_composed_of_its_parts_not_a_stack_of_mixins():
    assert Admin.__mro__ == (Admin, object)


def test_every_public_method_of_every_part_is_one_admin_method_delegating_to_it():
    for part in PARTS:
        for name, method in vars(part).items():
            if not name.startswith("_"):
                assert getattr(Admin, name).__wrapped__ is method, f"{part.__name__}.{name}"


def test_a_call_of_each_part_reaches_the_broker_as_before():
    wire = RecordingWire(GetLastMessageId=pb.LastMessageId(start_offset=3, last_offset=9),
                         GetPolicy=pb.JsonResponse(json='60'),
                         ClearNamespaceBacklog=pb.SubscriptionPosition(acknowledged=7))
    admin = Admin.on_connection(wire)  # type: ignore[arg-type]
    admin.create_tenant("t", admin_roles=["a"])
    admin.create_topic("persistent://t/ns/x")
    assert admin.get_offset_bounds("persistent://t/ns/x") == (3, 10)
    admin.set_topic_retention("persistent://t/ns/x", 5, -1)
    assert admin.get_namespace_message_ttl("t/ns") == 60
    admin.grant_namespace_permission("t/ns", "role", "produce")
    assert admin.clear_namespace_backlog("t/ns") == 7
    assert [method for method, _, _ in wire.calls] == [
        "CreateTenant", "CreateTopic", "GetLastMessageId", "SetPolicy", "GetPolicy", "GrantPermission",
        "ClearNamespaceBacklog"]
    assert wire.calls[0][1] == pb.TenantInfo(tenant="t", admin_roles=["a"])
    assert wire.calls[1][1] == pb.TopicRequest(topic="persistent://t/ns/x")


def test_a_part_method_calling_another_of_its_part_still_works():
    wire = RecordingWire(GetPartitionedTopicMetadata=pb.PartitionedTopicMetadata(partitions=2),
                         TopicStats=pb.JsonResponse(json='{"msgInCounter": 4, "partitions": {"p": {}}}'))
    stats = Admin.on_connection(wire).partitioned_topic_stats("x")  # type: ignore[arg-type]
    assert stats == {"msgInCounter": 4, "partitions": {}}
    assert [method for method, _, _ in wire.calls] == ["GetPartitionedTopicMetadata", "TopicStats"]


@pytest.mark.parametrize("retry", [False, True])
def test_retry_while_unavailable_reaches_every_part(retry):
    wire = RecordingWire()
    admin = Admin.on_connection(wire, retry_while_unavailable=retry)  # type: ignore[arg-type]
    admin.create_namespace("t/ns")
    admin.unload_topic("x")
    admin.remove_topic_retention("x")
    assert [r for _, _, r in wire.calls] == [retry] * 3


def test_closing_the_admin_closes_its_connection():
    wire = RecordingWire()
    with Admin.on_connection(wire):  # type: ignore[arg-type]
        pass
    assert wire.closed
