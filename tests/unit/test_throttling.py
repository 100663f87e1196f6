"""Publish and subscribe rate limits, which rates a topic resolves (topic over namespace over broker, Pulsar's
fallbacks), the dynamic configuration and the resource groups' store, with a fake clock and fake timers."""
from __future__ import annotations

import pytest

from broker_core.clock import FakeClock
from broker_core.config import BrokerConfig
from broker_core.core.dynamic_config import DynamicConfig
from broker_core.core.policies import NAMESPACE, TOPIC, PoliciesStore
from broker_core.core.publish_throttle import PublishLimiter
from broker_core.core.rate_settings import BrokerThrottling
from broker_core.core.resource_groups import ResourceGroups
from broker_core.core.throttling import SUBSCRIBE_LIMITED, RateSettings, SubscribeLimiter, TopicThrottling
from broker_core.errors import InvalidConfiguration, NotAllowedError
from broker_core.types import TopicName
from dispatch import Subscription
from dispatch.testing import MemoryEntrySource, make_cursor


class Timers:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.pending: list = []

    def __call__(self, delay_s, callback):
        handle = _Handle(self.clock.monotonic_ms() + delay_s * 1000, callback)
        self.pending.append(handle)
        return handle

    def advance(self, ms: float) -> None:
        self.clock.advance(ms)
        due = [h for h in self.pending if h.at <= self.clock.monotonic_ms() and not h.cancelled]
        self.pending = [h for h in self.pending if h not in due]
        for handle in due:
            handle.callback()


class _Handle:
    def __init__(self, at, callback):
        self.at, self.callback, self.cancelled = at, callback, False

    def cancel(self):
        self.cancelled = True


DISPATCH = {"dispatchThrottlingRateInMsg": 100, "dispatchThrottlingRateInByte": -1, "relativeToPublishRate": False,
            "ratePeriodInSecond": 1}
OFF = {**DISPATCH, "dispatchThrottlingRateInMsg": -1}
T = TopicName.parse("persistent://public/default/t")


# ------------------------------------------------------------------ publish
def test_a_publish_limiter_throttles_once_its_bucket_is_empty_and_resumes_when_it_refills():
    clock = FakeClock()
    timers = Timers(clock)
    limiter = PublishLimiter(100, 0, clock, timers)
    assert not limiter.charge(40, 4000) and not limiter.charge(40, 4000)
    assert limiter.charge(40, 4000)  # -20: empty
    resumed = []
    limiter.hold(lambda: resumed.append(clock.monotonic_ms()))
    timers.advance(200)
    assert not resumed  # -20 + 20 = 0 tokens: not yet
    timers.advance(20)
    assert resumed == [pytest.approx(210, abs=10)]


def test_a_byte_rate_alone_throttles_by_bytes():
    clock = FakeClock()
    limiter = PublishLimiter(0, 1000, clock, Timers(clock))
    assert not limiter.charge(10_000, 999)
    assert limiter.charge(1, 1)


def test_closing_a_publish_limiter_resumes_whoever_it_holds():
    clock = FakeClock()
    limiter = PublishLimiter(1, 0, clock, Timers(clock))
    limiter.charge(5, 0)
    resumed = []
    limiter.hold(lambda: resumed.append(1))
    limiter.close()
    assert resumed == [1]


def test_a_topics_publish_limiters_are_its_own_the_brokers_and_its_groups():
    clock = FakeClock()
    shared = PublishLimiter(1000, 0, clock, Timers(clock))
    throttling = TopicThrottling(clock, scheduler=None, later=Timers(clock))
    throttling.apply(RateSettings(publish={"publishThrottlingRateInMsg": 10, "publishThrottlingRateInByte": -1},
                                  shared_publish=(shared,)), [])
    own, = [p for p in throttling.publish if p is not shared]
    assert own.msg_rate == 10 and shared in throttling.publish
    throttling.apply(RateSettings(publish={"publishThrottlingRateInMsg": 10, "publishThrottlingRateInByte": -1}), [])
    assert throttling.publish == (own,)  # unchanged rates keep their bucket
    throttling.apply(RateSettings(), [])
    assert throttling.publish == ()


# ------------------------------------------------------------------ subscribe
def test_a_consumer_subscribes_its_rate_per_period_then_is_refused_until_the_next():
    clock = FakeClock()
    limiter = SubscribeLimiter(2, 30, clock)
    me, other = ("10.0.0.1", "c"), ("10.0.0.2", "c")
    assert limiter.allow(me) and limiter.allow(me) and not limiter.allow(me)
    assert limiter.allow(other)
    clock.advance(30_000)
    assert limiter.allow(me)


def test_a_subscribe_over_the_rate_is_refused_with_pulsars_reason():
    clock = FakeClock()
    throttling = TopicThrottling(clock, scheduler=None)
    throttling.apply(RateSettings(subscribe={"subscribeThrottlingRatePerConsumer": 1, "ratePeriodInSecond": 30}), [])
    throttling.check_subscribe("h", "c")
    throttling.check_subscribe("h", "d")
    with pytest.raises(NotAllowedError, match=SUBSCRIBE_LIMITED):
        throttling.check_subscribe("h", "c")


# ------------------------------------------------------------------ dispatch limits on subscriptions
def subscription(name: str = "s") -> Subscription:
    return Subscription(name, "t", -1, MemoryEntrySource(), make_cursor(name))


def test_subscriptions_get_the_topics_limit_and_their_own_or_none():
    clock = FakeClock()
    throttling = TopicThrottling(clock, scheduler=None)
    a, b = subscription("a"), subscription("b")
    throttling.apply(RateSettings(dispatch=DISPATCH, subscription_dispatch={**DISPATCH, "dispatchThrottlingRateInMsg": 5},
                                  subscription_overrides={"b": {**DISPATCH, "dispatchThrottlingRateInMsg": 7}}), [a, b])
    assert [limit.msg_rate for limit in a.throttle.limits] == [100, 5]
    assert [limit.msg_rate for limit in b.throttle.limits] == [100, 7]
    assert a.throttle.limits[0] is b.throttle.limits[0]  # the topic's limit is shared
    throttling.apply(RateSettings(dispatch=OFF), [a, b])
    assert a.throttle is None and b.throttle is None


def test_a_subscription_made_later_gets_the_limits_in_force_and_the_dynamic_dispatch_settings():
    clock = FakeClock()
    throttling = TopicThrottling(clock, scheduler=None)
    throttling.apply(RateSettings(dispatch=DISPATCH, read_entries=7, skip_damaged=True), [])
    later = subscription()
    throttling.attach(later)
    assert later.throttle is not None and later.max_read_entries == 7 and later.skip_damaged_ranges


# ------------------------------------------------------------------ resolution
@pytest.fixture
def resolved(tmp_path):
    clock = FakeClock()
    policies = PoliciesStore(tmp_path / "p")
    groups = ResourceGroups(tmp_path / "g", clock, Timers(clock))
    config = {"value": BrokerConfig(dispatchThrottlingRatePerTopicInMsg=50, maxPublishRatePerTopicInMessages=30,
                                    subscribeThrottlingRatePerConsumer=4)}
    throttling = BrokerThrottling(policies, groups, lambda: config["value"], clock, Timers(clock))
    return policies, groups, config, throttling


def test_the_brokers_defaults_apply_without_policies(resolved):
    _, _, _, throttling = resolved
    settings = throttling.settings(T)
    assert settings.dispatch["dispatchThrottlingRateInMsg"] == 50
    assert settings.publish["publishThrottlingRateInMsg"] == 30
    assert settings.subscribe == {"subscribeThrottlingRatePerConsumer": 4, "ratePeriodInSecond": 30}


def test_a_topic_policy_wins_over_the_namespaces_which_wins_over_the_brokers(resolved):
    policies, _, _, throttling = resolved
    policies.set(NAMESPACE, "public/default", "dispatchRate", {**DISPATCH, "dispatchThrottlingRateInMsg": 20})
    assert throttling.settings(T).dispatch["dispatchThrottlingRateInMsg"] == 20
    policies.set(TOPIC, str(T), "dispatchRate", {**DISPATCH, "dispatchThrottlingRateInMsg": 10})
    assert throttling.settings(T).dispatch["dispatchThrottlingRateInMsg"] == 10


def test_a_disabled_namespace_dispatch_rate_leaves_the_brokers_but_a_topics_lifts_it(resolved):
    policies, _, _, throttling = resolved
    policies.set(NAMESPACE, "public/default", "dispatchRate", OFF)
    assert throttling.settings(T).dispatch["dispatchThrottlingRateInMsg"] == 50  # Pulsar's fallback
    policies.set(TOPIC, str(T), "dispatchRate", OFF)
    assert throttling.settings(T).dispatch["dispatchThrottlingRateInMsg"] == -1


def test_a_partitioned_topics_policies_apply_to_its_partitions(resolved):
    policies, _, _, throttling = resolved
    policies.set(TOPIC, str(T), "publishRate", {"publishThrottlingRateInMsg": 9, "publishThrottlingRateInByte": -1})
    policies.set(TOPIC, str(T), "subscriptionPolicies", {"s": {"dispatchRate": DISPATCH}})
    settings = throttling.settings(T.partition(2))
    assert settings.publish["publishThrottlingRateInMsg"] == 9 and settings.subscription_overrides == {"s": DISPATCH}


def test_a_resource_groups_limits_are_shared_by_its_namespaces_topics(resolved):
    policies, groups, _, throttling = resolved
    groups.put("rg", {"publishRateInMsgs": 100, "dispatchRateInMsgs": 200})
    policies.set(NAMESPACE, "public/default", "resourceGroupName", "rg")
    one, two = throttling.settings(T), throttling.settings(TopicName.parse("persistent://public/default/u"))
    assert one.shared_publish and one.shared_publish == two.shared_publish
    assert one.shared_dispatch[0].msg_rate == 200 and one.shared_dispatch == two.shared_dispatch


def test_the_brokers_own_limits_follow_its_configuration(resolved):
    _, _, config, throttling = resolved
    assert throttling.settings(T).shared_dispatch == ()
    config["value"] = config["value"].with_overrides({"dispatchThrottlingRateInMsg": 1000,
                                                      "brokerPublisherThrottlingMaxByteRate": 10_000})
    throttling.config_changed()
    settings = throttling.settings(T)
    assert settings.shared_dispatch[0].msg_rate == 1000 and settings.shared_publish[0].byte_rate == 10_000


# ------------------------------------------------------------------ dynamic configuration
def test_a_dynamic_value_is_applied_and_kept_across_restarts(tmp_path):
    dynamic = DynamicConfig(tmp_path, BrokerConfig())
    seen = []
    dynamic.on_change(seen.append)
    dynamic.update("dispatchThrottlingRatePerTopicInMsg", "1000")
    assert dynamic.current.dispatchThrottlingRatePerTopicInMsg == 1000 and len(seen) == 1
    assert dynamic.values() == {"dispatchThrottlingRatePerTopicInMsg": "1000"}
    assert dynamic.runtime()["dispatchThrottlingRatePerTopicInMsg"] == "1000"
    dynamic.close()
    again = DynamicConfig(tmp_path, BrokerConfig())
    assert again.current.dispatchThrottlingRatePerTopicInMsg == 1000
    again.delete("dispatchThrottlingRatePerTopicInMsg")
    assert again.current.dispatchThrottlingRatePerTopicInMsg == 0 and again.values() == {}


@pytest.mark.parametrize("key, reason", [("maxMessageSize", "reads it at start"), ("superUserRoles", "security"),
                                         ("noSuchKey", "no such key")])
def test_a_key_that_is_not_dynamic_here_is_refused_saying_why(tmp_path, key, reason):
    dynamic = DynamicConfig(tmp_path, BrokerConfig())
    with pytest.raises(InvalidConfiguration, match=f"Can't update non-dynamic configuration {key}.*{reason}"):
        dynamic.update(key, "1")
    with pytest.raises(InvalidConfiguration, match="Can't delete non-dynamic configuration"):
        dynamic.delete(key)


def test_a_value_the_key_does_not_take_is_refused(tmp_path):
    dynamic = DynamicConfig(tmp_path, BrokerConfig())
    with pytest.raises(InvalidConfiguration, match="Invalid dynamic-config value.*subscribeRatePeriod"):
        dynamic.update("subscribeRatePeriodPerConsumerInSecond", "0")
    with pytest.raises(InvalidConfiguration, match="Invalid dynamic-config value"):
        dynamic.update("autoSkipNonRecoverableData", "perhaps")
    assert dynamic.values() == {}


def test_secrets_are_hidden_from_the_runtime_configuration(tmp_path):
    dynamic = DynamicConfig(tmp_path, BrokerConfig(tokenSecretKey="data:;base64,c2VjcmV0"))
    assert dynamic.runtime()["tokenSecretKey"] == "******"


# ------------------------------------------------------------------ resource groups
def test_a_resource_group_is_updated_field_by_field_and_kept_across_restarts(tmp_path):
    clock = FakeClock()
    groups = ResourceGroups(tmp_path, clock, Timers(clock))
    assert groups.put("rg", {"publishRateInMsgs": 10})
    assert not groups.put("rg", {"dispatchRateInBytes": 2048, "publishRateInMsgs": -1})
    assert groups.get("rg") == {"publishRateInMsgs": 10, "publishRateInBytes": -1, "dispatchRateInMsgs": -1,
                                "dispatchRateInBytes": 2048}
    groups.close()
    again = ResourceGroups(tmp_path, clock, Timers(clock))
    assert again.names() == ["rg"] and again.get("rg")["dispatchRateInBytes"] == 2048
    assert again.delete("rg") and not again.delete("rg")


def test_a_resource_groups_limiter_follows_its_rates_and_goes_with_them(tmp_path):
    clock = FakeClock()
    groups = ResourceGroups(tmp_path, clock, Timers(clock))
    groups.put("rg", {"publishRateInMsgs": 10})
    limiter = groups.publish_limiter("rg")
    assert limiter.msg_rate == 10 and groups.dispatch_limit("rg") is None
    groups.put("rg", {"publishRateInMsgs": 20})
    assert groups.publish_limiter("rg") is limiter and limiter.msg_rate == 20
    groups.delete("rg")
    assert groups.publish_limiter("rg") is None
