"""Schema admin over the broker's own port (issue 22): ``Admin("pulsar://...")`` and ``pulsarlike admin schemas``
with a ``pulsar://`` URL upload, read (the latest, one version, every version), check and delete a topic's
schema, answering exactly what the REST API (``Admin(admin_url="http://...")``) answers on the same broker."""
from __future__ import annotations

import json
import uuid

import pytest

from broker_core import errors
from broker_core.security.tokens import create_token, generate_secret_key
from connector import AuthenticationToken
from connector.cli.admin import main
from connector.client.admin import Admin
from tests.integration.test_http_admin_server import admin_http
from tests.security_certs import secret_setting

V1 = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"}]}
V2 = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"},
                                                    {"name": "age", "type": "int", "default": 0}]}
RETYPED = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "int"}]}


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("grpc-schemas")) as served:
        yield served


@pytest.fixture(scope="module")
def grpc_admin(http):
    with Admin(http.broker.service_url) as admin:
        yield admin


@pytest.fixture(scope="module")
def rest_admin(http):
    with Admin(admin_url=http.base) as admin:
        yield admin


@pytest.fixture
def topic():
    return f"persistent://public/default/schemas-{uuid.uuid4().hex[:8]}"


def test_a_schema_is_uploaded_read_checked_and_deleted_over_the_brokers_own_port(grpc_admin, topic):
    assert grpc_admin.upload_schema(topic, "AVRO", V1) == 0
    assert grpc_admin.upload_schema(topic, "AVRO", V1) == 0  # the identical schema's version, not a new one
    assert grpc_admin.upload_schema(topic, "AVRO", V2, {"owner": "ops"}) == 1
    latest = grpc_admin.get_schema(topic)
    assert (latest["version"], latest["type"], json.loads(latest["data"]), latest["properties"]) == \
        (1, "AVRO", V2, {"owner": "ops"})
    assert json.loads(grpc_admin.get_schema(topic, 0)["data"]) == V1
    assert [s["version"] for s in grpc_admin.get_all_schemas(topic)] == [0, 1]
    assert grpc_admin.test_schema_compatibility(topic, "AVRO", V2) == {
        "compatibility": True, "schemaCompatibilityStrategy": "FULL"}  # UNDEFINED: the broker's default
    refused = grpc_admin.test_schema_compatibility(topic, "AVRO", RETYPED)
    assert refused["compatibility"] is False and refused["reason"]
    with pytest.raises(errors.IncompatibleSchema):
        grpc_admin.upload_schema(topic, "AVRO", RETYPED)
    assert grpc_admin.delete_schema(topic) == 1
    with pytest.raises(errors.TopicNotFound):
        grpc_admin.get_schema(topic)


def test_a_missing_version_and_a_malformed_schema_are_typed_errors(grpc_admin, topic):
    with pytest.raises(errors.TopicNotFound):
        grpc_admin.get_schema(topic)
    grpc_admin.upload_schema(topic, "JSON", V1)
    with pytest.raises(errors.TopicNotFound, match="no schema version 7"):
        grpc_admin.get_schema(topic, 7)
    with pytest.raises(errors.IncompatibleSchema):  # InvalidSchema, as Pulsar's clients see it
        grpc_admin.upload_schema(topic, "AVRO", "{not a definition")
    with pytest.raises(errors.InvalidMessage, match="type"):
        grpc_admin.upload_schema(topic, "NO_SUCH_TYPE", V1)


def test_both_transports_answer_alike_on_the_same_broker(grpc_admin, rest_admin, topic):
    grpc_admin.upload_schema(topic, "AVRO", V1)
    rest_admin.upload_schema(topic, "AVRO", V2, {"owner": "ops"})
    for call in (lambda a: a.get_schema(topic), lambda a: a.get_schema(topic, 0), lambda a: a.get_all_schemas(topic),
                 lambda a: a.test_schema_compatibility(topic, "AVRO", V2),
                 lambda a: a.test_schema_compatibility(topic, "AVRO", RETYPED)):
        assert call(grpc_admin) == call(rest_admin)
    kv = f"{topic}-kv"
    grpc_admin.upload_schema(kv, "KEY_VALUE", {"key": V1, "value": V2},
                             {"key.schema.type": "AVRO", "value.schema.type": "AVRO"})
    assert grpc_admin.get_schema(kv) == rest_admin.get_schema(kv)
    assert grpc_admin.delete_schema(topic) == 1
    with pytest.raises(errors.TopicNotFound):
        rest_admin.get_schema(topic)


def cli(capsys, url: str, *args: str, code: int = 0) -> str:
    done = main(["admin", "--admin-url", url, *args])
    captured = capsys.readouterr()
    assert done == code, (args, done, captured.out, captured.err)
    return captured.out if code == 0 else captured.err


def test_the_cli_schemas_group_works_over_pulsar_urls_with_the_rest_output(capsys, http, tmp_path, topic):
    pulsar, rest = http.broker.service_url, http.base
    v1, retyped = tmp_path / "v1.json", tmp_path / "retyped.json"
    v1.write_text(json.dumps({"type": "AVRO", "schema": json.dumps(V1), "properties": {}}))
    retyped.write_text(json.dumps({"type": "AVRO", "schema": json.dumps(RETYPED), "properties": {}}))
    assert cli(capsys, pulsar, "schemas", "upload", topic, "-f", str(v1)) == ""
    for args in (("get", topic), ("get", topic, "--version", "0"), ("get", topic, "-a"),
                 ("compatibility", topic, "-f", str(v1)), ("compatibility", topic, "-f", str(retyped))):
        assert cli(capsys, pulsar, "schemas", *args) == cli(capsys, rest, "schemas", *args)
    assert json.loads(cli(capsys, pulsar, "schemas", "compatibility", topic, "-f", str(retyped)))[
        "compatibility"] is False
    assert "IncompatibleSchema" in cli(capsys, pulsar, "schemas", "upload", topic, "-f", str(retyped), code=1)
    assert cli(capsys, pulsar, "schemas", "delete", topic) == ""
    assert "TopicNotFound" in cli(capsys, pulsar, "schemas", "get", topic, code=1)


def test_reading_and_checking_need_lookup_while_uploading_and_deleting_need_the_tenants_admin(tmp_path):
    secret = generate_secret_key()
    config = {"authenticationEnabled": "true", "authenticationProviders": "token", "authorizationEnabled": "true",
              "superUserRoles": "root", "tokenSecretKey": secret_setting(secret)}
    topic = "persistent://public/default/guarded"
    with admin_http(tmp_path / "data", **config) as secured:
        url = secured.broker.service_url
        with Admin(url, authentication=AuthenticationToken(create_token(secret, "root"))) as root:
            root.grant_namespace_permission("public/default", "app", ["produce", "consume"])
            root.upload_schema(topic, "AVRO", V1)
            with Admin(url, authentication=AuthenticationToken(create_token(secret, "app"))) as app:
                assert app.get_schema(topic) == root.get_schema(topic)
                assert app.test_schema_compatibility(topic, "AVRO", V2)["compatibility"] is True
                for change in (lambda: app.upload_schema(topic, "AVRO", V2), lambda: app.delete_schema(topic)):
                    with pytest.raises(errors.AuthorizationError):
                        change()
            with Admin(url, authentication=AuthenticationToken(create_token(secret, "eve"))) as eve:
                with pytest.raises(errors.AuthorizationError):
                    eve.get_schema(topic)
            assert root.get_schema(topic)["version"] == 0
