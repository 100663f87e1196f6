"""A stored message as Pulsar's REST API answers it (``.../subscription/{sub}/position/{n}``,
``.../examinemessage``: the entry's payload, decompressed, and its metadata in ``X-Pulsar-*`` headers) made
back into the stored entry (:class:`~connector.client.transport.events.Entry`) the ``PeekMessages`` answer holds, so that :mod:`connector.client.admin.peek`
splits and shows it the same way whichever wire it came over.

Headers read: ``X-Pulsar-Message-ID`` (``ledgerId:entryId``), ``X-Pulsar-PROPERTY`` (a JSON object; the
older ``X-Pulsar-PROPERTY-<key>`` one per property too), ``X-Pulsar-publish-time`` / ``event-time`` /
``deliver-at-time`` (ISO 8601, or milliseconds), ``X-Pulsar-producer-name``, ``X-Pulsar-sequence-id``,
``X-Pulsar-partition-key``, ``X-Pulsar-num-batch-message``, ``X-Pulsar-Broker-Entry-METADATA-timestamp``.
"""
from __future__ import annotations

import datetime
import json
from email.message import Message

from broker_core.errors import InvalidMessage
from broker_core.protocol import codec, pulsar_api_pb2

from connector.client.transport.events import Entry

PROPERTY = "X-Pulsar-PROPERTY"


def _ms(value: str | None) -> int:
    if not value:
        return 0
    if value.lstrip("-").isdigit():
        return int(value)
    try:
        when = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidMessage(f"the server sent a time that is not ISO 8601: {value[:64]!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return int(when.timestamp() * 1000)


def _properties(headers: Message) -> dict[str, str]:
    found: dict[str, str] = {}
    prefix = PROPERTY.lower() + "-"
    for key, value in headers.items():
        if key.lower().startswith(prefix):
            found[key[len(prefix):]] = value
    if headers.get(PROPERTY):
        try:
            found.update({str(k): str(v) for k, v in json.loads(headers[PROPERTY]).items()})
        except (ValueError, AttributeError):
            raise InvalidMessage(f"the server sent {PROPERTY} that is not a JSON object") from None
    return found


def delivered_entry(payload: bytes, headers: Message) -> Entry:
    """The entry (``MessageMetadata`` and payload, the broker's timestamp in front) the answer stands for."""
    ledger, _, entry = (headers.get("X-Pulsar-Message-ID") or "").partition(":")
    try:
        ledger_id, entry_id = int(ledger), int(entry.split(":")[0])
    except ValueError:
        raise InvalidMessage("the server's answer has no X-Pulsar-Message-ID ledgerId:entryId") from None
    metadata = pulsar_api_pb2.MessageMetadata(
        producer_name=headers.get("X-Pulsar-producer-name") or "",
        sequence_id=int(headers.get("X-Pulsar-sequence-id") or 0),
        publish_time=_ms(headers.get("X-Pulsar-publish-time")))
    for key, value in _properties(headers).items():
        metadata.properties.add(key=key, value=value)
    if headers.get("X-Pulsar-partition-key") is not None:
        metadata.partition_key = headers["X-Pulsar-partition-key"]
    if headers.get("X-Pulsar-event-time"):
        metadata.event_time = _ms(headers["X-Pulsar-event-time"])
    if headers.get("X-Pulsar-deliver-at-time"):
        metadata.deliver_at_time = _ms(headers["X-Pulsar-deliver-at-time"])
    count = 1
    if headers.get("X-Pulsar-num-batch-message"):
        count = int(headers["X-Pulsar-num-batch-message"])
        metadata.num_messages_in_batch = count
    data = codec.encode_entry(metadata, payload)
    broker_time = headers.get("X-Pulsar-Broker-Entry-METADATA-timestamp")
    if broker_time and broker_time.isdigit():
        data = codec.broker_entry_prefix(int(broker_time), max(entry_id, 0) + count - 1) + data
    return Entry(data, max(ledger_id, 0), max(entry_id, 0), count)
