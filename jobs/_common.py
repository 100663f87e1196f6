"""What the batch jobs share: argument parsing, the Spark session, errors and exit codes, the progress bar,
the broker's offsets and atomic file writes.

Exit codes of every job: 0 done; 1 the job failed while running (broker unreachable, a Spark task failed,
data deleted by retention); 2 bad usage or bad input, found before anything is written.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, TextIO

from connector.cli import security_flags
from connector.cli.args import SuggestingParser

DEFAULT_URL = "pulsar://127.0.0.1:6650"
URL_ENV = "PULSARLIKE_SERVICE_URL"
DEFAULT_MASTER = "local[*]"
BROKER_TIMEOUT_MS = 30_000


class JobInputError(Exception):
    """Bad input found before anything was written (exit 2): names the path, column, option or topic."""


class JobFailed(Exception):
    """The job could not finish (exit 1): what happened and what to do."""


_SECURITY: Any = None
"""The parsed authentication/TLS flags of this run (:func:`security`)."""


class JobParser(SuggestingParser):
    """argparse that names the closest flag for an unknown one and exits 2 with the usage; parsing also keeps
    the run's authentication and TLS flags for :func:`security`."""

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        parsed = super().parse_args(args, namespace)
        use_security(parsed)
        return parsed


def use_security(parsed: argparse.Namespace) -> None:
    """Keep the authentication/TLS flags of ``parsed`` (:func:`connector.cli.security_flags.add`) for this run."""
    global _SECURITY
    if hasattr(parsed, "auth_plugin"):
        from connector.spark.auth_options import ClientSecurity

        _SECURITY = ClientSecurity(parsed.auth_plugin, parsed.auth_params, parsed.tls_trust_cert_path,
                                   parsed.tls_allow_insecure, parsed.tls_hostname_verification)


def security() -> Any:
    """This run's :class:`~connector.spark.auth_options.ClientSecurity` (none given: anonymous, plain)."""
    from connector.spark.auth_options import ClientSecurity

    return _SECURITY or ClientSecurity()


def client_kwargs(service_url: str) -> dict[str, Any]:
    """``Client``/``Admin`` keyword arguments for this run's authentication and TLS flags."""
    return security().client_kwargs(service_url)


def spark_options() -> dict[str, str]:
    """The same flags as the pulsarlike source's and sink's options (only those given)."""
    given = security()
    options = {"authPluginClassName": given.auth_plugin, "authParams": given.auth_params,
               "tlsTrustCertsFilePath": given.tls_trust_certs_file_path or "",
               "tlsAllowInsecureConnection": "true" if given.tls_allow_insecure else "",
               "tlsHostnameVerificationEnable": "true" if given.tls_validate_hostname else ""}
    return {key: value for key, value in options.items() if value}


def job_parser(name: str, description: str) -> JobParser:
    """A job's parser with the flags every job takes: ``--master``, ``--service-url``, ``--no-progress`` and
    the authentication/TLS flags of the client tools (:mod:`connector.cli.security_flags`)."""
    parser = JobParser(prog=f"pulsarlike job {name}", description=description, allow_abbrev=False,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--master", default=None,
                        help=f"Spark master (default {DEFAULT_MASTER}; under spark-submit, spark-submit's)")
    parser.add_argument("--service-url", "--url", dest="service_url",
                        default=os.environ.get(URL_ENV) or DEFAULT_URL,
                        help=f"broker service URL (default ${URL_ENV} or {DEFAULT_URL})")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bar on stderr (there is none when stderr is not a terminal)")
    security_flags.add(parser)
    return parser


def run_job(name: str, body: Any, *args: Any) -> int:
    """Call ``body(*args)`` and turn the jobs' errors into an exit code and one message on stderr."""
    from broker_core.errors import PulsarLikeError

    try:
        return int(body(*args) or 0)
    except JobInputError as exc:
        print(f"pulsarlike job {name}: error: {exc}", file=sys.stderr)
        return 2
    except JobFailed as exc:
        print(f"pulsarlike job {name}: failed: {exc}", file=sys.stderr)
        return 1
    except PulsarLikeError as exc:
        print(f"pulsarlike job {name}: failed: {exc.code}: {exc.message}", file=sys.stderr)
        return 1


def job_main(name: str, parser: argparse.ArgumentParser, run: Any, argv: Any, spark: Any) -> int:
    """A job's ``main``: parse ``argv`` (default: the command line), ``run(args, spark)``, print its
    summary's lines, and map errors to exit codes (:func:`run_job`)."""
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))

    def body() -> int:
        print("\n".join(run(args, spark).lines()), flush=True)
        return 0
    return run_job(name, body)


# --- Spark ---------------------------------------------------------------------------------------------
@contextmanager
def spark_session(app_name: str, master: str | None, spark: Any = None) -> Iterator[Any]:
    """The session to run on: ``spark`` when given, else the active one, else a new one on ``master``
    (default ``local[*]``; under spark-submit its ``--master``), stopped at the end."""
    if spark is not None:
        yield spark
        return
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    builder = SparkSession.builder.appName(app_name).config("spark.ui.showConsoleProgress", "false")
    if master or "PYSPARK_GATEWAY_PORT" not in os.environ:  # spark-submit sets the gateway and the master
        builder = builder.master(master or DEFAULT_MASTER)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@contextmanager
def spark_conf(spark: Any, settings: Mapping[str, str | None]) -> Iterator[None]:
    """Session settings for the duration of a block (None: unset); the previous values come back after."""
    previous = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def analysis_error(exc: BaseException) -> bool:
    """Whether ``exc`` is Spark's error for a query that cannot be planned (bad column, bad expression)."""
    from pyspark.errors import AnalysisException, ParseException

    return isinstance(exc, (AnalysisException, ParseException))


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# --- progress ------------------------------------------------------------------------------------------
READ_SPLIT_MESSAGES = 50_000
"""Messages per Spark task when a job reads a topic (the source's ``maxMessagesPerPartition``): progress
moves as each task ends and every core works, and -- being a constant, not a function of the master --
a rerun splits the range the same way (the sink's producer names follow Spark partitions)."""


@dataclass
class StageTotals:
    """What Spark's status store says about the stages of one job group, counted as each task ends."""

    tasks: int = 0
    tasks_done: int = 0
    input_records: int = 0
    """Rows the stages' sources read: a file scan's records, the pulsarlike source's messages."""
    output_records: int = 0
    """Rows a file write stored (the pulsarlike sink counts none)."""


def progress_position(current: StageTotals, total: int | None) -> tuple[int, str]:
    """Where a bar over ``total`` rows stands: rows read so far (never past ``total``: a retried task
    counts its rows twice) and the tasks postfix."""
    rows = current.input_records if total is None else min(current.input_records, total)
    return rows, f"tasks {current.tasks_done}/{current.tasks}"


def is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class Progress:
    """A tqdm progress bar on stderr for the Spark jobs run inside ``with progress.track(label, total):``.

    Every Spark job started inside the block belongs to one job group; a thread polls Spark's status store
    (``SparkContext.statusTracker()`` for tasks, the JVM's ``AppStatusStore`` for records) twice a second.
    The bar counts the rows the block's source has read -- what Spark's task metrics say as each task
    ends -- out of ``total`` (the rows that source will read; None: unknown), with tasks done as a postfix.
    Quiet unless ``enabled`` and the stream is a terminal: a log file or a pipe gets the summary only.
    """

    def __init__(self, spark: Any, enabled: bool = True, stream: TextIO | None = None,
                 poll_interval_s: float = 0.5) -> None:
        self.spark = spark
        self.stream = stream or sys.stderr
        self.enabled = enabled and is_terminal(self.stream)
        self.poll_interval_s = poll_interval_s
        self._groups = 0

    @contextmanager
    def track(self, label: str, total: int | None = None) -> Iterator[StageTotals]:
        """Run a block's Spark jobs in their own job group; yields the totals, final when the block ends."""
        sc = self.spark.sparkContext
        self._groups += 1
        group = f"pulsarlike-job-{os.getpid()}-{id(self)}-{self._groups}"
        sc.setJobGroup(group, label)
        totals = StageTotals()
        bar = self.bar(label, total)
        stop = threading.Event()
        poller = threading.Thread(target=self._poll, args=(group, total, bar, stop),
                                  name="pulsarlike-job-progress", daemon=True)
        if bar is not None:
            poller.start()
        try:
            yield totals
        finally:
            stop.set()
            if poller.is_alive():
                poller.join()
            sc.setLocalProperty("spark.jobGroup.id", None)
            sc.setLocalProperty("spark.job.description", None)
            final = self._totals(group)
            totals.__dict__.update(final.__dict__)
            if bar is not None:
                self.show(bar, final, total)
                bar.close()

    def bar(self, label: str, total: int | None) -> Any:
        """A tqdm bar over ``total`` rows on the stream; None when the progress is not shown."""
        if not self.enabled:
            return None
        from tqdm import tqdm

        # shutil falls back to 80x24 where the terminal reports no size (a bare pty): tqdm would hide
        # the bar there
        size = shutil.get_terminal_size()
        return tqdm(total=total, desc=label, unit=" rows", file=self.stream, ncols=size.columns,
                    nrows=size.lines, mininterval=0.2, leave=True)

    def _poll(self, group: str, total: int | None, bar: Any, stop: threading.Event) -> None:
        while not stop.wait(self.poll_interval_s):
            try:
                current = self._totals(group)
            except Exception:  # the session is stopping; the final totals are taken after the block
                return
            self.show(bar, current, total)

    @staticmethod
    def show(bar: Any, current: StageTotals, total: int | None) -> None:
        """Move ``bar`` to what ``current`` says."""
        rows, postfix = progress_position(current, total)
        bar.set_postfix_str(postfix, refresh=False)
        if rows > bar.n:
            bar.update(rows - bar.n)  # update(), not n=: tqdm's rate follows the increments
        else:
            bar.refresh()

    def _totals(self, group: str) -> StageTotals:
        sc = self.spark.sparkContext
        tracker = sc.statusTracker()
        try:
            store = sc._jsc.sc().statusStore()
        except Exception:  # not the classic JVM-backed session: tasks only
            store = None
        totals = StageTotals()
        seen: set[int] = set()
        for job_id in tracker.getJobIdsForGroup(group):
            job = tracker.getJobInfo(job_id)
            for stage_id in (job.stageIds if job else ()):
                if stage_id in seen:
                    continue
                seen.add(stage_id)
                data = None
                if store is not None:
                    try:
                        data = store.lastStageAttempt(stage_id)
                    except Exception:  # a stage not yet (or no longer) in the store
                        data = None
                if data is None:
                    stage = tracker.getStageInfo(stage_id)
                    if stage is not None:
                        totals.tasks += stage.numTasks
                        totals.tasks_done += stage.numCompletedTasks
                elif str(data.status()) != "SKIPPED":  # a shuffle an earlier job of the group wrote
                    totals.tasks += int(data.numTasks())
                    totals.tasks_done += int(data.numCompleteTasks())
                    totals.input_records += int(data.inputRecords())
                    totals.output_records += int(data.outputRecords())
        return totals


def qualified(topic: str, flag: str) -> str:
    """``topic`` fully qualified; JobInputError naming ``flag`` when it is not a valid name."""
    from broker_core.errors import InvalidTopicName
    from broker_core.types import TopicName

    try:
        name = TopicName.parse(topic.strip())
    except InvalidTopicName as exc:
        raise JobInputError(f"{flag} {topic!r}: {exc.message}") from None
    if name.partition_index >= 0:
        raise JobInputError(f"{flag} {topic!r} is a partition's name; give the topic "
                            f"{str(name.partitioned_base)!r}")
    return str(name)


# --- files ---------------------------------------------------------------------------------------------
def write_json_atomically(path: str, document: Any) -> None:
    """Write ``document`` as JSON to ``path``: a temp file in the same folder, flush, fsync, rename,
    fsync the folder -- a reader sees the old file or the new one, never a part."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=2, sort_keys=True)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
    fsync_dir(folder)


def fsync_dir(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def local_path(path: str, flag: str) -> str:
    """A local filesystem path from ``path`` or a ``file:`` URI; JobInputError for other schemes."""
    if path.startswith("file://"):
        path = path[len("file://"):]
    elif path.startswith("file:"):
        path = path[len("file:"):]
    elif "://" in path:
        raise JobInputError(f"{flag} {path!r}: only local (or mounted) folders are supported, because the "
                            "manifest is replaced atomically with a POSIX rename; give a local path")
    return os.path.abspath(path)
