"""``pulsarlike repair``: check and repair a stopped broker's data dir.

    pulsarlike repair --data-dir DIR [--yes] [--cluster-name NAME]

Reads the broker's metadata (tenants and namespaces, policies and permissions, partitioned topics) as a
start would, with no broker running (a data dir locked by a running broker is refused), and prints each
problem: the file, the byte, the bytes there, what the repair does about it and what that means (the entry a
dropped line changed and its value afterwards). Without ``--yes`` nothing is changed. With ``--yes`` the
repaired metadata is written atomically and the replaced files are moved to ``metadata/repair-<time>/``
(:mod:`broker_core.core.metadata_repair`).

Exit codes: 0 nothing to repair, or repaired; 1 damage found (a dry run: nothing changed); 2 bad usage, no
such data dir, or refused (a broker holds the data dir).

Topic segments and cursors are not read here (``pulsarlike admin topics verify`` reports them): a report of
them would be another section of :func:`main`'s output, read-only, beside the metadata's plan.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from broker_core.core import metadata_repair
from broker_core.errors import DataDirLocked
from broker_core.storage.dir_lock import DataDirLock


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pulsarlike repair", description="Check a stopped broker's metadata (tenants, namespaces, policies,"
        " permissions, partitioned topics) and repair what a start refuses. Prints what it would drop or"
        " restore; changes nothing without --yes.",
        epilog="Exit codes: 0 nothing to repair, or repaired; 1 damage found, nothing changed (no --yes);"
               " 2 bad usage or refused (a running broker holds the data dir).")
    parser.add_argument("--data-dir", required=True, help="the broker's data dir (the broker must be stopped)")
    parser.add_argument("--yes", "-y", action="store_true",
                        help="do the repair: write the repaired metadata and move the replaced files to"
                             " metadata/repair-<time>/ (without it: a dry run that changes nothing)")
    parser.add_argument("--cluster-name", default="standalone",
                        help="the broker's clusterName, for tenants rebuilt with default info (default: standalone)")
    return parser


def main(argv: Sequence[str]) -> int:
    args = _parser().parse_args(list(argv)[1:])  # argv[0] is the command's name
    data_dir = Path(args.data_dir)
    if not data_dir.is_dir():
        print(f"pulsarlike repair: no data dir at {data_dir}", file=sys.stderr)
        return 2
    lock = DataDirLock(data_dir)
    try:
        lock.acquire()  # held to the end: no broker starts on the data dir meanwhile
    except DataDirLocked as exc:
        print(f"pulsarlike repair: refused: {exc.message}", file=sys.stderr)
        return 2
    try:
        return _run(data_dir, args)
    finally:
        lock.release()


def _run(data_dir: Path, args: argparse.Namespace) -> int:
    plan = metadata_repair.plan(data_dir, args.cluster_name)
    mode = "repairing" if args.yes else "dry run, nothing is changed"
    print(f"pulsarlike repair: data dir {data_dir.absolute()} ({mode})")
    for finding in plan.findings:
        print("\n".join(finding.lines(data_dir)))
    for note in plan.notes:
        print(f"note: {note}")
    if not plan.needed:
        print("metadata: nothing to repair")
        return 0
    if not args.yes:
        print(f"metadata: {len(plan.findings)} problem(s) found; nothing changed. To repair as shown, run:"
              f" pulsarlike repair --data-dir {data_dir} --yes")
        return 1
    for line in plan.apply():
        print(f"metadata: {line}")
    print("metadata: repaired; the broker can start")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
