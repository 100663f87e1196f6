"""``/admin/v2/tenants`` over real HTTP: list, create with a TenantInfo, get, update, delete, with Pulsar's
statuses (204, 404, 409, 412)."""
from __future__ import annotations

import uuid

import pytest

from tests.integration.test_http_admin_server import admin_http


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("tenants")) as served:
        yield served


@pytest.fixture
def tenant():
    return f"t-{uuid.uuid4().hex[:8]}"


def test_a_fresh_broker_has_the_public_tenant(http):
    answer = http.get("/admin/v2/tenants")
    assert answer.status == 200 and "public" in answer.body


def test_a_created_tenant_is_listed_and_answers_its_info(http, tenant):
    answer = http.put(f"/admin/v2/tenants/{tenant}", {"adminRoles": ["alice"], "allowedClusters": ["standalone"]})
    assert (answer.status, answer.body) == (204, None)
    assert tenant in http.get("/admin/v2/tenants").body
    info = http.get(f"/admin/v2/tenants/{tenant}")
    assert (info.status, info.body) == (200, {"adminRoles": ["alice"], "allowedClusters": ["standalone"]})


def test_a_tenant_created_without_a_body_is_allowed_on_the_brokers_cluster(http, tenant):
    assert http.put(f"/admin/v2/tenants/{tenant}").status == 204
    assert http.get(f"/admin/v2/tenants/{tenant}").body == {"adminRoles": [], "allowedClusters": ["standalone"]}


def test_creating_a_tenant_twice_is_409(http, tenant):
    http.put(f"/admin/v2/tenants/{tenant}")
    answer = http.put(f"/admin/v2/tenants/{tenant}")
    assert answer.status == 409 and "already exists" in answer.reason


def test_a_tenant_on_a_cluster_the_broker_does_not_have_is_412(http, tenant):
    answer = http.put(f"/admin/v2/tenants/{tenant}", {"allowedClusters": ["elsewhere"]})
    assert answer.status == 412 and "elsewhere" in answer.reason
    assert http.get(f"/admin/v2/tenants/{tenant}").status == 404


def test_update_replaces_the_tenant_info(http, tenant):
    http.put(f"/admin/v2/tenants/{tenant}", {"adminRoles": ["alice"]})
    assert http.post(f"/admin/v2/tenants/{tenant}", {"adminRoles": ["bob", "carol"]}).status == 204
    assert http.get(f"/admin/v2/tenants/{tenant}").body["adminRoles"] == ["bob", "carol"]


def test_a_missing_tenant_is_404_on_get_update_and_delete(http, tenant):
    for answer in (http.get(f"/admin/v2/tenants/{tenant}"), http.post(f"/admin/v2/tenants/{tenant}", {}),
                   http.delete(f"/admin/v2/tenants/{tenant}")):
        assert answer.status == 404 and tenant in answer.reason


def test_a_tenant_with_namespaces_is_deleted_only_with_force(http, tenant):
    http.put(f"/admin/v2/tenants/{tenant}")
    http.put(f"/admin/v2/namespaces/{tenant}/ns")
    answer = http.delete(f"/admin/v2/tenants/{tenant}")
    assert answer.status == 409
    assert http.delete(f"/admin/v2/tenants/{tenant}?force=true").status == 204
    assert tenant not in http.get("/admin/v2/tenants").body
