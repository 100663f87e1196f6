"""What a range read does with offsets of its range it cannot read: one decision, :class:`LostOffsets`, for
every cause (Spark's Kafka source's ``failOnDataLoss``).

- ``failOnDataLoss=true`` (the default): the task fails, once, with :class:`DataLossError` naming topic,
  partition, the offsets (first..last), why they are gone and what to do.
- ``failOnDataLoss=false``: one WARNING line per lost range (``event=data_lost ... lost_total=N``), the
  offsets counted in :attr:`LostOffsets.count`, and the read goes on after them.

The causes, each with its reason and fix:

- **deleted by retention** (found when the read starts, or as a gap in what the stream delivers): the reason
  and fix come from the partition's stats (:func:`~connector.spark.planning.why_lost`);
- **the partition changed** (deleted, or re-created shorter than the range);
- **a damaged stored range** (the broker's ``DataLost``: a frame that does not verify, a segment file
  missing): the stream reports it in place of its first message (:meth:`LostOffsets.damaged`), and the read
  goes on at the range's ``end_offset``. Damage stays where it is, so a replayed micro-batch skips the same
  offsets and returns the same rows.

A damaged range the broker itself passed over (``autoSkipNonRecoverableData=true``: the broker's operator
chose to skip damaged data for every reader) reaches the read as a gap: :meth:`LostOffsets.passed_over` logs
and counts it but never fails the read.

Worked example: a range ``[0, 300)`` of partition -1; the stream meets ``DataLost(150, 200)`` when offset 150
is wanted. ``failOnDataLoss=true``: ``DataLossError("messages 150..199 of <topic> partition -1 are not
readable: ...")``. ``false``: ``damaged()`` logs ``first=150 last=199``, counts 50 and answers 200, where the
stream is moved. A Spark partition ``[175, 300)`` of the same topic loses ``175..199`` only (its share of
the range); one ``[0, 175)`` loses ``150..174`` and is done.
"""
from __future__ import annotations

import logging
from typing import Callable

from broker_core import errors

from connector.spark.offsets import TopicPartition

log = logging.getLogger(__name__)

DAMAGED_FIX = ("set option failOnDataLoss=false to skip them (the read goes on after them), set "
               "autoSkipNonRecoverableData=true on the broker to have it skip damaged ranges for every reader, "
               "or restore the segment from a backup to read them again")
"""What to do about a damaged range, in a Spark user's terms."""


class DataLossError(errors.PulsarLikeError):
    """Messages of a planned range are gone (deleted by retention, damaged in the broker's storage, or the
    topic was re-created); ``topic``, ``partition``, ``start`` and ``end`` (exclusive) name them."""


class LostOffsets:
    """The lost offsets of one range read of ``tp`` (see the module docstring)."""

    def __init__(self, tp: TopicPartition, fail_on_data_loss: bool) -> None:
        self.tp = tp
        self.fail_on_data_loss = fail_on_data_loss
        self.count = 0
        """Messages of the range found lost and skipped (failOnDataLoss=false, or passed over by the broker)."""

    def lose(self, start: int, end: int, reason: str, fix: Callable[[], str]) -> None:
        """Messages ``start..end-1`` cannot be read because of ``reason``: raise :class:`DataLossError` with
        ``fix()`` (failOnDataLoss), else log and count them. Nothing when the range is empty."""
        if start >= end:
            return
        message = (f"messages {start}..{end - 1} of {self.tp.topic} partition {self.tp.partition} are not "
                   f"readable: {reason}")
        if self.fail_on_data_loss:
            raise DataLossError(f"{message}; {fix()}", topic=self.tp.topic, partition=self.tp.partition,
                                start=start, end=end)
        self._skipped(start, end, f"{message}; skipped (failOnDataLoss=false)")

    def damaged(self, lost: errors.DataLost, position: int, end: int) -> int:
        """The stream met the damaged range ``lost`` while ``position`` was the next offset wanted of a range
        ending at ``end``: its offsets from ``position`` within the range are lost (:meth:`lose`); the offset
        the read goes on from. A range met again (a stream reopened before it) loses nothing more."""
        reason = lost.fields.get("reason") or "its stored bytes are damaged"
        self.lose(max(position, lost.start_offset), min(lost.end_offset, end),
                  f"the broker's stored copy of them is damaged ({reason})", lambda: DAMAGED_FIX)
        return max(position, lost.end_offset)

    def passed_over(self, start: int, end: int) -> None:
        """The broker skipped ``start..end-1`` (a damaged range, ``autoSkipNonRecoverableData=true``): logged
        and counted, never a failure (the broker's operator chose to skip damaged data)."""
        if start < end:
            self._skipped(start, end, f"messages {start}..{end - 1} of {self.tp.topic} partition "
                                      f"{self.tp.partition} were skipped by the broker (a damaged stored range; "
                                      "autoSkipNonRecoverableData=true)")

    def _skipped(self, start: int, end: int, message: str) -> None:
        self.count += end - start
        log.warning("event=data_lost topic=%s partition=%d first=%d last=%d lost_total=%d: %s", self.tp.topic,
                    self.tp.partition, start, end - 1, self.count, message)
