"""Spark's Kafka source options with their Kafka meaning, on the ``pulsarlike`` source (issue 34).

=========================================  ==========================================================================
Kafka's option                             here
=========================================  ==========================================================================
``startingTimestamp`` / ``endingTimestamp``  ``startingTime`` / ``endingTime``: one publish time (ms) for every
                                           partition (aliases in :mod:`connector.spark.options`)
``startingOffsetsByTimestamp``             JSON ``{"topicA": {"0": 1000, "1": 1000}}``: a publish time per
                                           partition (``"-1"``: a non-partitioned topic); as in Kafka, it
                                           must name every partition the query reads when it starts
``endingOffsetsByTimestamp``               the same for a batch read's end; a partition with no message at or
                                           after its time ends at its latest (Kafka's rule)
``startingOffsetsByTimestampStrategy``     ``error`` (Kafka's default) or ``latest``: what a start by time does
                                           for a partition with no message published at or after it -- fail
                                           the query naming the partition, or start it at its latest.
                                           pulsarlike's own ``startingTime`` keeps ``latest`` unless set
``minPartitions``                          at least that many Spark partitions per batch: each offset range
                                           cut into contiguous exact slices, largest ranges first
                                           (:func:`slice_counts`); beside ``maxMessagesPerPartition``, which
                                           caps a slice. On a broker without dense offsets it has no effect
                                           (ranges of message ids cannot be cut without reading them; logged)
``includeHeaders``                         ``true``: a ``headers`` column, ``array<struct<key: string, value:
                                           binary>>`` as Kafka's, from the message properties (null when a
                                           message has none; ``__messageProperties`` stays)
``kafka.group.id``                         the query's subscription: an alias of ``subscriptionName``
``groupIdPrefix``                          the prefix of the subscription a query creates: an alias of
                                           ``subscriptionPrefix``
``assign``                                 refused (:data:`REFUSED`): the source reads whole topics
=========================================  ==========================================================================

A publish time is the message's, as Pulsar sets it (Kafka's record timestamp with ``CreateTime`` is the
closest); the first message at or after it is where a range starts or ends.
"""
from __future__ import annotations

import heapq
import json
from dataclasses import dataclass
from typing import Mapping

from broker_core.errors import InvalidTopicName
from broker_core.types import TopicName

from connector.spark.offsets import TopicPartition

KAFKA_OPTIONS = ("startingOffsetsByTimestamp", "endingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy",
                 "minPartitions", "includeHeaders")
"""Kafka's option names served with Kafka's meaning (the aliases are in :mod:`connector.spark.options`)."""
STRATEGIES = ("error", "latest")

REFUSED = {
    "kafka.bootstrap.servers": "set service.url to the broker's pulsar://host:port instead",
    "assign": "it reads chosen partitions of a topic, but the pulsarlike source reads every partition of the "
              "topics it names (and partitions added later), so the query's offsets stay whole topics: name the "
              "topic with subscribe/topic and filter on the __partition column",
}
"""Kafka source options not served, lower-cased -> why and what to write instead."""

_EXAMPLE = '{"persistent://public/default/orders": {"0": 1700000000000, "1": 1700000000000}}'


@dataclass(frozen=True)
class KafkaOptions:
    """The Kafka-meaning options, parsed (per-partition times keep the JSON's qualified topic names)."""

    starting_times: tuple[tuple[TopicPartition, int], ...] = ()
    ending_times: tuple[tuple[TopicPartition, int], ...] = ()
    strategy: str | None = None
    """``startingOffsetsByTimestampStrategy`` as given; None: the default of the option used."""
    min_partitions: int | None = None
    include_headers: bool = False


def parse_kafka_options(given: Mapping[str, str]) -> KafkaOptions:
    """``given``: options keyed by canonical names (:mod:`connector.spark.options`)."""
    strategy = None
    if "startingOffsetsByTimestampStrategy" in given:
        strategy = str(given["startingOffsetsByTimestampStrategy"]).strip().lower()
        if strategy not in STRATEGIES:
            raise ValueError(f"option startingOffsetsByTimestampStrategy="
                             f"{given['startingOffsetsByTimestampStrategy']!r} is not valid; use 'error' (fail "
                             "when a partition has no message at or after the time: Kafka's default) or 'latest' "
                             "(start that partition at its latest)")
    min_partitions = None
    if "minPartitions" in given:
        try:
            min_partitions = int(str(given["minPartitions"]).strip())
        except ValueError:
            min_partitions = 0
        if min_partitions <= 0:
            raise ValueError(f"option minPartitions={given['minPartitions']!r} is not valid; use a whole number "
                             "> 0 (the least Spark partitions a batch is read in)")
    include = str(given.get("includeHeaders", "false")).strip().lower()
    if include not in ("true", "false"):
        raise ValueError(f"option includeHeaders={given['includeHeaders']!r} is not valid; use 'true' or 'false'")
    return KafkaOptions(
        starting_times=_times(given, "startingOffsetsByTimestamp"),
        ending_times=_times(given, "endingOffsetsByTimestamp"),
        strategy=strategy, min_partitions=min_partitions, include_headers=include == "true")


def parse_partition_times(option: str, text: str) -> dict[TopicPartition, int]:
    """Kafka's JSON of a publish time (ms) per topic partition; topic names qualified."""
    def bad(reason: str) -> ValueError:
        return ValueError(f"option {option}: {reason}; expected JSON like {_EXAMPLE} (a publish time in ms "
                          "per partition; partition \"-1\" for a non-partitioned topic)")

    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise bad(f"{text!r} is not valid JSON ({exc})") from None
    if not isinstance(parsed, dict) or not parsed:
        raise bad(f"{text!r} is not a non-empty JSON object of topics")
    times: dict[TopicPartition, int] = {}
    for topic, parts in parsed.items():
        try:
            name = TopicName.parse(topic)
        except InvalidTopicName as exc:
            raise bad(exc.message) from None
        if name.partition_index >= 0:
            raise bad(f"topic {topic!r} is a partition's name; use the topic {str(name.partitioned_base)!r} "
                      f"with partition \"{name.partition_index}\"")
        if not isinstance(parts, dict) or not parts:
            raise bad(f"topic {topic!r} must map to a non-empty object of partition -> publish time")
        for key, value in parts.items():
            try:
                partition = int(key)
            except ValueError:
                raise bad(f"partition {key!r} of {topic!r} is not an integer") from None
            if partition < -1:
                raise bad(f"partition {key!r} of {topic!r} is negative (-1 is the non-partitioned topic)")
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise bad(f"time {value!r} of {topic!r} partition {key} is not a whole number of ms >= 0")
            times[TopicPartition(str(name), partition)] = value
    return times


def _times(given: Mapping[str, str], option: str) -> tuple[tuple[TopicPartition, int], ...]:
    if option not in given:
        return ()
    return tuple(sorted(parse_partition_times(option, str(given[option]).strip()).items()))


def slice_counts(sizes: list[int], least: int) -> list[int]:
    """How many slices each range of ``sizes`` messages is cut into so there are at least ``least`` in all
    (never more slices than a range has messages, nor fewer than one): one more slice at a time to the range
    whose slices are largest. Example: sizes [90, 10], least 4 -> [3, 1] (slices of 30 and 10); [1, 1], 4 ->
    [1, 1] (two messages cannot make four slices)."""
    counts = [1] * len(sizes)
    extra = least - len(sizes)
    heap = [(-size, i) for i, size in enumerate(sizes) if size > 1]
    heapq.heapify(heap)
    while extra > 0 and heap:
        _, i = heapq.heappop(heap)
        counts[i] += 1
        extra -= 1
        if counts[i] < sizes[i]:
            heapq.heappush(heap, ((-sizes[i]) // counts[i], i))  # -ceil(size / count)
    return counts


def cut(start: int, end: int, parts: int) -> list[tuple[int, int]]:
    """``[start, end)`` as ``parts`` contiguous slices whose sizes differ by at most one, in order."""
    size, rest = divmod(end - start, parts)
    out, lo = [], start
    for i in range(parts):
        hi = lo + size + (1 if i < rest else 0)
        out.append((lo, hi))
        lo = hi
    return out
