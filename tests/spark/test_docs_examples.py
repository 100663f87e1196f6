"""Every fenced code block of README.md and docs/*.md runs as written, or says in the markdown why not.

Which blocks run, and how (issue 34: as a reader copy-pastes them, nothing given to them)
- ```` ```python ```` blocks run, in file order, in one fresh python process per markdown file
  (``tests/spark/docs_interpreter.py``): the interpreter a reader pastes the file's examples into. Its
  namespace starts empty, so every block creates (or an earlier block of its file created) the client, the
  admin, the SparkSession and the files it uses; it runs in the file's working folder, in the shell
  environment of a reader who activated the venv (:func:`reader_environment`). A Spark block's
  ``SparkSession.builder.getOrCreate()`` starts Spark in that process from the machine's Spark defaults
  (``$SPARK_CONF_DIR``: ``local[2]``, no UI, 2 shuffle partitions), as a user's ``spark-defaults.conf``.
- ```` ```bash ````/```` ```sh ````/```` ```shell ```` blocks: each command (lines joined at a trailing
  backslash, ``#`` comments dropped) must be a ``pulsarlike`` command, run as the reader's shell runs it (the
  venv's ``pulsarlike`` script, in the working folder) and must exit 0 -- except ``pulsarlike job ...``,
  which the file's interpreter runs through the same entry point (``broker_core.cli.main``), so the file's
  jobs share one JVM (each stops its SparkSession at its end). Pipes, ``&``, redirections and other programs
  (``make``, ``docker``, ``pip``, ``spark-submit``) are not run: their block must be marked.
- **The marker.** A block that cannot run as it stands -- an output listing, a synopsis, a long-running
  ``pulsarlike broker``, ``docker compose``, an install step, a fragment -- carries ``not-run`` in its
  fence's info string, after the language: ```` ```text not-run ````, ```` ```bash not-run ````
  (anything after it is free text: a reason is welcome). GitHub still highlights by the first word.
  ``test_every_block_runs_or_is_marked_not_run`` fails naming every block that neither runs nor is
  marked; nothing is skipped silently.
- Blocks that need Spark (a python block mentioning ``spark``, a shell block running ``pulsarlike job``)
  are marked ``spark`` and get the longer deadline.

What the examples find
- One broker per markdown file, started as README's Quickstart starts it (``pulsarlike broker --data-dir
  ./pulsarlike-data``) but on a free port (``--port 0``: tests never take fixed ports), when the file's
  first block runs, and stopped when the next file starts. ``pulsar://127.0.0.1:6650`` and
  ``pulsar://localhost:6650`` in a block are rewritten to it, and ``$PULSARLIKE_SERVICE_URL`` (the default
  of the ``pulsarlike`` commands) names it.
- A working folder per file, the current folder of its blocks, holding ``data/2024-05-01.json`` and
  ``data/2024-05-02.json`` (orders as JSON lines: ``order_id``, ``customer``, ``amount``, ``created_at``)
  and ``raw/readings.csv`` (``;``-separated ``sensor;unit;site;value``). Absolute paths under ``/tmp/`` in a
  block are moved into it (so test runs do not share them); examples write only there, under a temporary
  folder (``tempfile.mkdtemp()``) or a relative one (Spark resolves a relative path against the folder its
  JVM started in, so Spark examples make them absolute).
- The broker holds dead letters: ``orders-billing-DLQ`` with three messages (keys ``c-17``, ``c-42``,
  ``c-7``; properties ``REAL_TOPIC`` = ``persistent://public/default/orders``, ``ORIGIN_MESSAGE_ID``,
  ``reason``), unacknowledged on its subscription ``ops``.

Limits: one block gets ``BLOCK_TIMEOUT_S`` (``SPARK_BLOCK_TIMEOUT_S`` with Spark); a block that waits for
ever (``receive()`` on an empty topic, ``consume -n 0``) fails with the timeout, the file's interpreter is
stopped, and its later python blocks fail saying so.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import select
import shlex
import signal
import subprocess
import sys
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
_WEB_URL = re.compile(r"http://(?:127\.0\.0\.1|localhost):8080")
_METRICS_LINE = re.compile(r"pulsarlike metrics on (http://[^/\s]+)/metrics")
_TEMP_PATH = re.compile(r"(?<![\w.:/~-])/(tmp)(?=/)")
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


SPARK_DEFAULTS = {
    "spark.master": "local[2]",
    "spark.ui.enabled": "false",
    "spark.driver.memory": "512m",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.python.worker.reuse": "true",
    "spark.ui.showConsoleProgress": "false",
    # a short-lived JVM on a busy machine: the quick JIT only and one GC thread start it for less CPU
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}
"""The machine's Spark configuration (``$SPARK_CONF_DIR/spark-defaults.conf``), as a small cluster's admin
would set it: a block's ``SparkSession.builder.getOrCreate()`` finds it, nothing is given to the block."""
INTERPRETER = Path(__file__).resolve().parent / "docs_interpreter.py"


def reader_environment(folder: Path, service_url: str) -> dict[str, str]:
    """The shell of a reader who activated the venv (README's user path): its ``bin`` first on ``PATH``,
    ``python3`` the venv's (what Spark's workers run), ``$PULSARLIKE_SERVICE_URL`` the broker the file's
    examples find, Spark's defaults in ``$SPARK_CONF_DIR``; nothing of the test session's Spark settings."""
    venv_bin = Path(sys.executable).parent
    conf = folder / "spark-conf"
    conf.mkdir(exist_ok=True)
    (conf / "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in SPARK_DEFAULTS.items()))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYSPARK_", "SPARK_", "PYTEST_")) and k not in ("PYTHONPATH", "COV_CORE_SOURCE")}
    env.update({"PATH": f"{venv_bin}{os.pathsep}{env.get('PATH', '')}", "VIRTUAL_ENV": str(venv_bin.parent),
                "PULSARLIKE_SERVICE_URL": service_url, "SPARK_CONF_DIR": str(conf),
                "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONUNBUFFERED": "1"})
    return env


@dataclass
class FileRun:
    """The broker, working folder and interpreter process of one markdown file's blocks."""

    path: str
    folder: Path
    broker: BrokerProcess
    web_url: str
    """The broker's web service (admin REST API, metrics): ``http://HOST:PORT``."""
    env: dict[str, str]
    done: dict[int, str | None] = field(default_factory=dict)
    """Line of each block run so far -> None, or why it failed."""
    interpreter: subprocess.Popen | None = None
    answers: Any = None
    lost: str = ""
    """Why the interpreter is gone (a block that never ended), when it is."""

    @classmethod
    def start(cls, path: str, base: Path) -> "FileRun":
        folder = base / re.sub(r"[^\w.-]", "_", path)
        lay_out_working_folder(folder)
        # README's way: `pulsarlike broker --data-dir ./pulsarlike-data`, on any free port instead of 6650
        broker = BrokerProcess(folder / "pulsarlike-data").start()
        second = broker.proc.stdout.readline()  # type: ignore[union-attr] - the web port's line
        found = _METRICS_LINE.search(second)
        if found is None:
            broker.stop()
            raise RuntimeError(f"the broker's second line does not name its web service: {second!r}")
        seed_dead_letters(broker.service_url)
        return cls(path, folder, broker, found[1], reader_environment(folder, broker.service_url))

    def stop(self) -> None:
        self._stop_interpreter()
        self.broker.stop()

    def rewrite(self, code: str) -> str:
        code = _SERVICE_URL.sub(self.broker.service_url, code)
        code = _WEB_URL.sub(self.web_url, code)
        return _TEMP_PATH.sub(lambda m: f"{self.folder}/{m[1]}", code)

    def run(self, block: Block) -> None:
        """Run ``block``; Failed with its output when it does not run."""
        seconds = SPARK_BLOCK_TIMEOUT_S if block.needs_spark else BLOCK_TIMEOUT_S
        if RUNNABLE[block.lang] == "python":
            self._ask({"op": "python", "path": block.path, "line": block.line, "code": self.rewrite(block.code),
                       "timeout": seconds}, block)
        else:
            self._shell(block, seconds)

    # --- the file's interpreter: a fresh python process, started at the file's first python block or job
    def _ask(self, request: dict, block: Block) -> None:
        if self.lost:
            raise Failed(f"not run: {self.lost}")
        if self.interpreter is None:
            self._start_interpreter()
        assert self.interpreter is not None and self.interpreter.stdin is not None
        try:
            self.interpreter.stdin.write(json.dumps(request) + "\n")
            self.interpreter.stdin.flush()
            ready, _, _ = select.select([self.answers], [], [], request["timeout"] + 30)
            line = self.answers.readline() if ready else ""
        except BaseException:  # pytest-timeout, Ctrl-C: its answer would be taken for the next block's
            self.lost = f"the interpreter of {self.path} was stopped while it ran the block at {block}"
            self._stop_interpreter()
            raise
        if not line:
            self.lost = (f"the interpreter of {self.path} was stopped: the block at {block} did not end "
                         f"(within {request['timeout']} s)" if not ready else
                         f"the interpreter of {self.path} exited during the block at {block}")
            self._stop_interpreter()
            raise Failed(f"{self.lost}\n{self._log_tail()}")
        answer = json.loads(line)
        if not answer["ok"]:
            raise Failed(f"{answer['error']}\nprinted:\n{answer['printed']}")

    def _start_interpreter(self) -> None:
        read_end, write_end = os.pipe()
        log = open(self.folder / "interpreter.log", "ab")  # noqa: SIM115 - the process's stdout/stderr
        try:
            self.interpreter = subprocess.Popen(
                [str(Path(sys.executable).parent / "python3"), str(INTERPRETER), str(write_end)],
                cwd=self.folder, env=self.env, stdin=subprocess.PIPE, stdout=log, stderr=log, text=True,
                pass_fds=(write_end,), start_new_session=True)
        finally:
            os.close(write_end)
            log.close()
        self.answers = os.fdopen(read_end, "r")

    def _stop_interpreter(self) -> None:
        proc, self.interpreter = self.interpreter, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            proc.stdin.close()  # type: ignore[union-attr]
        try:
            proc.wait(30)  # a streaming example left running stops with its process
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # its JVM and Spark's Python workers too
        proc.wait(30)
        if self.answers is not None:
            self.answers.close()
            self.answers = None

    def _log_tail(self) -> str:
        log = self.folder / "interpreter.log"
        return "its output ended with:\n" + log.read_text(errors="replace")[-3000:] if log.exists() else ""

    # --- shell blocks: as the reader's shell runs them
    def _shell(self, block: Block, seconds: float) -> None:
        argvs = commands(self.rewrite(block.code))
        for argv in argvs:
            shown = " ".join(argv)
            if any(argv[i:i + 2] == ["pulsarlike", "broker"] for i in range(len(argv))):
                raise Failed(f"`{shown}` starts a broker that runs until stopped; mark the block "
                             f"```{block.lang} {MARKER}```")
            if "&" in argv:
                raise Failed(f"`{shown}` leaves a process running; mark the block ```{block.lang} {MARKER}```")
        if not any(argv[:2] == ["pulsarlike", "job"] for argv in argvs):
            code, out, err = self._subprocess(["bash", "-e", "-o", "pipefail", "-c", self.rewrite(block.code)],
                                              self.env, seconds)
            if code != 0:
                raise Failed(f"the block exited {code} under bash -e\nstdout:\n{out}\nstderr:\n{err}")
            return
        # a block running Spark jobs: command by command, the jobs in the file's interpreter (one JVM)
        env = dict(self.env)
        for argv in argvs:
            shown = " ".join(argv)
            while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0]):  # NAME=value before the command
                name, value = argv.pop(0).split("=", 1)
                env[name] = value
            if SHELL_OPERATORS & set(argv) or not argv or argv[0] != "pulsarlike":
                raise Failed(f"`{shown}`: a block running `pulsarlike job` holds only plain `pulsarlike ...` "
                             f"commands; mark the block ```{block.lang} {MARKER}``` if it cannot run as it stands")
            if argv[1:2] == ["job"]:
                changed = {k: v for k, v in env.items() if self.env.get(k) != v}
                self._ask({"op": "job", "argv": argv[1:], "env": changed, "timeout": seconds}, block)
                continue
            code, out, err = self._subprocess(argv, env, seconds)
            if code != 0:
                raise Failed(f"`{shown}` exited {code}\nstdout:\n{out}\nstderr:\n{err}")

    def _subprocess(self, argv: list[str], env: dict[str, str], seconds: float) -> tuple[int, str, str]:
        with subprocess.Popen(argv, cwd=self.folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True, start_new_session=True) as proc:
            try:
                out, err = proc.communicate(timeout=seconds)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # bash and what it started
                out, err = proc.communicate()
                raise Failed(f"`{' '.join(argv)}` did not finish within {seconds:.0f} s: an example must end by "
                             f"itself\nstdout:\n{out}\nstderr:\n{err}") from None
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
def test_example_runs(block: Block, examples: Examples):
    run = examples.file_run(block.path)
    earlier = [b for b in fenced_blocks(ROOT / block.path) if b.runs and b.line < block.line
               and b.line not in run.done]
    for before in earlier:  # a block selected alone (-k) still finds what the earlier ones made
        run.done[before.line] = _attempt(run, before)
    failed_before = [f"{block.path}:{line}" for line, why in run.done.items() if why and line < block.line]
    why = run.done[block.line] = _attempt(run, block)
    if why:
        context = f" (earlier blocks of the file failed: {', '.join(failed_before)})" if failed_before else ""
        pytest.fail(f"the example at {block} does not run{context}:\n{why}", pytrace=False)


def _attempt(run: FileRun, block: Block) -> str | None:
    run.done[block.line] = "it did not finish"  # what stays when pytest-timeout stops it
    try:
        run.run(block)
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


def test_the_interpreter_gives_a_block_nothing_and_keeps_what_earlier_blocks_made(tmp_path):
    read_end, write_end = os.pipe()
    with subprocess.Popen([sys.executable, str(INTERPRETER), str(write_end)], cwd=tmp_path, text=True,
                          stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          pass_fds=(write_end,)) as proc:
        os.close(write_end)
        answers = os.fdopen(read_end, "r")

        def run(code: str) -> dict:
            proc.stdin.write(json.dumps({"op": "python", "path": "x.md", "line": 1, "code": code,
                                         "timeout": 30}) + "\n")
            proc.stdin.flush()
            return json.loads(answers.readline())

        injected = run("print(sorted(n for n in globals() if not n.startswith('__')))")
        missing = run("client.close()")
        kept = run("x = 41")
        used = run("print(x + 1, __name__)")
        proc.stdin.close()
        answers.close()

    assert injected == {"ok": True, "error": "", "printed": "[]\n"}
    assert not missing["ok"] and "NameError: name 'client' is not defined" in missing["error"]
    assert kept["ok"] and used == {"ok": True, "error": "", "printed": "42 __main__\n"}
