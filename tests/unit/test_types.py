"""Topic-name parsing and MessageId."""
from __future__ import annotations

import pytest

from broker_core.errors import InvalidTopicName
from broker_core.types import MessageId, TopicName


def test_bare_name_means_persistent_public_default():
    assert str(TopicName.parse("my-topic")) == "persistent://public/default/my-topic"


def test_full_names_parse_into_their_parts():
    name = TopicName.parse("non-persistent://acme/orders/eu.v1=x:y")
    assert (name.domain, name.tenant, name.namespace, name.local_name) == ("non-persistent", "acme", "orders",
                                                                           "eu.v1=x:y")
    assert not name.persistent
    assert name.namespace_name == "acme/orders"


@pytest.mark.parametrize("short, full", [
    ("acme/orders/t", "persistent://acme/orders/t"),
    ("public/default/my-topic", "persistent://public/default/my-topic"),
    ("/my-topic", "persistent://public/default/my-topic"),  # Pulsar drops empty segments of a short name
    ("my-topic/", "persistent://public/default/my-topic"),
    ("Persistent://acme/orders/t", "persistent://acme/orders/t"),  # Pulsar's TopicDomain ignores case
    ("NON-PERSISTENT://acme/orders/t", "non-persistent://acme/orders/t"),
])
def test_pulsars_short_forms_name_the_full_topic(short, full):
    assert str(TopicName.parse(short)) == full
    assert TopicName.parse(short) == TopicName.parse(full)


def test_the_v1_form_with_a_cluster_is_refused_naming_why():
    with pytest.raises(InvalidTopicName, match="V1 form.*cluster-scoped namespace 'acme/us-west/orders'.*"
                                               "use persistent://tenant/namespace/topic") as info:
        TopicName.parse("persistent://acme/us-west/orders/t")
    assert "V1" in info.value.reason
    with pytest.raises(InvalidTopicName, match="V1 form"):
        TopicName.parse("non-persistent://acme/global/orders/a/b")  # Pulsar's local name a/b


@pytest.mark.parametrize("bad, reason", [
    ("a/b/c/d", "<topic> or <tenant>/<namespace>/<topic>, not 4 segments"),
    ("/", "not 0 segments"),
    ("a//b/c", "each segment non-empty"),  # Pulsar: persistent://a//b/c, an empty cluster
    ("acme/orders/", "<topic> or <tenant>/<namespace>/<topic>, not 2"),
    ("acme/orders/t/", "each segment non-empty"),
    ("", "empty"),
    ("kafka://a/b/c", "domain"),
    ("persistent://a/b", "tenant/namespace/topic"),
    ("persistent://a/b/c/d", "tenant/namespace/topic"),
    ("persistent://a//c", "namespace is empty"),
    ("persistent://a/b/", "topic is empty"),
    ("persistent://a b/c/d", "tenant"),
    ("a/b", "short name"),
    ("persistent://t/ns/top ic", "topic"),
])
def test_invalid_names_are_rejected_with_the_reason(bad, reason):
    with pytest.raises(InvalidTopicName, match=reason) as info:
        TopicName.parse(bad)
    assert info.value.reason


def test_partition_names_round_trip():
    base = TopicName.parse("orders")
    part = base.partition(3)
    assert str(part) == "persistent://public/default/orders-partition-3"
    assert part.partition_index == 3
    assert part.partitioned_base == base
    assert base.partition_index == -1


def test_message_id_offset_is_entry_plus_batch_index():
    assert MessageId.of(0, 100, 0, 7).offset() == 107
    assert MessageId.of(0, 100, 0, -1).offset() == 100


def test_message_ids_order_like_offsets_and_sentinels_bound_them():
    ids = [MessageId.of(0, 10, -1, 1), MessageId.of(0, 10, -1, 0), MessageId.of(64, 64, -1, -1)]
    assert sorted(ids) == [ids[1], ids[0], ids[2]]
    assert all(MessageId.earliest < i < MessageId.latest for i in ids)


def test_message_id_serializes_as_pulsar_message_id_data():
    from broker_core.protocol.pulsar_api_pb2 import MessageIdData

    msg_id = MessageId.of(5, 42, 2, 3, batch_size=10)
    data = msg_id.serialize()
    parsed = MessageIdData.FromString(data)
    assert (parsed.ledgerId, parsed.entryId, parsed.partition, parsed.batch_index) == (5, 42, 2, 3)
    assert MessageId.deserialize(data) == msg_id and MessageId.deserialize(data).batch_size() == 10
    assert MessageId.deserialize(MessageId.earliest.serialize()).is_earliest()


def test_deserializing_garbage_says_what_to_pass():
    with pytest.raises(ValueError, match="not a serialized MessageId"):
        MessageId.deserialize(b"\xff\xff\xff")


def test_the_client_and_the_broker_share_one_message_id_class():
    from connector import MessageId as exported
    from connector.client.message_id import MessageId as client_id

    assert exported is client_id is MessageId
