"""``/admin/v2/clusters`` and ``/admin/v2/brokers`` over real HTTP: the broker's one cluster
(``clusterName``) and the broker itself, as Pulsar standalone answers them."""
from __future__ import annotations

import importlib.metadata

import pytest

from tests.integration.test_http_admin_server import admin_http


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("clusters")) as served:
        yield served


def test_the_cluster_list_holds_the_brokers_one_cluster_standalone_by_default(http):
    answer = http.get("/admin/v2/clusters")
    assert (answer.status, answer.body) == (200, ["standalone"])


def test_the_cluster_answers_the_brokers_urls(http):
    answer = http.get("/admin/v2/clusters/standalone")
    assert answer.status == 200
    assert answer.body == {"serviceUrl": "http://127.0.0.1:8080", "serviceUrlTls": None,
                           "brokerServiceUrl": http.broker.service_url, "brokerServiceUrlTls": None}


def test_another_cluster_does_not_exist(http):
    answer = http.get("/admin/v2/clusters/elsewhere")
    assert answer.status == 404 and "cluster elsewhere does not exist" in answer.reason
    assert http.get("/admin/v2/brokers/elsewhere").status == 404


def test_health_and_version_are_text(http):
    health = http.get("/admin/v2/brokers/health")
    assert (health.status, health.body) == (200, "ok")
    version = http.get("/admin/v2/brokers/version")
    assert (version.status, version.body) == (200, importlib.metadata.version("pulsarlike"))
    assert version.content_type.startswith("text/plain")


def test_the_broker_is_its_own_leader_and_only_active_broker(http):
    assert http.get("/admin/v2/brokers/leaderBroker").body == {"serviceUrl": "http://127.0.0.1:8080",
                                                               "brokerId": "127.0.0.1:8080"}
    assert http.get("/admin/v2/brokers/standalone").body == ["127.0.0.1:8080"]
    assert http.get("/admin/v2/brokers").body == ["127.0.0.1:8080"]


def test_the_cluster_name_comes_from_the_configuration(tmp_path):
    with admin_http(tmp_path, clusterName="east") as http:
        assert http.get("/admin/v2/clusters").body == ["east"]
        assert http.get("/admin/v2/clusters/east").status == 200
        assert http.get("/admin/v2/clusters/standalone").status == 404
