"""``pulsarlike admin topics verify``: a topic's stored files checked by the broker without changing them (a
pulsarlike extension; ``Admin.verify_topic`` / ``verify_all_topics``):

    pulsarlike admin topics verify persistent://public/default/orders     # every partition of a partitioned topic
    pulsarlike admin topics verify --all                                  # every persistent topic (super-user)
    pulsarlike admin topics verify orders --json                          # the broker's answer, as JSON

Prints, per topic partition, what is damaged -- each damaged range with its offsets, messages and bytes,
each wrong index entry, each damaged cursor copy and what the next load does with it -- then the totals.
Exit codes: 0 nothing damaged; 3 damage found (a damaged range, a wrong index entry or a damaged cursor
copy; a torn tail and stray files are shown but are not damage); 1 the call failed; 2 bad usage.
"""
from __future__ import annotations

import argparse
import json
from typing import Any, Callable, NamedTuple

DAMAGE_FOUND = 3
VERIFY_TIMEOUT_S = 3600.0
"""``--timeout``'s default (``Admin.verify_topic``'s; the client is imported only once a verb runs)."""


class Verdict(NamedTuple):
    """What a verb prints, and the exit code that goes with it."""

    text: str
    exit_code: int


def add_verbs(verb: Callable[..., argparse.ArgumentParser]) -> None:
    p = verb("verify", _verify, "Check a topic's stored files without changing them: frames, segments, indexes, "
             "cursors (pulsarlike extension; exit 3 when damage is found)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("topic", nargs="?", help="persistent://tenant/namespace/topic, tenant/namespace/topic or a "
                       "short name; every partition of a partitioned topic")
    which.add_argument("--all", action="store_true", help="every persistent topic of the broker")
    p.add_argument("--json", action="store_true", help="print the broker's answer as JSON")
    p.add_argument("--timeout", type=float, default=VERIFY_TIMEOUT_S, metavar="SECONDS",
                   help=f"how long to wait for the answer (default {VERIFY_TIMEOUT_S:g}): every byte is read")


def _verify(admin: Any, o: argparse.Namespace) -> Verdict:
    found = admin.verify_all_topics(o.timeout) if o.all else admin.verify_topic(o.topic, o.timeout)
    text = json.dumps(found, indent=2) if o.json else summary(found)
    return Verdict(text, 0 if found.get("ok") else DAMAGE_FOUND)


def summary(found: dict[str, Any]) -> str:
    """The readable report of a verification answer."""
    lines: list[str] = []
    for topic in found.get("topics", []):
        lines += _topic(topic)
    t = found.get("totals", {})
    lines.append(f"{_n(t.get('topics', 0), 'topic partition')} verified"
                 f" ({_n(t.get('segments', 0), 'segment')}, {_n(t.get('frames', 0), 'frame')},"
                 f" {t.get('bytes', 0):,} bytes): " + ("ok" if found.get("ok") else
                 f"{_n(t.get('damagedRanges', 0), 'damaged range')} ({_n(t.get('messagesLost', 0), 'message')}"
                 f" lost), {_n(t.get('indexProblems', 0), 'index problem')},"
                 f" {_n(t.get('cursorProblems', 0), 'damaged cursor copy', 'damaged cursor copies')}"))
    return "\n".join(lines)


def _topic(topic: dict[str, Any]) -> list[str]:
    t = topic["totals"]
    lines = [f"{topic['topic']}: {'ok' if topic['ok'] else 'DAMAGED'} ({_n(t['segments'], 'segment')},"
             f" {_n(t['frames'], 'frame')}, offsets {topic['startOffset']}..{topic['endOffset'] - 1})"]
    for seg in topic["segments"]:
        for found in seg["damaged"]:
            lines.append(f"  {seg['file']}: {_range(found)}")
        if seg.get("removedWhileVerifying"):
            lines.append(f"  {seg['file']}: removed while it was verified (retention): not checked")
    for problem in topic["indexProblems"]:
        entry = "" if problem["entry"] is None else f" entry {problem['entry']}"
        if problem["offset"] is not None:
            entry += f" (offset {problem['offset']}, byte {problem['position']})"
        lines.append(f"  {problem['index']}{entry}: {problem['problem']}")
    for cursor in topic["cursors"]:
        if cursor["outcome"] == "ok":
            continue
        damaged = "; ".join(f"{c['file']}: {c.get('damage', '')}" for c in cursor["copies"] if not c["ok"])
        name = cursor["subscription"] if cursor["subscription"] is not None else "(name unknown)"
        lines.append(f"  cursor {name}: {damaged}; {cursor['outcome']}")
    torn = topic.get("tornTail")
    if torn:
        lines.append(f"  torn tail at byte {torn['position']} ({torn['reason']}): a write the broker's stop cut"
                     " short, removed at the next load (not damage)")
    for stray in topic["strayFiles"]:
        lines.append(f"  {stray['file']}: {stray['note']}")
    return lines


def _range(found: dict[str, Any]) -> str:
    where = f"bytes {found['position']}..{found['resumePosition'] - 1}" if found["resumePosition"] > found["position"] \
        else f"byte {found['position']}"
    if not found["messages"]:
        return f"{where} hold no message ({found['reason']}): reads step over them"
    return (f"offsets {found['firstOffset']}..{found['lastOffset']} ({_n(found['messages'], 'message')}) lost"
            f" at {where} ({found['reason']})")


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{count:,} {one if count == 1 else many or one + 's'}"
