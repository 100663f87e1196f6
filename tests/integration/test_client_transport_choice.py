"""Client(transport="auto") against real brokers: against pulsarlike it takes the transport
transport_choice.FASTER_ON_PULSARLIKE names, against pulsar-lite (not pulsarlike) the binary protocol; and the
Client calls that are not producers or consumers answer over the binary transport as over gRPC."""
from __future__ import annotations

import pytest

from connector import Client, InitialPosition
from connector.client.transport.binary.transport import BinaryTransport
from connector.client.transport.grpc.connection import Connection
from connector.client.transport.choice import FASTER_ON_PULSARLIKE

KINDS = {"grpc": Connection, "binary": BinaryTransport}


def _round_trip(client: Client, topic: str) -> bytes:
    consumer = client.subscribe(topic, "s", initial_position=InitialPosition.Earliest)
    client.create_producer(topic).send(b"hello")
    msg = consumer.receive(10_000)
    consumer.acknowledge(msg)
    return msg.data()


def test_against_pulsarlike_auto_takes_the_transport_measured_faster(broker, topic):
    with Client(broker.service_url) as client:
        assert _round_trip(client, topic) == b"hello"
        assert client._connection.chosen == FASTER_ON_PULSARLIKE
        assert isinstance(client._connection.resolve(), KINDS[FASTER_ON_PULSARLIKE])


def test_against_another_broker_auto_takes_the_binary_protocol(pulsar_lite_broker, topic):
    with Client(pulsar_lite_broker.service_url) as client:
        assert _round_trip(client, topic) == b"hello"
        assert client._connection.chosen == "binary"
        assert not client._connection.positions.dense  # pulsar-lite's ids are (ledger, entry), not offsets


@pytest.mark.transports
def test_the_client_s_own_calls_answer_alike_over_each_transport(client, admin, topic, broker):
    admin.create_partitioned_topic(topic, 2)
    assert client.get_topic_partitions(topic) == [f"{topic}-partition-0", f"{topic}-partition-1"]
    info = client.get_service_info()
    assert (info.service_url, info.use_tls) == (broker.service_url, False)
