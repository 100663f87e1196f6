"""The source on a real standalone Spark cluster started from the pip package: a master, one worker (2 cores,
2 GB) and ``spark-submit --master spark://...`` of :data:`tests.spark.cluster_job.JOB` with one core per
executor, so two executor JVMs with their own Python workers reach the broker over TCP, as on any cluster
(~30 s, ~2 GB). One run serves every test here. Each daemon runs in its own process group; they are stopped
driver first, then worker, then master."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.spark.cluster_job import JOB, MESSAGES, fill, job_env, result_of, run_in_own_group

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


class Daemon:
    """A ``spark-class`` daemon in its own process group, its log in a file."""

    def __init__(self, name: str, args: list[str], log: Path, extra_env: dict[str, str]) -> None:
        self.name = name
        self.log = log
        self._file = open(log, "w")
        self.proc = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], stdout=self._file,
                                     stderr=subprocess.STDOUT, env={**job_env(), **extra_env},
                                     start_new_session=True)

    def wait_for(self, pattern: str, timeout: float = 90) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = re.search(pattern, self.log.read_text())
            if match:
                return match
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)  # polling the daemon's log for its startup line
        pytest.fail(f"{self.name} did not log {pattern!r}:\n{self.log.read_text()[-4000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(30)
        self._file.close()


@pytest.fixture(scope="module")
def cluster_run(broker, tmp_path_factory) -> dict:
    tmp_path = tmp_path_factory.mktemp("standalone-cluster")
    topic = "persistent://public/default/standalone-cluster"
    fill(broker, topic)
    (tmp_path / "job.py").write_text(JOB)
    no_rest = {"SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false", "SPARK_LOG_DIR": str(tmp_path),
               "SPARK_WORKER_DIR": str(tmp_path / "work")}
    master = Daemon("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0",
                               "--webui-port", "0"], tmp_path / "master.log", no_rest)
    worker = None
    try:
        url = master.wait_for(r"Starting Spark master at (spark://127\.0\.0\.1:\d+)").group(1)
        worker = Daemon("worker", ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                   "--port", "0", "--webui-port", "0", "--cores", "2", "--memory", "2g", url],
                        tmp_path / "worker.log", no_rest)
        worker.wait_for(r"Successfully registered with master")
        submit = str(spark_home() / "bin" / "spark-submit")
        output = run_in_own_group([submit, "--master", url, "--conf", "spark.executor.memory=1g",
                                   "--conf", "spark.executor.cores=1",
                                   "--conf", f"spark.pyspark.python={sys.executable}",
                                   str(tmp_path / "job.py"), broker.service_url, topic, str(tmp_path)],
                                  timeout=300, cwd=tmp_path)
    finally:
        # the driver (spark-submit) has exited by now; then the worker, then the master
        if worker is not None:
            worker.stop()
        master.stop()
    return result_of(output)


def test_executors_in_their_own_jvms_read_every_message_once(cluster_run):
    assert cluster_run["executors"] == 2
    assert not cluster_run["driver_pid"]
    streamed = cluster_run["streamed"]
    assert len(streamed) == len(set(map(tuple, streamed))) == MESSAGES


def test_admission_control_holds_on_a_cluster(cluster_run):
    assert cluster_run["batches"] == [250, 250, 250, 250]


def test_a_batch_read_on_a_cluster_is_split_and_replays_identically(cluster_run):
    assert cluster_run["batch_rows"] == MESSAGES
    assert cluster_run["values"] == sorted(f"m{i}" for i in range(MESSAGES))
    assert cluster_run["replay_identical"]
