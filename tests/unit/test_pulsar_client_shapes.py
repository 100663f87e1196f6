"""pulsar-client 3.13's shapes where pulsar-client-python's own tests found ours different (issue 33,
``scripts/upstream_client_tests.py``): a ``ServiceInfoProvider`` subclass defined at import, ``pulsar.schema``
as a package, the binding's ``_pulsar`` names, ``send``'s argument order, ``MessageId.deserialize``'s keyword,
``py.typed``. No broker: what is checked happens before any connection."""
from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import _pulsar
import pulsar
import pytest

import pulsarlike
import pulsarlike._pulsar

NOT_A_BROKER = "pulsar://127.0.0.1:9"


def test_a_program_that_defines_a_service_info_provider_subclass_imports():
    class StaticServiceInfoProvider(pulsarlike.ServiceInfoProvider):
        def __init__(self, initial):
            self.initial = initial

        def initial_service_info(self):
            return self.initial

        def initialize(self, on_service_info_update):
            pass

    assert StaticServiceInfoProvider(pulsarlike.ServiceInfo(NOT_A_BROKER)).initial.service_url == NOT_A_BROKER


def test_a_client_given_a_service_info_provider_uses_its_first_service():
    class Provider(pulsarlike.ServiceInfoProvider):
        def __init__(self):
            self.closed = False

        def initial_service_info(self):
            return pulsarlike.ServiceInfo(NOT_A_BROKER)

        def initialize(self, on_service_info_update):
            pass

        def close(self):
            self.closed = True

    provider = Provider()
    client = pulsarlike.Client(provider)  # connects at first use: no broker needed here
    assert client.get_service_info().service_url == NOT_A_BROKER
    client.close()
    assert provider.closed


def test_a_client_given_no_url_string_raises_value_error():
    with pytest.raises(ValueError, match="Argument service_url is expected to be of type 'str', "
                                         "'AutoClusterFailover' or 'ServiceInfoProvider'"):
        pulsarlike.Client(5)


@pytest.mark.parametrize("module", ["definition", "schema", "schema_avro", "schema_protobuf"])
def test_each_module_of_pulsar_schema_exists_with_the_same_objects(module):
    theirs = importlib.import_module(f"pulsar.schema.{module}")
    ours = importlib.import_module(f"pulsarlike.schema.{module}")
    for name in ours.__all__:
        assert getattr(ours, name) is getattr(pulsarlike.schema, name)
        assert hasattr(theirs, name), name


def test_from_pulsar_schema_schema_import_string_schema_works_under_our_name():
    from pulsarlike.schema.schema import StringSchema

    assert StringSchema().decode(StringSchema().encode("hi")) == "hi"


def test_the_bindings_user_visible_names_are_ours():
    assert pulsarlike._pulsar.MessageId is pulsarlike.MessageId
    assert pulsarlike._pulsar.Result is pulsarlike.Result
    assert pulsarlike._pulsar.RegexSubscriptionMode is pulsarlike.RegexSubscriptionMode


def _readable_options(cls):
    conf = cls()
    out = {}
    for name in (n for n in dir(cls) if not n.startswith("_") and n != "properties"):
        try:
            out[name] = getattr(conf, name)()
        except TypeError:  # write-only in the binding
            out[name] = "write-only"
    return out


def _comparable(value):
    if hasattr(value, "getMaxNumMessages"):
        return ("batch", value.getMaxNumMessages(), value.getMaxNumBytes(), value.getTimeoutMs())
    if hasattr(value, "getMaxRedeliverCount"):
        return ("dlq", value.getDeadLetterTopic(), value.getMaxRedeliverCount(), value.getInitialSubscriptionName())
    if hasattr(value, "get_key_shared_mode"):
        return ("ks", int(value.get_key_shared_mode()), value.is_allow_out_of_order_delivery(),
                list(value.get_sticky_ranges()))
    if hasattr(value, "schema_type"):
        return ("schema", str(value.schema_type()), value.name(), value.schema())
    if hasattr(value, "name") and hasattr(value, "value"):  # an enum: by name and number
        return (value.name, int(value.value))
    return value


@pytest.mark.parametrize("name", ["ProducerConfiguration", "ConsumerConfiguration"])
def test_the_bindings_configuration_objects_have_its_options_and_defaults(name):
    theirs = {k: _comparable(v) for k, v in _readable_options(getattr(_pulsar, name)).items()}
    ours = {k: _comparable(v) for k, v in _readable_options(getattr(pulsarlike._pulsar, name)).items()}
    assert ours == theirs


def test_a_binding_configuration_sets_reads_and_checks_as_the_binding():
    producer = pulsarlike._pulsar.ProducerConfiguration()
    assert producer.send_timeout_millis(12) is producer and producer.send_timeout_millis() == 12
    assert producer.property("k", "v") is producer and producer.properties() == {"k": "v"}
    producer.compression_type(pulsarlike.CompressionType.LZ4)
    assert producer.compression_type() == pulsarlike.CompressionType.LZ4
    for bad, error in ((lambda: producer.compression_type(2), TypeError),
                       (lambda: producer.send_timeout_millis("12"), TypeError),
                       (lambda: producer.batching_max_publish_delay_ms(-1), TypeError),
                       (lambda: producer.batching_max_messages(1), ValueError),
                       (lambda: producer.max_pending_messages(-1), ValueError)):
        with pytest.raises(error):
            bad()
    consumer = pulsarlike._pulsar.ConsumerConfiguration()
    assert consumer.consumer_name("my-name") is None and consumer.consumer_name() == "my-name"
    assert consumer.consumer_type(pulsarlike.ConsumerType.Shared) is consumer
    with pytest.raises(ValueError, match="greater than 10 seconds"):
        consumer.unacked_messages_timeout_ms(5000)
    with pytest.raises(TypeError):
        consumer.crypto_key_reader()  # write-only, as in the binding


@pytest.mark.parametrize("method", ["send", "send_async"])
def test_send_takes_its_arguments_in_pulsar_clients_order(method):
    theirs = list(inspect.signature(getattr(pulsar.Producer, method)).parameters)
    ours = list(inspect.signature(getattr(pulsarlike.Producer, method)).parameters)
    assert ours == theirs


def test_message_id_deserialize_takes_message_id_bytes_by_name():
    data = pulsarlike.MessageId(3, 7, 11, -1).serialize()
    got = pulsarlike.MessageId.deserialize(message_id_bytes=data)
    assert (got.partition(), got.ledger_id(), got.entry_id()) == (3, 7, 11)
    assert list(inspect.signature(pulsarlike.MessageId.deserialize).parameters) == \
        list(inspect.signature(pulsar.MessageId.deserialize).parameters)


def test_the_package_is_marked_typed():
    assert (Path(pulsarlike.__file__).parent / "py.typed").is_file()
