"""Output as ``pulsar-admin`` prints it: JSON through Jackson's default pretty printer, lists one item per
line, peeked messages with a hex dump of the payload.

Jackson's layout (what ``pulsar-admin topics stats`` prints)::

    {
      "msgInCounter" : 3,
      "publishers" : [ ],
      "subscriptions" : {
        "sub" : {
          "consumers" : [ {
            "consumerName" : "c1"
          } ]
        }
      }
    }

Fields are ``"key" : value``, two spaces per object level; arrays stay on their line (``[ a, b ]``) and do
not indent what they hold; empty containers print ``{ }`` and ``[ ]``.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from connector.client.admin import PeekedMessage

SEPARATOR = "-" * 73
"""Between two peeked messages, as pulsar-admin prints it (followed by an empty line)."""


def pulsar_json(value: Any, level: int = 0) -> str:
    """``value`` (JSON types) laid out as Jackson's default pretty printer does."""
    if isinstance(value, dict):
        if not value:
            return "{ }"
        inner = "  " * (level + 1)
        fields = ",\n".join(f"{inner}{_scalar(str(k))} : {pulsar_json(v, level + 1)}" for k, v in value.items())
        return "{\n" + fields + "\n" + "  " * level + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(pulsar_json(v, level) for v in value) + " ]"
    return _scalar(value)


def plain_json(value: Any) -> str:
    """``value`` on one line, as Jackson writes it without a pretty printer (pulsar-admin's ``--plain``)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _scalar(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def lines(items: Iterable[Any]) -> str:
    """One item per line (how pulsar-admin prints a list of names)."""
    return "\n".join(str(item) for item in items)


def hex_dump(data: bytes) -> str:
    """Netty's ``ByteBufUtil.prettyHexDump`` layout: 16 bytes a row, offset, hex, printable ASCII."""
    if not data:
        return ""
    rule = "+--------+" + "-" * 49 + "+----------------+"
    out = ["         +" + "-" * 49 + "+",
           "         |" + "".join(f"  {i:x}" for i in range(16)) + " |",
           rule]
    for row in range(0, len(data), 16):
        chunk = data[row:row + 16]
        hexes = "".join(f" {b:02x}" for b in chunk).ljust(48)
        text = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in chunk).ljust(16)
        out.append(f"|{row:08x}|{hexes} |{text}|")
    out.append(rule)
    return "\n".join(out)


def peeked(messages: list[PeekedMessage]) -> str:
    """Peeked messages as ``pulsar-admin topics peek-messages`` prints them, plus lines pulsar-admin leaves
    out: the message's offset, key, producer name and sequence id."""
    blocks = []
    for msg in messages:
        mid = msg.message_id
        head = (f"Batch Message ID: {mid.ledger_id()}:{mid.entry_id()}:{mid.batch_index()}"
                if mid.batch_index() >= 0 else f"Message ID: {mid.ledger_id()}:{mid.entry_id()}")
        block = [head, f"Publish time: {msg.publish_time}", f"Event time: {msg.event_time}"]
        if msg.deliver_at_time:
            block.append(f"Deliver at time: {msg.deliver_at_time}")
        if msg.broker_publish_time >= 0:
            block.append(f"Broker entry metadata timestamp: {msg.broker_publish_time}")
        block.append(f"Offset: {msg.offset}")
        if msg.key is not None:
            block.append(f"Key: {msg.key}")
        block += [f"Producer name: {msg.producer_name}", f"Sequence id: {msg.sequence_id}"]
        if msg.chunk is not None:
            block.append(f"Chunk: {msg.chunk[0]} of {msg.chunk[1]}")
        if msg.decode_error is not None:
            block.append(f"Decode error: {msg.decode_error}")
        if msg.properties:
            block += ["Properties:", pulsar_json(msg.properties)]
        block.append(hex_dump(msg.data))
        blocks.append("\n".join(block))
    return f"\n{SEPARATOR}\n\n".join(blocks)


def peeked_json(messages: list[PeekedMessage]) -> str:
    """The same messages as a JSON list (``--json``): payloads as UTF-8 text when they are, else base64."""
    import base64

    out = []
    for msg in messages:
        mid = msg.message_id
        try:
            payload, encoding = msg.data.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            payload, encoding = base64.b64encode(msg.data).decode(), "base64"
        out.append({"messageId": f"{mid.ledger_id()}:{mid.entry_id()}" + (f":{mid.batch_index()}"
                                                                         if mid.batch_index() >= 0 else ""),
                    "offset": msg.offset, "key": msg.key, "properties": msg.properties,
                    "publishTime": msg.publish_time, "eventTime": msg.event_time,
                    "producerName": msg.producer_name, "sequenceId": msg.sequence_id,
                    "brokerPublishTime": msg.broker_publish_time, "payload": payload, "encoding": encoding})
        if msg.decode_error is not None:
            out[-1]["decodeError"] = msg.decode_error
    return pulsar_json(out)
