"""The admin REST application served by aiohttp on 127.0.0.1 port 0 over an in-process broker's core (its
registry, on its own event loop), called with plain urllib -- and what it answers to bad input: unknown paths
(404), wrong methods (405), bodies that are not JSON or of the wrong type (400 naming the field), bodies over
the limit (413), names that fail the name rules (412), each as ``{"reason": ...}``, the broker serving on.

:func:`admin_http` is the harness the other ``test_http_admin_*`` modules use."""
from __future__ import annotations

import asyncio
import json
import socket
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest
from aiohttp import web

from broker_core.broker import Broker
from broker_core.frontends.http.admin import Advertised, admin_app
from broker_core.security import Authorizer, Security

NO_BODY = object()


@dataclass
class Answer:
    status: int
    body: Any
    """The JSON answer decoded; text otherwise; None when empty."""
    content_type: str = ""

    @property
    def reason(self) -> str:
        assert isinstance(self.body, dict) and set(self.body) == {"reason"}, self.body
        return self.body["reason"]


class AdminHttp:
    """The admin app on a port of its own, over ``broker``'s registry."""

    def __init__(self, broker: Broker, port: int, max_body_bytes: int) -> None:
        self.broker = broker
        self.base = f"http://127.0.0.1:{port}"
        self.max_body_bytes = max_body_bytes

    @property
    def registry(self):
        return self.broker._service.registry

    def on_loop(self, fn) -> Any:
        """``fn()`` run on the broker's event loop (where the registry lives)."""
        async def call():
            return fn()
        return asyncio.run_coroutine_threadsafe(call(), self.broker._loop).result(timeout=30)

    def call(self, method: str, path: str, body: Any = NO_BODY, *, token: str | None = None, raw: bytes | None = None,
             headers: dict[str, str] | None = None) -> Answer:
        data = raw if raw is not None else (None if body is NO_BODY else json.dumps(body).encode())
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=dict(headers or {}))
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if token is not None:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                return _answer(reply.status, reply.read(), reply.headers.get("Content-Type", ""))
        except urllib.error.HTTPError as err:
            return _answer(err.code, err.read(), err.headers.get("Content-Type", ""))

    def get(self, path: str, **kw: Any) -> Answer:
        return self.call("GET", path, **kw)

    def put(self, path: str, body: Any = NO_BODY, **kw: Any) -> Answer:
        return self.call("PUT", path, body, **kw)

    def post(self, path: str, body: Any = NO_BODY, **kw: Any) -> Answer:
        return self.call("POST", path, body, **kw)

    def delete(self, path: str, **kw: Any) -> Answer:
        return self.call("DELETE", path, **kw)


def _answer(status: int, data: bytes, content_type: str) -> Answer:
    if not data:
        return Answer(status, None, content_type)
    if content_type.startswith("application/json"):
        return Answer(status, json.loads(data), content_type)
    return Answer(status, data.decode(), content_type)


@contextmanager
def admin_http(data_dir: Path, max_body_bytes: int = 1 << 20, extra_routes: tuple = (),
               **config: Any) -> Iterator[AdminHttp]:
    """An in-process broker (port 0) and the admin app served beside it on 127.0.0.1 port 0, with
    ``extra_routes`` added to it (as the web service port adds ``/metrics``)."""
    broker = Broker(data_dir=data_dir, port=0, journalSyncMode="never", **config).start()
    try:
        registry = broker._service.registry

        async def serve() -> tuple[web.AppRunner, int]:
            security = Security(broker.config, Authorizer(broker.config.super_user_roles(), registry.namespaces,
                                                          registry.policies))
            app = admin_app(registry, security, broker.config,
                            Advertised("http://127.0.0.1:8080", broker.service_url), max_body_bytes=max_body_bytes)
            app.add_routes(extra_routes)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            return runner, site._server.sockets[0].getsockname()[1]

        runner, port = asyncio.run_coroutine_threadsafe(serve(), broker._loop).result(timeout=30)
        try:
            yield AdminHttp(broker, port, max_body_bytes)
        finally:
            asyncio.run_coroutine_threadsafe(runner.cleanup(), broker._loop).result(timeout=30)
    finally:
        broker.stop()


async def broken(request):
    raise RuntimeError("a bug with a secret detail")


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("admin"), max_body_bytes=4096,
                    extra_routes=(web.get("/admin/v2/broken", broken),)) as served:
        yield served


# ------------------------------------------------------------------ bad input
def test_an_unknown_path_is_404_with_a_reason(http):
    answer = http.get("/admin/v2/no-such-thing")
    assert answer.status == 404
    assert "/admin/v2/no-such-thing is not served" in answer.reason


def test_a_wrong_method_is_405_naming_the_allowed_ones(http):
    answer = http.delete("/admin/v2/clusters")
    assert answer.status == 405
    assert "DELETE" in answer.reason and "GET" in answer.reason


def test_a_body_that_is_not_json_is_400_naming_the_field(http):
    http.put("/admin/v2/tenants/badjson")
    answer = http.call("PUT", "/admin/v2/persistent/public/default/bad-json/partitions", raw=b"{four")
    assert answer.status == 400
    assert answer.reason.startswith("partitions: the body is not valid JSON")


def test_a_body_of_the_wrong_type_is_400_naming_the_field(http):
    answer = http.put("/admin/v2/persistent/public/default/bad-type/partitions", "4")
    assert (answer.status, answer.reason) == (400, 'partitions: expected an integer, got "4"')
    answer = http.put("/admin/v2/tenants/bad-roles", {"adminRoles": "alice"})
    assert (answer.status, answer.reason) == (400, 'adminRoles: expected a list of strings, got "alice"')
    answer = http.post("/admin/v2/namespaces/public/default/retention",
                       {"retentionTimeInMinutes": "10", "retentionSizeInMB": 5})
    assert answer.status == 400 and answer.reason.startswith("retention.retentionTimeInMinutes: expected an integer")
    assert http.get("/admin/v2/tenants/bad-roles").status == 404  # nothing was created


def test_a_missing_body_is_400(http):
    answer = http.put("/admin/v2/persistent/public/default/no-body/partitions")
    assert (answer.status, answer.reason) == (400, "partitions: the request needs a JSON body")


def test_a_body_over_the_limit_is_413_and_the_broker_serves_on(http):
    answer = http.call("PUT", "/admin/v2/tenants/huge", raw=b"[" + b"1," * http.max_body_bytes + b"1]")
    assert answer.status == 413
    assert f"the limit is {http.max_body_bytes} bytes" in answer.reason
    assert http.get("/admin/v2/tenants/huge").status == 404
    assert http.get("/admin/v2/clusters").body == ["standalone"]


def test_names_that_fail_the_name_rules_are_412(http):
    assert http.put("/admin/v2/tenants/bad%20name").status == 412
    assert http.put("/admin/v2/namespaces/public/bad%20ns").status == 412
    answer = http.put("/admin/v2/persistent/public/default/%2e%2e")
    assert answer.status == 412 and "topic" in answer.reason


def test_a_bad_query_flag_is_400_naming_it(http):
    http.put("/admin/v2/persistent/public/default/flagged")
    answer = http.delete("/admin/v2/persistent/public/default/flagged?force=yes")
    assert (answer.status, answer.reason) == (400, "force: expected true or false, got 'yes'")
    assert "persistent://public/default/flagged" in http.get("/admin/v2/persistent/public/default").body


def test_an_unexpected_failure_is_500_with_an_id_the_log_has_and_the_broker_serves_on(http, caplog):
    answer = http.get("/admin/v2/broken")
    assert answer.status == 500
    assert "internal error (id " in answer.reason and "secret" not in answer.reason
    error_id = answer.reason.split("(id ", 1)[1].split(")", 1)[0]
    logged = [r for r in caplog.records if "event=admin_request_failed" in r.getMessage()]
    assert logged and error_id in logged[0].getMessage() and "secret" in logged[0].exc_text
    assert http.get("/admin/v2/clusters").status == 200


def test_a_client_stalled_mid_request_does_not_hold_up_the_others(http):
    port = int(http.base.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as stalled:
        stalled.sendall(b"PUT /admin/v2/tenants/stalled HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n[")
        assert http.get("/admin/v2/clusters").body == ["standalone"]
        assert http.put("/admin/v2/tenants/while-stalled").status == 204
    assert http.get("/admin/v2/tenants/stalled").status == 404
