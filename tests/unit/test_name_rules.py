"""The name rules (broker_core.types): every tenant, namespace and topic name that passes is one safe folder
name under the data dir; everything else is refused with the reason, before anything touches the disk."""
from __future__ import annotations

import pytest

from broker_core.errors import InvalidConfiguration, InvalidTopicName
from broker_core.core.namespaces import NamespacesStore
from broker_core.types import (MAX_NAME_BYTES, TopicName, check_namespace_name, check_partition_names,
                               check_tenant_name, folder_name)


@pytest.mark.parametrize("local, reason", [
    ("..", "topic '..': '.' and '..' are not topic names"),
    (".", "topic '.': '.' and '..' are not topic names"),
    (":::", "must contain a letter or a digit"),
    ("%2e%2e", "is '..' once percent-decoded"),
    ("%2E", "is '.' once percent-decoded"),
    ("a%2Fb", "holds '/' once percent-decoded"),
    ("a%2fb", "holds '/' once percent-decoded"),
    ("a%0Ab", "control character"),
    ("a%00", "control character"),
    ("100%", "does not start a %XX escape"),
    ("%zz", "does not start a %XX escape"),
    ("%ff", "not UTF-8"),
    ("caf\u00e9", "ASCII letters"),
    ("x" * (MAX_NAME_BYTES + 1), "the limit is 255"),
    (":" * 86, "the limit is 255"),  # 86 ':' are 258 bytes once encoded as %3A
])
def test_a_topic_local_name_that_is_not_a_safe_folder_name_is_refused(local, reason):
    with pytest.raises(InvalidTopicName, match=reason) as info:
        TopicName.parse(f"persistent://public/default/{local}")
    assert info.value.reason


@pytest.mark.parametrize("name, reason", [
    ("persistent://../default/t", "tenant '..' must contain a letter or a digit"),
    ("persistent://public/../t", "namespace '..' must contain a letter or a digit"),
    ("persistent://./default/t", "tenant '.'"),
    ("persistent://:::/default/t", "tenant ':::'"),
    ("persistent://public/%2e%2e/t", "namespace '%2e%2e' may only contain"),
    ("persistent://p\u00fcblic/default/t", "ASCII"),
    (f"persistent://{'t' * 256}/default/t", "tenant is 256 bytes long; the limit is 255"),
    (f"persistent://public/{'n' * 256}/t", "namespace is 256 bytes long"),
])
def test_a_topic_in_a_tenant_or_namespace_that_is_not_a_safe_folder_name_is_refused(name, reason):
    with pytest.raises(InvalidTopicName, match=reason):
        TopicName.parse(name)


@pytest.mark.parametrize("local", ["t", "a.b", "..a", "a..", "x%2Ey", "caf%C3%A9", "a_-=:.%25",
                                   "t" * MAX_NAME_BYTES, "orders-partition-3", "%2e%2ea"])
def test_names_pulsar_accepts_and_that_are_safe_still_parse(local):
    assert TopicName.parse(f"persistent://public/default/{local}").local_name == local


def test_the_length_limit_counts_the_percent_encoded_folder_name():
    assert len(folder_name(":" * 85)) == MAX_NAME_BYTES
    assert TopicName.parse(":" * 84 + "a").local_name == ":" * 84 + "a"


def test_a_too_long_name_is_refused_without_echoing_all_of_it():
    with pytest.raises(InvalidTopicName) as info:
        TopicName.parse("x" * 10_000)
    assert len(info.value.message) < 300


def test_a_partitioned_topic_whose_partition_folders_would_be_too_long_is_refused():
    name = TopicName.parse("p" * (MAX_NAME_BYTES - len("-partition-9")))
    check_partition_names(name, 10)
    with pytest.raises(InvalidTopicName, match="partition folder names would be up to 256 bytes"):
        check_partition_names(name, 100)


@pytest.mark.parametrize("bad, reason", [
    ("..", "must contain a letter or a digit"),
    (".", "must contain a letter or a digit"),
    (":::", "must contain a letter or a digit"),
    ("a" * 256, "256 bytes long"),
    ("\u00e9t\u00e9", "ASCII"),
])
def test_a_tenant_name_that_is_not_a_safe_folder_name_is_refused(bad, reason):
    with pytest.raises(InvalidConfiguration, match=reason):
        check_tenant_name(bad)


@pytest.mark.parametrize("bad, reason", [
    ("public/..", "namespace '..' must contain"),
    ("public/.", "namespace '.' must contain"),
    ("../default", "tenant '..' must contain"),
    ("public/%2e%2e", "may only contain"),
    (f"public/{'n' * 256}", "256 bytes long"),
])
def test_a_namespace_name_that_is_not_a_safe_folder_name_is_refused(bad, reason):
    with pytest.raises(InvalidConfiguration, match=reason):
        check_namespace_name(bad)


def test_the_namespace_store_uses_the_same_rules(tmp_path):
    store = NamespacesStore(tmp_path)
    with pytest.raises(InvalidConfiguration, match="must contain a letter or a digit"):
        store.create_tenant("..")
    with pytest.raises(InvalidConfiguration, match="must contain a letter or a digit"):
        store.create_namespace("public/..")
    assert store.tenants() == ["public"]
