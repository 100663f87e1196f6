"""Option ``includeHeaders``: Kafka's ``headers`` column, from a message's properties.

Spark's Kafka source gives ``headers`` as ``array<struct<key: string, value: binary>>`` (null for a record
without headers). A Pulsar message's headers are its properties, so with ``includeHeaders=true`` the source
adds that column last: one ``(key, value)`` per property (the value's UTF-8 bytes), in the order of
``__messageProperties``, which stays as it is. Computed per record batch from ``__messageProperties``
without copying the strings' data.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

HEADER = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
HEADERS = pa.field("headers", pa.list_(HEADER))


def with_headers(schema: pa.Schema) -> pa.Schema:
    """The source's Arrow schema with the ``headers`` column last."""
    return schema.append(HEADERS)


def add_headers(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with ``headers`` appended, built from its ``__messageProperties`` map column."""
    props = batch.column(batch.schema.get_field_index("__messageProperties"))
    offsets = props.offsets
    first, last = offsets[0].as_py(), offsets[-1].as_py()  # a sliced batch's entries are a slice of them
    entries = pa.StructArray.from_arrays([props.keys.slice(first, last - first).cast(pa.string()),
                                          props.items.slice(first, last - first).cast(pa.binary())],
                                         fields=list(HEADER))
    empty = pc.or_kleene(pc.is_null(props), pc.equal(pc.subtract(offsets[1:], offsets[:-1]), 0))
    headers = pa.ListArray.from_arrays(pc.subtract(offsets, first), entries, type=HEADERS.type,
                                       mask=pc.fill_null(empty, True))
    return pa.RecordBatch.from_arrays(list(batch.columns) + [headers], schema=with_headers(batch.schema))
