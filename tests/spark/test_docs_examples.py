"""Every fenced code block of README.md and docs/*.md runs as written, or says in the markdown why not.

Which blocks run
- ```` ```python ```` blocks run in-process, in file order, in one namespace per markdown file (a block may
  use what an earlier block of its file defined, as a reader pasting them in order into one interpreter).
  The files of :data:`COPY_PASTE` get nothing else: their blocks create the client, the admin and the
  SparkSession they use (``SparkSession.builder.getOrCreate()`` finds the test session, which is started
  before a block that mentions ``spark``). The other files' namespaces still start with ``url`` (the test
  broker's service URL), ``client`` (a ``connector.Client`` on it), ``admin`` (a ``connector.Admin``) and,
  for a block that mentions ``spark``, ``spark``: a list to move into :data:`COPY_PASTE` file by file.
- ```` ```bash ````/```` ```sh ````/```` ```shell ```` blocks: each command (lines joined at a trailing
  backslash, ``#`` comments dropped) must be a ``pulsarlike`` command. ``pulsarlike job ...`` runs
  in-process on the test session's SparkSession (``jobs.cli.main``, as ``pulsarlike`` would call it);
  every other one runs as a subprocess (this venv's ``pulsarlike`` script). Each must exit 0. Pipes,
  ``&``, redirections and other programs (``make``, ``docker``, ``pip``, ``spark-submit``) are not run:
  their block must be marked.
- **The marker.** A block that cannot run as it stands -- an output listing, a synopsis, a long-running
  ``pulsarlike broker``, ``docker compose``, an install step, a fragment -- carries ``not-run`` in its
  fence's info string, after the language: ```` ```text not-run ````, ```` ```bash not-run ````
  (anything after it is free text: a reason is welcome). GitHub still highlights by the first word.
  ``test_every_block_runs_or_is_marked_not_run`` fails naming every block that neither runs nor is
  marked; nothing is skipped silently.
- Blocks that need Spark (a python block mentioning ``spark``, a shell block running ``pulsarlike job``)
  are marked ``spark`` and run on the session-scoped SparkSession; the others do not start Spark.

What the examples find
- One ``pulsarlike broker --port 0`` process per markdown file, started when the file's first block runs
  and stopped when the next file starts. ``pulsar://127.0.0.1:6650`` and ``pulsar://localhost:6650`` in
  a block are rewritten to it, and ``$PULSARLIKE_SERVICE_URL`` names it.
- A working folder per file, the current folder of its blocks, holding ``data/2024-05-01.json`` and
  ``data/2024-05-02.json`` (orders as JSON lines: ``order_id``, ``customer``, ``amount``, ``created_at``)
  and ``raw/readings.csv`` (``;``-separated ``sensor;unit;site;value``). Absolute paths under ``/tmp/`` in a
  block are moved into it (so test runs do not share them), and under ``/data/`` too outside
  :data:`COPY_PASTE`, whose examples write only under a temporary folder (``tempfile.mkdtemp()``) or a
  relative one (Spark resolves a relative path against the folder its JVM started in, so Spark examples
  make them absolute).
- The broker holds dead letters: ``orders-billing-DLQ`` with three messages (keys ``c-17``, ``c-42``,
  ``c-7``; properties ``REAL_TOPIC`` = ``persistent://public/default/orders``, ``ORIGIN_MESSAGE_ID``,
  ``reason``), unacknowledged on its subscription ``ops``.

Limits: one block gets ``BLOCK_TIMEOUT_S`` (``SPARK_BLOCK_TIMEOUT_S`` with Spark); a block that waits for
ever (``receive()`` on an empty topic, ``consume -n 0``) fails with the timeout, and is not run again as
an earlier block of a later one.
"""
from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.brokers import BrokerProcess

ROOT = Path(__file__).resolve().parents[2]
MARKER = "not-run"
RUNNABLE = {"python": "python", "bash": "shell", "sh": "shell", "shell": "shell"}
BLOCK_TIMEOUT_S = 30
SPARK_BLOCK_TIMEOUT_S = 180
SHELL_OPERATORS = {"|", "||", "&", "&&", ";", ">", ">>", "<", "2>", "2>&1"}
_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_SERVICE_URL = re.compile(r"pulsar://(?:127\.0\.0\.1|localhost):6650")
_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/~-])/(data|tmp)(?=/)")
_TEMP_PATH = re.compile(r"(?<![\w.:/~-])/(tmp)(?=/)")
COPY_PASTE = ("README.md", "docs/admin.md", "docs/jobs.md", "docs/compaction.md", "docs/spark.md",
              "docs/security.md")
"""Files whose blocks run exactly as a reader pastes them: no name is given to them (issue 34)."""
_NEEDS_SPARK = re.compile(r"\bspark\b|\bpyspark\b")


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Block:
    """One fenced code block of a markdown file."""

    path: str
    """Relative to the repository root."""
    line: int
    """1-based line of the opening fence."""
    info: str
    code: str

    @property
    def lang(self) -> str:
        words = self.info.split()
        return words[0].lower() if words else ""

    @property
    def marked(self) -> bool:
        return any(word.startswith(MARKER) for word in self.info.split())

    @property
    def runs(self) -> bool:
        return not self.marked and self.lang in RUNNABLE

    @property
    def needs_spark(self) -> bool:
        if RUNNABLE.get(self.lang) == "shell":
            return any(argv[:2] == ["pulsarlike", "job"] for argv in commands(self.code))
        return bool(_NEEDS_SPARK.search(self.code))

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


def fenced_blocks(path: Path) -> list[Block]:
    """The fenced blocks of a markdown file (``` or ~~~, indented ones in lists too), their code dedented
    by the fence's indentation."""
    lines = path.read_text(encoding="utf-8").split("\n")
    blocks, i = [], 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening or "`" in opening["info"] and opening["fence"][0] == "`":
            i += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        body, j = [], i + 1
        while j < len(lines):
            closing = _FENCE.match(lines[j])
            if (closing and closing["fence"][0] == fence[0] and len(closing["fence"]) >= len(fence)
                    and not closing["info"].strip()):
                break
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        blocks.append(Block(str(path.relative_to(ROOT)), i + 1, opening["info"].strip(), "\n".join(body)))
        i = j + 1
    return blocks


def all_blocks() -> list[Block]:
    return [block for path in markdown_files() for block in fenced_blocks(path)]


def commands(code: str) -> list[list[str]]:
    """A shell block's commands as argv lists (continuations joined, comments dropped)."""
    joined = re.sub(r"\\\n", " ", code)
    found = []
    for line in joined.split("\n"):
        try:
            argv = shlex.split(line, comments=True)
        except ValueError:  # an unbalanced quote: run() reports it
            argv = [line]
        if argv:
            found.append(argv)
    return found


# --- what the examples find ------------------------------------------------------------------------------
ORDERS = {"2024-05-01": [("o-101", "c-17", 12.5, "09:15"), ("o-102", "c-42", 80.0, "11:02"),
                         ("o-103", "c-7", 3.2, "17:40")],
          "2024-05-02": [("o-104", "c-17", 44.0, "08:05"), ("o-105", "c-9", 19.9, "13:30")]}
READINGS = "sensor;unit;site;value\ns-1;C;north;21.5\ns-2;C;south;19.0\ns-1;C;north;21.7\n"
DEAD_LETTERS = [("c-17", "timeout"), ("c-42", "timeout"), ("c-7", "bad-request")]


def lay_out_working_folder(folder: Path) -> None:
    for name in ("data", "raw", "tmp"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    for day, orders in ORDERS.items():
        (folder / "data" / f"{day}.json").write_text("".join(
            json.dumps({"order_id": o, "customer": c, "amount": a, "created_at": f"{day}T{t}:00Z"}) + "\n"
            for o, c, a, t in orders))
    (folder / "raw" / "readings.csv").write_text(READINGS)


def seed_dead_letters(url: str) -> None:
    from connector import Admin, Client, MessageId

    dlq = "persistent://public/default/orders-billing-DLQ"
    with Admin(url) as admin:
        admin.create_topic(dlq)
        admin.create_subscription(dlq, "ops", MessageId.earliest)
    client = Client(url)
    try:
        producer = client.create_producer(dlq)
        for i, (key, reason) in enumerate(DEAD_LETTERS):
            producer.send(f'{{"order_id": "o-{i}"}}'.encode(), partition_key=key, properties={
                "REAL_TOPIC": "persistent://public/default/orders", "ORIGIN_MESSAGE_ID": f"0:{i}:-1:-1",
                "reason": reason})
        producer.close()
    finally:
        client.close()


# --- running a file's blocks -----------------------------------------------------------------------------
class Failed(Exception):
    """A block did not run; the message says what it printed."""


@contextlib.contextmanager
def deadline(seconds: float, what: str):
    """Raise Failed in this (the main) thread after ``seconds``; pytest-timeout's own alarm, when set, is
    put back with what was left of it."""
    def expire(signum: int, frame: Any) -> None:
        raise Failed(f"{what} did not finish within {seconds:.0f} s: an example must end by itself")

    previous = signal.signal(signal.SIGALRM, expire)
    left, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if left:
            signal.setitimer(signal.ITIMER_REAL, max(left - (time.monotonic() - started), 0.001))


@dataclass
class FileRun:
    """The broker, working folder and namespace of one markdown file's blocks."""

    path: str
    folder: Path
    broker: BrokerProcess
    namespace: dict[str, Any] = field(default_factory=dict)
    done: dict[int, str | None] = field(default_factory=dict)
    """Line of each block run so far -> None, or why it failed."""
    session: Any = None
    """The test SparkSession, once a block needed it (``pulsarlike job`` runs on it)."""

    @classmethod
    def start(cls, path: str, base: Path) -> "FileRun":
        from connector import Admin, Client

        folder = base / re.sub(r"[^\w.-]", "_", path)
        lay_out_working_folder(folder)
        broker = BrokerProcess(base / (folder.name + "-broker")).start()
        seed_dead_letters(broker.service_url)
        url = broker.service_url
        if path in COPY_PASTE:
            return cls(path, folder, broker, {"__name__": "__example__"})
        return cls(path, folder, broker, {"__name__": "__example__", "url": url, "client": Client(url),
                                          "admin": Admin(url)})

    def stop(self) -> None:
        spark = self.session
        if spark is not None:
            for query in spark.streams.active:  # a streaming example left running
                query.stop()
        for name in ("client", "admin"):
            with contextlib.suppress(Exception):
                self.namespace[name].close()
        self.broker.stop()

    def rewrite(self, code: str) -> str:
        code = _SERVICE_URL.sub(self.broker.service_url, code)
        paths = _TEMP_PATH if self.path in COPY_PASTE else _ABSOLUTE_PATH
        return paths.sub(lambda m: f"{self.folder}/{m[1]}", code)

    def run(self, block: Block, spark: Any) -> None:
        """Run ``block``; Failed with its output when it does not run."""
        if spark is not None:
            self.session = spark
            if self.path not in COPY_PASTE:
                self.namespace["spark"] = spark
        previous = os.getcwd()
        os.chdir(self.folder)
        seconds = SPARK_BLOCK_TIMEOUT_S if block.needs_spark else BLOCK_TIMEOUT_S
        try:
            with deadline(seconds, f"the block at {block}"):
                if RUNNABLE[block.lang] == "python":
                    self._python(block)
                else:
                    self._shell(block)
        finally:
            os.chdir(previous)

    def _python(self, block: Block) -> None:
        # blank lines first, so a traceback's line numbers are the markdown file's
        code = compile("\n" * block.line + self.rewrite(block.code), block.path, "exec")
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(code, self.namespace)
        except Failed as exc:
            raise Failed(f"{exc}\nprinted:\n{out.getvalue()}") from None
        except Exception:
            raise Failed(f"{traceback.format_exc(limit=-3)}\nprinted:\n{out.getvalue()}") from None

    def _shell(self, block: Block) -> None:
        env = {**os.environ, "PULSARLIKE_SERVICE_URL": self.broker.service_url}
        for argv in commands(self.rewrite(block.code)):
            shown = " ".join(argv)
            while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0]):  # NAME=value before the command
                name, value = argv.pop(0).split("=", 1)
                env[name] = value
            if SHELL_OPERATORS & set(argv) or not argv or argv[0] != "pulsarlike":
                raise Failed(f"`{shown}`: only plain `pulsarlike ...` commands run here; mark the block "
                             f"```{block.lang} {MARKER}``` if it cannot run as it stands")
            if argv[1:2] == ["broker"]:
                raise Failed(f"`{shown}` starts a broker that runs until stopped; mark the block "
                             f"```{block.lang} {MARKER}```")
            if argv[1:2] == ["job"]:
                code, out, err = self._job(argv[1:], env)
            else:
                code, out, err = self._subprocess(argv[1:], env)
            if code != 0:
                raise Failed(f"`{shown}` exited {code}\nstdout:\n{out}\nstderr:\n{err}")

    def _job(self, argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
        """``pulsarlike job NAME ...`` as the command runs it, but handed the test session (a job that
        started its own would stop the shared one at its end)."""
        from jobs import cli

        out, err = io.StringIO(), io.StringIO()
        saved = dict(os.environ)
        os.environ.update(env)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    name = argv[1].replace("_", "-") if len(argv) > 1 else ""
                    job = importlib.import_module(cli.JOBS[name]).main if name in cli.JOBS else None
                    if job is not None and "spark" in inspect.signature(job).parameters:
                        code = job(argv[2:], spark=self.session)
                    else:  # stream-demo builds its own session; unknown jobs get the command's message
                        code = cli.main(argv)
                except SystemExit as exc:  # argparse: bad usage
                    code = exc.code if isinstance(exc.code, int) else 2
        finally:
            os.environ.clear()
            os.environ.update(saved)
        return code, out.getvalue(), err.getvalue()

    def _subprocess(self, argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
        script = Path(sys.executable).parent / "pulsarlike"
        program = [str(script)] if script.exists() else [sys.executable, "-m", "broker_core.cli"]
        # the block's deadline interrupts the wait; the with-block kills the process then
        with subprocess.Popen([*program, *argv], cwd=self.folder, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True) as proc:
            try:
                out, err = proc.communicate()
            except BaseException:
                proc.kill()
                raise
        return proc.returncode, out, err


class Examples:
    """The file runs of this module: one at a time, each started on its file's first block."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.current: FileRun | None = None

    def file_run(self, path: str) -> FileRun:
        if self.current is None or self.current.path != path:
            self.close()
            self.current = FileRun.start(path, self.base)
        return self.current

    def close(self) -> None:
        if self.current is not None:
            self.current.stop()
            self.current = None


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    running = Examples(tmp_path_factory.mktemp("examples"))
    yield running
    running.close()


def _params() -> list[Any]:
    params = []
    for block in all_blocks():
        if not block.runs:
            continue
        marks = []
        if block.needs_spark:  # a block's own deadline is shorter; this one covers earlier blocks run first
            marks = [pytest.mark.spark, pytest.mark.timeout(3 * SPARK_BLOCK_TIMEOUT_S)]
        params.append(pytest.param(block, id=str(block), marks=marks))
    return params


@pytest.mark.parametrize("block", _params())
def test_example_runs(block: Block, examples: Examples, request):
    run = examples.file_run(block.path)
    earlier = [b for b in fenced_blocks(ROOT / block.path) if b.runs and b.line < block.line
               and b.line not in run.done]
    for before in earlier:  # a block selected alone (-k) still finds what the earlier ones made
        run.done[before.line] = _attempt(run, before, request)
    failed_before = [f"{block.path}:{line}" for line, why in run.done.items() if why and line < block.line]
    why = run.done[block.line] = _attempt(run, block, request)
    if why:
        context = f" (earlier blocks of the file failed: {', '.join(failed_before)})" if failed_before else ""
        pytest.fail(f"the example at {block} does not run{context}:\n{why}", pytrace=False)


def _attempt(run: FileRun, block: Block, request) -> str | None:
    spark = request.getfixturevalue("spark") if block.needs_spark else None
    run.done[block.line] = "it did not finish"  # what stays when pytest-timeout stops it
    try:
        run.run(block, spark)
    except Failed as exc:
        return str(exc)
    return None


def test_every_block_runs_or_is_marked_not_run():
    unmarked = [f"  {block} (```{block.info})" for block in all_blocks() if not block.runs and not block.marked]

    assert not unmarked, (f"these blocks neither run (python, bash, sh, shell) nor carry the marker `{MARKER}` "
                          f"after their language (```text {MARKER}):\n" + "\n".join(unmarked))


def test_the_block_reader_finds_indented_and_tilde_fences_and_the_marker(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "x.md").write_text("text\n```python\na = 1\n```\n- item\n\n  ```bash not-run: a broker\n"
                                   "  pulsarlike broker --data-dir d\n  ```\n~~~\nlisting\n~~~\n")

    found = fenced_blocks(tmp_path / "x.md")

    assert [(b.line, b.lang, b.marked, b.runs, b.code) for b in found] == [
        (2, "python", False, True, "a = 1"), (7, "bash", True, False, "pulsarlike broker --data-dir d"),
        (10, "", False, False, "listing")]
