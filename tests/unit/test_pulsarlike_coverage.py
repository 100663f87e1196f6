"""``import pulsarlike as pulsar``: pulsar-client 3.13's API, name by name and keyword by keyword, measured by
introspection against the official ``pulsar`` module. Every name a typical application uses is served; a name
that is not served is still there and raises ``NotSupported`` naming it when used (never a silent no-op).
The have/total figures are written to the terminal (and as the test's ``record_property``)."""
from __future__ import annotations

import inspect
import io
import logging
import types

import pulsar
import pytest

import pulsarlike
import pulsarlike._pulsar  # noqa: F401  (its refused names are in REFUSED too)
from pulsarlike._unsupported import REFUSED

NOT_A_BROKER = "pulsar://127.0.0.1:9"

TYPICAL_APP_NAMES = [
    "Client", "MessageId", "Message", "Producer", "Consumer", "Reader", "TableView", "MessageBatch",
    "ConsumerType", "InitialPosition", "CompressionType", "PartitionsRoutingMode", "BatchingType", "KeySharedMode",
    "ProducerAccessMode", "RegexSubscriptionMode", "Result", "LoggerLevel", "ConsoleLogger", "FileLogger",
    "AuthenticationToken", "AuthenticationTLS", "AuthenticationBasic", "Authentication",
    "ConsumerDeadLetterPolicy", "ConsumerBatchReceivePolicy", "ConsumerKeySharedPolicy",
    "exceptions", "schema", "tableview", "BytesSchema", "ServiceInfo",
    "PulsarException", "Timeout", "AlreadyClosed", "TopicNotFound", "ProducerQueueIsFull", "Interrupted",
    "ConnectError", "NotConnected", "TopicTerminated", "IncompatibleSchema", "AuthenticationError",
    "AuthorizationError", "ProducerBusy", "ConsumerBusy", "SubscriptionNotFound", "MessageTooBig",
    "InvalidConfiguration", "ServiceUnitNotReady", "LookupError",
]

KNOWN_MISSING_METHODS: dict[tuple[str, str], str] = {}
"""Methods of pulsar-client's classes pulsarlike's lack (reported in the figures; kept exact below)."""

ACCEPTED_WITHOUT_EFFECT = {
    "__init__": {"io_threads", "message_listener_threads", "concurrent_lookup_requests",
                 "stats_interval_in_seconds"},
    "subscribe": {"broker_consumer_stats_cache_time_ms"},
}
"""Tuning knobs of pulsar-client's C++ core (its thread pools, its stats timer) that have no counterpart in
pulsarlike's client: accepted, with no behaviour attached to them."""

REFUSED_KWARGS = {
    "__init__": {"log_conf_file_path": "/tmp/log4cxx.conf"},
    "subscribe": {"replicate_subscription_state_enabled": True},
}
"""Keyword arguments pulsarlike refuses (with a value that asks for the feature) instead of ignoring."""

CLASSES = ["Client", "Producer", "Consumer", "Reader", "Message", "MessageId", "TableView", "MessageBatch"]
SIGNATURES = ["__init__", "create_producer", "subscribe", "create_reader", "create_table_view"]


def pulsar_public_names() -> list[str]:
    """pulsar-client's API at the top level of ``pulsar``, without what its module merely imported
    (``typing``'s ``Optional``, ``logging``, ``re``, ``timedelta``)."""
    names = []
    for name in dir(pulsar):
        if name.startswith("_"):
            continue
        obj = getattr(pulsar, name)
        home = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", "") or ""
        if home.split(".")[0] in ("pulsar", "_pulsar"):
            names.append(name)
    return sorted(names)


def public_methods(cls: type) -> list[str]:
    return sorted(m for m in dir(cls) if not m.startswith("_"))


def served(name: str) -> bool:
    return hasattr(pulsarlike, name) and name not in REFUSED


def measured() -> dict[str, tuple[int, int]]:
    names = pulsar_public_names()
    figures = {"top-level names": (sum(served(n) for n in names), len(names))}
    schema_names = [n for n in dir(pulsar.schema) if not n.startswith("_")
                    and not isinstance(getattr(pulsar.schema, n), types.ModuleType)]
    figures["pulsar.schema names"] = (
        sum(hasattr(pulsarlike.schema, n) and f"schema.{n}" not in REFUSED for n in schema_names), len(schema_names))
    pairs = [(c, m) for c in CLASSES for m in public_methods(getattr(pulsar, c))]
    figures["methods"] = (sum(hasattr(getattr(pulsarlike, c), m) for c, m in pairs), len(pairs))
    kwargs = [(f, k) for f in SIGNATURES for k in inspect.signature(getattr(pulsar.Client, f)).parameters
              if k != "self"]
    figures["keyword arguments"] = (sum(k not in REFUSED_KWARGS.get(f, {}) for f, k in kwargs), len(kwargs))
    return figures


def test_the_coverage_figures_are_measured_and_reported(record_property, capsys):
    figures = measured()
    report = ", ".join(f"{what} {have}/{total}" for what, (have, total) in figures.items())
    record_property("pulsar_client_coverage", report)
    with capsys.disabled():
        print(f"\npulsarlike vs pulsar-client {pulsar.__version__}: {report}")  # noqa: T201  (the report)
    have, total = figures["top-level names"]
    assert total >= 90 and have >= total - len(REFUSED)


@pytest.mark.parametrize("name", TYPICAL_APP_NAMES)
def test_a_name_a_typical_app_uses_is_served(name):
    assert name in pulsar_public_names(), f"{name} is not pulsar-client's"
    assert served(name), f"pulsarlike.{name} is missing or refused"


@pytest.mark.parametrize("name", pulsar_public_names())
def test_every_name_of_pulsar_client_is_there_served_or_refused_by_name(name):
    assert hasattr(pulsarlike, name)
    assert name in pulsarlike.__all__ or isinstance(getattr(pulsarlike, name), types.ModuleType)


@pytest.mark.parametrize("qualified", sorted(REFUSED))
def test_a_name_not_served_raises_not_supported_naming_it_when_used(qualified):
    prefix, _, name = qualified.rpartition(".")
    module = {"schema": pulsarlike.schema, "functions": pulsarlike.functions, "_pulsar": pulsarlike._pulsar,
              "": pulsarlike}[prefix]
    cls = getattr(module, name)

    with pytest.raises(pulsarlike.NotSupported, match=f"^{qualified}: not supported by pulsarlike"):
        cls()
    type("Mine", (cls,), {})  # defining a subclass is not using it: refused only when constructed


def test_the_schema_module_has_every_name_of_pulsar_schema():
    for name in dir(pulsar.schema):
        if not name.startswith("_") and not isinstance(getattr(pulsar.schema, name), types.ModuleType):
            assert hasattr(pulsarlike.schema, name), name
    assert set(pulsarlike.schema.PULSAR_SCHEMA_NAMES) <= set(dir(pulsar.schema))


def test_every_name_of_pulsar_schema_is_served_protobuf_native_included():
    have, total = measured()["pulsar.schema names"]
    assert (have, total) == (19, 19)
    assert not [name for name in REFUSED if name.startswith("schema.")]


@pytest.mark.parametrize("cls", CLASSES)
def test_the_methods_of_pulsar_clients_classes_are_there(cls):
    missing = [m for m in public_methods(getattr(pulsar, cls)) if not hasattr(getattr(pulsarlike, cls), m)]
    assert missing == [m for c, m in KNOWN_MISSING_METHODS if c == cls]


@pytest.mark.parametrize("function", SIGNATURES)
def test_every_keyword_of_pulsar_client_is_accepted(function):
    theirs = [k for k in inspect.signature(getattr(pulsar.Client, function)).parameters if k != "self"]
    ours = inspect.signature(getattr(pulsarlike.Client, function)).parameters
    assert [k for k in theirs if k not in ours] == []
    assert set(ACCEPTED_WITHOUT_EFFECT.get(function, ())) <= set(theirs)


@pytest.mark.parametrize("function,option", [(f, k) for f, opts in REFUSED_KWARGS.items() for k in opts])
def test_a_keyword_not_served_raises_not_supported_naming_it(function, option):
    value = REFUSED_KWARGS[function][option]
    with pytest.raises(pulsarlike.NotSupported, match=f"{option}.*not supported by pulsarlike"):
        if function == "__init__":
            pulsarlike.Client(NOT_A_BROKER, **{option: value})
        else:
            with pulsarlike.Client(NOT_A_BROKER) as client:
                args = {"create_producer": ("persistent://public/default/t",),
                        "subscribe": ("persistent://public/default/t", "sub"),
                        "create_reader": ("persistent://public/default/t", pulsarlike.MessageId.earliest)}
                getattr(client, function)(*args[function], **{option: value})


def test_not_supported_is_an_invalid_configuration_as_refusals_were_before():
    assert issubclass(pulsarlike.NotSupported, pulsarlike.InvalidConfiguration)
    assert pulsarlike.exceptions.NotSupported is pulsarlike.NotSupported


# --- logger= ------------------------------------------------------------------------------------------
def test_a_logging_logger_gets_the_clients_lines_and_they_stop_at_close():
    lines = io.StringIO()
    app = logging.getLogger("test-pulsarlike-app")
    app.setLevel(logging.DEBUG)
    handler = logging.StreamHandler(lines)
    app.addHandler(handler)
    try:
        client = pulsarlike.Client(NOT_A_BROKER, logger=app)
        logging.getLogger("connector.client.lookup").debug("event=lookup_sent topic=%s", "t")
        client.close()
        logging.getLogger("connector.client.lookup").warning("event=after_close")
    finally:
        app.removeHandler(handler)

    assert lines.getvalue() == "event=lookup_sent topic=t\n"
    assert logging.getLogger("connector").propagate is True


@pytest.mark.parametrize("make", [
    lambda path: pulsarlike.FileLogger(pulsarlike.LoggerLevel.Warn, str(path)),
    lambda path: pulsar.FileLogger(pulsar.LoggerLevel.Warn, str(path))], ids=["ours", "pulsar-client's"])
def test_a_file_logger_writes_the_clients_lines_at_its_level(tmp_path, make):
    path = tmp_path / "client.log"
    with pulsarlike.Client(NOT_A_BROKER, logger=make(path)):
        logging.getLogger("connector.client.lookup").info("event=too_low")
        logging.getLogger("connector.client.lookup").warning("event=reconnecting")

    text = path.read_text()
    assert "WARNING connector.client.lookup event=reconnecting" in text and "too_low" not in text


def test_a_console_logger_writes_on_standard_output(capsys):
    with pulsarlike.Client(NOT_A_BROKER, logger=pulsarlike.ConsoleLogger(pulsarlike.LoggerLevel.Info)):
        logging.getLogger("connector.client.lookup").info("event=to_stdout")

    assert "INFO connector.client.lookup event=to_stdout" in capsys.readouterr().out


def test_a_logger_of_another_kind_is_refused_clearly():
    with pytest.raises(pulsarlike.InvalidConfiguration, match="logger=.*logging.Logger, ConsoleLogger"):
        pulsarlike.Client(NOT_A_BROKER, logger="app")


def test_get_service_info_is_the_url_the_client_was_made_with():
    with pulsarlike.Client(NOT_A_BROKER) as client:
        info = client.get_service_info()
    assert (info.service_url, info.use_tls) == (NOT_A_BROKER, False)
    assert isinstance(info, pulsarlike.ServiceInfo)


def test_a_message_batch_splits_a_batch_payload_as_pulsar_clients_does():
    from broker_core.protocol.codec import BatchMessage
    from broker_core.protocol.codec.batch_encoding import encode_batch

    payload = encode_batch([b"a", BatchMessage(b"bb", partition_key="k"), b"ccc"])
    theirs = pulsar.MessageBatch().with_message_id(pulsar.MessageId(2, 7, 9, -1)).parse_from(payload, 3)
    ours = pulsarlike.MessageBatch().with_message_id(pulsarlike.MessageId(2, 7, 9, -1)).parse_from(payload, 3)

    assert [(m.data(), m.partition_key(), str(m.message_id())) for m in ours] == \
        [(m.data(), m.partition_key(), str(m.message_id())) for m in theirs]


def test_a_message_batch_with_fewer_messages_than_announced_is_refused():
    from broker_core.protocol.codec.batch_encoding import encode_batch

    with pytest.raises(pulsarlike.InvalidMessage):
        pulsarlike.MessageBatch().parse_from(encode_batch([b"a"]), 2)
