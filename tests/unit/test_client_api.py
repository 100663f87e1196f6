"""Client-side API surface: service URLs, MessageId, enums, Result mapping, exports."""
from __future__ import annotations

import pytest

import broker_core.errors as errors_module
import connector
from connector import (
    Client, CompressionType, ConsumerType, InitialPosition, MessageId, ProducerAccessMode, Result)
from connector.client.security import parse_service_url
from connector.client.enums import check_enum, result_of
from connector.client.transport.events import EARLIEST, LATEST, Position
from connector.client.reader import start_position


@pytest.mark.parametrize("url,target", [
    ("pulsar://localhost:6650", "localhost:6650"), ("127.0.0.1:5000", "127.0.0.1:5000"),
    ("pulsar://broker-1.example.com:6650/", "broker-1.example.com:6650"),
    ("pulsar://[::1]:6650", "[::1]:6650"), ("pulsar+ssl://broker:6651", "broker:6651"),
])
def test_service_url_accepts_pulsar_scheme_and_host_port(url, target):
    assert parse_service_url(url) == target


@pytest.mark.parametrize("url", ["http://localhost:6650", "localhost", "pulsar://localhost",
                                 "pulsar+ssl://h", "h:0", "h:70000", "", "pulsar://a:1,b:2"])
def test_bad_service_url_names_the_accepted_forms(url):
    with pytest.raises(ValueError, match="pulsar://host:port"):
        parse_service_url(url)


@pytest.mark.parametrize("url", ["localhost", "pulsar://a:1,b:2", "http://", "https://h:0"])
def test_client_rejects_a_bad_url_at_construction(url):
    with pytest.raises(ValueError, match="host:port"):
        Client(url)


@pytest.mark.parametrize("mid,inclusive,expected", [
    (MessageId.earliest, False, EARLIEST),
    (MessageId.latest, False, LATEST),
    (MessageId(-1, 0, 10, 2), False, Position(13)),
    (MessageId(-1, 0, 10, 2), True, Position(12)),
])
def test_reader_start_position(mid, inclusive, expected):
    assert start_position(mid, inclusive) == expected


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
                 "SubscriptionMode", "Result", "ConsumerBatchReceivePolicy", "PulsarException"]:
        assert hasattr(connector, name), name


# --- create_producer options (checked before anything reaches the broker) --------------------------------
@pytest.fixture
def offline_client():
    c = Client("pulsar://127.0.0.1:9")  # never connected: the options fail first
    yield c
    c.close()


def test_chunking_with_batching_is_rejected_naming_both_options(offline_client):
    # pulsar-client's ValueError, with its message
    with pytest.raises(ValueError, match="Batching and chunking of messages can't be enabled together: "
                                         "chunking_enabled=True needs batching_enabled=False"):
        offline_client.create_producer("t", chunking_enabled=True, batching_enabled=True)


def test_chunking_on_a_non_persistent_topic_is_rejected(offline_client):
    from connector import InvalidConfiguration
    with pytest.raises(InvalidConfiguration, match="persistent topic"):
        offline_client.create_producer("non-persistent://public/default/t", chunking_enabled=True,
                                       batching_enabled=False)


@pytest.mark.parametrize("value", [-1, True, 1.5, "7", 2 ** 63])
def test_initial_sequence_id_must_be_an_int_of_at_least_zero(offline_client, value):
    with pytest.raises(ValueError, match=rf"initial_sequence_id={value!r} is not valid"):
        offline_client.create_producer("t", initial_sequence_id=value)


@pytest.mark.parametrize("option", ["send_timeout_millis", "max_pending_messages",
                                    "batching_max_messages"])
def test_numeric_producer_options_reject_bools(offline_client, option):
    with pytest.raises(ValueError, match=f"{option}=True"):
        offline_client.create_producer("t", **{option: True})


@pytest.mark.parametrize("value", [-5, False, 3.0, None.__class__])
def test_a_send_sequence_id_must_be_an_int_of_at_least_zero(monkeypatch, value):
    from tests.unit import producer_fakes
    producer, _ = producer_fakes.make_producer(monkeypatch)
    with pytest.raises(ValueError, match=r"sequence_id=.* is not valid"):
        producer.send_async(b"x", None, sequence_id=value)
    with pytest.raises(ValueError, match=r"sequence_id=.* is not valid"):
        producer.send(b"x", sequence_id=value)
    producer.send_async(b"x", None, sequence_id=0)  # the producer keeps working
