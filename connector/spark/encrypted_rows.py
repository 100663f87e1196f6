"""End-to-end encrypted messages in a range read: decrypted into rows, or ``cryptoFailureAction`` applied.

An encrypted entry (its metadata names ``encryption_keys``) is decrypted with the key reader of the source's
options (:mod:`connector.spark.crypto_options`) by the client's decryption
(:class:`~connector.client.security.message_crypto.ConsumerCrypto`), then decompressed, split or reassembled as any
entry, so its rows are those of the messages as sent. An entry that cannot be decrypted (no key reader, no
private key that opens it, a key file the executor cannot read):

- ``fail`` (default): the task fails with :class:`~connector.client.security.crypto_keys.CryptoError` naming the topic,
  partition, offsets and key names, and why the key reader could not help (a replayed range fails the same
  way: nothing is skipped behind the query's back);
- ``discard``: its messages give no rows (logged, counted);
- ``consume``: one row stands for the whole entry, at its first offset: ``value`` the payload as stored
  (encrypted, and compressed when the producer compressed; a batch's messages together), the metadata columns
  the entry's, and ``__encryptionContext.isDecryptionFailed`` true.

With ``consume`` the rows have the column ``__encryptionContext`` (after the others, before Kafka's
``headers``): pulsar-client's ``Message.encryption_context()`` as a struct, null for a message that was not
encrypted -- ``keys`` (each key name, its wrapped data key and metadata), ``param`` (the AES-GCM IV),
``algorithm``, ``compressionType``, ``uncompressedMessageSize``, ``batchSize`` (-1: not a batch) and
``isDecryptionFailed``: what decrypting the row elsewhere takes.
"""
from __future__ import annotations

import logging
from typing import Any

import pyarrow as pa

from connector.client.security.crypto_keys import CryptoError, EncryptionContext
from connector.spark.crypto_options import SourceCrypto

log = logging.getLogger(__name__)

ENCRYPTION_KEY = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary()),
                            pa.field("metadata", pa.map_(pa.string(), pa.string()))])
ENCRYPTION_CONTEXT = pa.field("__encryptionContext", pa.struct([
    pa.field("keys", pa.list_(ENCRYPTION_KEY)),
    pa.field("param", pa.binary()),
    pa.field("algorithm", pa.string()),
    pa.field("compressionType", pa.string()),
    pa.field("uncompressedMessageSize", pa.int64()),
    pa.field("batchSize", pa.int32()),
    pa.field("isDecryptionFailed", pa.bool_()),
]))


def with_encryption_context(schema: pa.Schema) -> pa.Schema:
    """The source's Arrow schema with ``__encryptionContext`` appended (``cryptoFailureAction=consume``)."""
    return schema.append(ENCRYPTION_CONTEXT)


def context_value(context: Any) -> dict[str, Any] | None:
    """An ``encryption_context()`` (ours or pulsar-client's) as a value of the column; None for None."""
    if context is None:
        return None
    compression = context.compression_type()
    return {"keys": [{"key": k.key, "value": bytes(k.value), "metadata": list(dict(k.metadata).items())}
                     for k in context.keys()],
            "param": bytes(context.param()), "algorithm": context.algorithm() or "",
            "compressionType": getattr(compression, "name", str(compression)),
            "uncompressedMessageSize": int(context.uncompressed_message_size()),
            "batchSize": int(context.batch_size()), "isDecryptionFailed": bool(context.is_decryption_failed())}


class ContextColumn:
    """``__encryptionContext`` of the rows a builder collects: :meth:`note` the value of the rows about to be
    added (from row index ``row``), :meth:`take` the column of the rows built."""

    def __init__(self) -> None:
        self._runs: list[tuple[int, dict[str, Any] | None]] = []

    def note(self, row: int, value: dict[str, Any] | None) -> None:
        if self._runs and self._runs[-1][0] == row:
            self._runs[-1] = (row, value)  # the rows noted before were not added
        elif not self._runs or self._runs[-1][1] is not value:
            self._runs.append((row, value))

    def take(self, rows: int) -> pa.Array:
        values: list[dict[str, Any] | None] = [None] * (self._runs[0][0] if self._runs else rows)
        bounds = self._runs + [(rows, None)]
        for (start, value), (stop, _) in zip(bounds, bounds[1:]):
            values.extend([value] * (stop - start))
        self._runs = []
        return pa.array(values, type=ENCRYPTION_CONTEXT.type)


def append_context(batch: pa.RecordBatch, column: ContextColumn) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(list(batch.columns) + [column.take(batch.num_rows)],
                                      schema=with_encryption_context(batch.schema))


class EntryDecryption:
    """One range's decryption (dense offsets): :meth:`open` gives an entry's payload decrypted, or None when it
    could not be and the action keeps the read going (``discard``, ``consume``)."""

    def __init__(self, crypto: SourceCrypto, topic: str, partition: int) -> None:
        self.action = crypto.action
        self.topic = topic
        self.partition = partition
        self._crypto = crypto.consumer_crypto(f"spark {topic}/{partition}")
        self.discarded = 0
        """Messages left out (``discard``)."""

    def open(self, metadata: Any, payload: Any, first: int, count: int) -> memoryview | None:
        plain = self._crypto.decrypt(metadata, payload)
        if plain is not None:
            return memoryview(plain)
        if self.action == "fail":
            raise self.failure(metadata, first, count)
        return None

    def failure(self, metadata: Any, first: int, count: int) -> CryptoError:
        names = ", ".join(sorted({k.key for k in metadata.encryption_keys}))
        return undecryptable(self.topic, self.partition, first, count, names, self._crypto.reader)

    def discard(self, first: int, count: int) -> None:
        self.discarded += count
        log.warning("event=undecryptable_messages_discarded topic=%s partition=%d offsets=%d..%d "
                    "action=discard", self.topic, self.partition, first, first + count - 1)

    @staticmethod
    def context(metadata: Any, failed: bool) -> dict[str, Any]:
        return context_value(EncryptionContext.of(metadata, failed))  # type: ignore[return-value]


def undecryptable(topic: str, partition: int, first: int, count: int, names: str, reader: Any,
                  where: str | None = None) -> CryptoError:
    """The ``fail`` action's error: which messages, which keys, why the key reader could not help, what to do."""
    at = where or (f"offset {first}" if count == 1 else f"offsets {first}..{first + count - 1}")
    if reader is None:
        why = "the read has no key reader (option cryptoPrivateKey or cryptoKeyReaderClassName)"
    else:
        detail = getattr(reader, "last_error", None)
        why = f"no private key of the key reader decrypts it{f' ({detail})' if detail else ''}"
    return CryptoError(
        f"cannot decrypt the end-to-end encrypted message at {at} of {topic} partition {partition} (encryption "
        f"keys: {names or 'none named'}): {why}. Give the private key of one of these keys, or set option "
        "cryptoFailureAction=discard (leave such messages out) or consume (deliver them encrypted, with "
        "__encryptionContext)", topic=topic, partition=partition, offset=first, keys=names)
