"""advertisedListeners in Pulsar's format, parsed once with the configuration; a bad entry names the key."""
from __future__ import annotations

import pytest

from broker_core.config import BrokerConfig
from broker_core.errors import InvalidConfiguration


def test_each_listener_has_its_pulsar_and_pulsar_ssl_urls():
    config = BrokerConfig.from_mapping({"advertisedListeners": "internal:pulsar://10.0.0.5:6650, "
                                        "external:pulsar://b.example.com:6650,external:pulsar+ssl://b.example.com:6651"})
    internal, external = config.advertised_listeners["internal"], config.advertised_listeners["external"]
    assert (internal.broker_url, internal.broker_url_tls) == ("pulsar://10.0.0.5:6650", "")
    assert (external.broker_url, external.broker_url_tls) == ("pulsar://b.example.com:6650",
                                                              "pulsar+ssl://b.example.com:6651")


def test_no_listeners_by_default():
    assert BrokerConfig().advertised_listeners == {}


@pytest.mark.parametrize("value", ["internal", "internal:pulsar://host", "internal:kafka://host:9092",
                                   "a:pulsar://h:1,a:pulsar://h:2", "a:http://h:8080", "a:pulsar://h:70000"])
def test_a_bad_entry_stops_the_start_naming_the_key(value):
    with pytest.raises(InvalidConfiguration, match="advertisedListeners") as caught:
        BrokerConfig(advertisedListeners=value)
    assert caught.value.fields["key"] == "advertisedListeners"
