"""``pulsarlike job NAME ...``: runs one of the Spark batch jobs.

    pulsarlike job backfill INPUT [INPUT ...] --topic TOPIC ...   files into a topic, once
    pulsarlike job export TOPIC --output DIR ...                  a topic's range to Parquet, with a manifest
    pulsarlike job redrive DLQ_TOPIC [--to TOPIC] [--filter EXPR]  dead letters back to their topic
    pulsarlike job stream-demo ...                                the streaming demo (embedded broker)

``pulsarlike job NAME --help`` shows a job's flags. Each job module also runs under spark-submit
(``spark-submit jobs/backfill.py ...``). An unknown NAME names the closest job and exits 2.
"""
from __future__ import annotations

import difflib
import importlib
import sys
from typing import Sequence

JOBS = {"backfill": "jobs.backfill", "export": "jobs.export", "redrive": "jobs.redrive",
        "stream-demo": "jobs.stream_demo"}
"""Job name -> module with ``main(argv) -> int`` (argv: the arguments after the name)."""


def usage() -> str:
    return __doc__.split("\n\n")[1].rstrip() + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "job":  # `pulsarlike job ...` hands over its whole argv
        argv = argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: pulsarlike job NAME [ARGS ...]\n\n" + usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    name = argv[0].replace("_", "-")
    if name not in JOBS:
        close = difflib.get_close_matches(name, list(JOBS), n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        print(f"pulsarlike job: unknown job {argv[0]!r}{hint} (jobs: {', '.join(JOBS)})", file=sys.stderr)
        return 2
    return int(importlib.import_module(JOBS[name]).main(argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
