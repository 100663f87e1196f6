"""Security of the admin REST API over real HTTP, with the broker's security layer: with authentication off
everyone is admitted; with token authentication and authorization on, ``Authorization: Bearer <token>``
says who calls, no credentials is 401, a bad token 401, a role without rights 403, and each endpoint needs
the same action as the gRPC call doing the same thing (super-user, tenant admin, consume, lookup)."""
from __future__ import annotations

import pytest
from aiohttp import web

from broker_core.frontends.http.admin import Advertised, admin_app, public
from broker_core.security import Security

from broker_core.security.tokens import create_token, generate_secret_key
from tests.integration.test_http_admin_server import admin_http
from tests.security_certs import secret_setting

SECRET = generate_secret_key()
NS = "/admin/v2/persistent/acme/orders"


def token(role: str) -> str:
    return create_token(SECRET, role)


async def metrics(request):
    return web.Response(text="# metrics")


async def undeclared(request):
    return web.Response(text="secret")


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    settings = {"authenticationEnabled": "true", "authenticationProviders": "token",
                "authorizationEnabled": "true", "superUserRoles": "root", "tokenSecretKey": secret_setting(SECRET)}
    extra = (web.get("/metrics", public(metrics)), web.get("/undeclared", undeclared))
    with admin_http(tmp_path_factory.mktemp("secured"), extra_routes=extra, **settings) as http:
        root = token("root")
        assert http.put("/admin/v2/tenants/acme", {"adminRoles": ["acme-admin"]}, token=root).status == 204
        assert http.put("/admin/v2/namespaces/acme/orders", token=root).status == 204
        assert http.put(f"{NS}/t", token=root).status == 204
        assert http.post("/admin/v2/namespaces/acme/orders/permissions/billing", ["consume"], token=root).status == 204
        yield http


def test_without_authentication_anyone_may_do_everything(tmp_path):
    with admin_http(tmp_path) as http:
        assert http.put("/admin/v2/tenants/open").status == 204
        assert http.get("/admin/v2/tenants").status == 200


def test_no_credentials_is_401(secured):
    answer = secured.get("/admin/v2/tenants")
    assert answer.status == 401 and "no credentials" in answer.reason


def test_a_bad_token_is_401_and_never_echoed(secured):
    answer = secured.get("/admin/v2/tenants", token="not.a.token")
    assert answer.status == 401 and "not.a.token" not in answer.reason
    answer = secured.get("/admin/v2/tenants", headers={"Authorization": "Basic cm9vdDpy"})
    assert answer.status == 401 and "Bearer" in answer.reason


def test_a_role_without_rights_is_403(secured):
    answer = secured.put("/admin/v2/tenants/other", token=token("nobody"))
    assert answer.status == 403 and "super-user" in answer.reason
    assert secured.get("/admin/v2/tenants/other", token=token("root")).status == 404  # nothing was created


@pytest.mark.parametrize("method, path, body, least", [
    ("GET", "/admin/v2/tenants", None, "root"),
    ("GET", "/admin/v2/clusters/standalone", None, "root"),
    ("GET", "/admin/v2/tenants/acme", None, "acme-admin"),
    ("GET", "/admin/v2/namespaces/acme", None, "acme-admin"),
    ("GET", "/admin/v2/namespaces/acme/orders/retention", None, "acme-admin"),
    ("POST", "/admin/v2/namespaces/acme/orders/messageTTL", 60, "acme-admin"),
    ("GET", "/admin/v2/namespaces/acme/orders/permissions", None, "acme-admin"),
    ("PUT", f"{NS}/made-by-admin", None, "acme-admin"),
    ("GET", f"{NS}/t/stats", None, "billing"),
    ("GET", f"{NS}/t/subscriptions", None, "billing"),
    ("GET", NS, None, "billing"),
])
def test_each_endpoint_is_allowed_from_its_least_role_up_and_refused_below(secured, method, path, body, least):
    ladder = ["nobody", "billing", "acme-admin", "root"]
    for role in ladder:
        kwargs = {} if body is None else {"body": body}
        answer = secured.call(method, path, token=token(role), **kwargs)
        if ladder.index(role) < ladder.index(least):
            assert answer.status == 403, (role, answer)
        else:
            assert answer.status in (200, 204, 409), (role, answer)


def test_anyone_authenticated_may_list_clusters_and_read_the_version(secured):
    assert secured.get("/admin/v2/clusters", token=token("nobody")).body == ["standalone"]
    assert secured.get("/admin/v2/brokers/version", token=token("nobody")).status == 200
    assert secured.get("/admin/v2/clusters").status == 401


def test_a_missing_tenant_is_404_not_403_as_pulsars_authorizer_answers(secured):
    assert secured.get("/admin/v2/persistent/ghost/ns/t/stats", token=token("nobody")).status == 404


def test_a_route_marked_public_is_served_without_credentials_beside_the_admin_api(secured):
    assert secured.get("/metrics").body == "# metrics"
    assert secured.get("/admin/v2/tenants").status == 401


def test_a_route_added_without_a_declared_need_is_for_super_users_only(secured):
    assert secured.get("/undeclared").status == 401
    assert secured.get("/undeclared", token=token("acme-admin")).status == 403
    assert secured.get("/undeclared", token=token("root")).body == "secret"


def test_every_admin_route_declares_what_it_needs_so_none_is_left_to_super_users_by_accident(secured):
    app = admin_app(secured.registry, Security(), secured.broker.config, Advertised("http://h:1", "pulsar://h:2"))
    undeclared = [f"{r.method} {r.resource.canonical}" for r in app.router.routes() if r.method != "HEAD"
                  and not hasattr(r.handler, "access")]
    assert undeclared == []
    assert len(list(app.router.routes())) > 60
