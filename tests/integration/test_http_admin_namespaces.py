"""``/admin/v2/namespaces`` over real HTTP: list, create, delete, policies (the whole Policies and each
policy the broker has), permissions of namespaces and topics, and the namespace-wide clearBacklog and
unsubscribe."""
from __future__ import annotations

import uuid

import pytest

from connector import Client
from tests.integration.test_http_admin_server import admin_http


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("namespaces")) as served:
        yield served


@pytest.fixture
def ns(http):
    """A fresh namespace of tenant ``public``."""
    name = f"public/ns-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/namespaces/{name}").status == 204
    return name


def test_a_created_namespace_is_listed_under_its_tenant(http, ns):
    assert ns in http.get("/admin/v2/namespaces/public").body
    assert http.put(f"/admin/v2/namespaces/{ns}").status == 409


def test_a_namespace_of_a_missing_tenant_is_404(http):
    assert http.put("/admin/v2/namespaces/no-such-tenant/ns").status == 404
    assert http.get("/admin/v2/namespaces/no-such-tenant").status == 404


def test_a_namespace_with_topics_is_deleted_only_with_force(http, ns):
    assert http.put(f"/admin/v2/persistent/{ns}/t").status == 204
    assert http.delete(f"/admin/v2/namespaces/{ns}").status == 409
    assert http.delete(f"/admin/v2/namespaces/{ns}?force=true").status == 204
    assert ns not in http.get("/admin/v2/namespaces/public").body
    assert http.get(f"/admin/v2/namespaces/{ns}").status == 404


@pytest.mark.parametrize("segment, value", [
    ("retention", {"retentionTimeInMinutes": 60, "retentionSizeInMB": -1}),
    ("messageTTL", 300),
    ("deduplication", True),
    ("subscriptionExpirationTime", 30),
    ("maxProducersPerTopic", 2),
    ("maxConsumersPerTopic", 3),
])
def test_each_policy_is_set_read_and_removed(http, ns, segment, value):
    path = f"/admin/v2/namespaces/{ns}/{segment}"
    assert http.get(path).status == 204  # unset
    assert http.post(path, value).status == 204
    assert http.get(path).body == value
    assert http.delete(path).status == 204
    assert http.get(path).status == 204


def test_the_policies_answer_pulsars_fields(http, ns):
    http.post(f"/admin/v2/namespaces/{ns}/messageTTL", 120)
    http.post(f"/admin/v2/namespaces/{ns}/permissions/billing", ["consume"])
    policies = http.get(f"/admin/v2/namespaces/{ns}").body
    assert policies["message_ttl_in_seconds"] == 120
    assert policies["retention_policies"] is None
    assert policies["auth_policies"]["namespace_auth"] == {"billing": ["consume"]}
    assert policies["replication_clusters"] == ["standalone"]


def test_a_policy_value_out_of_range_is_412_and_of_the_wrong_type_400(http, ns):
    answer = http.post(f"/admin/v2/namespaces/{ns}/messageTTL", -5)
    assert answer.status == 412 and "messageTTLInSeconds" in answer.reason
    answer = http.post(f"/admin/v2/namespaces/{ns}/deduplication", "yes")
    assert (answer.status, answer.reason) == (400, 'deduplicationEnabled: expected true or false, got "yes"')


def test_a_policy_of_a_missing_namespace_is_404(http):
    assert http.post("/admin/v2/namespaces/public/no-such-ns/messageTTL", 10).status == 404


def test_permissions_are_granted_listed_and_revoked_on_a_namespace(http, ns):
    path = f"/admin/v2/namespaces/{ns}/permissions"
    assert http.get(path).body == {}
    assert http.post(path + "/shop", ["produce", "consume"]).status == 204
    assert http.get(path).body == {"shop": ["consume", "produce"]}
    assert http.delete(path + "/shop").status == 204
    assert http.get(path).body == {}


def test_an_unknown_action_is_412(http, ns):
    answer = http.post(f"/admin/v2/namespaces/{ns}/permissions/shop", ["fly"])
    assert answer.status == 412 and "fly" in answer.reason


def test_permissions_are_granted_on_a_topic(http, ns):
    http.put(f"/admin/v2/persistent/{ns}/t")
    path = f"/admin/v2/persistent/{ns}/t/permissions"
    assert http.post(path + "/reader", ["consume"]).status == 204
    assert http.get(path).body == {"reader": ["consume"]}
    assert http.get(f"/admin/v2/namespaces/{ns}/permissions").body == {}


def test_clear_backlog_and_unsubscribe_act_on_every_topic_of_the_namespace(http, ns):
    topics = [f"persistent://{ns}/a", f"persistent://{ns}/b"]
    with Client(http.broker.service_url) as client:
        for topic in topics:
            local = topic.rsplit("/", 1)[1]
            assert http.put(f"/admin/v2/persistent/{ns}/{local}").status == 204
            assert http.put(f"/admin/v2/persistent/{ns}/{local}/subscription/sub",
                            {"ledgerId": -1, "entryId": -1}).status == 204
            producer = client.create_producer(topic)
            for i in range(3):
                producer.send(b"m%d" % i)
            producer.close()
    def backlog(local: str) -> int:
        return http.get(f"/admin/v2/persistent/{ns}/{local}/stats").body["subscriptions"]["sub"]["msgBacklog"]
    assert [backlog("a"), backlog("b")] == [3, 3]
    assert http.post(f"/admin/v2/namespaces/{ns}/clearBacklog/sub").status == 204
    assert [backlog("a"), backlog("b")] == [0, 0]
    assert http.post(f"/admin/v2/namespaces/{ns}/unsubscribe/sub").status == 204
    assert http.get(f"/admin/v2/persistent/{ns}/a/subscriptions").body == []
    assert http.post(f"/admin/v2/namespaces/{ns}/unsubscribe/sub").status == 404
