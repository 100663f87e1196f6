"""The partition consumers of one consumer: which one a message id belongs to, and the set changing as a
pattern consumer's topics come and go (copy on write: receivers read it without a lock)."""
from __future__ import annotations

import threading

from broker_core import errors
from broker_core.types import TopicName

from connector.client.message_id import MessageId
from connector.client.consumer.partition import PartitionConsumer


class ConsumerPartitions:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.all: list[PartitionConsumer] = []
        self._members: frozenset[PartitionConsumer] = frozenset()
        self._by_topic: dict[str, PartitionConsumer] = {}

    def __contains__(self, sub: object) -> bool:
        return sub in self._members

    def add(self, subs: list[PartitionConsumer]) -> None:
        with self._lock:
            self._set(self.all + subs)

    def remove(self, topics: list[str]) -> list[PartitionConsumer]:
        """Take out the partition consumers of these (base) topics; returns them."""
        gone = set(topics)
        with self._lock:
            removed = [s for s in self.all if str(TopicName.parse(s.topic).partitioned_base) in gone]
            self._set([s for s in self.all if s not in removed])
        return removed

    def partitions_of(self, topics: list[str]) -> dict[str, set[str]]:
        """The partition topics open of each of these (base) topics that has partitions open."""
        wanted = set(topics)
        out: dict[str, set[str]] = {}
        for sub in self.all:
            name = TopicName.parse(sub.topic)
            base = str(name.partitioned_base)
            if name.partition_index >= 0 and base in wanted:
                out.setdefault(base, set()).add(sub.topic)
        return out

    def _set(self, subs: list[PartitionConsumer]) -> None:
        self._by_topic = {sub.topic: sub for sub in subs}
        self._members = frozenset(subs)
        self.all = subs

    def of_message_id(self, mid: MessageId) -> PartitionConsumer:
        """The partition consumer ``mid`` belongs to: by its topic when it names one, else by its partition."""
        subs = self.all
        if len(subs) == 1:
            return subs[0]
        topic = mid.topic_name()
        if topic and topic in self._by_topic:
            return self._by_topic[topic]
        matches = [s for s in subs if s.partition == mid.partition()]
        if len(matches) != 1:
            raise errors.InvalidMessage(f"{mid} does not belong to a topic of this consumer: deserialize it "
                                        "with MessageId.deserialize(data, topic=...) naming its topic partition")
        return matches[0]
