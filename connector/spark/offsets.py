"""Source offsets: one dense message offset per topic partition, as canonical JSON.

The offset Spark checkpoints for a ``pulsarlike`` stream is::

    {"offsets": {"persistent://public/default/audit": {"-1": 7},
                 "persistent://public/default/orders": {"0": 120, "1": 98}},
     "subscription": "spark-pulsarlike-3f9c2a7d1b4e8a60"}

- ``offsets``: the outer key is the topic, fully qualified, without ``-partition-<i>``; the inner key is the
  partition index as a string, ``"-1"`` for a non-partitioned topic; the value is the offset of the next
  message to read: a range ``start -> end`` covers the messages with ``start <= offset < end`` (exclusive
  end), so a batch's end is the next batch's start;
- ``subscription``: the query's durable subscription, so a restarted query acknowledges the one it created.

A checkpoint written before the subscription was carried holds the bare ``offsets`` map (its keys are topic
names, all with ``://``); :func:`decode_source_offset` reads both and reports no subscription for the old one.

Spark compares offsets as JSON strings, so every dict this module builds has its keys inserted in sorted
(string) order at every level and plain ``int`` values: ``json.dumps`` of it is the same with or without
``sort_keys``. Users write the bare map in ``startingOffsets``/``endingOffsets``, where a topic may be a
short name and an offset may also be ``-2`` (earliest) or ``-1`` (latest), as in Spark's Kafka source.

On a broker without dense offsets (Apache Pulsar, pulsar-lite) a partition's value is a message id instead
(:mod:`connector.spark.message_id_offsets`: a JSON object ``{"batch": B, "entry": E, "ledger": L}``, the
boundary after that message); users may also give pulsar-spark's byte array of a serialized ``MessageId``.
"""
from __future__ import annotations

import json
from typing import Any, Mapping, NamedTuple

from broker_core.errors import InvalidTopicName
from broker_core.types import TopicName

from connector.spark import message_id_offsets as ids
from connector.spark.message_id_offsets import IdOffset

EARLIEST = -2
"""In a user's JSON offsets: the partition's first stored message."""
LATEST = -1
"""In a user's JSON offsets: the partition's end (the next message to be published)."""


class TopicPartition(NamedTuple):
    """One topic partition the source reads."""

    topic: str
    """The topic, fully qualified (``persistent://tenant/ns/name``), never a ``-partition-<i>`` name."""
    partition: int
    """The partition index, -1 for a non-partitioned topic."""

    @property
    def internal_name(self) -> str:
        """The name the broker stores it under (``<topic>-partition-<i>``, or the topic itself)."""
        if self.partition < 0:
            return self.topic
        return str(TopicName.parse(self.topic).partition(self.partition))

    def __str__(self) -> str:
        return self.internal_name


Offset = int | IdOffset
"""A dense offset (pulsarlike), or a message id boundary (a broker without dense offsets)."""
Offsets = dict[TopicPartition, Any]
"""Per partition: an ``int`` (dense) or an :class:`IdOffset`; one query's are all of one kind."""


def _json_value(offset: Offset) -> Any:
    return offset.to_json() if isinstance(offset, IdOffset) else int(offset)


def _offset_of(value: Any) -> Offset:
    return ids.from_json(value) if ids.is_id_value(value) else int(value)


def to_json_dict(offsets: Mapping[TopicPartition, Offset]) -> dict[str, dict[str, Any]]:
    """The canonical nested dict (sorted keys at every level, int values or id objects)."""
    nested: dict[str, dict[str, Any]] = {}
    for tp, offset in offsets.items():
        nested.setdefault(tp.topic, {})[str(tp.partition)] = _json_value(offset)
    return {topic: {p: nested[topic][p] for p in sorted(nested[topic])} for topic in sorted(nested)}


def dumps(offsets: Mapping[TopicPartition, Offset]) -> str:
    return json.dumps(to_json_dict(offsets))


def from_json_dict(nested: Mapping[str, Mapping[str, Any]]) -> Offsets:
    """The offsets of a dict Spark hands back (one this module built)."""
    return {TopicPartition(topic, int(p)): _offset_of(offset)
            for topic, parts in nested.items() for p, offset in parts.items()}


class SourceOffset(NamedTuple):
    """One offset of a stream as Spark stores it."""

    offsets: Offsets
    subscription: str | None
    """The query's durable subscription; None in a checkpoint written before it was carried."""


def encode_source_offset(offsets: Mapping[TopicPartition, Offset], subscription: str) -> dict[str, Any]:
    """The canonical dict Spark stores (see the module docstring)."""
    return {"offsets": to_json_dict(offsets), "subscription": subscription}


def decode_source_offset(value: Mapping[str, Any]) -> SourceOffset:
    """A stored offset, in the current shape or the bare map of older checkpoints."""
    if "offsets" in value:  # a topic key always holds "://", so this is never an old checkpoint's topic
        subscription = value.get("subscription")
        return SourceOffset(from_json_dict(value["offsets"]), str(subscription) if subscription else None)
    return SourceOffset(from_json_dict(value), None)


def parse_user_offsets(option: str, text: str, allow_earliest: bool = True) -> Offsets:
    """Parse a user's JSON offsets (``startingOffsets``/``endingOffsets``); topic names are qualified.

    Raises ``ValueError`` naming ``option`` and showing the expected shape.
    """
    example = ('{"persistent://public/default/my-topic": {"0": 42, "1": -2}} (partition "-1" for a '
               'non-partitioned topic; -2 = earliest, -1 = latest; on a broker without dense offsets a message '
               'id {"ledger": L, "entry": E, "batch": B} or pulsar-spark\'s byte array of a serialized MessageId)')

    def bad(reason: str) -> ValueError:
        return ValueError(f"option {option}: {reason}; expected 'earliest', 'latest' or JSON like {example}")

    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise bad(f"{text!r} is not valid JSON ({exc})") from None
    if not isinstance(parsed, dict) or not parsed:
        raise bad(f"{text!r} is not a non-empty JSON object of topics")
    offsets: Offsets = {}
    for topic, parts in parsed.items():
        try:
            name = TopicName.parse(topic)
        except InvalidTopicName as exc:
            raise bad(exc.message) from None
        if name.partition_index >= 0:
            raise bad(f"topic {topic!r} is a partition's name; use the topic {str(name.partitioned_base)!r} "
                      f"with partition \"{name.partition_index}\"")
        if not isinstance(parts, dict) or not parts:
            raise bad(f"topic {topic!r} must map to a non-empty object of partition -> offset")
        for key, offset in parts.items():
            try:
                partition = int(key)
            except ValueError:
                raise bad(f"partition {key!r} of {topic!r} is not an integer") from None
            if partition < -1:
                raise bad(f"partition {key!r} of {topic!r} is negative (-1 is the non-partitioned topic)")
            if ids.is_id_value(offset):
                try:
                    offsets[TopicPartition(str(name), partition)] = ids.from_json(
                        offset, f"offset of {topic!r} partition {key}")
                except ValueError as exc:
                    raise bad(str(exc)) from None
                continue
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                raise bad(f"offset {offset!r} of {topic!r} partition {key} is not an integer >= -2")
            if offset == EARLIEST and not allow_earliest:
                raise bad(f"offset -2 (earliest) of {topic!r} partition {key} is not allowed here")
            offsets[TopicPartition(str(name), partition)] = offset
    return offsets
