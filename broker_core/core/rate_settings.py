"""Which rates each topic partition enforces, resolved as Pulsar resolves them, and applied to the loaded topics
(:class:`BrokerThrottling`, owned by the registry; the topic side is :mod:`broker_core.core.throttling`):

- a topic's **dispatch rate** and each subscription's: the topic's own policy (or its partitioned topic's) when
  set -- a subscription's own ``subscriptionPolicies`` entry first --, else the namespace's when it limits
  something, else the broker's ``dispatchThrottlingRatePerTopicIn*`` / ``...PerSubscriptionIn*`` (per second,
  ``dispatchThrottlingRateRelativeToPublishRate``) -- as Pulsar's ``DispatchRateLimiter``: a topic policy of -1
  lifts the limit, a namespace's leaves the broker's in force;
- the **publish rate**: the topic's ``publishRate``, else the namespace's, else
  ``maxPublishRatePerTopicInMessages`` / ``...InBytes``;
- the **subscribe rate**: the topic's ``subscribeRate``, else the namespace's when it limits something, else
  ``subscribeThrottlingRatePerConsumer`` per ``subscribeRatePeriodPerConsumerInSecond``;
- limits **shared** with other topics: the broker's (``dispatchThrottlingRateIn*``,
  ``brokerPublisherThrottling*``, every topic) and the topic's **resource group**'s (the topic's
  ``resourceGroupName``, else its namespace's).

The broker's keys are read from the dynamic configuration in force (:mod:`broker_core.core.dynamic_config`),
so a change of one applies at once, as does a policy's or a resource group's.
"""
from __future__ import annotations

from typing import Any, Callable

from broker_core.clock import Clock
from broker_core.config import BrokerConfig
from broker_core.core.policies import NAMESPACE, TOPIC, PoliciesStore
from broker_core.core.publish_throttle import Later, PublishLimiter
from broker_core.core.rate_policies import (DISPATCH_RATE, PUBLISH_RATE, RESOURCE_GROUP, SUBSCRIBE_RATE,
                                            SUBSCRIPTION_DISPATCH_RATE, SUBSCRIPTION_POLICIES, dispatch_enabled)
from broker_core.core.resource_groups import ResourceGroups
from broker_core.core.throttling import RateSettings
from broker_core.core.topic_protocol import Topic
from broker_core.types import TopicName
from dispatch.throttle import RateLimit


def _subscribe_enabled(rate: dict | None) -> bool:
    return rate is not None and rate["subscribeThrottlingRatePerConsumer"] > 0


class BrokerThrottling:
    """Resolves :class:`~broker_core.core.throttling.RateSettings` for a topic and applies them; owns the
    broker-wide limiters. ``config()`` is the configuration in force."""

    def __init__(self, policies: PoliciesStore, groups: ResourceGroups, config: Callable[[], BrokerConfig],
                 clock: Clock, later: Later) -> None:
        self._policies = policies
        self._groups = groups
        self._config = config
        self._clock = clock
        self._later = later
        self._dispatch: RateLimit | None = None
        self._publish: PublishLimiter | None = None
        self.config_changed()

    def config_changed(self) -> None:
        """The broker-wide limiters take the configuration in force."""
        config = self._config()
        msgs, nbytes = config.dispatchThrottlingRateInMsg, config.dispatchThrottlingRateInByte
        if msgs <= 0 and nbytes <= 0:
            self._dispatch = None
        elif self._dispatch is None:
            self._dispatch = RateLimit(msgs, nbytes, 1, clock=self._clock)
        else:
            self._dispatch.set_rate(msgs, nbytes, 1)
        msgs, nbytes = config.brokerPublisherThrottlingMaxMessageRate, config.brokerPublisherThrottlingMaxByteRate
        if msgs <= 0 and nbytes <= 0:
            if self._publish is not None:
                self._publish.close()
            self._publish = None
        elif self._publish is None:
            self._publish = PublishLimiter(msgs, nbytes, self._clock, self._later)
        elif (self._publish.msg_rate, self._publish.byte_rate) != (msgs, nbytes):
            self._publish.set_rate(msgs, nbytes)

    # ------------------------------------------------------------------ resolution
    def _levels(self, name: TopicName) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The policies set on the topic (then on its partitioned topic) and on its namespace."""
        topics = [self._policies.get(TOPIC, str(name))]
        if name.partitioned_base != name:
            topics.append(self._policies.get(TOPIC, str(name.partitioned_base)))
        return topics, self._policies.get(NAMESPACE, name.namespace_name)

    def settings(self, name: TopicName) -> RateSettings:
        """The rates topic partition ``name`` enforces now."""
        config = self._config()
        topics, namespace = self._levels(name)

        def of_topic(key: str) -> Any:
            return next((level[key] for level in topics if key in level), None)

        def dispatch(key: str, msgs: int, nbytes: int) -> dict | None:
            own = of_topic(key)
            if own is not None:
                return own
            if dispatch_enabled(namespace.get(key)):
                return namespace[key]
            return {"dispatchThrottlingRateInMsg": msgs, "dispatchThrottlingRateInByte": nbytes,
                    "relativeToPublishRate": config.dispatchThrottlingRateRelativeToPublishRate,
                    "ratePeriodInSecond": 1}

        publish = of_topic(PUBLISH_RATE) or namespace.get(PUBLISH_RATE) or {
            "publishThrottlingRateInMsg": config.maxPublishRatePerTopicInMessages,
            "publishThrottlingRateInByte": config.maxPublishRatePerTopicInBytes}
        subscribe = of_topic(SUBSCRIBE_RATE)
        if subscribe is None:
            subscribe = namespace.get(SUBSCRIBE_RATE) if _subscribe_enabled(namespace.get(SUBSCRIBE_RATE)) else {
                "subscribeThrottlingRatePerConsumer": config.subscribeThrottlingRatePerConsumer,
                "ratePeriodInSecond": config.subscribeRatePeriodPerConsumerInSecond}
        overrides = {sub: policy[DISPATCH_RATE] for level in reversed(topics)
                     for sub, policy in (level.get(SUBSCRIPTION_POLICIES) or {}).items()}
        group = of_topic(RESOURCE_GROUP) or namespace.get(RESOURCE_GROUP)
        shared_dispatch = tuple(limit for limit in (self._dispatch, self._groups.dispatch_limit(group))
                                if limit is not None)
        shared_publish = tuple(limiter for limiter in (self._publish, self._groups.publish_limiter(group))
                               if limiter is not None)
        return RateSettings(
            dispatch=dispatch(DISPATCH_RATE, config.dispatchThrottlingRatePerTopicInMsg,
                              config.dispatchThrottlingRatePerTopicInByte),
            subscription_dispatch=dispatch(SUBSCRIPTION_DISPATCH_RATE,
                                           config.dispatchThrottlingRatePerSubscriptionInMsg,
                                           config.dispatchThrottlingRatePerSubscriptionInByte),
            subscription_overrides=overrides, publish=publish,
            subscribe=subscribe if _subscribe_enabled(subscribe) else None,
            shared_dispatch=shared_dispatch, shared_publish=shared_publish,
            read_entries=config.dispatcherMaxReadBatchSize, skip_damaged=config.autoSkipNonRecoverableData)

    def apply(self, topic: Topic) -> None:
        """Enforce the rates in force on loaded ``topic`` (its subscriptions too)."""
        topic.throttling.apply(self.settings(topic.name), [*topic.subscriptions.values(), *topic.readers.values()])
