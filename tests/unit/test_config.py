"""Broker configuration parsing."""
from __future__ import annotations

import dataclasses

import pytest

from broker_core.config import BrokerConfig, parse_assignments, parse_conf_file
from broker_core.errors import InvalidConfiguration


def test_defaults_follow_pulsar():
    config = BrokerConfig()
    assert config.maxMessageSize == 5242880
    assert config.allowAutoTopicCreation is True
    assert config.journalSyncMode == "group"
    assert config.bindAddress == "127.0.0.1"


def test_string_values_are_converted_to_each_keys_type():
    config = BrokerConfig.from_mapping({"maxMessageSize": "1024", "allowAutoTopicCreation": "false"})
    assert config.maxMessageSize == 1024 and config.allowAutoTopicCreation is False


@pytest.mark.parametrize("values, match", [
    ({"maxMessageSize": "-1"}, "maxMessageSize"),
    ({"maxMessageSize": "lots"}, "an integer"),
    ({"allowAutoTopicCreation": "maybe"}, "true or false"),
    ({"journalSyncMode": "fast"}, "always, group, never"),
    ({"allowAutoTopicCreationType": "both"}, "non-partitioned"),
    ({"maxMesageSize": "1"}, "did you mean 'maxMessageSize'"),
    ({"brokerDeduplicationEntriesInterval": "0"}, "brokerDeduplicationEntriesInterval"),
])
def test_bad_values_name_the_key_and_what_it_accepts(values, match):
    with pytest.raises(InvalidConfiguration, match=match):
        BrokerConfig.from_mapping(values)


def test_conf_file_and_assignments(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("# a comment\n\nmaxMessageSize = 2048\njournalSyncMode=always\n")
    assert parse_conf_file(conf) == {"maxMessageSize": "2048", "journalSyncMode": "always"}
    assert parse_assignments(["a=b", "c = d=e"]) == {"a": "b", "c": "d=e"}
    with pytest.raises(InvalidConfiguration, match="key=value"):
        parse_assignments(["novalue"])
    conf.write_text("oops\n")
    with pytest.raises(InvalidConfiguration, match="expected key=value"):
        parse_conf_file(conf)
    with pytest.raises(InvalidConfiguration, match="cannot read"):
        parse_conf_file(tmp_path / "missing.conf")


def test_configurations_with_equal_values_are_equal_hash_alike_and_show_every_key():
    one, same, other = BrokerConfig(maxMessageSize=1024), BrokerConfig.from_mapping({"maxMessageSize": "1024"}), \
        BrokerConfig()
    assert one == same and hash(one) == hash(same)
    assert one != other and one != "BrokerConfig()"
    assert repr(one).startswith("BrokerConfig(bindAddress='127.0.0.1', brokerServicePort=6650, ")
    assert "maxMessageSize=1024" in repr(one) and repr(one).count("=") == len(dataclasses.fields(BrokerConfig))


def test_an_unknown_key_is_refused_with_the_closest_known_one():
    with pytest.raises(InvalidConfiguration, match="did you mean 'maxMessageSize'"):
        BrokerConfig.from_mapping({"maxMesageSize": "1"})


@pytest.mark.parametrize("key", ["defaultRetentionTimeInMinutes", "defaultRetentionSizeInMB"])
def test_a_default_retention_below_minus_one_is_refused_at_start(key):
    with pytest.raises(InvalidConfiguration, match=key):
        BrokerConfig(**{key: -2})
    assert getattr(BrokerConfig(**{key: -1}), key) == -1
