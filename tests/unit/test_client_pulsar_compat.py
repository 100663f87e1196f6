"""Where pulsarlike's client matches pulsar-client (the official package is the reference): exception names,
defaults of shared arguments, method names; and arguments it cannot honour are refused, not ignored."""
from __future__ import annotations

import inspect

import pytest

import connector
from connector import Client, InvalidConfiguration
from connector.exceptions import PulsarException

pulsar = pytest.importorskip("pulsar")


def test_every_pulsar_client_exception_name_exists_here_under_pulsar_exception():
    import connector.exceptions as ours
    import pulsar.exceptions as theirs

    names = {n for n in dir(theirs) if n[0].isupper() and isinstance(getattr(theirs, n), type)}
    missing = names - set(ours.__all__)
    assert not missing
    assert all(issubclass(getattr(ours, n), PulsarException) for n in names)
    assert issubclass(connector.Timeout, PulsarException) and issubclass(connector.TopicNotFound, PulsarException)


def _shared_defaults(ours, theirs) -> list[tuple[str, object, object]]:
    """(name, ours, theirs) for each argument both have whose defaults differ (enums by value)."""
    mine, reference = inspect.signature(ours).parameters, inspect.signature(theirs).parameters
    diffs = []
    for name in mine.keys() & reference.keys():
        a, b = mine[name].default, reference[name].default
        if name == "schema" or a is inspect.Parameter.empty:
            continue
        if (hasattr(b, "value") or hasattr(a, "value")) and None not in (a, b):
            a, b = int(getattr(a, "value", a)), int(getattr(b, "value", b))
        if a != b:
            diffs.append((name, a, b))
    return diffs


@pytest.mark.parametrize("ours,theirs", [
    (Client.__init__, pulsar.Client.__init__), (Client.create_producer, pulsar.Client.create_producer),
    (Client.subscribe, pulsar.Client.subscribe), (Client.create_reader, pulsar.Client.create_reader),
    (connector.Producer.send, pulsar.Producer.send), (connector.Producer.send_async, pulsar.Producer.send_async),
])
def test_the_arguments_both_clients_have_share_their_defaults(ours, theirs):
    diffs = _shared_defaults(ours, theirs)
    # regex_subscription_mode: None here means "the pattern's own domain, else PersistentOnly" (the same);
    # crypto_failure_action only matters with a crypto_key_reader, which is refused
    assert [d for d in diffs if d[0] not in ("regex_subscription_mode", "crypto_failure_action")] == []


def test_batching_is_off_by_default_as_in_pulsar_client():
    assert inspect.signature(Client.create_producer).parameters["batching_enabled"].default is False


@pytest.mark.parametrize("cls,method", [("Consumer", "batch_receive"), ("Consumer", "pause_message_listener"),
                                        ("Consumer", "resume_message_listener"), ("Message", "has_null_value"),
                                        ("Consumer", "has_reached_end_of_topic")])
def test_pulsar_clients_methods_exist(cls, method):
    assert callable(getattr(getattr(connector, cls), method))


@pytest.mark.parametrize("cls", ["Consumer", "Reader"])
def test_seek_takes_messageid_as_pulsar_client_names_it(cls):
    assert list(inspect.signature(getattr(connector, cls).seek).parameters)[1] == "messageid"


@pytest.mark.parametrize("option", [
    {"logger": object()}, {"log_conf_file_path": "/tmp/log.conf"}])
def test_client_arguments_pulsarlike_cannot_honour_are_refused(option):
    with pytest.raises(InvalidConfiguration, match=next(iter(option))):
        Client("pulsar://127.0.0.1:9", **option)


@pytest.mark.parametrize("option", [
    {"tls_trust_certs_file_path": "ca.pem"}, {"tls_private_key_file_path": "key.pem"},
    {"tls_certificate_file_path": "cert.pem"}, {"tls_allow_insecure_connection": True}])
def test_tls_options_on_a_plain_url_are_refused_not_ignored(option):
    with pytest.raises(InvalidConfiguration, match=f"{next(iter(option))}.*pulsar\\+ssl://"):
        Client("pulsar://127.0.0.1:9", **option)


def test_replication_clusters_are_refused_at_send(monkeypatch):
    from tests.unit import producer_fakes

    producer, _ = producer_fakes.make_producer(monkeypatch)
    with pytest.raises(InvalidConfiguration, match="replication_clusters"):
        producer.send_async(b"x", None, replication_clusters=["other"])
    with pytest.raises(InvalidConfiguration, match="replication_clusters"):
        producer.send(b"x", replication_clusters=["other"])


def test_a_schema_is_refused_rather_than_ignored():
    client = Client("pulsar://127.0.0.1:9")
    try:
        with pytest.raises(InvalidConfiguration, match="schema"):
            client.create_producer("t", schema=object())
    finally:
        client.close()


def test_a_batch_receive_policy_needs_some_limit():
    from connector import ConsumerBatchReceivePolicy

    assert ConsumerBatchReceivePolicy().timeout_ms == 100
    with pytest.raises(ValueError, match="At least one of maxNumMessages, maxNumBytes and timeoutMs"):
        ConsumerBatchReceivePolicy(-1, -1, -1)
