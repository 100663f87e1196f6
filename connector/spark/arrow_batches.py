"""Decoded entries of one topic partition -> Arrow record batches in the source's schema.

:class:`BatchBuilder` takes entries decoded by the client's entry decoding (:mod:`connector.client.entries`:
the same pipeline as the client's consumers, message ids as ``MessageId.serialize()`` writes them) and keeps,
column by column, the messages whose offsets fall in the range the caller asks for; :meth:`BatchBuilder.build`
turns what it holds into one ``pyarrow.RecordBatch`` whose schema is
:data:`connector.spark.schema.ARROW_SCHEMA` (``__key`` binary: a key flagged ``partition_key_b64_encoded``
decoded, any other key's UTF-8 bytes; or, with ``key_type="string"``, the keys as stored:
:data:`~connector.spark.schema.ARROW_SCHEMA_STRING_KEY`).

Cost model: a batch of payload-only messages (what most producers write) is split by the codec in a few
C-level calls and its per-message columns (key, properties, event time) are filled without looking at each
message; only the value and the message id are built per message. Columns constant over an entry (publish
time, producer name) are kept as runs.

Chunked messages (one message split over several entries) are kept whole by the range that holds their
first chunk: ``__offset`` is the first chunk's offset and ``__messageId`` the last chunk's id (what
pulsar-client gives the message). A range may therefore read past its end to complete a message, and skips
continuation chunks of a message that started before it.
"""
from __future__ import annotations

import itertools
import operator
from typing import Any, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from connector.client.entries import DecodedEntry
from connector.client.key_bytes import key_bytes
from connector.spark.schema import ARROW_SCHEMA, ARROW_SCHEMA_STRING_KEY, PROPERTIES, TIMESTAMP

_I32 = pa.int32()


class BatchBuilder:
    """Columns of the rows collected so far for one topic partition."""

    def __init__(self, topic: str, partition: int, key_type: str = "binary") -> None:
        self.topic = topic
        self.partition = partition
        self.key_type = key_type
        """Option ``keyType``: ``binary`` (the keys' bytes) or ``string`` (the keys as stored)."""
        self.built_versions: list[int] = []
        """The writer schema version of each row of the last :meth:`build` (-1: written without)."""
        self._clear()

    def _clear(self) -> None:
        self.rows = 0
        self.first_offset: int | None = None
        self._offsets: list[int] = []
        self._values: list[Any] = []
        self._keys: list[Any] = []
        self._any_key = False
        self._b64_rows: list[int] = []
        """Rows whose key is flagged ``partition_key_b64_encoded`` (rare: keys sent as bytes)."""
        self._ids: list[bytes] = []
        self._event_ms: list[Any] = []
        self._any_event = False
        self._props: list[Mapping[str, str]] = []
        self._any_props = False
        self._seq: list[int] = []
        self._publish_runs: list[tuple[int, int]] = []
        self._producer_runs: list[tuple[str, int]] = []
        self._version_runs: list[tuple[bytes, int]] = []

    def add(self, entry: DecodedEntry, lo: int, hi: int, offset: int | None = None,
            message_id: bytes | None = None) -> None:
        """Keep messages ``lo <= index < hi`` of ``entry``; ``offset``/``message_id`` override the offset
        and id of a single message (a reassembled chunked message)."""
        count = hi - lo
        if count <= 0:
            return
        meta = entry.metadata
        first = entry.entry_id + lo if offset is None else offset
        if self.first_offset is None:
            self.first_offset = first
        self.rows += count
        self._offsets.extend(range(first, first + count))
        self._publish_runs.append((meta.publish_time, count))
        self._producer_runs.append((meta.producer_name, count))
        self._version_runs.append((meta.schema_version, count))
        metas = entry.metas
        if not entry.batched:
            self._values.append(None if meta.null_value else entry.payloads[0])
            key = meta.partition_key if meta.HasField("partition_key") else None
            if key is not None and meta.partition_key_b64_encoded:
                self._b64_rows.append(len(self._keys))
            self._keys.append(key)
            self._any_key = self._any_key or key is not None
            self._event_ms.append(meta.event_time or None)
            self._any_event = self._any_event or bool(meta.event_time)
            props = {kv.key: kv.value for kv in meta.properties} if meta.properties else {}
            self._props.append(props)
            self._any_props = self._any_props or bool(props)
            self._seq.append(meta.sequence_id)
            self._ids.append(message_id or entry.message_id(self.partition))
            return
        self._values.extend(entry.payloads[lo:hi])
        self._ids.extend(entry.message_ids(self.partition, lo, hi))
        base_seq = meta.sequence_id
        entry_event = meta.event_time or None
        m0 = metas[lo]
        if (m0.partition_key is None and not m0.properties and not m0.event_time and m0.sequence_id is None
                and not m0.null_value and all(map(operator.is_, metas, itertools.repeat(m0)))):
            # payload-only messages (one shared metadata object): nothing to look at per message
            self._keys.extend(itertools.repeat(None, count))
            self._props.extend(itertools.repeat(m0.properties, count))
            self._event_ms.extend(itertools.repeat(entry_event, count))
            self._any_event = self._any_event or entry_event is not None
            self._seq.extend(range(base_seq + lo, base_seq + hi))
            return
        for i in range(lo, hi):
            m = metas[i]
            if m.null_value:
                self._values[len(self._values) - (hi - i)] = None
            if m.partition_key_b64_encoded and m.partition_key is not None:
                self._b64_rows.append(len(self._keys))
            self._keys.append(m.partition_key)
            self._any_key = self._any_key or m.partition_key is not None
            event = m.event_time or entry_event
            self._event_ms.append(event)
            self._any_event = self._any_event or event is not None
            self._props.append(m.properties)
            self._any_props = self._any_props or bool(m.properties)
            self._seq.append(m.sequence_id if m.sequence_id is not None else base_seq + i)

    def build(self) -> pa.RecordBatch:
        """A record batch of everything collected; the builder is empty afterwards (:attr:`built_versions`
        holds its rows' schema versions)."""
        n = self.rows
        self.built_versions = _versions_from_runs(self._version_runs)
        columns = [
            pa.array(self._values, pa.binary()),
            self._key_column(n),
            pa.repeat(pa.scalar(self.topic, pa.string()), n),
            pa.repeat(pa.scalar(self.partition, _I32), n),
            pa.array(self._offsets, pa.int64()),
            pa.array(self._ids, pa.binary()),
            _timestamps_from_runs(self._publish_runs),
            _timestamps(self._event_ms) if self._any_event else pa.nulls(n, TIMESTAMP),
            _properties(self._props) if self._any_props else _empty_maps(n),
            _strings_from_runs(self._producer_runs),
            pa.array(self._seq, pa.int64()),
        ]
        self._clear()
        return pa.RecordBatch.from_arrays(
            columns, schema=ARROW_SCHEMA_STRING_KEY if self.key_type == "string" else ARROW_SCHEMA)

    def _key_column(self, n: int) -> pa.Array:
        if self.key_type == "string":
            return pa.array(self._keys, pa.string()) if self._any_key else pa.nulls(n, pa.string())
        if not self._any_key:
            return pa.nulls(n, pa.binary())
        if not self._b64_rows:
            return pa.array(self._keys, pa.string()).cast(pa.binary())  # UTF-8 bytes, no copy
        keys: list[Any] = [None if k is None else k.encode("utf-8") for k in self._keys]
        for row in self._b64_rows:
            keys[row] = key_bytes(self._keys[row], True)
        return pa.array(keys, pa.binary())


def _versions_from_runs(runs: list[tuple[bytes, int]]) -> list[int]:
    """Each row's writer schema version (-1: none), from Pulsar's 8-byte big-endian ``schema_version``."""
    out: list[int] = []
    for version, count in runs:
        out.extend(itertools.repeat(int.from_bytes(version, "big", signed=True) if version else -1, count))
    return out


def _timestamps(ms: list[Any]) -> pa.Array:
    millis = pa.array(ms, pa.int64())
    return pc.multiply(millis, 1000).cast(TIMESTAMP)


def _timestamps_from_runs(runs: list[tuple[int, int]]) -> pa.Array:
    values = np.repeat(np.array([v for v, _ in runs], dtype=np.int64) * 1000,
                       np.array([c for _, c in runs], dtype=np.int64))
    return pa.array(values, TIMESTAMP)


def _strings_from_runs(runs: list[tuple[str, int]]) -> pa.Array:
    if len(runs) == 1 or all(v == runs[0][0] for v, _ in runs):
        return pa.repeat(pa.scalar(runs[0][0], pa.string()), sum(c for _, c in runs))
    return pa.concat_arrays([pa.repeat(pa.scalar(v, pa.string()), c) for v, c in runs])


def _empty_maps(n: int) -> pa.Array:
    return pa.MapArray.from_arrays(pa.array(np.zeros(n + 1, dtype=np.int32)), pa.array([], pa.string()),
                                   pa.array([], pa.string()), type=PROPERTIES)


def _properties(props: list[Mapping[str, str]]) -> pa.Array:
    offsets = [0]
    keys: list[str] = []
    items: list[str] = []
    for p in props:
        if p:
            keys.extend(p.keys())
            items.extend(p.values())
        offsets.append(len(keys))
    return pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(keys, pa.string()),
                                   pa.array(items, pa.string()), type=PROPERTIES)
