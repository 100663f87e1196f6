"""Client-side API surface: service URLs, MessageId, enums, Result mapping, exports."""
from __future__ import annotations

import pytest

import broker_core.errors as errors_module
import connector
from connector import (
    Client, CompressionType, ConsumerType, InitialPosition, MessageId, ProducerAccessMode, Result)
from connector.client.connection import parse_service_url
from connector.client.enums import check_enum, result_of
from connector.client.reader import start_position


@pytest.mark.parametrize("url,target", [
    ("pulsar://localhost:6650", "localhost:6650"), ("127.0.0.1:5000", "127.0.0.1:5000"),
    ("pulsar://broker-1.example.com:6650/", "broker-1.example.com:6650"),
    ("pulsar://[::1]:6650", "[::1]:6650"),
])
def test_service_url_accepts_pulsar_scheme_and_host_port(url, target):
    assert parse_service_url(url) == target


@pytest.mark.parametrize("url", ["http://localhost:6650", "localhost", "pulsar://localhost",
                                 "pulsar+ssl://h:6651", "h:0", "h:70000", "", "pulsar://a:1,b:2"])
def test_bad_service_url_names_the_accepted_forms(url):
    with pytest.raises(ValueError, match="pulsar://host:port"):
        parse_service_url(url)


def test_client_rejects_a_bad_url_at_construction():
    with pytest.raises(ValueError, match="host:port"):
        Client("http://localhost:8080")


def test_message_id_offset_and_ordering():
    a = MessageId(0, 10, 0, 3)
    assert a.offset == 13 and MessageId(0, 10).offset == 10
    assert MessageId(0, 10, 0, 2) < a < MessageId(0, 11, 0, -1)
    assert MessageId.deserialize(a.serialize()) == a
    assert MessageId.earliest < a


@pytest.mark.parametrize("mid,inclusive,expected", [
    (MessageId.earliest, False, ("earliest", True)),
    (MessageId.latest, False, ("latest", True)),
    (MessageId(0, 10, -1, 2), False, ("offset", 13)),
    (MessageId(0, 10, -1, 2), True, ("offset", 12)),
])
def test_reader_start_position(mid, inclusive, expected):
    pos = start_position(mid, inclusive)
    assert (pos.WhichOneof("position"), getattr(pos, pos.WhichOneof("position"))) == expected


def test_enum_values_match_the_wire():
    from broker_core.protocol import broker_pb2, pulsar_api_pb2
    assert ConsumerType.KeyShared == broker_pb2.KEY_SHARED_SUB
    assert InitialPosition.Earliest == broker_pb2.EARLIEST
    assert CompressionType.ZSTD == pulsar_api_pb2.ZSTD


def test_bad_enum_option_names_option_and_accepted_values():
    with pytest.raises(ValueError, match="access_mode=9.*ProducerAccessMode.Shared"):
        check_enum("access_mode", 9, ProducerAccessMode)


def test_result_of_maps_errors_by_class_name():
    assert result_of(None) == Result.Ok
    assert result_of(errors_module.MessageTooBig(size=2, limit=1)) == Result.MessageTooBig
    assert result_of(errors_module.Timeout()) == Result.Timeout
    assert result_of(errors_module.CumulativeAcknowledgementNotAllowedError()) == \
        Result.CumulativeAcknowledgementNotAllowedError
    assert result_of(errors_module.CorruptLog()) == Result.UnknownError
    assert result_of(RuntimeError()) == Result.UnknownError


def test_every_broker_error_is_importable_from_connector():
    names = {name for name, value in vars(errors_module).items()
             if isinstance(value, type) and issubclass(value, errors_module.PulsarLikeError)}
    assert names <= set(connector.__all__)
    for name in names:
        assert getattr(connector, name) is getattr(errors_module, name)


def test_public_names_are_importable_from_connector():
    for name in ["Client", "Producer", "Consumer", "Reader", "Message", "MessageId", "Admin",
                 "ConsumerType", "InitialPosition", "CompressionType", "PartitionsRoutingMode",
                 "BatchingType", "ProducerAccessMode", "HashingScheme", "KeySharedMode",
                 "SubscriptionMode", "Result"]:
        assert hasattr(connector, name), name
