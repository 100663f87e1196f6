"""The interpreter a reader pastes one markdown file's examples into (tests/spark/test_docs_examples.py).

Run as ``python tests/spark/docs_interpreter.py RESULT_FD`` in the file's working folder, with the reader's
shell environment: a fresh process whose namespace starts empty (``__name__ == "__main__"``), so a block
finds only what it and the earlier blocks of its file imported and created. It reads requests from stdin,
one JSON object a line, and answers each on file descriptor ``RESULT_FD`` (the blocks, Spark's JVM and
its workers keep stdout and stderr):

- ``{"op": "python", "path": ..., "line": ..., "code": ..., "timeout": s}`` runs a python block (line
  numbers in a traceback are the markdown file's);
- ``{"op": "job", "argv": [...], "env": {...}, "timeout": s}`` runs ``pulsarlike job ...`` as the
  ``pulsarlike`` command does (``broker_core.cli.main``), here rather than in a process of its own so the
  file's jobs share one JVM (a job stops its SparkSession at its end; the next one starts another in it).

Each answer is ``{"ok": bool, "error": str, "printed": str}``. A block gets ``timeout`` seconds (an alarm
in this, the main, thread); stdin closed ends the process.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import sys
import traceback
from typing import Any


class Expired(Exception):
    """The block's time is up."""


def _alarm(seconds: float) -> Any:
    def expire(signum: int, frame: Any) -> None:
        raise Expired(f"did not finish within {seconds:.0f} s: an example must end by itself")

    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)


def run_python(request: dict, namespace: dict) -> None:
    code = compile("\n" * request["line"] + request["code"], request["path"], "exec")
    exec(code, namespace)


def run_job(request: dict) -> None:
    from broker_core import cli

    os.environ.update(request["env"])
    try:
        code = cli.main(request["argv"])
    except SystemExit as exc:  # argparse: bad usage
        code = exc.code if isinstance(exc.code, int) else 2
    if code:
        raise RuntimeError(f"`pulsarlike {' '.join(request['argv'])}` exited {code}")


def main() -> int:
    answers = os.fdopen(int(sys.argv[1]), "w", buffering=1)
    del sys.path[0]  # this script's folder: a block imports what an installed pulsarlike gives
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    for line in sys.stdin:
        request = json.loads(line)
        out = io.StringIO()
        answer: dict[str, Any] = {"ok": True, "error": "", "printed": ""}
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                _alarm(request["timeout"])
                try:
                    if request["op"] == "python":
                        run_python(request, namespace)
                    else:
                        run_job(request)
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
        except BaseException as exc:  # noqa: BLE001 - reported, and the next block still runs
            if isinstance(exc, KeyboardInterrupt):
                raise
            answer["ok"] = False
            answer["error"] = traceback.format_exc(limit=-4) if not isinstance(exc, Expired) else str(exc)
        answer["printed"] = out.getvalue()[-4000:]
        answers.write(json.dumps(answer) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
