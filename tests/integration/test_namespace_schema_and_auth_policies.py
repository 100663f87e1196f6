"""The namespace policies about schemas, encryption and who may use a subscription, set over the admin REST
API and enforced on a real broker (issue 31): ``encryptionRequired`` (the official client's encrypted
producer is taken, an unencrypted one refused), ``schemaValidationEnforced``, ``isAllowAutoUpdateSchema``,
``schemaAutoUpdateCompatibilityStrategy``, and with authorization on ``subscriptionAuthMode`` Prefix and the
subscription permissions."""
from __future__ import annotations

import uuid

import pytest

from broker_core.security.tokens import create_token, generate_secret_key
from connector import (AuthenticationToken, AuthorizationError, Client, EncryptionRequired, IncompatibleSchema,
                       NotAllowedError)
from tests.integration.test_http_admin_server import admin_http
from tests.security_certs import secret_setting

pulsar = pytest.importorskip("pulsar")
from pulsar.schema import StringSchema  # noqa: E402

SECRET = generate_secret_key()


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("ns-schemas")) as served:
        yield served


@pytest.fixture
def ns(http):
    name = f"public/sch-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/namespaces/{name}").status == 204
    return name


@pytest.fixture
def topic(ns):
    return f"persistent://{ns}/t-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def ours(http, transport):
    with Client(http.broker.service_url, transport=transport) as client:
        yield client


@pytest.fixture
def official(http):
    client = pulsar.Client(http.broker.service_url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    yield client
    client.close()


def set_policy(http, ns: str, segment: str, value, method: str = "POST") -> None:
    answer = http.call(method, f"/admin/v2/namespaces/{ns}/{segment}", value)
    assert answer.status == 204, answer


# ------------------------------------------------------------------ encryption
@pytest.fixture(scope="module")
def rsa_keys(tmp_path_factory):
    """An RSA key pair in PEM files, as pulsar-client's CryptoKeyReader reads them."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    folder = tmp_path_factory.mktemp("keys")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private, public = folder / "private.pem", folder / "public.pem"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return str(public), str(private)


def test_encryption_required_takes_the_official_clients_encrypted_messages_and_refuses_plain_ones(
        http, ns, topic, official, rsa_keys):
    set_policy(http, ns, "encryptionRequired", True)
    assert http.get(f"/admin/v2/namespaces/{ns}/encryptionRequired").body is True
    with pytest.raises(pulsar.PulsarException):  # Pulsar refuses the producer itself
        official.create_producer(topic)
    reader = pulsar.CryptoKeyReader(*rsa_keys)
    consumer = official.subscribe(topic, "s", crypto_key_reader=reader)
    producer = official.create_producer(topic, encryption_key="k", crypto_key_reader=reader)
    producer.send(b"secret")
    assert consumer.receive(timeout_millis=5000).data() == b"secret"


@pytest.mark.transports
def test_encryption_required_refuses_our_clients_messages_which_are_not_encrypted(http, ns, topic, ours):
    set_policy(http, ns, "encryptionRequired", True)
    # gRPC: EncryptionRequired; binary: Pulsar refuses the producer (our client hears NotAllowedError)
    with pytest.raises((EncryptionRequired, NotAllowedError), match="Messages must be encrypted|Encryption is"
                                                                    " required"):
        ours.create_producer(topic).send(b"plain")
    set_policy(http, ns, "encryptionRequired", False)
    ours.create_producer(topic).send(b"plain")


# ------------------------------------------------------------------ schemas
@pytest.mark.transports
def test_schema_validation_enforced_refuses_messages_without_a_schema_on_a_topic_with_one(http, ns, topic, ours):
    from connector.client.schema import StringSchema as OurStringSchema

    set_policy(http, ns, "schemaValidationEnforced", True)
    assert http.get(f"/admin/v2/namespaces/{ns}/schemaValidationEnforced").body is True
    ours.create_producer(topic).send(b"no schema yet")  # a topic without a schema takes them
    typed = ours.create_producer(topic, schema=OurStringSchema())
    typed.send("typed")
    with pytest.raises(IncompatibleSchema, match="without a schema to topics with a schema"):
        ours.create_producer(topic).send(b"raw")
    set_policy(http, ns, "schemaValidationEnforced", False)
    ours.create_producer(topic).send(b"raw")


def test_schema_validation_enforced_refuses_the_official_clients_bytes_messages(http, ns, topic, official):
    set_policy(http, ns, "schemaValidationEnforced", True)
    official.create_producer(topic, schema=StringSchema()).send("typed")
    with pytest.raises(pulsar.IncompatibleSchema):  # Pulsar refuses a producer without a schema at once
        official.create_producer(topic)


def test_without_auto_update_a_client_cannot_register_a_schema_the_admin_api_uploads_it(http, ns, topic, official):
    set_policy(http, ns, "isAllowAutoUpdateSchema", False)
    assert http.get(f"/admin/v2/namespaces/{ns}/isAllowAutoUpdateSchema").body is False
    with pytest.raises(pulsar.IncompatibleSchema):
        official.create_producer(topic, schema=StringSchema())
    schema = {"type": "STRING", "schema": "null", "properties": {}}  # what pulsar-client's StringSchema carries
    assert http.post(f"/admin/v2/schemas/{topic.removeprefix('persistent://')}/schema", schema).status == 200
    official.create_producer(topic, schema=StringSchema()).send("now registered")


def test_an_unset_auto_update_flag_answers_the_brokers_default(http, ns):
    assert http.get(f"/admin/v2/namespaces/{ns}/isAllowAutoUpdateSchema").body is True
    assert http.get(f"/admin/v2/namespaces/{ns}/schemaValidationEnforced").body is False
    assert http.get(f"/admin/v2/namespaces/{ns}/encryptionRequired").body is False
    assert http.get(f"/admin/v2/namespaces/{ns}/subscriptionAuthMode").body == "None"
    assert http.get(f"/admin/v2/namespaces/{ns}/schemaAutoUpdateCompatibilityStrategy").body == "Full"


def test_the_auto_update_strategy_applies_while_the_compatibility_strategy_is_undefined(http, ns, topic):
    base = f"/admin/v2/schemas/{topic.removeprefix('persistent://')}"
    json_v1 = {"type": "JSON", "properties": {},
               "schema": '{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}'}
    json_v2 = {"type": "JSON", "properties": {},
               "schema": '{"type":"record","name":"R","fields":[{"name":"a","type":"string"},'
                         '{"name":"b","type":"string","default":""}]}'}
    set_policy(http, ns, "schemaAutoUpdateCompatibilityStrategy", "AutoUpdateDisabled", method="PUT")
    assert http.get(f"/admin/v2/namespaces/{ns}/schemaAutoUpdateCompatibilityStrategy").body == "AutoUpdateDisabled"
    assert http.post(f"{base}/schema", json_v1).status == 200
    assert http.post(f"{base}/schema", json_v2).status == 409  # ALWAYS_INCOMPATIBLE
    set_policy(http, ns, "schemaAutoUpdateCompatibilityStrategy", "Backward", method="PUT")
    assert http.post(f"{base}/schema", json_v2).status == 200
    assert http.call("POST", f"/admin/v2/namespaces/{ns}/schemaAutoUpdateCompatibilityStrategy", "Full").status == 405


# ------------------------------------------------------------------ who may use a subscription
@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    settings = {"authenticationEnabled": "true", "authenticationProviders": "token", "authorizationEnabled": "true",
                "superUserRoles": "root", "tokenSecretKey": secret_setting(SECRET)}
    with admin_http(tmp_path_factory.mktemp("ns-auth"), **settings) as http:
        root = create_token(SECRET, "root")
        assert http.put("/admin/v2/tenants/acme", {"adminRoles": []}, token=root).status == 204
        for ns in ("acme/prefix", "acme/reserved"):
            assert http.put(f"/admin/v2/namespaces/{ns}", token=root).status == 204
            assert http.post(f"/admin/v2/namespaces/{ns}/permissions/alice", ["consume"], token=root).status == 204
            assert http.post(f"/admin/v2/namespaces/{ns}/permissions/bob", ["consume"], token=root).status == 204
        yield http


def client_of(http, role: str, transport: str) -> Client:
    return Client(http.broker.service_url, authentication=AuthenticationToken(create_token(SECRET, role)),
                  transport=transport)


@pytest.mark.transports
def test_prefix_auth_mode_lets_a_role_consume_only_subscriptions_named_after_it(secured, transport):
    root = create_token(SECRET, "root")
    assert secured.post("/admin/v2/namespaces/acme/prefix/subscriptionAuthMode", "Prefix", token=root).status == 204
    with client_of(secured, "alice", transport) as alice:
        alice.subscribe("persistent://acme/prefix/t", "alice-sub").close()
        with pytest.raises(AuthorizationError, match="prefixed by the authentication role, like alice-xxxx"):
            alice.subscribe("persistent://acme/prefix/t", "bob-sub")


@pytest.mark.transports
def test_a_subscription_granted_to_roles_refuses_the_others(secured, transport):
    root = create_token(SECRET, "root")
    base = "/admin/v2/namespaces/acme/reserved/permissions"
    assert secured.post(f"{base}/subscription/audit", ["alice"], token=root).status == 204
    assert secured.get(f"{base}/subscription", token=root).body == {"audit": ["alice"]}
    with client_of(secured, "alice", transport) as alice, client_of(secured, "bob", transport) as bob:
        alice.subscribe("persistent://acme/reserved/t", "audit").close()
        with pytest.raises(AuthorizationError, match="not authorized to subscribe"):
            bob.subscribe("persistent://acme/reserved/t", "audit")
        bob.subscribe("persistent://acme/reserved/t", "other").close()
        assert secured.delete(f"{base}/audit/alice", token=root).status == 204
        assert secured.get(f"{base}/subscription", token=root).body == {}
        bob.subscribe("persistent://acme/reserved/t", "audit").close()


def test_a_topics_compatibility_strategy_wins_over_its_namespaces_and_undefined_removes_it(http, ns, topic):
    base = f"/admin/v2/schemas/{topic.removeprefix('persistent://')}"
    policy = f"/admin/v2/persistent/{topic.removeprefix('persistent://')}/schemaCompatibilityStrategy"
    v1 = {"type": "JSON", "properties": {}, "schema": '{"type":"record","name":"R","fields":[]}'}
    v2 = {"type": "JSON", "properties": {}, "schema": '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}'}
    assert http.put(f"/admin/v2/namespaces/{ns}/schemaCompatibilityStrategy", "ALWAYS_INCOMPATIBLE").status == 204
    assert http.get(policy).status == 404  # a topic's policy needs the topic
    assert http.put(policy.removesuffix("/schemaCompatibilityStrategy")).status == 204
    assert http.post(f"{base}/schema", v1).status == 200
    assert http.get(policy).body == "UNDEFINED"  # none of its own: its namespace's applies
    assert http.post(f"{base}/schema", v2).status == 409
    assert http.put(policy, "ALWAYS_COMPATIBLE").status == 204
    assert http.get(policy).body == "ALWAYS_COMPATIBLE"
    assert http.post(f"{base}/schema", v2).status == 200
    assert http.put(policy, "UNDEFINED").status == 204  # the namespace's again, as Pulsar's
    assert http.get(policy).body == "UNDEFINED"
    assert http.put(policy, "FULL").status == 204
    assert http.delete(policy).status == 204
    assert http.get(policy).body == "UNDEFINED"
    assert http.put(policy, "SOMETIMES").status == 412
    assert http.call("POST", policy, "FULL").status == 405  # Pulsar sets it with PUT only


def test_a_topics_schema_validation_enforced_answers_false_while_unset_and_refuses_raw_messages_once_set(
        http, ns, topic, official):
    policy = f"/admin/v2/persistent/{topic.removeprefix('persistent://')}/schemaValidationEnforced"
    official.create_producer(topic, schema=StringSchema()).send("typed")
    assert http.get(policy).body is False
    official.create_producer(topic).close()  # the namespace does not enforce it
    assert http.post(policy, True).status == 204
    assert http.get(policy).body is True
    with pytest.raises(pulsar.IncompatibleSchema):
        official.create_producer(topic)
    assert http.call("DELETE", policy).status == 405  # Pulsar has no DELETE for it: set it false
