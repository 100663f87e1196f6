"""Pulsar's entry format: encode and decode entries, batches and the broker's entry prefix.

One module per job (each holds the layout it reads or writes):

- :mod:`.entries`: one stored entry (``0x0e01 | CRC32C | metadataSize | MessageMetadata | payload``) and
  the broker's ``0x0e02`` prefix on it;
- :mod:`.batch_encoding`: a batch payload from its messages (the hand-encoded ``SingleMessageMetadata``);
- :mod:`.batch_decoding`: a batch payload back into its messages' metadata and bytes;
- :mod:`.varint`: protobuf's base-128 varints for the hand-written fast paths.

Decoding never raises ``IndexError``/``DecodeError``: bad input becomes
:class:`~broker_core.errors.InvalidMessage` (bad magic, sizes, metadata) or
:class:`~broker_core.errors.ChecksumError` (CRC mismatch). Nothing is sized from a count the entry states
before that count is checked against the bytes it came with (:func:`check_entry` for the broker,
:func:`split_batch` for readers; see :mod:`broker_core.protocol.entry_limits`).

This package re-exports the codec's API, so ``from broker_core.protocol import codec`` then ``codec.X`` works.
"""
from broker_core.protocol.codec.batch_decoding import SingleMeta, decode_batch, split_batch
from broker_core.protocol.codec.batch_encoding import BatchItem, BatchMessage, encode_batch, single_message_header
from broker_core.protocol.codec.entries import (
    BROKER_PREFIX_HEADER, ENTRY_HEADER, Compression, MAGIC_BROKER_ENTRY_METADATA, MAGIC_CRC32C, U32, broker_entry_prefix,
    decode_entry, encode_entry, split_broker_entry)
from broker_core.protocol.codec.varint import encode_varint
from broker_core.protocol.entry_limits import check_entry

__all__ = [
    "BROKER_PREFIX_HEADER", "ENTRY_HEADER", "MAGIC_BROKER_ENTRY_METADATA", "MAGIC_CRC32C", "U32", "BatchItem",
    "BatchMessage", "Compression", "SingleMeta", "broker_entry_prefix", "check_entry", "decode_batch",
    "decode_entry", "encode_batch", "encode_entry", "encode_varint", "single_message_header", "split_batch",
    "split_broker_entry"]
