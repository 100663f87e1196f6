"""The Spark source's and sink's topic options take Pulsar's topic-name forms: ``tenant/namespace/topic``
(and ``tenant/namespace/<regex>`` for ``topicsPattern``) as ``persistent://tenant/namespace/...``; the V1
form and other segment counts are refused naming the option."""
from __future__ import annotations

import pytest

from connector.spark.options import parse_source_options
from connector.spark.sink_options import parse_sink_options

URL = {"service.url": "pulsar://127.0.0.1:6650"}


def test_the_topic_option_takes_tenant_namespace_topic():
    assert parse_source_options({**URL, "topic": "acme/orders/t"}, streaming=True).spec.topics == (
        "persistent://acme/orders/t",)


def test_the_topics_option_takes_every_form_and_reads_each_topic_once():
    spec = parse_source_options({**URL, "topics": "acme/orders/t,persistent://acme/orders/t,plain"},
                                streaming=True).spec
    assert spec.topics == ("persistent://acme/orders/t", "persistent://public/default/plain")


def test_topics_pattern_takes_tenant_namespace_regex():
    spec = parse_source_options({**URL, "topicsPattern": "acme/orders/orders-.*"}, streaming=True).spec
    assert spec.namespace == "acme/orders"
    assert spec.matches("persistent://acme/orders/orders-eu")
    assert not spec.matches("persistent://public/default/orders-eu")


@pytest.mark.parametrize("option, value, reason", [
    ("topic", "persistent://acme/us-west/orders/t", "V1 form"),
    ("topic", "acme/orders", "not 2 segments"),
    ("topicsPattern", "orders/x-.*", "a short pattern is <regex> (in public/default) or tenant/namespace/<regex>"),
])
def test_other_forms_are_refused_naming_the_option(option, value, reason):
    with pytest.raises(ValueError, match=f"option {option}") as refused:
        parse_source_options({**URL, option: value}, streaming=True)
    assert reason in str(refused.value)


def test_the_sink_topic_option_takes_tenant_namespace_topic():
    assert parse_sink_options({**URL, "topic": "acme/orders/t"}, streaming=True).topic == "persistent://acme/orders/t"
    with pytest.raises(ValueError, match="option topic: .*V1 form"):
        parse_sink_options({**URL, "topic": "persistent://acme/us-west/orders/t"}, streaming=True)
