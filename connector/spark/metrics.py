"""Messages behind latest, per topic partition, from a streaming query's progress (as Spark's Kafka source
reports ``minOffsetsBehindLatest``/``avgOffsetsBehindLatest``/``maxOffsetsBehindLatest``).

``StreamingQueryProgress.sources[].metrics`` stays empty for a Python source: in PySpark 4.3 the JVM side of
a Python stream reader (``PythonMicroBatchStream``) does not implement ``ReportsSourceMetrics`` and the Python
API has no metrics method. So the source reports the latest offset of every partition through
``reportLatestOffset()`` (shown as ``latestOffset`` next to ``endOffset`` in each progress) and this module
derives the lag from the two::

    progress = query.lastProgress
    messages_behind_latest(progress)
    # {"minOffsetsBehindLatest": 0, "avgOffsetsBehindLatest": 12.5, "maxOffsetsBehindLatest": 25}

:class:`MessagesBehindLatestListener` does it for every progress event and logs the figures.
"""
from __future__ import annotations

import ast
import json
import logging
from typing import Any

from connector.spark.offsets import TopicPartition, decode_source_offset

log = logging.getLogger(__name__)


def _as_dict(progress: Any) -> dict[str, Any]:
    if isinstance(progress, dict):
        return progress
    if isinstance(progress, str):
        return json.loads(progress)
    return json.loads(progress.json)  # StreamingQueryProgress


def _offsets(text: Any) -> dict[TopicPartition, int] | None:
    """The source's offsets in a progress field, or None when it is not a pulsarlike offset. pyspark 4.1's
    progress objects give an offset as the str() of its parsed JSON (4.0 and 4.2 give the JSON)."""
    try:
        return decode_source_offset(_parsed(text) if isinstance(text, str) else text).offsets
    except (TypeError, ValueError, AttributeError, SyntaxError):
        return None


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return ast.literal_eval(text)  # literals only: pyspark 4.1's str() of a dict


def messages_behind_latest(progress: Any, source_index: int | None = None) -> dict[str, float] | None:
    """Min, average and max over partitions of ``latestOffset - endOffset`` for the progress's pulsarlike
    source (the first one whose offsets parse as ours, or ``sources[source_index]``); None without
    figures (no progress, or no latest offset reported yet)."""
    if progress is None:  # query.lastProgress before the first trigger ended
        return None
    sources = _as_dict(progress).get("sources") or []
    if source_index is not None:
        sources = sources[source_index:source_index + 1]
    for source in sources:
        end, latest = _offsets(source.get("endOffset")), _offsets(source.get("latestOffset"))
        if not end or not latest:
            continue
        behind = [max(0, latest[key] - end.get(key, 0)) for key in latest]
        return {"minOffsetsBehindLatest": min(behind), "avgOffsetsBehindLatest": sum(behind) / len(behind),
                "maxOffsetsBehindLatest": max(behind)}
    return None


def listener_class() -> type:
    """:class:`MessagesBehindLatestListener` (built on first use: it needs pyspark)."""
    from pyspark.sql.streaming import StreamingQueryListener

    class MessagesBehindLatestListener(StreamingQueryListener):
        """Keeps (``latest[query_id]``) and logs the messages-behind-latest figures of every progress."""

        def __init__(self) -> None:
            self.latest: dict[str, dict[str, float]] = {}

        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            figures = messages_behind_latest(event.progress)
            if figures is not None:
                self.latest[str(event.progress.id)] = figures
                log.info("event=messages_behind_latest query=%s batch=%s min=%s avg=%s max=%s",
                         event.progress.name, event.progress.batchId, figures["minOffsetsBehindLatest"],
                         figures["avgOffsetsBehindLatest"], figures["maxOffsetsBehindLatest"])

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    return MessagesBehindLatestListener
