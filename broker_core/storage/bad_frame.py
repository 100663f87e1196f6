"""The internal error of a segment frame that does not verify (:mod:`broker_core.storage.segment` raises it;
the segment turns it into a damaged range, recovery perhaps into a torn tail)."""
from __future__ import annotations

from typing import Any


class BadFrame(Exception):
    """An invalid frame at ``position`` of a segment (internal: becomes a damaged range or a torn tail)."""

    def __init__(self, position: int, reason: str, *, crc_valid: bool = False, header: Any = None) -> None:
        super().__init__(f"{reason} at byte {position}")
        self.position = position
        self.reason = reason
        self.crc_valid = crc_valid
        self.header = header
        """the frame's header when the frame itself is whole and only its offset is out of sequence"""
