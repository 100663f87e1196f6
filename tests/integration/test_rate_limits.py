"""Rate limits enforced on a real broker, set over the admin REST API as pulsar-admin sets them: dispatch
rates (topic, subscription, namespace, the broker's dynamic default, a resource group), publish rates
(topic, a resource group) over both transports, and the subscribe rate over raw binary frames.

What is measured is a count against an upper bound of what the rate allows in the time that passed
(``rate * (periods begun + 1)`` plus one entry): a slow machine only lowers the counts, never raises them, so
no test depends on how fast this machine is; each then checks that everything arrives in the end."""
from __future__ import annotations

import math
import threading
import time
import uuid

import pytest

from broker_core.protocol import pulsar_commands_pb2 as cmd
from tests.integration.test_http_admin_server import admin_http
from tests.pulsar_wire import RawPulsar, T, frame
from tests.waiting import wait_until

from connector import Client, ConsumerType

WINDOW_S = 1.5
"""How long a test counts what the rate lets through."""


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("rates")) as served:
        yield served


@pytest.fixture
def local():
    return f"r-{uuid.uuid4().hex[:10]}"


def allowed(rate: int, period_s: float, elapsed_s: float, per_entry: int = 1) -> int:
    """The most a rate lets through in ``elapsed_s``: a budget per period begun, one more renewed as the count
    was read, and the entry that may overshoot a budget."""
    return rate * (math.ceil(elapsed_s / period_s) + 1) + per_entry


def publish(client: Client, topic: str, n: int) -> None:
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(n):
        producer.send(b"m%d" % i)
    producer.close()


def receive_for(consumer, seconds: float) -> tuple[int, float]:
    """Messages received (and acknowledged) in ``seconds``, and the time that passed."""
    start = time.monotonic()
    got = 0
    while time.monotonic() - start < seconds:
        try:
            message = consumer.receive(timeout_millis=100)
        except Exception:  # noqa: BLE001 -- a receive timeout: nothing more came yet
            continue
        consumer.acknowledge(message)
        got += 1
    return got, time.monotonic() - start


def drain(consumer, expected: int, have: int) -> int:
    """Receive until ``expected`` messages in all (or 30 s): the rate delays them, loses none."""
    deadline = time.monotonic() + 30
    while have < expected and time.monotonic() < deadline:
        try:
            consumer.acknowledge(consumer.receive(timeout_millis=500))
            have += 1
        except Exception:  # noqa: BLE001
            pass
    return have


def stats(http, topic: str) -> dict:
    return http.get(f"/admin/v2/persistent/public/default/{topic}/stats").body


# ------------------------------------------------------------------ dispatch
@pytest.mark.transports
def test_a_topics_dispatch_rate_lets_its_rate_through_per_period(http, local, transport):
    client = Client(http.broker.service_url, transport=transport)
    try:
        topic = f"persistent://public/default/{local}"
        client.subscribe(topic, "s").close()
        publish(client, topic, 25)
        assert http.post(f"/admin/v2/persistent/public/default/{local}/dispatchRate",
                         {"dispatchThrottlingRateInMsg": 5}).status == 204
        consumer = client.subscribe(topic, "s")
        got, elapsed = receive_for(consumer, WINDOW_S)
        assert 1 <= got <= allowed(5, 1, elapsed)
        assert drain(consumer, 25, got) == 25
    finally:
        client.close()


def test_a_namespaces_subscription_dispatch_rate_counts_per_its_period(http):
    namespace = f"public/sd-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/namespaces/{namespace}").status == 204
    assert http.post(f"/admin/v2/namespaces/{namespace}/subscriptionDispatchRate",
                     {"dispatchThrottlingRateInMsg": 4, "ratePeriodInSecond": 2}).status == 204
    topic = f"persistent://{namespace}/t"
    client = Client(http.broker.service_url)
    try:
        a = client.subscribe(topic, "a", consumer_type=ConsumerType.Shared)
        b = client.subscribe(topic, "b", consumer_type=ConsumerType.Shared)
        publish(client, topic, 10)
        start = time.monotonic()
        got_a, _ = receive_for(a, WINDOW_S)
        got_b, _ = receive_for(b, WINDOW_S)  # its own budget: not what a took
        elapsed = time.monotonic() - start
        assert 1 <= got_a <= allowed(4, 2, elapsed) and 1 <= got_b <= allowed(4, 2, elapsed)
        assert got_a < 10  # the 2 s period holds the rest back
        assert drain(a, 10, got_a) == 10
    finally:
        client.close()


def test_a_subscriptions_own_dispatch_rate_wins_over_the_topics(http, local):
    client = Client(http.broker.service_url)
    try:
        topic = f"persistent://public/default/{local}"
        client.subscribe(topic, "slow").close()
        client.subscribe(topic, "fast").close()
        publish(client, topic, 40)
        base = f"/admin/v2/persistent/public/default/{local}"
        assert http.post(f"{base}/subscriptionDispatchRate", {"dispatchThrottlingRateInMsg": 5}).status == 204
        assert http.post(f"{base}/fast/dispatchRate", {"dispatchThrottlingRateInMsg": -1}).status == 204
        assert http.get(f"{base}/fast/dispatchRate").body["dispatchThrottlingRateInMsg"] == -1
        slow, fast = client.subscribe(topic, "slow"), client.subscribe(topic, "fast")
        got, elapsed = receive_for(slow, WINDOW_S)
        assert 1 <= got <= allowed(5, 1, elapsed)
        assert drain(fast, 40, 0) == 40  # unthrottled: the topic's subscription rate does not hold it
        assert http.delete(f"{base}/fast/dispatchRate").status == 204
        assert http.get(f"{base}/fast/dispatchRate").status == 204
    finally:
        client.close()


def test_the_brokers_dynamic_dispatch_rate_applies_to_loaded_topics_at_once(http, local):
    client = Client(http.broker.service_url)
    topic = f"persistent://public/default/{local}"
    try:
        consumer = client.subscribe(topic, "s")
        publish(client, topic, 1)
        assert drain(consumer, 1, 0) == 1
        assert http.post("/admin/v2/brokers/configuration/dispatchThrottlingRatePerTopicInMsg/8").status == 204
        assert http.get("/admin/v2/brokers/configuration/values").body == {"dispatchThrottlingRatePerTopicInMsg": "8"}
        time.sleep(1.1)  # the first period's budget (8) may be partly spent above: start on a fresh one
        publish(client, topic, 40)
        got, elapsed = receive_for(consumer, WINDOW_S)
        assert 1 <= got <= allowed(8, 1, elapsed)
        assert http.delete("/admin/v2/brokers/configuration/dispatchThrottlingRatePerTopicInMsg").status == 204
        assert drain(consumer, 40, got) == 40  # unthrottled again: the rest comes at once
    finally:
        http.delete("/admin/v2/brokers/configuration/dispatchThrottlingRatePerTopicInMsg")
        client.close()


# ------------------------------------------------------------------ publish
def send_in_background(client: Client, topic: str, n: int) -> threading.Thread:
    producer = client.create_producer(topic, batching_enabled=False)

    def run() -> None:
        for i in range(n):
            producer.send(b"p%d" % i)  # one request per message: the throttle holds the next one
        producer.close()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.transports
def test_a_topics_publish_rate_throttles_its_producers(http, local, transport):
    client = Client(http.broker.service_url, transport=transport)
    try:
        topic = f"persistent://public/default/{local}"
        client.create_producer(topic).close()
        assert http.post(f"/admin/v2/persistent/public/default/{local}/publishRate",
                         {"publishThrottlingRateInMsg": 20}).status == 204
        start = time.monotonic()
        sender = send_in_background(client, topic, 100)
        time.sleep(WINDOW_S)
        stored, elapsed = stats(http, local)["msgInCounter"], time.monotonic() - start
        # a full bucket (20), 20 per second since, and the one send that emptied it
        assert 1 <= stored <= 20 + 20 * elapsed + 1
        sender.join(timeout=30)
        assert stats(http, local)["msgInCounter"] == 100
        assert stats(http, local)["publishRateLimitedTimes"] > 0
    finally:
        client.close()


def test_a_resource_groups_publish_rate_holds_its_namespaces_topics_together(http):
    namespace = f"public/rg-{uuid.uuid4().hex[:8]}"
    group = f"rg-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/namespaces/{namespace}").status == 204
    assert http.put(f"/admin/v2/resourcegroups/{group}", {"publishRateInMsgs": 20}).status == 204
    assert http.post(f"/admin/v2/namespaces/{namespace}/resourcegroup/{group}").status == 204
    client = Client(http.broker.service_url)
    try:
        topics = [f"persistent://{namespace}/t{i}" for i in range(2)]
        start = time.monotonic()
        senders = [send_in_background(client, topic, 60) for topic in topics]
        time.sleep(WINDOW_S)
        stored = sum(http.get(f"/admin/v2/persistent/{t.removeprefix('persistent://')}/stats").body["msgInCounter"]
                     for t in topics)
        assert 1 <= stored <= 20 + 20 * (time.monotonic() - start) + 2
        for sender in senders:
            sender.join(timeout=30)
        assert http.delete(f"/admin/v2/resourcegroups/{group}").status == 409  # still attached
        assert http.delete(f"/admin/v2/namespaces/{namespace}/resourcegroup").status == 204
        assert http.delete(f"/admin/v2/resourcegroups/{group}").status == 204
    finally:
        client.close()


# ------------------------------------------------------------------ subscribe
def test_a_consumer_subscribing_over_its_subscribe_rate_is_refused(http, local):
    topic = f"persistent://public/default/{local}"
    Client(http.broker.service_url).create_producer(topic).close()
    assert http.post(f"/admin/v2/persistent/public/default/{local}/subscribeRate",
                     {"subscribeThrottlingRatePerConsumer": 2, "ratePeriodInSecond": 60}).status == 204
    host, port = http.broker.service_url.removeprefix("pulsar://").split(":")
    with RawPulsar(f"{host}:{port}") as raw:
        raw.connect()
        for request_id in (1, 3):
            assert raw.subscribe(topic, "s", consumer_id=7, request_id=request_id,
                                 consumer_name="c").type == T.SUCCESS
            raw.send(frame(T(type=T.CLOSE_CONSUMER, close_consumer=cmd.CommandCloseConsumer(
                consumer_id=7, request_id=request_id + 1))))
            raw.expect(T.SUCCESS)
        refused = raw.subscribe(topic, "s", consumer_id=7, request_id=5, consumer_name="c")
        assert refused.type == T.ERROR and refused.error.error == cmd.NotAllowedError
        assert refused.error.message == "Subscribe limited by subscribe rate limit per consumer."
        assert raw.subscribe(topic, "s", consumer_id=8, request_id=6, consumer_name="d").type == T.SUCCESS


# ------------------------------------------------------------------ what the admin API answers
def test_rates_are_answered_with_pulsars_models_and_refused_as_pulsar_refuses_them(http, local):
    Client(http.broker.service_url).create_producer(f"persistent://public/default/{local}").close()
    base = f"/admin/v2/persistent/public/default/{local}"
    assert http.get(f"{base}/dispatchRate").status == 204
    assert http.post(f"{base}/dispatchRate", {"dispatchThrottlingRateInByte": 1024}).status == 204
    assert http.get(f"{base}/dispatchRate").body == {"dispatchThrottlingRateInMsg": -1,
                                                     "dispatchThrottlingRateInByte": 1024,
                                                     "relativeToPublishRate": False, "ratePeriodInSecond": 1}
    assert http.post(f"{base}/dispatchRate", {"ratePeriodInSecond": 0}).status == 412
    assert http.post(f"{base}/publishRate", {"publishThrottlingRateInMsg": "many"}).status == 400
    assert http.post(f"{base}/subscribeRate", {}).status == 204
    assert http.get(f"{base}/subscribeRate").body == {"subscribeThrottlingRatePerConsumer": -1,
                                                      "ratePeriodInSecond": 30}
    namespace = f"public/nr-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/namespaces/{namespace}").status == 204
    assert http.post(f"/admin/v2/namespaces/{namespace}/publishRate", {"publishThrottlingRateInMsg": 5}).status == 204
    policies = http.get(f"/admin/v2/namespaces/{namespace}").body
    assert policies["publishMaxMessageRate"] == {"standalone": {"publishThrottlingRateInMsg": 5,
                                                                "publishThrottlingRateInByte": -1}}
    assert policies["topicDispatchRate"] == {}


def test_resource_groups_are_answered_as_pulsar_answers_them(http):
    group = f"rg-{uuid.uuid4().hex[:8]}"
    assert http.get(f"/admin/v2/resourcegroups/{group}").status == 404
    assert http.put(f"/admin/v2/resourcegroups/{group}", {"dispatchRateInMsgs": 100}).status == 204
    assert http.put(f"/admin/v2/resourcegroups/{group}", {"publishRateInBytes": 1 << 20}).status == 204
    assert http.get(f"/admin/v2/resourcegroups/{group}").body == {
        "publishRateInMsgs": -1, "publishRateInBytes": 1 << 20, "dispatchRateInMsgs": 100, "dispatchRateInBytes": -1}
    assert group in http.get("/admin/v2/resourcegroups").body
    assert http.post("/admin/v2/namespaces/public/default/resourcegroup/no-such-group").status == 412
    assert http.get("/admin/v2/namespaces/public/default/resourcegroup").status == 204
    assert http.put(f"/admin/v2/resourcegroups/{group}", {"publishRateInMsgs": "x"}).status == 400
    assert http.delete(f"/admin/v2/resourcegroups/{group}").status == 204
    assert http.delete(f"/admin/v2/resourcegroups/{group}").status == 404


def test_the_brokers_configuration_and_stats_are_answered(http, local):
    Client(http.broker.service_url).create_producer(f"persistent://public/default/{local}").close()
    names = http.get("/admin/v2/brokers/configuration").body
    assert "dispatchThrottlingRatePerTopicInMsg" in names and "maxMessageSize" not in names
    runtime = http.get("/admin/v2/brokers/configuration/runtime").body
    assert runtime["maxMessageSize"] == "5242880" and runtime["clusterName"] == "standalone"
    refused = http.post("/admin/v2/brokers/configuration/maxMessageSize/10")
    assert refused.status == 412 and "Can't update non-dynamic configuration" in refused.reason
    assert http.post("/admin/v2/brokers/configuration/subscribeRatePeriodPerConsumerInSecond/0").status == 412
    assert http.delete("/admin/v2/brokers/configuration/maxMessageSize").status == 412
    assert http.get("/admin/v2/brokers/backlog-quota-check").status == 204
    topics = http.get("/admin/v2/broker-stats/topics").body
    assert f"persistent://public/default/{local}" in topics["public/default"]["0x00000000_0xffffffff"]["persistent"]
    metrics = http.get("/admin/v2/broker-stats/metrics").body
    assert {"metrics", "dimensions"} <= set(metrics[0])
