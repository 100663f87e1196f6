"""Key-based batching (``BatchingType.KeyBased``): one open batch per key at the same time.

Messages are grouped by their ordering key when they have one, else by their partition key (as Pulsar's
``BatchMessageKeyBasedContainer`` does); keyless messages form one more batch that carries no key. The
limits (``batching_max_messages``, ``batching_max_allowed_size_in_bytes``) apply to all open batches
together, and every flush -- a limit reached, the publish-delay timer, ``flush()``, a blocking ``send``
-- sends all of them, one entry per key, in the order the keys first appeared. Each entry's
``MessageMetadata`` carries the batch key (``partition_key``; ``ordering_key`` for an ordering-key
batch), which is what Key_Shared dispatch on the broker reads.

Sequence ids are assigned when the batches are built, not when messages are added: entry by entry, so
each entry's automatic ids are contiguous and every entry's ids are above the previous entry's. The
broker's deduplication drops an entry whose sequence id is not above the highest it persisted for the
producer; ids handed out at ``send`` time would interleave across keys (key A: 0, 2; key B: 1, 3) and
the second entry (B, starting at 1 after A's highest 2) would be dropped as a duplicate. Explicit
``sequence_id=`` values are kept as given (the caller then owns their order).

Worked example, ``batching_max_messages=4``, next sequence id 10::

    send_async(m1, partition_key="a")      open: a=[m1]
    send_async(m2, partition_key="b")      open: a=[m1], b=[m2]
    send_async(m3)                          open: a=[m1], b=[m2], (no key)=[m3]
    send_async(m4, partition_key="a")      4 messages: flush
        -> entry a: m1, m4   sequence ids 10..11, partition_key "a"
        -> entry b: m2       sequence id  12 (a single message: unbatched, with its own metadata)
        -> entry -: m3       sequence id  13, no key
"""
from __future__ import annotations

from typing import Any, Mapping

from broker_core.protocol import pulsar_api_pb2

from connector.client.producer.batching import FRAME_OVERHEAD, BatchContainer, PendingEntry

_Message = tuple  # (content, sequence_id | None, callback, properties, partition_key, ordering_key,
#                    event_timestamp, deliver_at)


class KeyBasedBatchContainer:
    """Open batches by key; ``build`` returns one entry per key. Not thread-safe: the producer holds
    its lock around every call. Offers what :class:`PartitionProducer` uses of a
    :class:`~connector.client.producer.batching.BatchContainer` (``count``, ``has_room``, ``is_full``, ``add``,
    ``take_callbacks``, ``generation``), with ``build`` taking and returning the next sequence id."""

    fast_max_count = 0
    fast_max_bytes = 0
    """The producer's payload-only fast path never applies (``0 < count < 0`` is never true)."""

    def __init__(self, max_messages: int, max_bytes: int,
                 compression: int = pulsar_api_pb2.NONE) -> None:
        self.max_messages = max(1, max_messages)
        self.max_bytes = max(1, max_bytes)
        self.generation = 0
        self._builder = BatchContainer(1 << 30, 1 << 62, compression)
        """Encodes one key's batch at a time (limits are checked here, not there)."""
        self._reset()

    def _reset(self) -> None:
        self.count = 0
        self.size = 0
        self._batches: dict[Any, list[_Message]] = {}

    def __len__(self) -> int:
        return self.count

    @property
    def schema_version(self) -> bytes:
        return self._builder.schema_version

    @schema_version.setter
    def schema_version(self, version: bytes) -> None:
        self._builder.schema_version = version

    @property
    def encrypt(self) -> Any:
        return self._builder.encrypt

    @encrypt.setter
    def encrypt(self, encrypt: Any) -> None:
        self._builder.encrypt = encrypt

    @property
    def keys(self) -> list[Any]:
        """The open batches' keys, in the order they opened (ordering keys are bytes, keys str)."""
        return list(self._batches)

    def has_room(self, size: int) -> bool:
        """Whether a message of ``size`` bytes fits in the open batches' total (empty: any message)."""
        return self.count == 0 or (self.count < self.max_messages
                                   and self.size + size + FRAME_OVERHEAD <= self.max_bytes)

    def is_full(self) -> bool:
        return self.count >= self.max_messages or self.size >= self.max_bytes

    def add(self, content: bytes, sequence_id: int | None, callback: Any,
            properties: Mapping[str, str] | None = None, partition_key: str | None = None,
            ordering_key: bytes | None = None, event_timestamp: int = 0,
            deliver_at: int | None = None) -> None:
        """Queue a message in its key's batch; ``sequence_id=None`` is assigned at :meth:`build`."""
        key = ordering_key if ordering_key is not None else partition_key
        message = (content, sequence_id, callback, properties, partition_key, ordering_key,
                   event_timestamp, deliver_at)
        batch = self._batches.get(key)
        if batch is None:
            self._batches[key] = [message]
        else:
            batch.append(message)
        self.count += 1
        self.size += len(content) + FRAME_OVERHEAD + (len(partition_key) if partition_key else 0)

    def build(self, producer_name: str, publish_time_ms: int,
              next_sequence_id: int) -> tuple[list[PendingEntry], int]:
        """One entry per open batch, in key order of arrival, and the next free sequence id."""
        builder = self._builder
        entries: list[PendingEntry] = []
        for key, batch in self._batches.items():
            for content, sequence_id, callback, properties, partition_key, ordering_key, \
                    event_timestamp, deliver_at in batch:
                if sequence_id is None:
                    sequence_id = next_sequence_id
                    next_sequence_id += 1
                builder.add(content, sequence_id, callback, properties, partition_key, ordering_key,
                            event_timestamp, deliver_at)
            first_partition_key = batch[0][4]
            ordering_key = key if type(key) is bytes else None
            entries.append(builder.build(producer_name, publish_time_ms,
                                         batch_key=(first_partition_key, ordering_key)))
        self.generation += 1
        self._reset()
        return entries, next_sequence_id

    def take_callbacks(self) -> list[Any]:
        """Empty the container without building (the producer failed); returns the callbacks."""
        callbacks = [message[2] for batch in self._batches.values() for message in batch]
        self.generation += 1
        self._reset()
        return callbacks
