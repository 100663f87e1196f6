"""Who may leave a schema or a subscription behind, against real ``pulsarlike broker`` processes and the
official ``pulsar-client`` (issue 18, point 7):

- a schema is never stored for a topic whose tenant or namespace does not exist (authentication off or on),
  and ``GET_OR_CREATE_SCHEMA`` wants an existing topic (Pulsar answers ``TopicNotFound``);
- ``PRODUCER.initial_subscription_name`` (sent by a consumer's dead-letter producer) makes a durable
  subscription only for a role that may consume the topic; a produce-only role's producer is refused with
  ``AuthorizationError``, as Pulsar does (PIP-124).
"""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest

pulsar = pytest.importorskip("pulsar")

from pulsar.schema import StringSchema  # noqa: E402

from broker_core.protocol import pulsar_commands_pb2 as cmd  # noqa: E402
from broker_core.security.tokens import create_token, generate_secret_key  # noqa: E402
from connector import Admin, AuthenticationToken  # noqa: E402
from tests.brokers import BrokerProcess  # noqa: E402
from tests.pulsar_wire import RawPulsar, frame  # noqa: E402
from tests.security_certs import as_args, secret_setting  # noqa: E402
from tests.waiting import wait_until  # noqa: E402

T = cmd.BaseCommand
QUIET = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
SECRET = generate_secret_key()
GHOST = "persistent://ghost-tenant/nowhere/t"
"""A topic of a tenant (and namespace) that does not exist."""


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def open_broker(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("open") / "data").start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    settings = {"authenticationEnabled": "true", "authenticationProviders": "token",
                "authorizationEnabled": "true", "superUserRoles": "root", "tokenSecretKey": secret_setting(SECRET)}
    process = BrokerProcess(tmp_path_factory.mktemp("secured") / "data", *as_args(settings)).start()
    root = Admin(process.service_url, operation_timeout_seconds=10,
                 authentication=AuthenticationToken(create_token(SECRET, "root")))
    try:
        root.create_tenant("acme")
        for namespace in ("acme/orders", "acme/dead"):
            root.create_namespace(namespace)
        root.grant_namespace_permission("acme/orders", "writer", ["produce"])
        root.grant_namespace_permission("acme/orders", "worker", ["produce", "consume"])
        # each consumes acme/orders; its dead letters go to acme/dead, where only "keeper" may consume
        for role in ("courier", "keeper"):
            root.grant_namespace_permission("acme/orders", role, ["consume"])
        root.grant_namespace_permission("acme/dead", "courier", ["produce"])
        root.grant_namespace_permission("acme/dead", "keeper", ["produce", "consume"])
        yield process, root
    finally:
        root.close()
        process.stop()


def raw(process: BrokerProcess, role: str | None = None) -> RawPulsar:
    conn = RawPulsar(process.address)
    if role is None:
        conn.connect()
    else:
        conn.connect(auth_method_name="token", auth_data=create_token(SECRET, role).encode())
    return conn


def get_or_create_schema(conn: RawPulsar, topic: str) -> cmd.CommandGetOrCreateSchemaResponse:
    conn.send(frame(T(type=T.GET_OR_CREATE_SCHEMA, getOrCreateSchema=cmd.CommandGetOrCreateSchema(
        request_id=7, topic=topic, schema=cmd.Schema(name="s", schema_data=b"", type=cmd.Schema.String)))))
    return conn.expect(T.GET_OR_CREATE_SCHEMA_RESPONSE).getOrCreateSchemaResponse


def stored_schema_mentions(data_dir: Path, tenant: str) -> list[str]:
    """What the broker's metadata holds of ``tenant``'s schemas (files, and the old single file's text)."""
    found = [str(p) for p in (data_dir / "metadata").rglob("*") if tenant in str(p)]
    legacy = data_dir / "metadata" / "schemas.json"
    if legacy.exists() and tenant in legacy.read_text():
        found.append(str(legacy))
    return found


# ------------------------------------------------------------------ schemas where no topic may be
def test_without_authentication_no_schema_is_stored_for_a_tenant_that_does_not_exist(open_broker):
    with raw(open_broker) as conn:
        answer = get_or_create_schema(conn, GHOST)
    assert answer.error_code == cmd.TopicNotFound, answer
    client = pulsar.Client(open_broker.service_url, operation_timeout_seconds=5, logger=QUIET)
    try:
        with pytest.raises(Exception):
            client.create_producer(GHOST, schema=StringSchema())
        with pytest.raises(Exception):
            client._client.get_schema_info(GHOST, -1)
    finally:
        client.close()
    assert stored_schema_mentions(open_broker.data_dir, "ghost-tenant") == []


def test_get_or_create_schema_wants_an_existing_topic_and_registers_on_one(open_broker):
    topic = f"persistent://public/default/{_unique('schema')}"
    with raw(open_broker) as conn:
        assert get_or_create_schema(conn, topic).error_code == cmd.TopicNotFound
    client = pulsar.Client(open_broker.service_url, operation_timeout_seconds=10, logger=QUIET)
    try:
        client.create_producer(topic).close()  # the topic exists now, without a schema
        with raw(open_broker) as conn:
            answer = get_or_create_schema(conn, topic)
        assert not answer.HasField("error_code") and answer.schema_version == bytes(8)
        assert str(client._client.get_schema_info(topic, -1).schema_type()) == "SchemaType.STRING"
    finally:
        client.close()


def test_with_authentication_not_even_a_super_user_stores_a_schema_for_a_missing_tenant(secured):
    process, _ = secured
    with raw(process, "root") as conn:
        answer = get_or_create_schema(conn, GHOST)
    assert answer.error_code == cmd.TopicNotFound, answer
    assert stored_schema_mentions(process.data_dir, "ghost-tenant") == []


# ------------------------------------------------------------------ initial_subscription_name
def test_a_produce_only_role_cannot_make_a_subscription_through_initial_subscription_name(secured):
    process, root = secured
    topic = f"persistent://acme/orders/{_unique('init')}"
    with raw(process, "writer") as conn:
        answer = conn.producer(topic, initial_subscription_name="sneaky")
    assert (answer.type, answer.error.error) == (T.ERROR, cmd.AuthorizationError), answer
    assert "sneaky" not in root.topic_stats(topic)["subscriptions"]
    with raw(process, "writer") as conn:  # the same role produces without it
        assert conn.producer(topic).type == T.PRODUCER_SUCCESS


def test_a_role_that_may_consume_gets_its_initial_subscription(secured):
    process, root = secured
    topic = f"persistent://acme/orders/{_unique('init')}"
    with raw(process, "worker") as conn:
        assert conn.producer(topic, initial_subscription_name="kept").type == T.PRODUCER_SUCCESS
    assert "kept" in root.topic_stats(topic)["subscriptions"]


@pytest.mark.parametrize("role, made", [("courier", False), ("keeper", True)])
def test_a_dead_letter_producer_makes_its_initial_subscription_only_for_a_role_that_may_consume(
        secured, role, made):
    process, root = secured
    source = f"persistent://acme/orders/{_unique('src')}"
    dead = f"persistent://acme/dead/{_unique('dlq')}"
    client = pulsar.Client(process.service_url, authentication=pulsar.AuthenticationToken(create_token(SECRET, role)),
                           operation_timeout_seconds=10, logger=QUIET)
    admin = Admin(process.service_url, operation_timeout_seconds=10,
                  authentication=AuthenticationToken(create_token(SECRET, "root")))
    try:
        consumer = client.subscribe(source, "work", consumer_type=pulsar.ConsumerType.Shared,
                                    negative_ack_redelivery_delay_ms=100,
                                    dead_letter_policy=pulsar.ConsumerDeadLetterPolicy(
                                        1, dead_letter_topic=dead, initial_subscription_name="dead-sub"))
        root_client = pulsar.Client(process.service_url, logger=QUIET, operation_timeout_seconds=10,
                                    authentication=pulsar.AuthenticationToken(create_token(SECRET, "root")))
        root_client.create_producer(source).send(b"poison")
        root_client.close()

        def nack_and_see_dead_topic() -> bool:
            try:
                consumer.negative_acknowledge(consumer.receive(200))
            except pulsar.Timeout:
                pass
            # the dead-letter producer's PRODUCER creates the topic; its subscription is decided at once
            return dead in admin.list_topics("acme/dead")
        assert wait_until(nack_and_see_dead_topic, timeout_s=30)
        subscriptions = admin.topic_stats(dead)["subscriptions"]
        assert ("dead-sub" in subscriptions) is made, subscriptions
    finally:
        admin.close()
        client.close()
