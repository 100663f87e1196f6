"""pulsar-client 3.13's low-level policies (``BatchReceivePolicy``, ``KeySharedPolicy``, ``DeadLetterPolicyBuilder``,
issue 33): our classes against the official binding's, call by call, when the official client is installed."""
from __future__ import annotations

import pytest

import pulsarlike
from connector.client.low_level import (BatchReceivePolicy, DeadLetterPolicy, DeadLetterPolicyBuilder,
                                        KeySharedPolicy)

try:
    import _pulsar as official
except ImportError:  # the official client is not installed: our own expectations only
    official = None


def _outcome(call):
    try:
        return ("ok", call())
    except ValueError as exc:
        return ("ValueError", str(exc))
    except TypeError:
        return ("TypeError", None)


def _batch(module, *args):
    policy = module.BatchReceivePolicy(*args)
    return policy.getMaxNumMessages(), policy.getMaxNumBytes(), policy.getTimeoutMs()


BATCH_CASES = [(10, -1, -1), (3, 0, 0), (0, 0, 5), (-1, -1, 5), (0, 0, 0), (-1, 0, 0), (-1, -1, -1),
               (5, 100, 10), (0, 4096, 0)]


@pytest.mark.parametrize("args", BATCH_CASES)
def test_batch_receive_policy(args):
    ours = _outcome(lambda: _batch(pulsarlike, *args))
    if official is not None:
        assert ours == _outcome(lambda: _batch(official, *args))
    if all(v <= 0 for v in args):
        assert ours == ("ValueError", "At least one of maxNumMessages, maxNumBytes and timeoutMs must be specified.")
    elif args[0] <= 0 and args[1] <= 0:
        assert ours == ("ok", (-1, 10 * 1024 * 1024, args[2]))
    else:
        assert ours == ("ok", args)


@pytest.mark.parametrize("args", [(), (1.5, 0, 0), ("1", 0, 0)])
def test_batch_receive_policy_types(args):
    with pytest.raises(TypeError):
        BatchReceivePolicy(*args)


def test_batch_receive_policy_wrapper():
    wrapper = pulsarlike.ConsumerBatchReceivePolicy(0, 0, 5)
    assert isinstance(wrapper.policy(), BatchReceivePolicy)
    assert (wrapper.max_num_messages, wrapper.max_num_bytes, wrapper.timeout_ms) == (-1, 10 * 1024 * 1024, 5)
    with pytest.raises(ValueError, match="At least one of"):
        pulsarlike.ConsumerBatchReceivePolicy(0, 0, 0)


def _key_shared(module, calls):
    policy = module.KeySharedPolicy()
    for name, arg in calls:
        if name == "mode":
            arg = getattr(module.KeySharedMode, arg)
        assert getattr(policy, {"mode": "set_key_shared_mode", "ooo": "set_allow_out_of_order_delivery",
                                "ranges": "set_sticky_ranges"}[name])(arg) is policy
    return (policy.get_key_shared_mode().name, policy.is_allow_out_of_order_delivery(), policy.get_sticky_ranges())


KEY_SHARED_CASES = [
    [],
    [("mode", "Sticky"), ("ranges", [(0, 100), (200, 300)])],
    [("ooo", True), ("ranges", [(0, 65535)])],
    [("ranges", [(0, 100), (50, 300)])],
    [("ranges", [(0, 65536)])],
    [("ranges", [(-1, 5)])],
    [("ranges", [])],
    [("ranges", [(0, 10)]), ("ranges", [(5, 20)])],  # a second call adds (only one call's ranges are checked)
    [("ranges", [(100, 0)])],
]


@pytest.mark.parametrize("calls", KEY_SHARED_CASES)
def test_key_shared_policy(calls):
    ours = _outcome(lambda: _key_shared(pulsarlike, calls))
    if official is not None:
        assert ours == _outcome(lambda: _key_shared(official, calls))
    assert ours[0] in ("ok", "ValueError")


def test_key_shared_policy_defaults_and_words():
    policy = KeySharedPolicy()
    assert (policy.get_key_shared_mode(), policy.is_allow_out_of_order_delivery(), policy.get_sticky_ranges()) \
        == (pulsarlike.KeySharedMode.AutoSplit, False, [])
    with pytest.raises(ValueError, match="Ranges for KeyShared policy with overlap."):
        policy.set_sticky_ranges([(0, 10), (10, 20)])
    with pytest.raises(ValueError, match=r"Ranges must be \[0, 65535\]"):
        policy.set_sticky_ranges([(0, 65536)])
    with pytest.raises(TypeError):
        policy.set_key_shared_mode(1)
    wrapper = pulsarlike.ConsumerKeySharedPolicy(pulsarlike.KeySharedMode.Sticky, True, [(0, 99), (100, 200)])
    low = wrapper.policy()
    assert isinstance(low, KeySharedPolicy)
    assert (low.get_key_shared_mode(), low.is_allow_out_of_order_delivery(), low.get_sticky_ranges()) == \
        (pulsarlike.KeySharedMode.Sticky, True, [(0, 99), (100, 200)])


def _dead_letter(module, calls):
    builder = module.DeadLetterPolicyBuilder()
    for name, arg in calls:
        assert getattr(builder, name)(arg) is builder
    policy = builder.build()
    return policy.getDeadLetterTopic(), policy.getMaxRedeliverCount(), policy.getInitialSubscriptionName()


DEAD_LETTER_CASES = [
    [],
    [("maxRedeliverCount", 3), ("deadLetterTopic", "dlq"), ("initialSubscriptionName", "init")],
    [("maxRedeliverCount", 0)],
    [("maxRedeliverCount", -1)],
    [("deadLetterTopic", "only-topic")],
]


@pytest.mark.parametrize("calls", DEAD_LETTER_CASES)
def test_dead_letter_policy_builder(calls):
    ours = _outcome(lambda: _dead_letter(pulsarlike, calls))
    if official is not None:
        assert ours == _outcome(lambda: _dead_letter(official, calls))


def test_dead_letter_policy_builder_values():
    assert _dead_letter(pulsarlike, []) == ("", 2**31 - 1, "")
    with pytest.raises(ValueError, match="maxRedeliverCount must be > 0."):
        DeadLetterPolicyBuilder().maxRedeliverCount(0)
    with pytest.raises(TypeError):
        DeadLetterPolicyBuilder().deadLetterTopic(3)
    low = pulsarlike.ConsumerDeadLetterPolicy(5, "t-DLQ", "init").policy()
    assert isinstance(low, DeadLetterPolicy)
    assert (low.getDeadLetterTopic(), low.getMaxRedeliverCount(), low.getInitialSubscriptionName()) == \
        ("t-DLQ", 5, "init")


def test_names_served_not_refused():
    from pulsarlike._unsupported import REFUSED

    for name in ("BatchReceivePolicy", "KeySharedPolicy", "DeadLetterPolicyBuilder", "AutoClusterFailover",
                 "ServiceInfoProvider"):
        assert name not in REFUSED
        assert getattr(pulsarlike, name) is getattr(__import__("pulsarlike._pulsar").
                                                    _pulsar, name, getattr(pulsarlike, name))
