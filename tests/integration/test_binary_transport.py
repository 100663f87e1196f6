"""The binary transport (connector.client.transport.binary.transport) against real brokers: a ``pulsarlike broker``
process (its service port speaks Pulsar's binary protocol too), one with token authentication and TLS, and
pulsar-lite (a broker that is not ours). Each unary call the client core makes answers over the binary
protocol what the gRPC transport answers (the same plain values), so the core cannot tell the transports
apart."""
from __future__ import annotations

import uuid

import pytest

from broker_core import errors
from broker_core.security.tokens import create_token, generate_secret_key
from connector import Admin, AuthenticationTLS, AuthenticationToken, Client
from connector.client.transport.binary.transport import BinaryTransport
from connector.client.transport.grpc.connection import Connection
from connector.client.transport.events import LastMessage, TopicSchema
from connector.client.security import Security, TlsOptions
from tests.brokers import BrokerProcess, restartable_port
from tests.security_certs import as_args, make_tls, secret_setting

SECRET = generate_secret_key()


def _topic() -> str:
    return f"persistent://public/default/bin-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def broker_proc(tmp_path_factory):
    process = BrokerProcess(tmp_path_factory.mktemp("binary-transport")).start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def both(broker_proc):
    """(gRPC connection, binary transport) to the same broker."""
    grpc_conn = Connection(broker_proc.service_url, 10, 10)
    binary = BinaryTransport(broker_proc.service_url, 10, 10)
    yield grpc_conn, binary
    binary.close()
    grpc_conn.close()


def _same(both, method: str, *args):
    grpc_conn, binary = both
    return getattr(grpc_conn, method)(*args), getattr(binary, method)(*args)


def test_the_first_connection_says_the_broker_is_pulsarlike_and_positions_are_dense(both):
    _, binary = both
    binary.ensure_ready()
    conn = binary.service_connection()
    assert conn.is_pulsarlike and conn.server_version.startswith("pulsarlike")
    assert binary.positions.dense


def test_partitioned_metadata_lists_and_lookups_answer_as_over_grpc(both, broker_proc):
    topic, partitioned = _topic(), _topic()
    fleeting = _topic().replace("persistent://", "non-persistent://")
    with Admin(broker_proc.service_url) as admin:
        admin.create_topic(topic)
        admin.create_topic(fleeting)
        admin.create_partitioned_topic(partitioned, 3)
    for name, count in ((topic, 0), (partitioned, 3)):
        assert _same(both, "partitions", name) == (count, count)
    grpc_reply, binary_reply = _same(both, "list_topics", "public/default")
    assert binary_reply == grpc_reply and {topic, fleeting} <= set(binary_reply)
    _, binary = both
    with Admin(broker_proc.service_url) as admin:
        assert binary.broker_url(topic) == admin.lookup_topic(topic)


def test_last_message_ids_answer_as_over_grpc_empty_written_and_missing(both, broker_proc):
    topic = _topic()
    grpc_conn, binary = both
    binary.create_topic(topic)
    assert _same(both, "last_message", topic) == (LastMessage(), LastMessage())
    with Client(broker_proc.service_url, transport="grpc") as client:
        producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=3)
        for i in range(4):
            producer.send_async(b"m%d" % i, None)
        producer.flush()
    grpc_reply, binary_reply = _same(both, "last_message", topic)
    assert binary_reply.last_offset == grpc_reply.last_offset == 3
    assert (binary_reply.ledger_id, binary_reply.entry_id, binary_reply.batch_index) == \
        (grpc_reply.ledger_id, grpc_reply.entry_id, grpc_reply.batch_index)
    with pytest.raises(errors.TopicNotFound):
        binary.last_message(_topic())


def test_schemas_are_created_and_read_back_as_over_grpc(both):
    topic = _topic()
    grpc_conn, binary = both
    schema = TopicSchema("Json", b'{"type":"record"}', "s", properties={"k": "v"})
    for transport in (grpc_conn, binary):  # no topic: no schema either
        with pytest.raises(errors.TopicNotFound):
            transport.register_schema(topic, schema)
    binary.create_topic(topic)
    with pytest.raises(errors.TopicNotFound):
        binary.schema(topic)
    assert binary.register_schema(topic, schema) == 0
    for version in (-1, 0):
        grpc_reply, binary_reply = _same(both, "schema", topic, version)
        assert binary_reply == grpc_reply == TopicSchema("Json", b'{"type":"record"}', "s", 0, {"k": "v"})
    with pytest.raises(errors.IncompatibleSchema):
        binary.register_schema(topic, TopicSchema("Avro", b'{"type":"string"}'))


def test_created_topics_and_subscriptions_exist_for_the_broker(both, broker_proc):
    topic = _topic()
    _, binary = both
    binary.create_topic(topic, retry=True)
    binary.create_subscription(topic, "sub-a", earliest=True)
    with Admin(broker_proc.service_url) as admin:
        assert topic in admin.list_topics("public/default")
        assert admin.list_subscriptions(topic) == ["sub-a"]


def test_bad_names_fail_typed(both):
    _, binary = both
    with pytest.raises(errors.InvalidTopicName):
        binary.broker_url("a b//c")


# ---------------------------------------------------------------- tokens and TLS
@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    folder = tmp_path_factory.mktemp("binary-secured")
    tls = make_tls(folder / "tls")
    settings = {**tls.broker_settings(), "brokerServicePortTls": "0", "authenticationEnabled": "true",
                "authenticationProviders": "token,tls", "tokenSecretKey": secret_setting(SECRET)}
    process = BrokerProcess(folder / "data", *as_args(settings)).start()
    line = process.proc.stdout.readline().strip()
    assert line.startswith("pulsarlike broker TLS on pulsar+ssl://"), line
    yield process, line.rsplit(" ", 1)[1], tls
    process.stop()


def test_a_token_opens_the_connection_and_none_is_refused(secured):
    process, _, _ = secured
    with_token = BinaryTransport(process.service_url, 5, 5, Security(AuthenticationToken(create_token(SECRET, "bob"))))
    try:
        assert with_token.partitions(_topic()) == 0
    finally:
        with_token.close()
    anonymous = BinaryTransport(process.service_url, 5, 5)
    with pytest.raises(errors.AuthenticationError):
        anonymous.ensure_ready()
    anonymous.close()


def test_tls_connects_with_the_ca_and_refuses_a_broker_it_does_not_trust(secured):
    process, tls_url, tls = secured
    token = Security(AuthenticationToken(create_token(SECRET, "bob")), TlsOptions(trust_certs_file=tls.ca))
    transport = BinaryTransport(tls_url, 5, 5, token)
    try:
        topic = _topic()
        transport.create_topic(topic)
        assert transport.broker_url(topic).startswith("pulsar+ssl://")
    finally:
        transport.close()
    untrusted = BinaryTransport(tls_url, 5, 5, Security(tls=TlsOptions(trust_certs_file=str(tls.other_ca.cert_file))))
    with pytest.raises(errors.ConnectError, match="not trusted"):
        untrusted.ensure_ready()
    untrusted.close()


def test_a_client_certificate_authenticates_over_tls(secured):
    _, tls_url, tls = secured
    cert, key = tls.client("carol")
    transport = BinaryTransport(tls_url, 5, 5, Security(AuthenticationTLS(cert, key), TlsOptions(
        trust_certs_file=tls.ca, cert_file=cert, key_file=key)))
    try:
        assert transport.service_connection().is_pulsarlike
        assert transport.partitions(_topic()) == 0
    finally:
        transport.close()
    without = BinaryTransport(tls_url, 5, 5, Security(tls=TlsOptions(trust_certs_file=tls.ca)))
    with pytest.raises(errors.AuthenticationError):
        without.ensure_ready()
    without.close()


# ---------------------------------------------------------------- a broker restart
def test_a_stopped_broker_is_a_connect_error_and_the_transport_reconnects_once_it_is_back(tmp_path):
    process = BrokerProcess(tmp_path, port=restartable_port()).start()
    transport = BinaryTransport(process.service_url, 10, 2)
    try:
        topic = _topic()
        assert transport.partitions(topic) == 0
        process.kill()
        with pytest.raises(errors.ConnectError, match=process.address):
            transport.partitions(topic)
        process.restart()
        assert transport.partitions(topic, retry=True) == 0
    finally:
        transport.close()
        process.stop()


# ---------------------------------------------------------------- a broker that is not ours
def test_pulsar_lite_is_reached_with_packed_positions_and_its_real_ids(pulsar_lite_broker):
    import pulsar

    topic = _topic()
    transport = BinaryTransport(pulsar_lite_broker.service_url, 5, 5)
    try:
        conn = transport.connection_for(topic)
        assert not conn.is_pulsarlike and not transport.positions.dense
        assert transport.partitions(topic) == 0
        transport.create_topic(topic)
        assert transport.last_message(topic).last_offset == -1
        official = pulsar.Client(pulsar_lite_broker.service_url)
        try:
            sent = [official.create_producer(topic, batching_enabled=False).send(b"m%d" % i) for i in range(2)]
        finally:
            official.close()
        last = transport.last_message(topic)
        assert (last.ledger_id, last.entry_id) == (sent[-1].ledger_id(), sent[-1].entry_id())
        assert last.last_offset > 0
        transport.create_subscription(topic, "s")
    finally:
        transport.close()


def test_what_pulsar_lite_leaves_unanswered_is_answered_at_once(pulsar_lite_broker):
    topic = _topic()
    transport = BinaryTransport(pulsar_lite_broker.service_url, 30, 5)
    try:
        with pytest.raises(errors.TopicNotFound, match="GET_SCHEMA"):
            transport.schema(topic)
        with pytest.raises(errors.NotSupported, match="GET_TOPICS_OF_NAMESPACE"):
            transport.list_topics("public/default")
        # registered by a producer carrying it: no registry, no version
        assert transport.register_schema(topic, TopicSchema("String", name="s")) == -1
    finally:
        transport.close()
