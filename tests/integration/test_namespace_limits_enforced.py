"""The namespace policies that limit subscriptions, consumers, unacked messages and topics, set over the admin
REST API (Pulsar's routes and bodies), enforced on a real broker for our client over both transports and for
the official pulsar-client (issue 31): each refusal is Pulsar's, and lifting the policy lifts it."""
from __future__ import annotations

import uuid

import pytest

from connector import (Client, ConsumerBusy, ConsumerType, InitialPosition, MessageId, MessageTooBig,
                       NotAllowedError, SubscriptionNotFound, Timeout)
from tests.integration.test_http_admin_server import admin_http
from tests.waiting import wait_until

pulsar = pytest.importorskip("pulsar")


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("ns-limits")) as served:
        yield served


@pytest.fixture
def ns(http):
    name = f"public/lim-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/namespaces/{name}").status == 204
    return name


@pytest.fixture
def topic(ns):
    return f"persistent://{ns}/t-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def ours(http, transport):
    with Client(http.broker.service_url, transport=transport) as client:
        yield client


@pytest.fixture
def official(http):
    client = pulsar.Client(http.broker.service_url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    yield client
    client.close()


def set_policy(http, ns: str, segment: str, value, method: str = "POST") -> None:
    answer = http.call(method, f"/admin/v2/namespaces/{ns}/{segment}", value)
    assert answer.status == 204, answer


def remove_policy(http, ns: str, segment: str) -> None:
    assert http.delete(f"/admin/v2/namespaces/{ns}/{segment}").status == 204


def received(consumer, most: int, timeout_ms: int = 300) -> list:
    """What ``consumer`` gets until nothing comes for ``timeout_ms`` (at most ``most``)."""
    found = []
    while len(found) < most:
        try:
            found.append(consumer.receive(timeout_millis=timeout_ms))
        except (Timeout, pulsar.Timeout):
            break
    return found


# ------------------------------------------------------------------ subscriptions and consumers
@pytest.mark.transports
def test_a_new_subscription_beyond_max_subscriptions_per_topic_is_refused(http, ns, topic, ours):
    set_policy(http, ns, "maxSubscriptionsPerTopic", 1)
    first = ours.subscribe(topic, "s1")
    with pytest.raises(NotAllowedError, match="Exceed the maximum number of subscriptions of the topic"):
        ours.subscribe(topic, "s2")
    first.close()
    ours.subscribe(topic, "s1").close()  # the one it has is not a new one
    remove_policy(http, ns, "maxSubscriptionsPerTopic")
    ours.subscribe(topic, "s2").close()


def test_the_official_client_meets_max_subscriptions_and_max_consumers_per_subscription(http, ns, topic, official):
    set_policy(http, ns, "maxSubscriptionsPerTopic", 1)
    set_policy(http, ns, "maxConsumersPerSubscription", 1)
    official.subscribe(topic, "s1", consumer_type=pulsar.ConsumerType.Shared)
    with pytest.raises(pulsar.NotAllowedError):
        official.subscribe(topic, "s2")
    with pytest.raises(pulsar.ConsumerBusy):
        official.subscribe(topic, "s1", consumer_type=pulsar.ConsumerType.Shared)


@pytest.mark.transports
def test_one_consumer_more_than_max_consumers_per_subscription_is_refused(http, ns, topic, ours):
    set_policy(http, ns, "maxConsumersPerSubscription", 2)
    consumers = [ours.subscribe(topic, "s", consumer_type=ConsumerType.Shared) for _ in range(2)]
    with pytest.raises(ConsumerBusy, match="Subscription reached max consumers limit"):
        ours.subscribe(topic, "s", consumer_type=ConsumerType.Shared)
    ours.subscribe(topic, "other", consumer_type=ConsumerType.Shared).close()  # per subscription
    consumers[0].close()
    ours.subscribe(topic, "s", consumer_type=ConsumerType.Shared).close()


@pytest.mark.transports
def test_a_subscription_type_the_namespace_does_not_enable_is_refused(http, ns, topic, ours):
    set_policy(http, ns, "subscriptionTypesEnabled", ["Shared", "Key_Shared"])
    with pytest.raises(NotAllowedError, match="doesn't support Exclusive sub type"):
        ours.subscribe(topic, "s")
    ours.subscribe(topic, "s", consumer_type=ConsumerType.Shared).close()
    assert http.get(f"/admin/v2/namespaces/{ns}/subscriptionTypesEnabled").body == ["Key_Shared", "Shared"]
    remove_policy(http, ns, "subscriptionTypesEnabled")
    assert http.get(f"/admin/v2/namespaces/{ns}/subscriptionTypesEnabled").body == []
    ours.subscribe(topic, "s2").close()


@pytest.mark.transports
def test_without_auto_subscription_creation_only_existing_subscriptions_take_consumers(http, ns, topic, ours):
    set_policy(http, ns, "autoSubscriptionCreation", {"allowAutoSubscriptionCreation": False})
    with pytest.raises(SubscriptionNotFound, match="Subscription does not exist"):
        ours.subscribe(topic, "s")
    path = f"/admin/v2/persistent/{topic.removeprefix('persistent://')}/subscription/s"
    assert http.put(path, {"ledgerId": -1, "entryId": -1}).status == 204  # the admin API creates it
    ours.subscribe(topic, "s").close()
    with ours.create_reader(topic, MessageId.earliest) as reader:  # a reader's is not durable
        assert reader.has_message_available() is False
    remove_policy(http, ns, "autoSubscriptionCreation")
    ours.subscribe(topic, "s2").close()


def test_the_official_client_is_refused_a_subscription_that_does_not_exist(http, ns, topic):
    set_policy(http, ns, "autoSubscriptionCreation", {"allowAutoSubscriptionCreation": False})
    # its C++ core retries SubscriptionNotFound (not one of its fatal results) until the operation timeout,
    # as against Pulsar
    client = pulsar.Client(http.broker.service_url, operation_timeout_seconds=1,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        with pytest.raises(pulsar.Timeout):
            client.subscribe(topic, "s")
    finally:
        client.close()


# ------------------------------------------------------------------ unacked messages
@pytest.mark.transports
def test_a_shared_consumer_at_max_unacked_messages_per_consumer_gets_more_once_it_acks(http, ns, topic, ours):
    set_policy(http, ns, "maxUnackedMessagesPerConsumer", 3)
    consumer = ours.subscribe(topic, "s", consumer_type=ConsumerType.Shared, receiver_queue_size=100)
    producer = ours.create_producer(topic)
    for i in range(10):
        producer.send(b"%d" % i)
    first = received(consumer, 10)
    assert len(first) == 3
    consumer.acknowledge(first[0])
    assert len(received(consumer, 10)) == 1  # one acknowledged, one more sent
    remove_policy(http, ns, "maxUnackedMessagesPerConsumer")  # the broker's 50,000 again
    assert len(received(consumer, 10)) == 6


@pytest.mark.transports
def test_a_shared_subscription_at_max_unacked_messages_per_subscription_resumes_at_half(http, ns, topic, ours):
    set_policy(http, ns, "maxUnackedMessagesPerSubscription", 4)
    a = ours.subscribe(topic, "s", consumer_type=ConsumerType.Shared, receiver_queue_size=100)
    b = ours.subscribe(topic, "s", consumer_type=ConsumerType.Shared, receiver_queue_size=100)
    producer = ours.create_producer(topic)
    for i in range(12):
        producer.send(b"%d" % i)
    got = [(a, m) for m in received(a, 12)] + [(b, m) for m in received(b, 12)]
    assert len(got) == 4
    stats = http.get(f"/admin/v2/persistent/{topic.removeprefix('persistent://')}/stats").body
    assert stats["subscriptions"]["s"]["blockedSubscriptionOnUnackedMsgs"] is True
    consumer, message = got[0]
    consumer.acknowledge(message)  # 3 still held: above half of 4, nothing more comes
    held = [(a, m) for m in received(a, 12, 100)] + [(b, m) for m in received(b, 12, 100)]
    for consumer, message in got[1:]:  # at half of it or less, it goes on, up to the limit again
        consumer.acknowledge(message)
    seen = 4
    while seen < 12:  # acks may reach the broker one by one or together: never more than 4 are held
        more = wait_until(lambda: [(a, m) for m in received(a, 12, 100)] + [(b, m) for m in received(b, 12, 100)])
        assert more and len(more) <= 4, (seen, len(more))
        seen += len(more)
        for consumer, message in more:
            consumer.acknowledge(message)
    assert seen == 12 and held == []


# ------------------------------------------------------------------ topics
@pytest.mark.transports
def test_a_topic_beyond_max_topics_per_namespace_is_refused_to_the_admin_api_and_to_clients(http, ns, ours):
    set_policy(http, ns, "maxTopicsPerNamespace", 3)
    assert http.get(f"/admin/v2/namespaces/{ns}/maxTopicsPerNamespace").body == 3
    assert http.put(f"/admin/v2/persistent/{ns}/pt/partitions", 2).status == 204
    ours.create_producer(f"persistent://{ns}/auto").close()  # the third topic
    answer = http.put(f"/admin/v2/persistent/{ns}/more")
    assert answer.status == 412 and "Exceed maximum number of topics in namespace" in answer.reason
    with pytest.raises(NotAllowedError, match="Exceed maximum number of topics in namespace"):
        ours.create_producer(f"persistent://{ns}/also-more")
    ours.create_producer(f"persistent://{ns}/auto").close()  # one that exists
    remove_policy(http, ns, "maxTopicsPerNamespace")
    assert http.get(f"/admin/v2/namespaces/{ns}/maxTopicsPerNamespace").body == 0  # the broker's: no limit
    assert http.put(f"/admin/v2/persistent/{ns}/more").status == 204


# ------------------------------------------------------------------ a topic's own limits
def topic_path(topic: str) -> str:
    domain, rest = topic.split("://")
    return f"/admin/v2/{domain}/{rest}"


@pytest.mark.transports
@pytest.mark.parametrize("domain", ["persistent", "non-persistent"])
def test_a_topics_own_max_consumers_per_subscription_wins_over_its_namespaces(http, ns, ours, domain):
    topic = f"{domain}://{ns}/own-{uuid.uuid4().hex[:8]}"
    set_policy(http, ns, "maxConsumersPerSubscription", 1)
    ours.subscribe(topic, "s", consumer_type=ConsumerType.Shared)  # the topic exists: its policies may be set
    assert http.get(f"{topic_path(topic)}/maxConsumersPerSubscription").status == 204  # none of its own
    assert http.post(f"{topic_path(topic)}/maxConsumersPerSubscription", 2).status == 204
    assert http.get(f"{topic_path(topic)}/maxConsumersPerSubscription").body == 2
    ours.subscribe(topic, "s", consumer_type=ConsumerType.Shared)  # the second: the topic allows 2
    with pytest.raises(ConsumerBusy, match="Subscription reached max consumers limit"):
        ours.subscribe(topic, "s", consumer_type=ConsumerType.Shared)
    assert http.delete(f"{topic_path(topic)}/maxConsumersPerSubscription").status == 204
    ours.subscribe(topic, "s2", consumer_type=ConsumerType.Shared)
    with pytest.raises(ConsumerBusy):  # the namespace's 1 again
        ours.subscribe(topic, "s2", consumer_type=ConsumerType.Shared)


def test_a_topics_own_limits_are_served_under_pulsars_topic_segments(http, ns, topic, ours):
    ours.create_producer(topic).close()
    for segment, value in (("maxUnackedMessagesOnConsumer", 7), ("maxUnackedMessagesOnSubscription", 9),
                           ("maxSubscriptionsPerTopic", 3), ("maxConsumersPerSubscription", 4),
                           ("maxMessageSize", 4096)):
        assert http.post(f"{topic_path(topic)}/{segment}", value).status == 204, segment
        assert http.get(f"{topic_path(topic)}/{segment}").body == value, segment
    assert http.post(f"{topic_path(topic)}/maxSubscriptionsPerTopic", -1).status == 412
    assert http.post(f"{topic_path(topic)}/maxSubscriptionsPerTopic", "3").status == 400
    too_big = http.post(f"{topic_path(topic)}/maxMessageSize", http.broker.config.maxMessageSize + 1)
    assert too_big.status == 412 and "maxMessageSize" in too_big.reason
    missing = f"/admin/v2/persistent/{ns}/never-made/maxUnackedMessagesOnConsumer"
    assert http.post(missing, 1).status == 404


@pytest.mark.transports
def test_a_topics_max_unacked_messages_on_consumer_wins_over_its_namespaces(http, ns, topic, ours):
    set_policy(http, ns, "maxUnackedMessagesPerConsumer", 2)
    consumer = ours.subscribe(topic, "s", consumer_type=ConsumerType.Shared, receiver_queue_size=100)
    assert http.post(f"{topic_path(topic)}/maxUnackedMessagesOnConsumer", 5).status == 204
    producer = ours.create_producer(topic)
    for i in range(10):
        producer.send(b"%d" % i)
    assert len(received(consumer, 10)) == 5


@pytest.mark.transports
def test_a_message_over_the_topics_max_message_size_is_refused_and_smaller_ones_go_on(http, ns, topic, ours):
    producer = ours.create_producer(topic)
    assert http.post(f"{topic_path(topic)}/maxMessageSize", 1024).status == 204
    with pytest.raises((MessageTooBig, NotAllowedError), match="Exceed maximum message size"):
        producer.send(b"x" * 2000)
    producer.send(b"small")
    consumer = ours.subscribe(topic, "s", initial_position=InitialPosition.Earliest)
    assert [m.data() for m in received(consumer, 5)] == [b"small"]
    assert http.delete(f"{topic_path(topic)}/maxMessageSize").status == 204  # the broker's 5 MB again
    producer.send(b"x" * 2000)


def test_the_official_client_cannot_send_over_the_topics_max_message_size(http, ns, topic, official):
    producer = official.create_producer(topic, batching_enabled=False)
    assert http.post(f"{topic_path(topic)}/maxMessageSize", 1024).status == 204
    # Pulsar answers SendError (NotAllowed), on which the C++ core reconnects and sends it again, and again:
    # the message is never stored, while smaller ones from another producer are
    outcome: list = []
    producer.send_async(b"x" * 2000, lambda result, msg_id: outcome.append(result))
    other = official.create_producer(topic, batching_enabled=False)
    other.send(b"small")
    stats = lambda: http.get(f"{topic_path(topic)}/stats").body  # noqa: E731
    wait_until(lambda: stats()["msgInCounter"] >= 1)
    assert stats()["msgInCounter"] == 1 and outcome in ([], [pulsar.Result.Timeout])
    assert http.delete(f"{topic_path(topic)}/maxMessageSize").status == 204
    other.send(b"x" * 2000)
