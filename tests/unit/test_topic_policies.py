"""What a loaded topic enforces by its policies (:mod:`broker_core.core.topic_policies`) and how the
delivery, schema and subscription policies are validated (:mod:`broker_core.core.policy_checks`), without a
broker (issue 31)."""
from __future__ import annotations

import pytest

from broker_core.core import policy_checks as checks
from broker_core.core.topic_policies import TopicPolicies
from broker_core.errors import EncryptionRequired, IncompatibleSchema, InvalidConfiguration, NotAllowedError
from broker_core.protocol.pulsar_api_pb2 import MessageMetadata
from dispatch.shared import DelayedDelivery
from dispatch.types import SubType


def metadata(**fields) -> MessageMetadata:
    return MessageMetadata(producer_name="p", sequence_id=0, publish_time=1_000, **fields)


def test_a_message_delayed_past_the_max_delivery_delay_is_refused():
    policies = TopicPolicies(max_delivery_delay_ms=500)
    assert policies.checks_entries
    policies.check_entry("t", metadata(deliver_at_time=1_500))  # exactly the limit
    with pytest.raises(NotAllowedError, match="Exceeds max allowed delivery delay of 500 milliseconds"):
        policies.check_entry("t", metadata(deliver_at_time=1_501))
    policies.check_entry("t", metadata())  # not delayed


def test_the_max_delivery_delay_does_not_apply_while_delayed_delivery_is_off():
    policies = TopicPolicies(max_delivery_delay_ms=500, delayed_delivery=DelayedDelivery(enabled=False))
    assert not policies.checks_entries
    policies.check_entry("t", metadata(deliver_at_time=99_999))


def test_encryption_required_refuses_a_message_without_encryption_keys():
    policies = TopicPolicies(encryption_required=True)
    with pytest.raises(EncryptionRequired, match="Messages must be encrypted"):
        policies.check_entry("t", metadata())
    encrypted = metadata()
    encrypted.encryption_keys.add(key="k", value=b"wrapped data key")
    policies.check_entry("t", encrypted)


def test_schema_validation_refuses_a_message_without_a_schema_version_only_on_a_topic_with_a_schema():
    TopicPolicies(schema_validation_enforced=True).check_entry("t", metadata())  # no schema yet
    enforced = TopicPolicies(schema_validation_enforced=True, has_schema=lambda: True)
    with pytest.raises(IncompatibleSchema, match="without a schema to topics with a schema"):
        enforced.check_entry("t", metadata())
    enforced.check_entry("t", metadata(schema_version=b"\0" * 8))


def test_a_subscription_type_not_enabled_is_refused_in_pulsars_words():
    policies = TopicPolicies(subscription_types=frozenset({"Shared"}))
    with pytest.raises(NotAllowedError, match=r"Topic\[t\] doesn't support Exclusive sub type!"):
        policies.check_subscribe("t", "s", SubType.EXCLUSIVE, exists=False, durable=True, persistent=True,
                                 subscriptions=0, consumers=0)


def test_delayed_delivery_policies_take_pulsars_fields_with_max_delay_zero_when_not_sent():
    assert checks.delayed_delivery("delayedDelivery", {"tickTime": 1000, "active": True}) == {
        "tickTime": 1000, "active": True, "maxDeliveryDelayInMillis": 0}
    with pytest.raises(InvalidConfiguration, match="delayedDelivery.maxDeliveryDelayInMillis"):
        checks.delayed_delivery("delayedDelivery", {"tickTime": 1, "active": True, "maxDeliveryDelayInMillis": -1})
    with pytest.raises(InvalidConfiguration):
        checks.delayed_delivery("delayedDelivery", {"tickTime": 1, "active": True, "extra": 1})


@pytest.mark.parametrize("key, value", [
    ("inactiveTopicPolicies", {"inactiveTopicDeleteMode": "sometimes", "maxInactiveDurationSeconds": 1,
                               "deleteWhileInactive": True}),
    ("subscriptionTypesEnabled", ["Shared", "Everything"]),
    ("subscriptionAuthMode", "Suffix"),
    ("schemaAutoUpdateCompatibilityStrategy", "Sideways"),
    ("encryptionRequired", "yes"),
])
def test_a_policy_value_out_of_range_is_refused_naming_its_key(key, value):
    with pytest.raises(InvalidConfiguration, match=key):
        checks.CHECKS[key](key, value)
