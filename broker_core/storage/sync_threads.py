"""The broker's fsync threads: a few long-lived threads running the journals' group-commit fsyncs.

A :class:`~concurrent.futures.ThreadPoolExecutor` costs each ``submit`` a ``Future``, a work item, two locks
and a semaphore probe (its idle-thread check) on the event loop, for a job whose result nobody reads (the
job reports back to the loop itself): :meth:`SyncThreads.run` only puts the job on a queue (a C
``SimpleQueue``) that the threads wait on. :meth:`submit` is the ``Executor`` one, for other callers.
"""
from __future__ import annotations

import logging
import queue
import threading
from concurrent.futures import Executor, Future
from typing import Any, Callable

log = logging.getLogger(__name__)

_STOP = None
"""Put once per thread by :meth:`SyncThreads.shutdown`: that thread ends after the jobs queued before it."""


class SyncThreads(Executor):
    """Up to ``threads`` daemon threads (one started by each of the first jobs) running jobs in the order
    they were queued."""

    def __init__(self, threads: int, name: str = "pulsarlike-sync") -> None:
        self._max = threads
        self._name = name
        self._jobs: queue.SimpleQueue[Callable[[], Any] | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    def run(self, job: Callable[[], Any]) -> None:
        """Run ``job()`` on one of the threads; what it raises is logged (a job reports its own outcome).
        ``RuntimeError`` once shut down."""
        with self._lock:  # no job queued behind the threads' stop marks
            if self._closed:
                raise RuntimeError("cannot run new jobs after shutdown")
            self._jobs.put(job)
            if len(self._threads) < self._max:
                thread = threading.Thread(target=self._work, name=f"{self._name}_{len(self._threads)}",
                                          daemon=True)
                thread.start()
                self._threads.append(thread)

    def _work(self) -> None:
        jobs = self._jobs
        while True:
            job = jobs.get()
            if job is _STOP:
                return
            try:
                job()
            except BaseException:  # noqa: BLE001 - the thread serves the next job
                log.exception("event=sync_job_failed")

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()

        def job() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # handed to whoever waits on the future
                future.set_exception(exc)
        self.run(job)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """No new jobs; the threads end once the jobs queued before have run (``cancel_futures`` is not
        supported: every queued fsync runs, as its receipts wait for it)."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        for _ in threads:
            self._jobs.put(_STOP)
        if wait:
            for thread in threads:
                thread.join()
