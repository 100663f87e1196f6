"""``topics verify`` (a pulsarlike extension; Pulsar has no such call): a topic's stored files checked on the
running broker without changing them -- what :mod:`broker_core.storage.verify` checks, for one topic (each
partition of a partitioned one) or for every persistent topic of the broker.

The event loop only lists the topic partitions and, for a loaded one, takes its log's view when its turn
comes (the segments and the bytes written so far; the active segment goes on growing and is verified up to
there). Each partition is then read on a thread of its own, one after another, streaming its frames: the
broker serves its clients meanwhile. A topic that is not loaded is verified from its files alone and is not
loaded for it: a load would recover what the verification is meant to show (a damaged cursor is saved over
both copies, a torn tail cut). A verification whose caller goes away stops at its next frame.

The answer: ``{"ok": bool, "topics": [each partition's report], "totals": {...}}``, each report
:meth:`~broker_core.storage.verify.TopicReport.as_dict`.
"""
from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING

from broker_core.errors import NotAllowedError, TopicNotFound
from broker_core.storage.paths import topic_dir
from broker_core.storage.verify import LiveSegment, TopicReport, verify_files
from broker_core.types import PERSISTENT, TopicName

if TYPE_CHECKING:
    from broker_core.core.registry import TopicRegistry

log = logging.getLogger(__name__)

CURSORS = "cursors"
"""A topic partition's cursor folder (:func:`broker_core.core.persistent.recovery.open_log`)."""
TOTALS = ("segments", "bytes", "frames", "damagedRanges", "messagesLost", "indexProblems", "cursorProblems")


async def verify_topic(registry: TopicRegistry, name: TopicName) -> dict:
    """Verify topic ``name``: every stored partition of a partitioned topic, or the topic partition itself."""
    if name.domain != PERSISTENT:
        raise NotAllowedError(f"{name} is non-persistent: it stores nothing to verify", topic=str(name))
    partitions = registry.partitions_of(name)
    if not partitions and not registry.exists(name):
        raise TopicNotFound(f"topic {name} does not exist", topic=str(name))
    targets = [name.partition(i) for i in range(partitions)] if partitions else [name]
    return _answer(str(name), [await _verify(registry, target) for target in targets
                               if not partitions or registry.exists(target)])  # a partition never used holds nothing


async def verify_all(registry: TopicRegistry) -> dict:
    """Verify every persistent topic partition the broker stores."""
    names = sorted(set(registry.stored_topics(PERSISTENT)), key=str)
    return _answer("all", [await _verify(registry, name) for name in names])


async def _verify(registry: TopicRegistry, name: TopicName) -> TopicReport:
    directory = topic_dir(registry.topics_root, name)
    topic = registry.loaded(name)
    live = None
    if topic is not None and topic.persistent and not topic.closed:
        live = [LiveSegment(view.base_offset, view.size, view.end_offset)
                for view in topic.log.retention_view()]  # type: ignore[union-attr]  # persistent: it has a log
    stop = threading.Event()
    try:
        return await asyncio.to_thread(verify_files, directory, directory / CURSORS, live=live, label=str(name),
                                       stop=stop.is_set)
    except FileNotFoundError:
        raise TopicNotFound(f"topic {name} was deleted while it was verified", topic=str(name)) from None
    finally:
        stop.set()  # the caller went away (cancelled): the thread stops at its next frame


def _answer(what: str, reports: list[TopicReport]) -> dict:
    topics = [report.as_dict() for report in reports]
    totals = {key: sum(t["totals"][key] for t in topics) for key in TOTALS}  # type: ignore[index]
    ok = all(report.ok for report in reports)
    log.log(logging.INFO if ok else logging.WARNING, "event=topics_verified what=%s topics=%d ok=%s damaged_ranges=%d"
            " messages_lost=%d index_problems=%d cursor_problems=%d", what, len(topics), ok, totals["damagedRanges"],
            totals["messagesLost"], totals["indexProblems"], totals["cursorProblems"])
    return {"ok": ok, "topics": topics, "totals": {"topics": len(topics), **totals}}
