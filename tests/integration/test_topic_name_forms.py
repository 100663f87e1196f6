"""Pulsar's topic-name forms at every door: ``tenant/namespace/topic`` is ``persistent://tenant/namespace/topic``
and ``my-topic`` is ``persistent://public/default/my-topic`` on the binary front end (PARTITIONED_METADATA,
LOOKUP, PRODUCER, SUBSCRIBE), on gRPC, in our client (both transports) and the official one, on the admin
API (gRPC and REST) and in the CLI; Pulsar's V1 form ``persistent://tenant/cluster/namespace/topic`` is
refused as ``InvalidTopicName`` naming why, on each wire."""
from __future__ import annotations

import os
import subprocess
import sys
import uuid

import grpc
import pulsar
import pytest

from broker_core import Broker
from broker_core.errors import InvalidTopicName
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol import broker_pb2_grpc
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.status import error_from_rpc
from connector import Admin, Client, InitialPosition, MessageId
from tests.pulsar_wire import RawPulsar, entry, frame

T = cmd.BaseCommand
NAMESPACE = "acme/orders"
V1 = "persistent://acme/us-west/orders/t"
QUIET = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with Broker(data_dir=tmp_path_factory.mktemp("names"), port=0, webServicePort=0) as running:
        admin = Admin(running.service_url)
        try:
            admin.create_tenant("acme")
            admin.create_namespace(NAMESPACE)
        finally:
            admin.close()
        yield running


def short() -> str:
    """A fresh ``acme/orders/<topic>``."""
    return f"{NAMESPACE}/t-{uuid.uuid4().hex[:8]}"


def test_the_binary_front_end_takes_tenant_namespace_topic_in_every_command(broker):
    name = short()
    with RawPulsar(broker.address) as raw:
        raw.connect()
        raw.send(frame(T(type=T.PARTITIONED_METADATA, partitionMetadata=cmd.CommandPartitionedTopicMetadata(
            topic=name, request_id=1))))
        metadata = raw.expect(T.PARTITIONED_METADATA_RESPONSE).partitionMetadataResponse
        assert metadata.response == cmd.CommandPartitionedTopicMetadataResponse.Success and metadata.partitions == 0
        raw.send(frame(T(type=T.LOOKUP, lookupTopic=cmd.CommandLookupTopic(topic=name, request_id=2))))
        assert raw.expect(T.LOOKUP_RESPONSE).lookupTopicResponse.response == cmd.CommandLookupTopicResponse.Connect
        assert raw.producer(name, request_id=3).type == T.PRODUCER_SUCCESS
        assert raw.send_entry(entry(b"short"), sequence_id=0).type == T.SEND_RECEIPT
        assert raw.subscribe(name, "s", request_id=4, initialPosition=cmd.CommandSubscribe.Earliest).type == T.SUCCESS
        raw.send(frame(T(type=T.FLOW, flow=cmd.CommandFlow(consumer_id=1, messagePermits=10))))
        raw.expect(T.MESSAGE)
    client = Client(broker.service_url)  # the same topic under its full name
    try:
        reader = client.create_reader(f"persistent://{name}", MessageId.earliest)
        assert reader.read_next(timeout_millis=10_000).data() == b"short"
    finally:
        client.close()


def test_the_binary_front_end_refuses_the_v1_form_naming_why(broker):
    with RawPulsar(broker.address) as raw:
        raw.connect()
        raw.send(frame(T(type=T.LOOKUP, lookupTopic=cmd.CommandLookupTopic(topic=V1, request_id=1))))
        answer = raw.expect(T.LOOKUP_RESPONSE).lookupTopicResponse
        assert answer.response == cmd.CommandLookupTopicResponse.Failed and answer.error == cmd.InvalidTopicName
        assert "V1 form" in answer.message
        refusal = raw.producer(V1, request_id=2)
        assert refusal.type == T.ERROR and refusal.error.error == cmd.InvalidTopicName
        assert "cluster-scoped namespace" in refusal.error.message


def test_grpc_takes_tenant_namespace_topic_and_refuses_the_v1_form(broker):
    name = short()
    with grpc.insecure_channel(broker.address) as channel:
        stub = broker_pb2_grpc.PulsarLikeStub(channel)
        stub.CreateTopic(pb.TopicRequest(topic=name), timeout=10)
        assert f"persistent://{name}" in stub.ListTopics(pb.ListTopicsRequest(namespace=NAMESPACE), timeout=10).topics
        assert stub.GetPartitionedTopicMetadata(pb.TopicRequest(topic=name), timeout=10).partitions == 0
        opened = next(stub.Produce(iter([pb.ProduceRequest(open=pb.ProducerOpen(topic=name))]), timeout=10))
        assert opened.WhichOneof("response") == "opened"
        with pytest.raises(grpc.RpcError) as refused:
            stub.CreateTopic(pb.TopicRequest(topic=V1), timeout=10)
    error = error_from_rpc(refused.value)
    assert isinstance(error, InvalidTopicName) and "V1 form" in error.message


@pytest.mark.parametrize("transport", ["binary", "grpc"])
def test_our_client_produces_and_consumes_on_tenant_namespace_topic(broker, transport):
    name = short()
    client = Client(broker.service_url, transport=transport)
    try:
        consumer = client.subscribe(name, "s", initial_position=InitialPosition.Earliest)
        producer = client.create_producer(name)
        producer.send(b"over " + transport.encode())
        message = consumer.receive(timeout_millis=10_000)
        assert message.data() == b"over " + transport.encode()
        assert message.topic_name() == f"persistent://{name}" and producer.topic() == f"persistent://{name}"
        with pytest.raises(InvalidTopicName, match="V1 form"):
            client.create_producer(V1)
    finally:
        client.close()


def test_the_official_client_reaches_the_same_topic_by_either_form(broker):
    name = short()
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=10, logger=QUIET)
    try:
        consumer = client.subscribe(f"persistent://{name}", "s", initial_position=pulsar.InitialPosition.Earliest)
        client.create_producer(name).send(b"official")
        assert consumer.receive(10_000).data() == b"official"
    finally:
        client.close()


@pytest.mark.parametrize("door", ["grpc", "rest"])
def test_the_admin_api_takes_tenant_namespace_topic(broker, door):
    name = short()
    admin = Admin(broker.service_url) if door == "grpc" else Admin(admin_url=broker.web_url)
    try:
        admin.create_partitioned_topic(name, 2)
        assert admin.get_partitioned_topic_metadata(name)["partitions"] == 2
        assert f"persistent://{name}-partition-1" in admin.list_topics(NAMESPACE)
        with pytest.raises(InvalidTopicName, match="V1 form"):
            admin.create_topic(V1)
    finally:
        admin.close()


def pulsarlike(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "broker_core.cli", *args], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))


@pytest.mark.parametrize("admin_url", ["service", "web"])
def test_the_cli_admin_takes_tenant_namespace_topic(broker, admin_url):
    name, url = short(), broker.service_url if admin_url == "service" else broker.web_url
    created = pulsarlike("admin", "--admin-url", url, "topics", "create", name)
    assert created.returncode == 0, created.stderr
    listed = pulsarlike("admin", "--admin-url", url, "topics", "list", NAMESPACE)
    assert f"persistent://{name}" in listed.stdout.split()
    stats = pulsarlike("admin", "--admin-url", url, "topics", "stats", name)
    assert stats.returncode == 0 and '"msgInCounter"' in stats.stdout
    refused = pulsarlike("admin", "--admin-url", url, "topics", "create", V1)
    assert refused.returncode != 0 and "V1 form" in refused.stderr


def test_the_cli_produces_and_consumes_on_tenant_namespace_topic(broker):
    name = short()
    produced = pulsarlike("produce", name, "-m", "a,b", "--url", broker.service_url)
    assert produced.returncode == 0, produced.stderr
    consumed = pulsarlike("consume", name, "-s", "s", "-p", "Earliest", "-n", "2", "--url", broker.service_url)
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.splitlines()[-1] == "2 messages successfully consumed"
    refused = pulsarlike("produce", V1, "-m", "a", "--url", broker.service_url)
    assert refused.returncode == 1 and "InvalidTopicName" in refused.stderr
