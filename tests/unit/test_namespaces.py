"""Tenants and namespaces: public/default at first start, validation, persistence, adoption of an older
data folder, and the typed errors that say how to fix what is missing."""
import json

import pytest

from broker_core.errors import (CorruptLog, InvalidConfiguration, NamespaceAlreadyExists, NamespaceNotFound,
                                TenantAlreadyExists, TenantNotFound, TopicNotFound)
from broker_core.core.namespaces import NamespacesStore


def test_a_fresh_broker_has_tenant_public_and_namespace_public_default(tmp_path):
    store = NamespacesStore(tmp_path)
    assert store.tenants() == ["public"]
    assert store.namespaces("public") == ["public/default"]
    assert store.tenant_info("public") == {"adminRoles": [], "allowedClusters": ["standalone"]}
    assert json.loads((tmp_path / "namespaces.json").read_text())["namespaces"] == ["public/default"]


def test_tenants_and_namespaces_are_persisted(tmp_path):
    store = NamespacesStore(tmp_path, cluster="eu")
    store.create_tenant("acme", admin_roles=["ops", "ops", "dev"])
    store.create_namespace("acme/orders")
    again = NamespacesStore(tmp_path, cluster="eu")
    assert again.tenants() == ["acme", "public"]
    assert again.tenant_info("acme") == {"adminRoles": ["ops", "dev"], "allowedClusters": ["eu"]}
    assert again.namespaces("acme") == ["acme/orders"]
    again.delete_namespace("acme/orders")
    again.delete_tenant("acme")
    assert NamespacesStore(tmp_path).tenants() == ["public"]


def test_updating_a_tenant_replaces_only_what_is_given(tmp_path):
    store = NamespacesStore(tmp_path)
    store.create_tenant("acme", admin_roles=["ops"], allowed_clusters=["a", "b"])
    store.update_tenant("acme", admin_roles=["dev"])
    assert store.tenant_info("acme") == {"adminRoles": ["dev"], "allowedClusters": ["a", "b"]}
    store.update_tenant("acme", allowed_clusters=[])
    assert store.tenant_info("acme")["allowedClusters"] == ["standalone"]


def test_a_missing_namespace_error_names_it_and_how_to_create_it(tmp_path):
    store = NamespacesStore(tmp_path)
    with pytest.raises(NamespaceNotFound, match=r"namespace public/nope does not exist: create it with "
                                                r"`pulsarlike admin namespaces create public/nope`") as err:
        store.check_exists("public/nope")
    assert err.value.namespace == "public/nope"
    assert isinstance(err.value, TopicNotFound)  # callers handling a missing topic handle this too
    with pytest.raises(TenantNotFound, match="nor does its tenant acme: create the tenant with"):
        store.check_exists("acme/orders")


def test_a_namespace_needs_its_tenant_and_is_created_once(tmp_path):
    store = NamespacesStore(tmp_path)
    with pytest.raises(TenantNotFound, match="pulsarlike admin tenants create acme"):
        store.create_namespace("acme/orders")
    with pytest.raises(NamespaceAlreadyExists, match="public/default already exists"):
        store.create_namespace("public/default")
    with pytest.raises(TenantAlreadyExists):
        store.create_tenant("public")


@pytest.mark.parametrize("bad", ["no-slash", "a/b/c", "a/", "/b", "a b/c", "acme/or ders", ""])
def test_malformed_namespace_names_are_refused(tmp_path, bad):
    with pytest.raises(InvalidConfiguration, match="tenant/namespace"):
        NamespacesStore(tmp_path).create_namespace(bad)


@pytest.mark.parametrize("bad", ["", "a/b", "sp ace", "x?"])
def test_malformed_tenant_names_are_refused(tmp_path, bad):
    with pytest.raises(InvalidConfiguration, match="tenant name"):
        NamespacesStore(tmp_path).create_tenant(bad)


def test_an_older_data_folder_keeps_its_namespaces(tmp_path):
    store = NamespacesStore(tmp_path, adopt=["acme/orders", "acme/billing", "ops/logs"])
    assert store.tenants() == ["acme", "ops", "public"]
    assert store.namespaces("acme") == ["acme/billing", "acme/orders"]
    # adoption happens once: afterwards the stored list is the truth
    assert NamespacesStore(tmp_path, adopt=["late/one"]).tenants() == ["acme", "ops", "public"]


def test_a_corrupt_namespaces_file_is_reported(tmp_path):
    (tmp_path / "namespaces.json").write_text('{"tenants": 1}')
    with pytest.raises(CorruptLog, match="namespaces.json"):
        NamespacesStore(tmp_path)


def test_a_namespace_being_deleted_takes_no_new_topics(tmp_path):
    store = NamespacesStore(tmp_path)
    store.deleting.add("public/default")
    with pytest.raises(NamespaceNotFound, match="public/default is being deleted"):
        store.check_exists("public/default")
    store.deleting.discard("public/default")
    store.check_exists("public/default")
