"""The broker's fsync threads (:mod:`broker_core.storage.sync_threads`)."""
from __future__ import annotations

import threading

import pytest

from broker_core.storage.sync_threads import SyncThreads


def test_jobs_run_on_at_most_the_configured_threads_and_all_of_them_before_shutdown_returns():
    threads = SyncThreads(2, "test-sync")
    release = threading.Event()
    ran: list[str] = []
    names: set[str] = set()

    def job(i: int):
        def run() -> None:
            release.wait(10)
            names.add(threading.current_thread().name)
            ran.append(str(i))
        return run
    for i in range(20):
        threads.run(job(i))
    release.set()
    threads.shutdown(wait=True)
    assert sorted(ran, key=int) == [str(i) for i in range(20)]
    assert names <= {"test-sync_0", "test-sync_1"}


def test_a_job_that_raises_is_logged_and_the_thread_serves_the_next(caplog):
    threads = SyncThreads(1)
    done = threading.Event()

    def failing() -> None:
        raise OSError("disk on fire")
    threads.run(failing)
    threads.run(done.set)
    assert done.wait(10)
    threads.shutdown()
    assert "event=sync_job_failed" in caplog.text


def test_no_job_is_taken_after_shutdown():
    threads = SyncThreads(1)
    threads.shutdown()
    with pytest.raises(RuntimeError):
        threads.run(lambda: None)
    with pytest.raises(RuntimeError):
        threads.submit(lambda: None)


def test_submit_is_an_executors_with_the_result_or_the_error_in_the_future():
    threads = SyncThreads(1)
    assert threads.submit(lambda x: x * 2, 21).result(10) == 42
    with pytest.raises(ZeroDivisionError):
        threads.submit(lambda: 1 / 0).result(10)
    threads.shutdown()
