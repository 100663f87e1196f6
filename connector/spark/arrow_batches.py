"""Decoded entries of one topic partition -> Arrow record batches in the source's schema.

:class:`BatchBuilder` takes entries decoded by the client's entry decoding (:mod:`connector.client.entries`:
the same pipeline as the client's consumers, message ids as ``MessageId.serialize()`` writes them) and keeps,
column by column, the messages whose offsets fall in the range the caller asks for; :meth:`BatchBuilder.build`
turns what it holds into one ``pyarrow.RecordBatch`` whose schema is
:data:`connector.spark.schema.ARROW_SCHEMA` (``__key`` binary: a key flagged ``partition_key_b64_encoded``
decoded, any other key's UTF-8 bytes; or, with ``key_type="string"``, the keys as stored:
:data:`~connector.spark.schema.ARROW_SCHEMA_STRING_KEY`).

Cost model: a batch of payload-only messages (what most producers write) has its per-message columns (key,
properties, event time) filled without looking at each message; when its messages are of one size (the
entry decoding leaves such a batch unsplit: :class:`~connector.client.entries.UniformPayloads`), its values
and message ids are built as Arrow arrays by a few numpy calls per entry, with no Python object per message.
Columns constant over an entry (publish time, producer name) are kept as runs.

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

from connector.client.entries import DecodedEntry, UniformPayloads, batch_fields, message_id_prefix
from connector.client.key_bytes import key_bytes
from connector.spark.schema import ARROW_SCHEMA, ARROW_SCHEMA_STRING_KEY, PROPERTIES, TIMESTAMP

_I32 = pa.int32()
COLUMNAR_FROM = 64
"""Messages of one batch from which its values and ids are built as Arrow arrays (numpy, no Python object
per message) rather than as Python lists (bench/spark_throughput.py)."""


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
        self._offsets = _IntColumn()
        self._values = _BinaryColumn()
        self._keys = _ObjectColumn()
        self._any_key = False
        self._b64_rows: list[int] = []
        """Rows whose key is flagged ``partition_key_b64_encoded`` (rare: keys sent as bytes)."""
        self._ids = _BinaryColumn()
        self._event_ms = _ObjectColumn()
        self._any_event = False
        self._props = _ObjectColumn()
        self._any_props = False
        self._seq = _IntColumn()
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
        self._offsets.run(first, count)
        self._publish_runs.append((meta.publish_time, count))
        self._producer_runs.append((meta.producer_name, count))
        self._version_runs.append((meta.schema_version, count))
        metas = entry.metas
        if not entry.batched:
            self._values.append(None if meta.null_value else entry.payloads[0])
            key = meta.partition_key if meta.HasField("partition_key") else None
            if key is not None and meta.partition_key_b64_encoded:
                self._b64_rows.append(self._keys.size)
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
        payloads = entry.payloads
        if count < COLUMNAR_FROM:  # a few messages: Python objects cost less than Arrow arrays
            self._values.extend(payloads[lo:hi])
            self._ids.extend(entry.message_ids(self.partition, lo, hi))
        else:
            if isinstance(payloads, UniformPayloads):
                self._values.add_array(_uniform_values(payloads, lo, hi))
            else:
                self._values.extend(payloads[lo:hi])
            prefix = message_id_prefix(entry.ledger_id, entry.entry_id, self.partition)
            self._ids.add_array(_batch_ids(prefix, len(payloads), lo, hi))
        base_seq = meta.sequence_id
        entry_event = meta.event_time or None
        m0 = metas[lo]
        if (m0.partition_key is None and not m0.properties and not m0.event_time and m0.sequence_id is None
                and not m0.null_value and (isinstance(payloads, UniformPayloads)  # one shared metadata object
                                           or all(map(operator.is_, metas, itertools.repeat(m0))))):
            # payload-only messages: nothing to look at per message
            self._keys.repeat(None, count)
            self._props.repeat(m0.properties, count)
            self._event_ms.repeat(entry_event, count)
            self._any_event = self._any_event or entry_event is not None
            self._seq.run(base_seq + lo, count)
            return
        for i in range(lo, hi):
            m = metas[i]
            if m.null_value:
                self._values.set_null_from_end(hi - i)
            if m.partition_key_b64_encoded and m.partition_key is not None:
                self._b64_rows.append(self._keys.size)
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
            self._values.build(),
            self._key_column(n),
            pa.repeat(pa.scalar(self.topic, pa.string()), n),
            pa.repeat(pa.scalar(self.partition, _I32), n),
            self._offsets.build(),
            self._ids.build(),
            _timestamps_from_runs(self._publish_runs),
            _timestamps(self._event_ms.values()) if self._any_event else pa.nulls(n, TIMESTAMP),
            _properties(self._props.values()) if self._any_props else _empty_maps(n),
            _strings_from_runs(self._producer_runs),
            self._seq.build(),
        ]
        self._clear()
        return pa.RecordBatch.from_arrays(
            columns, schema=ARROW_SCHEMA_STRING_KEY if self.key_type == "string" else ARROW_SCHEMA)

    def _key_column(self, n: int) -> pa.Array:
        if not self._any_key:
            return pa.nulls(n, pa.string() if self.key_type == "string" else pa.binary())
        stored = self._keys.values()
        if self.key_type == "string":
            return pa.array(stored, pa.string())
        if not self._b64_rows:
            return pa.array(stored, pa.string()).cast(pa.binary())  # UTF-8 bytes, no copy
        keys: list[Any] = [None if k is None else k.encode("utf-8") for k in stored]
        for row in self._b64_rows:
            keys[row] = key_bytes(stored[row], True)
        return pa.array(keys, pa.binary())


class _ObjectColumn:
    """One column's Python values, a run of one value kept as ``(value, count)`` until :meth:`values` is
    called (a column nothing sets -- keys, properties, event times of payload-only messages -- never is)."""

    __slots__ = ("_runs", "_tail", "size")

    def __init__(self) -> None:
        self._runs: list[tuple[list[Any], Any, int]] = []
        """``(values before, value, count)``, in order."""
        self._tail: list[Any] = []
        self.size = 0

    def append(self, value: Any) -> None:
        self._tail.append(value)
        self.size += 1

    def repeat(self, value: Any, count: int) -> None:
        self._runs.append((self._tail, value, count))
        self._tail = []
        self.size += count

    def values(self) -> list[Any]:
        out: list[Any] = []
        for before, value, count in self._runs:
            out.extend(before)
            out.extend(itertools.repeat(value, count))
        out.extend(self._tail)
        return out


class _IntColumn:
    """An int64 column of Python ints and runs of consecutive ones (``start, start + 1, ...``)."""

    __slots__ = ("_parts", "_tail")

    def __init__(self) -> None:
        self._parts: list[Any] = []
        self._tail: list[int] = []

    def append(self, value: int) -> None:
        self._tail.append(value)

    def run(self, start: int, count: int) -> None:
        if count < 16:
            self._tail.extend(range(start, start + count))
            return
        if self._tail:
            self._parts.append(np.array(self._tail, dtype=np.int64))
            self._tail = []
        self._parts.append(np.arange(start, start + count, dtype=np.int64))

    def build(self) -> pa.Array:
        if not self._parts:
            return pa.array(self._tail, pa.int64())
        if self._tail:
            self._parts.append(np.array(self._tail, dtype=np.int64))
        return pa.array(np.concatenate(self._parts) if len(self._parts) > 1 else self._parts[0], pa.int64())


class _BinaryColumn:
    """A binary column built from Python values (``bytes`` or None) and ready Arrow arrays, in order."""

    __slots__ = ("_parts", "_pending")

    def __init__(self) -> None:
        self._parts: list[pa.Array] = []
        self._pending: list[Any] = []

    def append(self, value: Any) -> None:
        self._pending.append(value)

    def extend(self, values: Any) -> None:
        self._pending.extend(values)

    def set_null_from_end(self, k: int) -> None:
        """The ``k``-th value from the end (of the Python values just extended) is null."""
        self._pending[len(self._pending) - k] = None

    def add_array(self, array: pa.Array) -> None:
        if self._pending:
            self._parts.append(pa.array(self._pending, pa.binary()))
            self._pending = []
        self._parts.append(array)

    def build(self) -> pa.Array:
        parts = self._parts
        if self._pending or not parts:
            parts.append(pa.array(self._pending, pa.binary()))
        return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)


def _binary_array(offsets: np.ndarray, data: np.ndarray) -> pa.Array:
    return pa.Array.from_buffers(pa.binary(), len(offsets) - 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _uniform_values(payloads: UniformPayloads, lo: int, hi: int) -> pa.Array:
    """Messages ``lo <= i < hi`` of an unsplit batch as a binary array: one copy of their bytes."""
    stride = payloads.header_size + payloads.size
    rows = np.frombuffer(payloads.buffer, np.uint8).reshape(-1, stride)[lo:hi, payloads.header_size:]
    count = hi - lo
    offsets = np.arange(0, (count + 1) * payloads.size, payloads.size, dtype=np.int32)
    return _binary_array(offsets, np.ascontiguousarray(rows).reshape(-1))


class _IdLayout:
    """The serialized ids of a batch of ``batch_size`` messages with a ``prefix_size``-byte prefix (ledger,
    entry, partition fields): every id's bytes with the prefix left zero, their offsets, and where each id's
    prefix goes (row ``i``: ``at[i]``)."""

    __slots__ = ("data", "offsets", "at")

    def __init__(self, prefix_size: int, batch_size: int) -> None:
        blank = bytes(prefix_size)
        ids = [blank + batch_fields(i, batch_size) for i in range(batch_size)]
        self.data = np.frombuffer(b"".join(ids), np.uint8)
        self.offsets = np.zeros(batch_size + 1, dtype=np.int32)
        np.cumsum([len(i) for i in ids], out=self.offsets[1:])
        self.at = self.offsets[:-1, None] + np.arange(prefix_size, dtype=np.int32)


_ID_LAYOUTS: dict[tuple[int, int], _IdLayout] = {}
_ID_LAYOUTS_MAX = 64


def _batch_ids(prefix: bytes, batch_size: int, lo: int, hi: int) -> pa.Array:
    """The ``MessageId.serialize()`` bytes of messages ``lo <= i < hi`` of a batch whose ids start with
    ``prefix`` (:func:`~broker_core.protocol.entry.message_id_prefix`), as a binary array."""
    key = (len(prefix), batch_size)
    layout = _ID_LAYOUTS.get(key)
    if layout is None:
        if len(_ID_LAYOUTS) >= _ID_LAYOUTS_MAX:
            _ID_LAYOUTS.clear()
        layout = _ID_LAYOUTS[key] = _IdLayout(len(prefix), batch_size)
    data = layout.data.copy()
    data[layout.at] = np.frombuffer(prefix, np.uint8)
    ids = _binary_array(layout.offsets, data)
    return ids if hi - lo == batch_size else ids.slice(lo, hi - lo)


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
