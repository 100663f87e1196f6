"""pulsar-client's argument checks: a wrong type is a ValueError (its ``_check_type`` words) raised before any I/O
-- Client, ServiceInfo, create_producer, subscribe, create_reader -- while what pulsarlike takes beyond
pulsar-client (float timeouts) still works. No broker: the client connects at first use."""
from __future__ import annotations

import pytest

from connector import Client, MessageId
from connector.client.arg_checks import check_type
from connector.client.service_info import ServiceInfo

URL = "pulsar://127.0.0.1:1"


@pytest.fixture
def client():
    c = Client(URL)
    yield c
    c.close()


def test_the_message_is_pulsar_clients():
    with pytest.raises(ValueError, match="Argument use_tls is expected to be of type 'bool' and not 'str'"):
        check_type(bool, "yes", "use_tls")


@pytest.mark.parametrize("kwargs", [
    {"authentication": "test"}, {"authentication": object()}, {"operation_timeout_seconds": "test"}, {"stats_interval_in_seconds": "test"},
    {"io_threads": "test"}, {"message_listener_threads": "test"}, {"concurrent_lookup_requests": "test"},
    {"use_tls": "test"}, {"tls_trust_certs_file_path": 5}, {"tls_allow_insecure_connection": "test"},
    {"connection_timeout_ms": None}, {"listener_name": 5}])
def test_a_client_argument_of_the_wrong_type_is_a_value_error(kwargs):
    with pytest.raises(ValueError, match="Argument"):
        Client(URL, **kwargs)


def test_a_fractional_timeout_is_still_taken():
    Client(URL, operation_timeout_seconds=0.5, connection_timeout_ms=250.0).close()


@pytest.mark.parametrize("args,kwargs", [((None,), {}), ((URL,), {"authentication": "test"}),
                                         ((URL,), {"tls_trust_certs_file_path": 5})])
def test_a_service_info_argument_of_the_wrong_type_is_a_value_error(args, kwargs):
    with pytest.raises(ValueError):
        ServiceInfo(*args, **kwargs)


@pytest.mark.parametrize("kwargs", [
    {"producer_name": 5}, {"send_timeout_millis": "test"},
    {"compression_type": None}, {"max_pending_messages": "test"}, {"block_if_queue_full": "test"},
    {"batching_enabled": "test"}, {"batching_max_allowed_size_in_bytes": "test"},
    {"batching_max_publish_delay_ms": "test"}, {"properties": "test"}])
def test_a_producer_argument_of_the_wrong_type_is_a_value_error(client, kwargs):
    with pytest.raises(ValueError, match="Argument"):
        client.create_producer("t", **kwargs)


def test_a_producer_without_a_topic_is_a_value_error(client):
    with pytest.raises(ValueError, match="Argument topic"):
        client.create_producer(None)


@pytest.mark.parametrize("args,kwargs", [
    ((None, "s"), {}), (("t", None), {}), (("t", "s"), {"consumer_type": None}),
    (("t", "s"), {"receiver_queue_size": "test"}), (("t", "s"), {"consumer_name": 5}),
    (("t", "s"), {"unacked_messages_timeout_ms": "test"}), (("t", "s"), {"broker_consumer_stats_cache_time_ms": "x"})])
def test_a_consumer_argument_of_the_wrong_type_is_a_value_error(client, args, kwargs):
    with pytest.raises(ValueError, match="Argument"):
        client.subscribe(*args, **kwargs)


@pytest.mark.parametrize("args,kwargs", [
    ((None, MessageId.earliest), {}), (("t", None), {}),
    (("t", MessageId.earliest), {"receiver_queue_size": "test"}), (("t", MessageId.earliest), {"reader_name": 5})])
def test_a_reader_argument_of_the_wrong_type_is_a_value_error(client, args, kwargs):
    with pytest.raises(ValueError, match="Argument"):
        client.create_reader(*args, **kwargs)
