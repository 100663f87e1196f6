"""The half of the stream reader that is Spark's life cycle around the query's durable subscription.

:class:`MicroBatchReader` keeps the parts that do not depend on what an offset is: the first offset asked
once, the default read limit, Trigger.AvailableNow's target, the partitions a trigger looks at, the commit
(acknowledged on the subscription), the report of the latest offsets, and the stop. The subclass brings the
offsets' kind and the broker calls for it:

- :class:`~connector.spark.stream_reader.PulsarLikeStreamReader`, the one stream reader, whose offsets' kind
  (dense on pulsarlike, message id boundaries on any other broker) is :mod:`connector.spark.offset_kinds`.

A subclass writes ``_start()`` (the first offset, naming the subscription), ``_decode(stored)`` (an offset
Spark hands back; one of the other kind is refused), ``_acknowledge(upto, force)``, ``latestOffset`` and
``partitions``/``read``; ``_calls`` is its broker calls (``discover(spec)``, ``close()``).
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Mapping

from pyspark.sql.datasource import DataSourceStreamReader

from connector.spark import offsets as off
from connector.spark.offsets import TopicPartition
from connector.spark.options import SourceOptions
from connector.spark.spark_versions import (
    ReadAllAvailable, ReadLimit, ReadMaxBytes, ReadMaxRows, ReadMinRows, SupportsTriggerAvailableNow)


class MicroBatchReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The shared half of a stream reader (module docstring)."""

    def __init__(self, options: SourceOptions, clock: Callable[[], float], calls: Any) -> None:
        self.options = options
        self._clock = clock
        """Seconds, for maxTriggerDelay and the keep-alive (tests pass a fake one)."""
        self._calls = calls
        self._subscription: str | None = options.subscription_name or None
        """Known once the query starts (initialOffset) or the first stored offset arrives (a restart)."""
        self._initial: dict | None = None
        self._latest: dict[TopicPartition, Any] = {}
        self._target: dict[TopicPartition, Any] | None = None
        """Trigger.AvailableNow: read up to here, no further."""
        self._committed: dict[TopicPartition, Any] = {}
        """The end of the last batch Spark committed, as far as Spark told us."""
        self._last_admit_s = clock()
        self._reached: dict | None = None
        """The offset Spark last planned to or handed back (``partitions(start, end)``'s end, ``latestOffset``'s
        answer): the start of the next batch on a Spark that calls ``latestOffset()`` without it (before 4.2)."""

    @property
    def subscription(self) -> str | None:
        """The query's durable subscription (None until the query has started)."""
        return self._subscription

    # --- what a subclass writes -----------------------------------------------------------------------
    def _start(self) -> dict:
        raise NotImplementedError

    def _decode(self, stored: dict) -> dict[TopicPartition, Any]:
        raise NotImplementedError

    def _acknowledge(self, upto: Mapping[TopicPartition, Any], force: bool = False) -> None:
        raise NotImplementedError

    # --- offsets --------------------------------------------------------------------------------------
    def initialOffset(self) -> dict:
        # Spark asks again on every trigger until a first batch is planned: the answer must not change.
        if self._initial is None:
            self._initial = self._start()
        return self._initial

    def _encode(self, offsets: Mapping[TopicPartition, Any]) -> dict:
        assert self._subscription is not None
        return off.encode_source_offset(offsets, self._subscription)

    def getDefaultReadLimit(self) -> ReadLimit:
        opts = self.options
        if opts.max_messages_per_trigger is not None:
            return ReadMaxRows(opts.max_messages_per_trigger)
        if opts.max_bytes_per_trigger is not None:
            return ReadMaxBytes(opts.max_bytes_per_trigger)
        if opts.min_messages_per_trigger is not None:
            return ReadMinRows(opts.min_messages_per_trigger)
        return ReadAllAvailable()

    def _start_and_limit(self, start: dict | None, limit: ReadLimit | None) -> tuple[dict, ReadLimit]:
        """``latestOffset``'s arguments; Spark before 4.2 gives none (:mod:`connector.spark.spark_versions`):
        the start is where Spark last got to (on a fresh query the initial offset) and the limit the options'."""
        if start is None:
            start = self._reached if self._reached is not None else self.initialOffset()
        return start, limit if limit is not None else self.getDefaultReadLimit()

    def _reach(self, offset: dict) -> None:
        """Spark got to ``offset`` (the end of a batch it plans, or the checkpoint's on a restart)."""
        self._reached = offset

    def _known(self, begin: Mapping[TopicPartition, Any]) -> set[TopicPartition]:
        """The partitions a trigger looks at: those discovered and those of its start (under
        Trigger.AvailableNow, only those of the target or the start)."""
        known = set(self._calls.discover(self.options.spec)) | set(begin)
        if self._target is not None:
            known &= set(self._target) | set(begin)
        return known

    def _may_hold_back(self) -> bool:
        """minMessagesPerTrigger may keep a trigger from admitting fewer messages: it is set, this is not
        Trigger.AvailableNow, and maxTriggerDelay has not passed since the last admission."""
        opts = self.options
        return opts.min_messages_per_trigger is not None and self._target is None and \
            (self._clock() - self._last_admit_s) * 1000 < opts.max_trigger_delay_ms

    def _add_partitions(self, end: dict[TopicPartition, Any], fresh: Mapping[TopicPartition, Any]) -> None:
        """Partitions new to the query join ``end`` at their start (already held by the subscription); the
        next batch reads them."""
        if fresh:
            end.update(fresh)
            # on the reader's own logger, with its other lines
            logging.getLogger(type(self).__module__).info(
                "event=partitions_added partitions=%s start=%s", ",".join(map(str, fresh)), off.dumps(fresh))

    def _planned(self, begin: Mapping[TopicPartition, Any], end: Mapping[TopicPartition, Any]) -> dict:
        """``latestOffset``'s answer; an admission that moved anything restarts maxTriggerDelay."""
        if end != begin:
            self._last_admit_s = self._clock()
        answer = self._encode(end)
        self._reach(answer)
        return answer

    def reportLatestOffset(self) -> dict | None:
        return self._encode(self._latest) if self._latest else None

    # --- the durable subscription ---------------------------------------------------------------------
    def _committed_up_to(self, offsets: Mapping[TopicPartition, Any]) -> None:
        """Spark committed up to ``offsets``: acknowledged on the subscription (the checkpoint, not the
        subscription, is the source of truth; the next trigger acknowledges again what fails here)."""
        self._committed.update(offsets)
        self._acknowledge(offsets)

    def commit(self, end: dict) -> None:
        self._committed_up_to(self._decode(end))

    def stop(self) -> None:
        try:
            if self._committed and self._subscription is not None:
                self._acknowledge(self._committed, force=True)
        finally:
            self._calls.close()
