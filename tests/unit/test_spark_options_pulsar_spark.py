"""StreamNative pulsar-spark's option names on pulsarlike's Spark source (issue 22): accepted with their
meaning, and an unknown one still refused naming the closest."""
from __future__ import annotations

import logging

import pytest

from connector.spark.options import new_subscription_name, parse_source_options

BASE = {"service.url": "pulsar://127.0.0.1:6650", "topic": "t"}


def parse(streaming: bool = False, **extra: str):
    return parse_source_options({**BASE, **extra}, streaming)


def test_admin_url_is_accepted_and_checked_as_an_http_url():
    assert parse(**{"admin.url": "http://127.0.0.1:8080"}).pulsar_spark.admin_url == "http://127.0.0.1:8080"
    with pytest.raises(ValueError, match=r"admin.url='pulsar://x:6650' is not valid; use the broker's HTTP"):
        parse(**{"admin.url": "pulsar://x:6650"})


def test_predefined_subscription_is_the_subscription_name():
    opts = parse(streaming=True, predefinedSubscription="orders-app")
    assert opts.subscription_name == "orders-app"
    with pytest.raises(ValueError, match="name the same option"):
        parse(predefinedSubscription="a", subscriptionName="b")


def test_spark_lower_cases_the_names_and_they_are_still_recognised():
    opts = parse_source_options({**BASE, "predefinedsubscription": "s", "pulsar.reader.readcompacted": "true",
                                 "admin.url": "https://h:8443"}, False)
    assert (opts.subscription_name, opts.read_compacted) == ("s", True)


def test_a_subscription_prefix_names_the_subscriptions_queries_create():
    opts = parse(streaming=True, subscriptionPrefix="etl")
    assert new_subscription_name(opts.pulsar_spark.subscription_prefix).startswith("etl-")
    with pytest.raises(ValueError, match="subscriptionPrefix"):
        parse(subscriptionPrefix="a b")


def test_reader_settings_apply_read_compacted_and_the_receiver_queue_size():
    opts = parse(**{"pulsar.reader.readCompacted": "true", "pulsar.reader.receiverQueueSize": "500"})
    assert opts.read_compacted is True
    assert opts.pulsar_spark.receiver_queue_size == 500
    with pytest.raises(ValueError, match="receiverQueueSize='0' is not valid"):
        parse(**{"pulsar.reader.receiverQueueSize": "0"})
    with pytest.raises(ValueError, match="conflict"):
        parse(readCompacted="false", **{"pulsar.reader.readCompacted": "true"})


def test_the_readers_name_is_the_connectors_and_is_ignored_with_a_log_line(caplog):
    with caplog.at_level(logging.INFO, logger="connector.spark.pulsar_spark_options"):
        parse(**{"pulsar.reader.readerName": "mine"})
    assert "pulsar.reader.readerName" in caplog.text


def test_client_tuning_keys_are_accepted_and_logged_as_having_no_effect(caplog):
    with caplog.at_level(logging.INFO, logger="connector.spark.pulsar_spark_options"):
        parse(**{"pulsar.client.operationTimeoutMs": "30000", "pulsar.client.numIoThreads": "4"})
    assert "pulsar.client.operationTimeoutMs" in caplog.text and "no such setting" in caplog.text


def test_client_authentication_keeps_applying_through_the_prefix():
    opts = parse(**{"pulsar.client.authPluginClassName": "token", "pulsar.client.authParams": "token:abc"})
    assert opts.security.auth_plugin == "token"


@pytest.mark.parametrize("key, hint", [
    ("pulsar.client.operationTimeoutMS2", "pulsar.client.operationTimeoutMs"),
    ("pulsar.reader.receiverQueueSze", "pulsar.reader.receiverQueueSize"),
    ("predefinedSubscripton", "predefinedSubscription"),
    ("admin.urll", "admin.url"),
])
def test_an_unknown_option_is_refused_naming_the_closest(key, hint):
    with pytest.raises(ValueError, match=rf"unknown option '{key}'.*did you mean '{hint}'"):
        parse(**{key: "1"})


def test_an_unknown_reader_key_with_nothing_close_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"Known pulsar.reader.\* keys: readCompacted, receiverQueueSize"):
        parse(**{"pulsar.reader.cryptoKeyReader": "x"})  # a Java object there: the key options instead
