"""One Arrow record batch of the sink's input as per-column Python lists, ready for ``send_async``.

Columns are converted whole (``to_pylist``, Arrow compute for casts and checks): a per-row conversion
would cost more than the send. Row-level mistakes that Arrow can find (a null value, event times before
1970) are raised before any row of the batch is sent.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from connector.spark.sink_options import SinkColumns


class SinkDataError(ValueError):
    """A row the sink cannot send (null value, bad partition, no topic): the task fails."""


@dataclass
class Rows:
    """One record batch, column by column (None: the column is absent)."""

    values: list[bytes]
    longest: int
    """The largest payload, in bytes."""
    keys: list[str | None] | None = None
    """Partition keys (a binary ``__key``'s as :class:`~connector.client.key_bytes.B64Key`)."""
    topics: list[str | None] | None = None
    partitions: list[int | None] | None = None
    times: list[int | None] | None = None
    """Event times in ms since the epoch."""
    properties: list[dict[str, str] | None] | None = None


def rows_of(batch: Any, columns: SinkColumns, first_row: int, partition_id: int) -> Rows:
    """``batch`` as :class:`Rows`; ``first_row`` (its first row's index in the task) names bad rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if columns.record is not None:  # a typed write: the record columns, encoded
        from connector.spark.sink_records import encode_records
        try:
            encoded = encode_records(batch, columns.record)
        except ValueError as exc:
            raise SinkDataError(f"{exc} (counting from row {first_row} of Spark partition {partition_id})") from None
        value = pa.array(encoded, pa.binary())
    else:
        value = batch.column(columns.value)
    if value.null_count:
        row = first_row + pc.index(value.is_null(), True).as_py()
        raise SinkDataError(f"column value is null in row {row} of Spark partition {partition_id}; the sink "
                            "cannot send a null payload: filter such rows out (df.where('value IS NOT NULL')) "
                            "or coalesce them")
    if columns.value_is_string and columns.record is None:
        value = value.cast(pa.binary())
    rows = Rows(values=value.to_pylist(), longest=pc.max(pc.binary_length(value)).as_py() or 0)
    if columns.key >= 0:
        rows.keys = _keys(batch.column(columns.key))
    if columns.topic >= 0:
        rows.topics = batch.column(columns.topic).to_pylist()
    if columns.partition >= 0:
        rows.partitions = batch.column(columns.partition).to_pylist()
    if columns.event_time >= 0:
        rows.times = _event_times(batch.column(columns.event_time), columns.event_time_is_timestamp,
                                  partition_id)
    if columns.properties >= 0:
        rows.properties = _properties(batch.column(columns.properties))
    return rows


def _keys(column: Any) -> list[str | None]:
    """``__key`` as partition keys: a string as it is. Bytes that are UTF-8 text go as that text (Java's
    ``getKeyBytes()`` gives the same bytes back, and a source-to-sink copy keeps every key exactly as
    pulsar-client's ``partition_key()`` saw it); other bytes as Java's ``keyBytes`` sends them (their base64
    text, flagged ``partition_key_b64_encoded``: :class:`~connector.client.key_bytes.B64Key`)."""
    import pyarrow as pa

    if not (pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)):
        return column.to_pylist()
    from connector.client.key_bytes import B64Key

    of = B64Key.of
    out: list[str | None] = []
    append = out.append
    for key in column.to_pylist():
        if key is None:
            append(None)
            continue
        try:
            append(key.decode("utf-8"))
        except UnicodeDecodeError:
            append(of(key))
    return out


def _event_times(column: Any, is_timestamp: bool, partition_id: int) -> list[int | None]:
    import pyarrow as pa
    import pyarrow.compute as pc

    if is_timestamp:
        column = pc.divide(column.cast(pa.int64()), 1000)  # microseconds -> milliseconds
    smallest = pc.min(column).as_py()
    if smallest is not None and smallest < 0:
        raise SinkDataError(f"column __eventTime has a time before 1970 ({smallest} ms) in Spark partition "
                            f"{partition_id}; Pulsar event times are >= 0: fix or null it")
    return column.to_pylist()


def _properties(column: Any) -> list[dict[str, str] | None]:
    null_values = column.items.null_count > 0
    out: list[dict[str, str] | None] = []
    append = out.append
    for pairs in column.to_pylist():
        if not pairs:
            append(None)
        elif null_values:  # a property needs a value: entries without one are left out
            append({k: v for k, v in pairs if v is not None} or None)
        else:
            append(dict(pairs))
    return out
