"""Instructions from process start to the broker's first CONNECTED answer: a start-time figure that does not
move with the machine's load (issue 19: wall-clock starts vary 2x on this shared 2-core machine).

Run it with ``python bench/start_instructions.py [--checkout DIR] [--producer] [--runs N]``. It runs, under
``valgrind --tool=callgrind``, one Python process that starts ``pulsarlike broker`` from DIR's code (this
checkout by default; e.g. a ``git archive`` of the commit before a change) as ``python -m broker_core.cli
broker --port 0`` would (fresh data folder, ``--set webServicePort=0``, log level WARNING), and, once the broker
prints its listening line, connects to it on the broker's own event loop with raw bytes (a prebuilt
``CONNECT``, protocol version 20: no client code is imported), reads the ``CONNECTED`` answer and exits at once.
With ``--producer`` a ``PRODUCER`` for a new persistent topic follows and the process exits at its
``PRODUCER_SUCCESS``. It prints the instructions callgrind counted (the interpreter's start, every import and
everything the broker does up to that answer; the client's share is a few thousand), the median of ``--runs``.
One unmeasured run first writes the bytecode caches, as ``pip install`` would. Needs ``valgrind``.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONNECT = "00000017000000130802120f0a0b62656e63682d73746172742014"
PRODUCER = ("000000350000003108052a2d0a2770657273697374656e743a2f2f7075626c69632f64656661756c742f73746172742d70726f62"
            "6510011801")

PROBE = r'''
import builtins, os, runpy, sys
sys.path.insert(0, os.getcwd())
real_print = builtins.print
replies = [bytes.fromhex(sys.argv[1])] + ([bytes.fromhex(sys.argv[2])] if sys.argv[2] else [])


def probe(*args, **kwargs):
    text = " ".join(map(str, args))
    if text.startswith("pulsarlike broker listening on "):
        import asyncio

        async def client(port):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            for request in replies:
                writer.write(request)
                head = await reader.readexactly(8)
                await reader.readexactly(int.from_bytes(head[:4], "big") - 4)
            os._exit(0)

        asyncio.get_running_loop().create_task(client(int(text.rsplit(":", 1)[1])))
    return real_print(*args, **kwargs)


builtins.print = probe
sys.argv = ["pulsarlike", "broker", "--data-dir", sys.argv[3], "--port", "0", "--set", "webServicePort=0",
            "--log-level", "WARNING"]
runpy.run_module("broker_core.cli", run_name="__main__")
'''


def count(checkout: Path, producer: bool, valgrind: bool) -> int:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory(prefix="start-instructions-") as tmp:
        command = [sys.executable, "-c", PROBE, CONNECT, PRODUCER if producer else "", os.path.join(tmp, "data")]
        if valgrind:
            command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command]
        done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"the probe failed ({done.returncode}):\n{done.stderr[-2000:]}")
    if not valgrind:
        return 0
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", type=Path, default=REPO, help="the checkout whose broker starts")
    parser.add_argument("--producer", action="store_true", help="count up to PRODUCER_SUCCESS, not CONNECTED")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    count(args.checkout.resolve(), args.producer, valgrind=False)  # bytecode caches written
    counts = [count(args.checkout.resolve(), args.producer, valgrind=True) for _ in range(args.runs)]
    what = "PRODUCER_SUCCESS" if args.producer else "CONNECTED"
    print(f"{args.checkout}: start -> {what} {statistics.median(counts) / 1e6:.1f} M instructions "
          f"(median of {len(counts)}; {min(counts) / 1e6:.1f}-{max(counts) / 1e6:.1f})")


if __name__ == "__main__":
    main()
