"""Subscription properties (Pulsar's ``subscriptionProperties``) over real HTTP: replaced and read with
``.../subscription/{sub}/properties``, given when a subscription is created (the ``PUT subscription/{sub}``
body, a SUBSCRIBE's ``subscription_properties``), shown in the topic's stats, kept with the cursor across a
restart, merged over a partitioned topic's partitions."""
from __future__ import annotations

import uuid

import pulsar

from broker_core.protocol import pulsar_api_pb2 as wire
from tests.integration.test_http_admin_messages import rest
from tests.integration.test_http_admin_server import admin_http
from tests.pulsar_wire import T, RawPulsar

EARLIEST = {"ledgerId": -1, "entryId": -1}


def name(prefix: str = "persistent") -> str:
    return f"{prefix}://public/default/sp-{uuid.uuid4().hex[:10]}"


def test_subscription_properties_are_replaced_read_shown_in_stats_and_kept_across_a_restart(tmp_path):
    topic = name()
    with admin_http(tmp_path) as http:
        http.put(rest(topic))
        assert http.put(rest(topic) + "/subscription/s", EARLIEST).status == 204
        assert http.get(rest(topic) + "/subscription/s/properties").body == {}
        assert http.put(rest(topic) + "/subscription/s/properties", {"team": "billing", "tier": "1"}).status == 204
        assert http.get(rest(topic) + "/subscription/s/properties").body == {"team": "billing", "tier": "1"}
        assert http.put(rest(topic) + "/subscription/s/properties", {"tier": "2"}).status == 204  # replaced whole
        stats = http.get(rest(topic) + "/stats").body
        assert stats["subscriptions"]["s"]["subscriptionProperties"] == {"tier": "2"}
    with admin_http(tmp_path) as http:
        assert http.get(rest(topic) + "/subscription/s/properties").body == {"tier": "2"}
        assert http.put(rest(topic) + "/subscription/s/properties", {}).status == 204
        assert http.get(rest(topic) + "/subscription/s/properties").body == {}


def test_a_subscription_created_with_properties_has_them_and_bad_ones_are_refused(tmp_path):
    topic = name()
    with admin_http(tmp_path) as http:
        http.put(rest(topic))
        body = dict(EARLIEST, properties={"owner": "etl"})
        assert http.put(rest(topic) + "/subscription/s", body).status == 204
        assert http.get(rest(topic) + "/subscription/s/properties").body == {"owner": "etl"}
        assert http.put(rest(topic) + "/subscription/s/properties", {"n": 1}).status == 400
        assert http.put(rest(topic) + "/subscription/s/properties", ["a"]).status == 400
        assert http.get(rest(topic) + "/subscription/nope/properties").status == 404
        assert http.put(rest(topic) + "/subscription/nope/properties", {"a": "b"}).status == 404


def test_a_partitioned_topics_subscription_properties_are_set_on_every_partition(tmp_path):
    topic = name()
    with admin_http(tmp_path) as http:
        http.put(rest(topic) + "/partitions", 2)
        http.put(rest(topic) + "/subscription/s", EARLIEST)
        http.put(rest(topic) + "/subscription/s/properties", {"k": "v"})
        assert http.get(rest(topic) + "/subscription/s/properties").body == {"k": "v"}
        for i in range(2):
            assert http.get(rest(f"{topic}-partition-{i}") + "/subscription/s/properties").body == {"k": "v"}


def test_a_subscribe_creating_the_subscription_brings_its_properties_an_existing_one_keeps_its_own(tmp_path):
    topic = name()
    with admin_http(tmp_path) as http:
        http.put(rest(topic))
        host = http.broker.service_url.split("://", 1)[1]
        with RawPulsar(host) as raw:
            raw.connect()
            props = [wire.KeyValue(key="app", value="raw")]
            assert raw.subscribe(topic, "fresh", subscription_properties=props).type == T.SUCCESS
            assert raw.subscribe(topic, "fresh", consumer_id=2, request_id=2,
                                 subType=1, subscription_properties=[wire.KeyValue(key="x", value="y")]).type \
                in (T.SUCCESS, T.ERROR)
            assert http.get(rest(topic) + "/subscription/fresh/properties").body == {"app": "raw"}


def test_a_non_persistent_subscription_holds_properties_while_it_lives(tmp_path):
    topic = name("non-persistent")
    with admin_http(tmp_path) as http:
        client = pulsar.Client(http.broker.service_url)  # the official client
        consumer = client.subscribe(topic, "live", consumer_type=pulsar.ConsumerType.Shared)
        assert http.put(rest(topic) + "/subscription/live/properties", {"k": "v"}).status == 204
        assert http.get(rest(topic) + "/subscription/live/properties").body == {"k": "v"}
        assert http.get(rest(topic) + "/stats").body["subscriptions"]["live"]["subscriptionProperties"] == {"k": "v"}
        consumer.close()
        client.close()
