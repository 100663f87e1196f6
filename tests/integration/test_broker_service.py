"""The broker as a service: the CLI process, configuration errors, malformed requests, health."""
from __future__ import annotations

import subprocess
import sys

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from broker_core import Broker
from broker_core.errors import InvalidConfiguration, InvalidMessage
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol import broker_pb2_grpc
from broker_core.protocol.status import error_from_proto, error_from_rpc


def test_cli_prints_the_bound_address_first_and_exits_zero_on_sigterm(broker_process):
    proc = broker_process()
    host, port = proc.address.rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
    with grpc.insecure_channel(proc.address) as channel:
        stub = broker_pb2_grpc.PulsarLikeStub(channel)
        assert stub.ListTopics(pb.ListTopicsRequest(namespace="public/default"), timeout=10).topics == []
    assert proc.terminate() == 0


def test_cli_rejects_an_unknown_config_key_naming_the_closest_one(tmp_path):
    result = subprocess.run([sys.executable, "-m", "broker_core.cli", "broker", "--data-dir", str(tmp_path),
                             "--port", "0", "--set", "maxMesageSize=10"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2
    assert "maxMesageSize" in result.stderr and "maxMessageSize" in result.stderr


def test_cli_reads_a_config_file_and_set_overrides_it(tmp_path, broker_process):
    conf = tmp_path / "broker.conf"
    conf.write_text("# comment\nmaxMessageSize=1000\njournalSyncMode=never\n")
    proc = broker_process("--config", str(conf), "--set", "maxMessageSize=2000")
    with grpc.insecure_channel(proc.address) as channel:
        stub = broker_pb2_grpc.PulsarLikeStub(channel)
        responses = stub.Produce(iter([pb.ProduceRequest(open=pb.ProducerOpen(topic="conf-topic"))]), timeout=10)
        first = next(responses)
    assert first.opened.max_message_size == 2000


def test_broker_rejects_bad_configuration_values():
    with pytest.raises(InvalidConfiguration, match="journalSyncMode"):
        Broker(journalSyncMode="sometimes")
    with pytest.raises(InvalidConfiguration, match="maxMessageSize"):
        Broker(maxMessageSize="big")
    with pytest.raises(InvalidConfiguration, match="did you mean 'allowAutoTopicCreation'"):
        Broker(allowAutoTopicCreaton=False)


def test_malformed_request_gets_an_error_status_and_the_broker_keeps_serving(broker):
    with grpc.insecure_channel(broker.address) as channel:
        raw = channel.unary_unary("/pulsarlike.v1.PulsarLike/TopicStats",
                                  request_serializer=lambda b: b, response_deserializer=lambda b: b)
        with pytest.raises(grpc.RpcError) as info:
            raw(b"\xff\xff\xff\xff\x0f", timeout=10)
        assert info.value.code() != grpc.StatusCode.OK
        stub = broker_pb2_grpc.PulsarLikeStub(channel)
        assert stub.ListTopics(pb.ListTopicsRequest(namespace="public/default"), timeout=10) is not None


def test_produce_stream_must_open_before_sending(broker):
    with grpc.insecure_channel(broker.address) as channel:
        stub = broker_pb2_grpc.PulsarLikeStub(channel)
        responses = list(stub.Produce(iter([pb.ProduceRequest(send=pb.SendBatch())]), timeout=10))
    assert len(responses) == 1
    assert isinstance(error_from_proto(responses[0].error), InvalidMessage)


def test_entry_with_a_bad_checksum_is_refused_and_the_producer_goes_on(broker):
    from broker_core.errors import ChecksumError
    from broker_core.protocol.codec.entries import encode_entry
    from broker_core.protocol.pulsar_api_pb2 import MessageMetadata

    good = encode_entry(MessageMetadata(producer_name="p", sequence_id=0, publish_time=1), b"hello")
    bad = bytearray(good)
    bad[-1] ^= 0xFF
    requests = [pb.ProduceRequest(open=pb.ProducerOpen(topic="crc-topic")),
                pb.ProduceRequest(send=pb.SendBatch(entries=[pb.SendEntry(sequence_id=0, num_messages=1,
                                                                          data=bytes(bad))])),
                pb.ProduceRequest(send=pb.SendBatch(entries=[pb.SendEntry(sequence_id=1, num_messages=1,
                                                                          data=good)]))]
    with grpc.insecure_channel(broker.address) as channel:
        stub = broker_pb2_grpc.PulsarLikeStub(channel)
        it = stub.Produce(iter(requests), timeout=10)
        kinds = [next(it).WhichOneof("response") for _ in range(3)]
        it.cancel()
    assert kinds == ["opened", "failure", "receipts"]


def test_unknown_topic_in_unary_call_is_a_typed_error(broker):
    with grpc.insecure_channel(broker.address) as channel:
        stub = broker_pb2_grpc.PulsarLikeStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            stub.TopicStats(pb.TopicRequest(topic="persistent://public/default/never-created"), timeout=10)
    from broker_core.errors import TopicNotFound

    assert isinstance(error_from_rpc(info.value), TopicNotFound)


def test_health_service_reports_serving(broker):
    with grpc.insecure_channel(broker.address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        status = stub.Check(health_pb2.HealthCheckRequest(service="pulsarlike.v1.PulsarLike"), timeout=10).status
    assert status == health_pb2.HealthCheckResponse.SERVING
