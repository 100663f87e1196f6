"""Sizes, relative times and message ids as ``pulsar-admin`` reads them from the command line.

- **Size** (``set-retention --size``): a number of bytes with an optional unit ``k``, ``m``, ``g``, ``t``
  (powers of 1024, either case): ``10M`` is 10 MiB, ``100`` is 100 bytes; ``-1`` means no limit.
- **Relative time** (``set-retention --time``, ``reset-cursor --time``, ``set-message-ttl``): a number
  with an optional unit ``s``, ``m``, ``h``, ``d``, ``w`` (7 days), ``y`` (365 days); **no unit means
  seconds**, as Pulsar's ``RelativeTimeUtil`` reads it; ``-1`` means infinite where the option allows it.
- **Message id**: ``ledgerId:entryId`` (or ``ledgerId:entryId:batchIndex``), ``earliest``, ``latest``.

Each parser raises ``ValueError`` with what is accepted; the CLI turns it into a usage error.
"""
from __future__ import annotations

import re

from connector.client.message_id import MessageId

SIZE_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
TIME_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}
_NUMBER = re.compile(r"-?\d+")


def parse_size(text: str) -> int:
    """Bytes (``-1``: no limit). ``parse_size("10M") == 10485760``."""
    value, unit = _split(text, SIZE_UNITS, "size", "10M, 16G, 3T, 512k, 100 (bytes) or -1 (no limit)")
    return _scaled(text, value, SIZE_UNITS[unit] if unit else 1, "size")


def parse_relative_seconds(text: str) -> int:
    """Seconds (``-1``: infinite). ``parse_relative_seconds("3h") == 10800``; ``"90"`` is 90 seconds."""
    value, unit = _split(text, TIME_UNITS, "time", "100m, 3h, 2d, 5w, 1y, 90 (seconds) or -1 (infinite)")
    return _scaled(text, value, TIME_UNITS[unit] if unit else 1, "time")


def size_to_mb(size_bytes: int) -> int:
    """Whole MiB, as pulsar-admin sends retention sizes (below 1 MiB is 0; -1 stays -1)."""
    return -1 if size_bytes == -1 else size_bytes // (1 << 20)


def seconds_to_minutes(seconds: int) -> int:
    """Whole minutes, as pulsar-admin sends retention times (-1 stays -1)."""
    return -1 if seconds == -1 else seconds // 60


def parse_message_id(text: str, *, sentinels: bool = False) -> MessageId:
    """``ledgerId:entryId[:batchIndex]``; with ``sentinels`` also ``earliest`` and ``latest``."""
    lowered = text.strip().lower()
    if sentinels and lowered in ("earliest", "latest"):
        return MessageId.earliest if lowered == "earliest" else MessageId.latest
    parts = lowered.split(":")
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        accepted = "ledgerId:entryId (e.g. 0:42)" + (", earliest or latest" if sentinels else "")
        raise ValueError(f"message id {text!r} is not valid; use {accepted}")
    ledger, entry = int(parts[0]), int(parts[1])
    return MessageId(-1, ledger, entry, int(parts[2]) if len(parts) == 3 else -1)


def _split(text: str, units: dict[str, int], what: str, accepted: str) -> tuple[int, str]:
    raw = text.strip()
    unit = raw[-1:].lower() if raw[-1:].isalpha() else ""
    number = raw[:-1] if unit else raw
    if (unit and unit not in units) or not _NUMBER.fullmatch(number):
        raise ValueError(f"{what} {text!r} is not valid; use {accepted}")
    return int(number), unit


def _scaled(text: str, value: int, factor: int, what: str) -> int:
    if value == -1:
        return -1
    if value < 0:
        raise ValueError(f"{what} {text!r} is not valid: negative values are refused (-1 means no limit)")
    return value * factor
