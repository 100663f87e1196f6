"""Who may run ``topics verify``, over REST with real HTTP and over gRPC alike: a topic's verification is the
tenant's admins' (and super-users'), the broker-wide one super-users' only; a role that may consume and look
up the topic is refused (403 / ``AuthorizationError``)."""
from __future__ import annotations

import pytest

from broker_core import errors
from broker_core.security.tokens import create_token, generate_secret_key
from connector import AuthenticationToken
from connector.client.admin import Admin
from tests.integration.test_http_admin_server import admin_http
from tests.security_certs import secret_setting

SECRET = generate_secret_key()
TOPIC = "persistent://acme/orders/t"
TOPIC_PATH = "/admin/v2/persistent/acme/orders/t/verify"
BROKER_PATH = "/admin/v2/pulsarlike/verify"


def token(role: str) -> str:
    return create_token(SECRET, role)


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    settings = {"authenticationEnabled": "true", "authenticationProviders": "token",
                "authorizationEnabled": "true", "superUserRoles": "root", "tokenSecretKey": secret_setting(SECRET)}
    with admin_http(tmp_path_factory.mktemp("secured"), **settings) as http:
        root = token("root")
        assert http.put("/admin/v2/tenants/acme", {"adminRoles": ["acme-admin"]}, token=root).status == 204
        assert http.put("/admin/v2/namespaces/acme/orders", token=root).status == 204
        assert http.put("/admin/v2/persistent/acme/orders/t", token=root).status == 204
        assert http.post("/admin/v2/namespaces/acme/orders/permissions/billing", ["consume", "produce"],
                         token=root).status == 204
        yield http


@pytest.mark.parametrize("path, least", [(TOPIC_PATH, "acme-admin"), (BROKER_PATH, "root")])
def test_over_rest_a_verification_is_allowed_from_its_least_role_up(secured, path, least):
    ladder = ["nobody", "billing", "acme-admin", "root"]
    for role in ladder:
        answer = secured.get(path, token=token(role))
        if ladder.index(role) < ladder.index(least):
            assert answer.status == 403, (role, answer)
        else:
            assert answer.status == 200 and answer.body["ok"] is True, (role, answer)
    assert secured.get(path).status == 401


def test_over_grpc_the_same_roles_are_allowed(secured):
    url = secured.broker.service_url
    for role, topic_ok, broker_ok in (("billing", False, False), ("acme-admin", True, False), ("root", True, True)):
        with Admin(url, authentication=AuthenticationToken(token(role))) as admin:
            for call, allowed in ((lambda: admin.verify_topic(TOPIC), topic_ok),
                                  (admin.verify_all_topics, broker_ok)):
                if allowed:
                    assert call()["ok"] is True
                else:
                    with pytest.raises(errors.AuthorizationError):
                        call()


def test_a_missing_or_non_persistent_topic_is_refused_as_pulsar_refuses_one(secured):
    root = token("root")
    assert secured.get("/admin/v2/persistent/acme/orders/none/verify", token=root).status == 404
    assert secured.get("/admin/v2/non-persistent/acme/orders/t/verify", token=root).status == 412
