"""Consumer policies (pulsar-client's names) and the topics-pattern parser: validation and defaults."""
from __future__ import annotations

import re

import pytest

from connector import (
    ConsumerDeadLetterPolicy, ConsumerKeySharedPolicy, KeySharedMode, MultiplierRedeliveryBackoff,
    RegexSubscriptionMode)
from connector.client.consumer.dead_letter import default_topic, origin_message_id
from connector.client.consumer.pattern import PatternWatcher, TopicsPattern


def test_multiplier_backoff_gives_the_seeds_delays():
    backoff = MultiplierRedeliveryBackoff(1000, 60_000, 2)
    assert [backoff.next(n) for n in range(9)] == [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000,
                                                    60000]
    assert backoff.next(10_000) == 60000  # no overflow for huge counts


def test_multiplier_backoff_defaults_are_the_java_builders():
    backoff = MultiplierRedeliveryBackoff()
    assert (backoff.min_delay_ms, backoff.max_delay_ms, backoff.multiplier) == (10_000, 600_000, 2.0)


@pytest.mark.parametrize("args, option", [((-1, 10, 2), "min_delay_ms"), ((10, 5, 2), "max_delay_ms"),
                                          ((10, 20, 1), "multiplier"), ((10, 20, "2"), "multiplier")])
def test_multiplier_backoff_refuses_bad_values(args, option):
    with pytest.raises(ValueError, match=option):
        MultiplierRedeliveryBackoff(*args)


def test_key_shared_policy_mirrors_pulsar_client():
    policy = ConsumerKeySharedPolicy(KeySharedMode.Sticky, True, [(0, 100), (200, 300)])
    assert policy.key_shared_mode == KeySharedMode.Sticky
    assert policy.allow_out_of_order_delivery is True
    assert policy.sticky_ranges == [(0, 100), (200, 300)]
    assert ConsumerKeySharedPolicy().key_shared_mode == KeySharedMode.AutoSplit


def test_sticky_mode_needs_ranges():
    with pytest.raises(ValueError, match="sticky_ranges"):
        ConsumerKeySharedPolicy(key_shared_mode=KeySharedMode.Sticky)


@pytest.mark.parametrize("ranges", [[(1, 2, 3)], [("a", 2)], [(0, 2**40)], 5])
def test_sticky_ranges_must_be_int_pairs(ranges):
    with pytest.raises(ValueError):
        ConsumerKeySharedPolicy(KeySharedMode.Sticky, sticky_ranges=ranges)


def test_dead_letter_policy_mirrors_pulsar_client():
    policy = ConsumerDeadLetterPolicy(3, "dlq", "init", "retry")
    assert (policy.max_redeliver_count, policy.dead_letter_topic, policy.initial_subscription_name,
            policy.retry_letter_topic) == (3, "dlq", "init", "retry")


@pytest.mark.parametrize("count", [0, -1, None, True])
def test_max_redeliver_count_must_be_greater_than_zero(count):
    with pytest.raises(ValueError, match="greater than 0"):
        ConsumerDeadLetterPolicy(count)


def test_default_letter_topics_name_the_partitioned_topic():
    assert default_topic("orders", "billing", "-DLQ") == "persistent://public/default/orders-billing-DLQ"
    assert default_topic("persistent://acme/eu/orders-partition-3", "billing", "-RETRY") == \
        "persistent://acme/eu/orders-billing-RETRY"


def test_origin_message_id_is_pulsars_message_id_text():
    class Msg:
        def __init__(self, mid):
            self.mid = mid

        def message_id(self):
            return self.mid

    from connector import MessageId
    assert origin_message_id(Msg(MessageId(-1, 1, 0, 0))) == "1:0:-1:0"
    assert origin_message_id(Msg(MessageId(2, 7, 9, -1))) == "7:9:2"


# --- topics patterns ----------------------------------------------------------------------------------

def test_a_pattern_matches_whole_topic_names_of_its_namespace():
    pattern = TopicsPattern.parse(re.compile("persistent://public/default/finance-.*"))
    listed = ["persistent://public/default/finance-eu", "persistent://public/default/hr-finance",
              "persistent://public/default/finance-us-partition-0",
              "persistent://public/default/finance-us-partition-1",
              "non-persistent://public/default/finance-np"]
    assert pattern.select(listed) == ["persistent://public/default/finance-eu",
                                      "persistent://public/default/finance-us"]


def test_a_bare_pattern_means_public_default_and_keeps_its_flags():
    pattern = TopicsPattern.parse(re.compile("ORDERS-.*", re.IGNORECASE))
    assert pattern.namespace == "public/default"
    assert pattern.matches("persistent://public/default/orders-1")


@pytest.mark.parametrize("text", ["persistent://public/.*/t.*", "persistent://.*/default/t",
                                  "persistent://public/(a|b)/t", "public/default/a/b.*", "default/t.*",
                                  ".*://public/default/t", "persistent://public/default.*"])
def test_a_pattern_spanning_namespaces_is_refused(text):
    with pytest.raises(ValueError, match="namespace|tenant|domain|not valid"):
        TopicsPattern.parse(re.compile(text))


def test_the_regex_subscription_mode_picks_the_domains():
    both = TopicsPattern.parse("public/default/t.*", RegexSubscriptionMode.AllTopics)
    assert both.matches("persistent://public/default/t1") and both.matches("non-persistent://public/default/t1")
    only_np = TopicsPattern.parse("t.*", RegexSubscriptionMode.NonPersistentOnly)
    assert not only_np.matches("persistent://public/default/t1")
    with pytest.raises(ValueError, match="excludes"):
        TopicsPattern.parse("non-persistent://public/default/t.*", RegexSubscriptionMode.PersistentOnly)


def test_the_watcher_reports_topics_that_appear_and_disappear():
    listing = ["persistent://public/default/t-a"]
    changes = []
    watcher = PatternWatcher(TopicsPattern.parse("t-.*"), 60, ["persistent://public/default/t-a"],
                             lambda: list(listing), lambda added, removed: changes.append((added, removed)))
    assert watcher.poll() == ([], []) and changes == []
    listing[:] = ["persistent://public/default/t-b-partition-0", "persistent://public/default/x"]
    assert watcher.poll() == (["persistent://public/default/t-b"], ["persistent://public/default/t-a"])
    assert watcher.known == ["persistent://public/default/t-b"]
