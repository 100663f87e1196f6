"""What the ``pulsarlike admin`` verb tests share: one broker with its admin web server per test module
(``served``), each test run over gRPC (``pulsar://``) and over ``--admin-url`` REST (``url``), ``cli`` to run
a verb in-process, and a fresh namespace or topic per test. A test module imports the fixtures it uses."""
from __future__ import annotations

import uuid

import pytest

from connector.cli.admin import main
from tests.integration.test_http_admin_server import admin_http


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("admin-cli")) as http:
        yield http


@pytest.fixture(params=["grpc", "rest"])
def url(request, served):
    return served.broker.service_url if request.param == "grpc" else served.base


def cli(capsys, url: str, *args: str, code: int = 0) -> str:
    """``pulsarlike admin --admin-url URL ARGS`` in-process: its output (its error output when ``code`` is not 0)."""
    done = main(["--admin-url", url, *args])
    captured = capsys.readouterr()
    assert done == code, (args, done, captured.out, captured.err)
    return captured.out if code == 0 else captured.err


@pytest.fixture
def namespace(served) -> str:
    name = f"public/cli-{uuid.uuid4().hex[:8]}"
    assert served.put(f"/admin/v2/namespaces/{name}").status == 204
    return name


@pytest.fixture
def topic(served, namespace) -> str:
    assert served.put(f"/admin/v2/persistent/{namespace}/t").status == 204
    return f"persistent://{namespace}/t"
