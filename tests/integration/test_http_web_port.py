"""The broker's web service port as clients find it: the admin REST API, ``/metrics`` and ``/status.html`` on
one port, over HTTP (``webServicePort``) and HTTPS (``webServicePortTls``, real certificates, client
certificates as the broker's TLS settings say), both on any free port (0); the URLs the API gives out are the
ports as bound; ``metricsEnabled=false`` turns off ``/metrics`` only; aiohttp is imported by the first HTTP
connection, not by the start; no reverse DNS; a stalled client holds up no one; HTTP connections have a
connection budget of their own (``maxHttpServerConnections``), apart from the broker port's; the port is closed
when the broker stops."""
from __future__ import annotations

import http.client
import json
import logging
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from typing import Any

import pytest

from broker_core import Broker
from broker_core.protocol import pulsar_commands_pb2 as cmd
from tests.pulsar_wire import RawPulsar
from tests.security_certs import make_tls
from tests.waiting import wait_until


def get(url: str, context: ssl.SSLContext | None = None) -> tuple[int, Any]:
    """The status and the body (JSON decoded when it is JSON)."""
    try:
        with urllib.request.urlopen(url, timeout=30, context=context) as reply:
            status, body, kind = reply.status, reply.read(), reply.headers.get("Content-Type", "")
    except urllib.error.HTTPError as err:
        status, body, kind = err.code, err.read(), err.headers.get("Content-Type", "")
    return status, json.loads(body) if kind.startswith("application/json") else body


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return make_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory, tls):
    with Broker(data_dir=tmp_path_factory.mktemp("data"), brokerServicePortTls=0, webServicePortTls=0,
                **tls.broker_settings()) as broker:
        yield broker


def trusting(tls, role: str | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=tls.ca)
    if role is not None:
        context.load_cert_chain(*tls.client(role))
    return context


def test_the_admin_api_metrics_and_status_are_served_on_the_web_port_over_http(tmp_path):
    with Broker(data_dir=tmp_path) as broker:
        assert broker.config.webServicePort == 0 and broker.web_url.startswith("http://127.0.0.1:")
        assert get(broker.web_url + "/admin/v2/tenants") == (200, ["public"])
        status, cluster = get(broker.web_url + "/admin/v2/clusters/standalone")
        assert status == 200
        assert cluster == {"serviceUrl": broker.web_url, "serviceUrlTls": None,
                           "brokerServiceUrl": broker.service_url, "brokerServiceUrlTls": None}
        assert get(broker.web_url + "/status.html") == (200, b"OK")
        status, metrics = get(broker.web_url + "/metrics")
        assert status == 200 and b"# TYPE pulsar_topics_count gauge" in metrics


def test_https_serves_the_same_application_and_advertises_the_bound_tls_urls(secure_broker, tls):
    base = f"https://localhost:{secure_broker._service.web_tls_port}"
    status, cluster = get(base + "/admin/v2/clusters/standalone", trusting(tls))
    assert status == 200
    assert cluster == {"serviceUrl": secure_broker.web_url, "serviceUrlTls": secure_broker.web_url_tls,
                       "brokerServiceUrl": secure_broker.service_url,
                       "brokerServiceUrlTls": secure_broker.service_url_tls}
    assert secure_broker.web_url_tls.endswith(f":{secure_broker._service.web_tls_port}")
    status, metrics = get(base + "/metrics", trusting(tls))
    assert status == 200 and b"pulsar_topics_count" in metrics
    assert get(base + "/status.html", trusting(tls, "alice")) == (200, b"OK")  # a client certificate is welcome


def test_a_client_that_does_not_trust_the_brokers_certificate_is_refused(secure_broker, tls):
    context = ssl.create_default_context(cafile=tls.other_ca.cert_file)
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        get(f"https://localhost:{secure_broker._service.web_tls_port}/status.html", context)


def test_with_client_certificates_required_the_web_port_refuses_a_client_without_one(tmp_path, tls):
    with Broker(data_dir=tmp_path, webServicePortTls=0, **tls.broker_settings(require_client_cert=True)) as broker:
        base = f"https://localhost:{broker._service.web_tls_port}"
        assert get(base + "/admin/v2/clusters", trusting(tls, "alice")) == (200, ["standalone"])
        with pytest.raises((urllib.error.URLError, ConnectionError, ssl.SSLError)):
            get(base + "/admin/v2/clusters", trusting(tls))


def test_a_stalled_client_holds_up_no_one(secure_broker, tls):
    web, web_tls = secure_broker._service.web_port, secure_broker._service.web_tls_port
    half_request = socket.create_connection(("127.0.0.1", web), timeout=10)
    half_request.sendall(b"GET /metrics HTTP/1.1\r\nHo")  # and nothing more
    silent_tls = socket.create_connection(("127.0.0.1", web_tls), timeout=10)  # never says hello
    try:
        assert get(f"http://127.0.0.1:{web}/status.html") == (200, b"OK")
        assert get(f"https://localhost:{web_tls}/status.html", trusting(tls)) == (200, b"OK")
    finally:
        half_request.close()
        silent_tls.close()


def test_with_metrics_turned_off_the_web_port_still_serves_the_admin_api(tmp_path):
    with Broker(data_dir=tmp_path, metricsEnabled=False) as broker:
        assert broker.metrics_url is None and broker.metrics_port == 0
        assert get(broker.web_url + "/admin/v2/clusters") == (200, ["standalone"])
        assert get(broker.web_url + "/status.html") == (200, b"OK")
        status, body = get(broker.web_url + "/metrics")
        assert status == 404 and "metricsEnabled=false" in body["reason"]


def test_the_web_port_is_closed_when_the_broker_stops(tmp_path):
    with Broker(data_dir=tmp_path) as broker:
        port = broker._service.web_port
        keep_alive = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        keep_alive.request("GET", "/status.html")
        assert keep_alive.getresponse().read() == b"OK"
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    with pytest.raises((http.client.HTTPException, ConnectionError)):  # its connections were closed too
        keep_alive.request("GET", "/status.html")
        keep_alive.getresponse()
    keep_alive.close()


def test_http_connections_have_a_budget_of_their_own_apart_from_the_broker_ports(tmp_path):
    with Broker(data_dir=tmp_path, maxHttpServerConnections=1, brokerMaxConnections=1) as broker:
        held = http.client.HTTPConnection("127.0.0.1", broker._service.web_port, timeout=10)
        held.request("GET", "/status.html")
        assert held.getresponse().read() == b"OK"  # accepted and counted: the web port's one place
        with pytest.raises((urllib.error.URLError, ConnectionError, http.client.HTTPException)):
            get(broker.web_url + "/status.html")
        with RawPulsar(f"127.0.0.1:{broker.port}") as pulsar:  # the broker port's one place is still free
            assert pulsar.connect().type == cmd.BaseCommand.CONNECTED
        held.close()
        assert wait_until(lambda: _answers(broker.web_url + "/status.html"))


def _answers(url: str) -> bool:
    try:
        return get(url) == (200, b"OK")
    except (urllib.error.URLError, ConnectionError, http.client.HTTPException):
        return False


def test_aiohttp_is_imported_by_the_first_http_connection_not_by_the_start(tmp_path):
    script = f"""
import sys, urllib.request
from broker_core import Broker
with Broker(data_dir={str(tmp_path)!r}) as broker:
    before = "aiohttp" in sys.modules
    with urllib.request.urlopen(broker.web_url + "/status.html", timeout=30) as reply:
        body = reply.read()
    print(before, body == b"OK", "aiohttp" in sys.modules)
"""
    found = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert found.stdout.split() == ["False", "True", "True"], found.stderr


def test_the_web_port_never_looks_names_up_in_dns(tmp_path, monkeypatch):
    def no_resolver(*_args, **_kwargs):
        raise AssertionError("the web service port looked an address up in DNS")
    for name in ("getfqdn", "gethostbyaddr", "getnameinfo"):
        monkeypatch.setattr(socket, name, no_resolver)
    with Broker(data_dir=tmp_path) as broker:
        assert get(broker.web_url + "/admin/v2/clusters") == (200, ["standalone"])
        status, _metrics = get(broker.web_url + "/metrics")
        assert status == 200


def test_requests_that_do_not_parse_are_refused_with_400_and_logged_once_without_a_traceback(tmp_path, caplog):
    with caplog.at_level(logging.DEBUG), Broker(data_dir=tmp_path) as broker:
        for _ in range(5):
            with socket.create_connection(("127.0.0.1", broker._service.web_port), timeout=10) as bad:
                bad.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n")
                assert bad.recv(100).startswith(b"HTTP/1.0 400 Bad Request")
        assert get(broker.web_url + "/status.html") == (200, b"OK")
    failed = [r for r in caplog.records if "http_request_failed" in r.getMessage()]
    assert len(failed) == 1 and not failed[0].exc_info
    assert not [r for r in caplog.records if r.name.startswith("aiohttp") and r.levelno >= logging.WARNING]


def test_a_scrape_not_answered_within_the_metrics_timeout_is_503_and_the_port_serves_on(tmp_path, monkeypatch):
    import threading

    from broker_core.frontends.http import web

    released = threading.Event()

    def stuck(*_args):  # an encoding that does not finish (until the test lets it)
        released.wait(30)
        return b"", {}
    monkeypatch.setattr(web, "exposition", stuck)
    try:
        with Broker(data_dir=tmp_path, metricsServletTimeoutMs=100) as broker:
            status, body = get(broker.web_url + "/metrics")
            assert status == 503 and "metricsServletTimeoutMs" in body["reason"]
            assert get(broker.web_url + "/status.html") == (200, b"OK")
    finally:
        released.set()


def test_the_official_client_given_the_web_port_as_its_service_url_produces_and_consumes(tmp_path):
    pulsar = pytest.importorskip("pulsar")
    with Broker(data_dir=tmp_path) as broker:
        client = pulsar.Client(broker.web_url, operation_timeout_seconds=10)  # HTTP lookup, then the binary port
        try:
            consumer = client.subscribe("persistent://public/default/over-http", "s")
            producer = client.create_producer("persistent://public/default/over-http")
            for i in range(5):
                producer.send(b"m%d" % i)
            got = []
            for _ in range(5):
                msg = consumer.receive(timeout_millis=10_000)
                got.append(msg.data())
                consumer.acknowledge(msg)
            assert got == [b"m%d" % i for i in range(5)]
        finally:
            client.close()


def test_a_second_broker_whose_web_port_is_taken_is_refused_saying_how_to_give_it_its_own(tmp_path):
    # A second broker on another service port still asks for the default web port: refused, as Pulsar's
    # broker fails (a free port instead would put its admin API where pulsar-admin's default URL is not).
    from broker_core.errors import InvalidConfiguration

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        with pytest.raises(InvalidConfiguration) as refused:
            Broker(data_dir=tmp_path, webServicePort=taken.getsockname()[1]).start()
    finally:
        taken.close()

    assert "webServicePort" in str(refused.value) and "--set webServicePort=<port>" in str(refused.value)
    assert "webServicePort=0 for any free port" in str(refused.value)
