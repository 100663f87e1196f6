"""The internal error of a segment frame that does not verify (:mod:`broker_core.storage.segment` raises it;
the log and recovery turn it into ``CorruptLog`` or a torn tail)."""
from __future__ import annotations


class BadFrame(Exception):
    """An invalid frame at ``position`` of a segment (internal: becomes CorruptLog or a torn tail)."""

    def __init__(self, position: int, reason: str, *, crc_valid: bool = False) -> None:
        super().__init__(f"{reason} at byte {position}")
        self.position = position
        self.reason = reason
        self.crc_valid = crc_valid
