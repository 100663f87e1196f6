"""Authorization as Pulsar's PulsarAuthorizationProvider decides it: super-users, tenant admins, grants on
namespaces and topics that add up, and everything else refused; the security layer's refusals are typed
and logged with the role and the resource."""
from __future__ import annotations

import logging

import pytest

from broker_core.config import BrokerConfig
from broker_core.errors import AuthenticationError, AuthorizationError, InvalidConfiguration, TopicNotFound
from broker_core.core.namespaces import NamespacesStore
from broker_core.net.peers import ClientIdentity
from broker_core.core.policies import NAMESPACE, TOPIC, PoliciesStore
from broker_core.security import Authorizer, Principal, Security

TOPIC_NAME = "persistent://acme/orders/t"


@pytest.fixture
def stores(tmp_path):
    namespaces = NamespacesStore(tmp_path)
    namespaces.create_tenant("acme", admin_roles=["alice"])
    namespaces.create_namespace("acme/orders")
    namespaces.create_tenant("other", admin_roles=["mallory"])
    namespaces.create_namespace("other/ns")
    return namespaces, PoliciesStore(tmp_path)


@pytest.fixture
def authorizer(stores):
    return Authorizer(frozenset({"root"}), *stores)


def test_a_super_user_may_do_everything(authorizer):
    assert all(authorizer.allowed("root", action, resource) for action in ("super", "admin", "produce")
               for resource in ("", "acme", TOPIC_NAME))


def test_a_tenant_admin_administers_and_uses_its_tenant_only(authorizer):
    assert authorizer.allowed("alice", "admin", "acme/orders")
    assert authorizer.allowed("alice", "produce", TOPIC_NAME) and authorizer.allowed("alice", "consume", TOPIC_NAME)
    assert not authorizer.allowed("alice", "admin", "other/ns")
    assert not authorizer.allowed("alice", "consume", "persistent://other/ns/t")
    assert not authorizer.allowed("alice", "super", "acme")


def test_a_role_without_grants_may_do_nothing(authorizer):
    assert not any(authorizer.allowed("bob", action, TOPIC_NAME) for action in ("produce", "consume", "lookup"))


def test_a_topic_of_a_missing_tenant_is_not_found_before_it_is_forbidden(authorizer):
    # as Pulsar's provider, which fails with "not found" reading the tenant
    for action in ("produce", "consume", "lookup"):
        with pytest.raises(TopicNotFound, match="tenant nowhere does not exist"):
            authorizer.allowed("bob", action, "persistent://nowhere/ns/t")
    assert authorizer.allowed("root", "produce", "persistent://nowhere/ns/t")  # a super-user learns it later


def test_a_missing_namespace_of_an_existing_tenant_stays_forbidden_to_a_role_without_rights(authorizer):
    # Pulsar does not reveal to such a role that the namespace does not exist
    assert not authorizer.allowed("bob", "produce", "persistent://acme/nowhere/t")
    assert authorizer.allowed("alice", "produce", "persistent://acme/nowhere/t")  # then: TopicNotFound


def test_a_namespace_grant_covers_its_topics_for_those_actions_only(authorizer, stores):
    stores[1].grant(NAMESPACE, "acme/orders", "bob", ["consume"])
    assert authorizer.allowed("bob", "consume", TOPIC_NAME)
    assert authorizer.allowed("bob", "lookup", TOPIC_NAME)
    assert not authorizer.allowed("bob", "produce", TOPIC_NAME)
    assert not authorizer.allowed("bob", "admin", TOPIC_NAME)


def test_a_topic_grant_adds_to_the_namespace_grant(authorizer, stores):
    stores[1].grant(NAMESPACE, "acme/orders", "bob", ["consume"])
    stores[1].grant(TOPIC, TOPIC_NAME, "bob", ["produce"])
    assert authorizer.allowed("bob", "produce", TOPIC_NAME) and authorizer.allowed("bob", "consume", TOPIC_NAME)
    assert not authorizer.allowed("bob", "produce", "persistent://acme/orders/other")


def test_a_partitioned_topic_grant_covers_its_partitions(authorizer, stores):
    stores[1].grant(TOPIC, TOPIC_NAME, "bob", ["produce"])
    assert authorizer.allowed("bob", "produce", TOPIC_NAME + "-partition-3")


def test_a_topic_grant_does_not_let_a_role_list_the_namespace(authorizer, stores):
    stores[1].grant(TOPIC, TOPIC_NAME, "bob", ["consume"])
    assert not authorizer.allowed("bob", "lookup", "acme/orders")
    stores[1].grant(NAMESPACE, "acme/orders", "bob", ["consume"])
    assert authorizer.allowed("bob", "lookup", "acme/orders")


def test_revoking_removes_what_was_granted_and_grants_survive_a_restart(tmp_path, stores):
    stores[1].grant(NAMESPACE, "acme/orders", "bob", ["produce", "consume"])
    stores[1].grant(NAMESPACE, "acme/orders", "carol", ["consume"])
    stores[1].revoke(NAMESPACE, "acme/orders", "bob")
    assert PoliciesStore(tmp_path).permissions(NAMESPACE, "acme/orders") == {"carol": ["consume"]}


def test_a_grant_of_an_unknown_action_is_refused(stores):
    with pytest.raises(InvalidConfiguration, match="unknown action 'delete'"):
        stores[1].grant(NAMESPACE, "acme/orders", "bob", ["produce", "delete"])


def test_permissions_are_not_shown_or_set_as_policies(stores):
    stores[1].grant(NAMESPACE, "acme/orders", "bob", ["produce"])
    assert stores[1].get(NAMESPACE, "acme/orders") == {}
    with pytest.raises(InvalidConfiguration, match="unknown policy"):
        stores[1].set(NAMESPACE, "acme/orders", "permissions", {"bob": ["consume"]})


def _security(stores, **config) -> Security:
    conf = BrokerConfig.from_mapping({"authorizationEnabled": True, "superUserRoles": "root", **config})
    return Security(conf, Authorizer(conf.super_user_roles(), *stores))


def test_a_refusal_is_typed_and_logged_with_role_action_and_resource(stores, caplog):
    security = _security(stores)
    with caplog.at_level(logging.WARNING), pytest.raises(AuthorizationError) as refused:
        security.authorize(Principal("mallory", "token"), "produce", TOPIC_NAME, "ipv4:10.0.0.9:1")
    assert refused.value.role == "mallory" and refused.value.resource == TOPIC_NAME
    assert "role=mallory action=produce resource=persistent://acme/orders/t" in caplog.text


def test_with_authentication_off_every_client_is_anonymous(stores):
    principal = _security(stores).authenticate_call(None, ClientIdentity("ipv4:1.2.3.4:5"))
    assert principal.role == "" and principal.method == "none"


def test_with_authentication_on_a_client_without_credentials_is_refused(stores):
    security = _security(stores, authenticationEnabled=True, authenticationProviders="tls")
    with pytest.raises(AuthenticationError, match="no credentials"):
        security.authenticate_call(None, ClientIdentity("ipv4:1.2.3.4:5"))


def test_anonymous_user_role_admits_clients_without_credentials(stores):
    security = _security(stores, authenticationEnabled=True, authenticationProviders="tls",
                         anonymousUserRole="guest")
    assert security.authenticate_call(None, ClientIdentity("ipv4:1.2.3.4:5")).role == "guest"


def test_a_verified_client_certificate_gives_its_cn_as_the_role(stores):
    security = _security(stores, authenticationEnabled=True, authenticationProviders="tls")
    assert security.authenticate_call(None, ClientIdentity("ipv4:1.2.3.4:5", "alice")).role == "alice"


def test_a_method_the_broker_does_not_enable_is_refused(stores):
    security = _security(stores, authenticationEnabled=True, authenticationProviders="tls")
    with pytest.raises(AuthenticationError, match="'token' is not enabled"):
        security.authenticate("token", b"x.y.z", ClientIdentity("ipv4:1.2.3.4:5"))


def test_authentication_without_providers_is_refused_at_start(stores):
    with pytest.raises(InvalidConfiguration, match="authenticationProviders"):
        _security(stores, authenticationEnabled=True)


def test_an_unknown_provider_name_is_a_configuration_error():
    with pytest.raises(InvalidConfiguration, match="authenticationProviders"):
        BrokerConfig.from_mapping({"authenticationProviders": "kerberos"})


def test_pulsars_provider_class_names_are_accepted():
    config = BrokerConfig.from_mapping({"authenticationProviders":
                                        "org.apache.pulsar.broker.authentication.AuthenticationProviderTls"})
    assert config.authentication_providers() == ("tls",)
