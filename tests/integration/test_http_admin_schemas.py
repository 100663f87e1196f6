"""``/admin/v2/schemas/{tenant}/{ns}/{topic}`` over real HTTP: a topic's schema uploaded, read (latest, by
version, all), checked for compatibility and deleted, in Pulsar's JSON shapes, over the same registry the
official client's producers register with."""
from __future__ import annotations

import json
import uuid

import pytest

from tests.integration.test_http_admin_server import admin_http

pulsar = pytest.importorskip("pulsar")

USER_V1 = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"}]}
USER_V2 = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"},
                                                        {"name": "age", "type": "int", "default": 0}]}
USER_BAD = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"},
                                                         {"name": "email", "type": "string"}]}


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("schemas")) as served:
        yield served


@pytest.fixture
def path():
    return f"/admin/v2/schemas/public/default/s-{uuid.uuid4().hex[:10]}"


def avro(definition: dict, **properties: str) -> dict:
    return {"type": "AVRO", "schema": json.dumps(definition), "properties": properties}


def test_an_uploaded_schema_is_the_topics_latest_version_0(http, path):
    posted = http.post(path + "/schema", avro(USER_V1, owner="team-a"))
    assert (posted.status, posted.body) == (200, {"version": {"version": 0}})
    latest = http.get(path + "/schema")
    assert latest.status == 200
    assert latest.body["version"] == 0 and latest.body["type"] == "AVRO"
    assert json.loads(latest.body["data"]) == USER_V1
    assert latest.body["properties"] == {"owner": "team-a"} and latest.body["timestamp"] > 0


def test_a_compatible_schema_is_a_new_version_and_each_version_stays_readable(http, path):
    http.post(path + "/schema", avro(USER_V1))
    assert http.post(path + "/schema", avro(USER_V2)).body == {"version": {"version": 1}}
    assert http.post(path + "/schema", avro(USER_V1)).body == {"version": {"version": 0}}  # identical: its version
    assert json.loads(http.get(path + "/schema/0").body["data"]) == USER_V1
    assert json.loads(http.get(path + "/schema/1").body["data"]) == USER_V2
    every = http.get(path + "/schemas").body["getSchemaResponses"]
    assert [v["version"] for v in every] == [0, 1]


def test_an_incompatible_schema_is_refused_409_and_the_check_says_so_first(http, path):
    http.post(path + "/schema", avro(USER_V1))
    check = http.post(path + "/compatibility", avro(USER_BAD))
    assert (check.body["compatibility"], check.body["schemaCompatibilityStrategy"]) == (False, "FULL")  # UNDEFINED
    assert "email" in check.body["reason"]
    assert http.post(path + "/compatibility", avro(USER_V2)).body["compatibility"] is True
    refused = http.post(path + "/schema", avro(USER_BAD))
    assert refused.status == 409 and "email" in refused.reason
    assert http.get(path + "/schema").body["version"] == 0


def test_the_check_and_the_upload_follow_the_namespaces_strategy(http):
    http.put("/admin/v2/tenants/strict")
    http.put("/admin/v2/namespaces/strict/ns")
    assert http.post("/admin/v2/namespaces/strict/ns/schemaCompatibilityStrategy", "ALWAYS_COMPATIBLE").status == 204
    path = "/admin/v2/schemas/strict/ns/t"
    http.post(path + "/schema", avro(USER_V1))
    check = http.post(path + "/compatibility", avro(USER_BAD))
    assert check.body == {"compatibility": True, "schemaCompatibilityStrategy": "ALWAYS_COMPATIBLE"}
    assert http.post(path + "/schema", avro(USER_BAD)).body == {"version": {"version": 1}}


def test_a_topic_without_a_schema_is_404_and_any_schema_is_compatible_with_it(http, path):
    assert http.get(path + "/schema").status == 404
    assert http.get(path + "/schema/3").status == 404
    assert http.delete(path + "/schema").status == 404
    assert http.post(path + "/compatibility", avro(USER_BAD)).body["compatibility"] is True


def test_a_missing_version_is_404_naming_the_latest(http, path):
    http.post(path + "/schema", avro(USER_V1))
    answer = http.get(path + "/schema/7")
    assert answer.status == 404 and "latest is 0" in answer.reason
    assert http.get(path + "/schema/x").status == 400


def test_deleting_the_schema_answers_its_latest_version_and_starts_it_anew(http, path):
    http.post(path + "/schema", avro(USER_V1))
    http.post(path + "/schema", avro(USER_V2))
    assert http.delete(path + "/schema").body == {"version": 1}
    assert http.get(path + "/schema").status == 404
    assert http.post(path + "/schema", avro(USER_BAD)).body == {"version": {"version": 0}}


def test_a_key_value_schema_round_trips_as_key_and_value(http, path):
    kv = {"type": "KEY_VALUE", "schema": json.dumps({"key": USER_V1, "value": USER_V2}),
          "properties": {"key.schema.type": "AVRO", "value.schema.type": "AVRO", "kv.encoding.type": "INLINE"}}
    assert http.post(path + "/schema", kv).status == 200
    shown = http.get(path + "/schema").body
    assert shown["type"] == "KEY_VALUE"
    assert json.loads(shown["data"]) == {"key": USER_V1, "value": USER_V2}


def test_bad_payloads_are_400_naming_the_field(http, path):
    assert "type:" in http.post(path + "/schema", {"type": "PARQUET", "schema": ""}).reason
    assert "schema:" in http.post(path + "/schema", {"type": "AVRO", "schema": {"x": 1}}).reason
    assert "properties" in http.post(path + "/schema", {"type": "STRING", "schema": "", "properties": [1]}).reason
    assert http.post(path + "/schema", raw=b"{nope").status == 400


def test_a_namespace_that_does_not_exist_is_404(http):
    assert http.post("/admin/v2/schemas/public/nowhere/t/schema", avro(USER_V1)).status == 404
    assert http.get("/admin/v2/schemas/nobody/nowhere/t/schema").status == 404


def test_the_schema_an_official_producer_registered_is_served(http, path):
    topic = "persistent://public/default/" + path.rsplit("/", 1)[1]
    client = pulsar.Client(http.broker.service_url)
    try:
        producer = client.create_producer(topic, schema=pulsar.schema.StringSchema())
        producer.send("hello")
        shown = http.get(path + "/schema").body
        assert (shown["version"], shown["type"]) == (0, "STRING")
        check = http.post(path + "/compatibility", {"type": "JSON", "schema": json.dumps(USER_V1)})
        assert check.body["compatibility"] is False  # a type change is never compatible
    finally:
        client.close()
