"""Credentials that expire while a connection lives: every ``authenticationRefreshCheckSeconds`` each
registered check runs, and decides what an expired principal means for its connection -- a gRPC stream is
ended with ``AuthenticationError`` (:mod:`broker_core.frontends.grpc.admission`); a Pulsar binary connection is sent
``AUTH_CHALLENGE`` and closed if it does not answer in time (:mod:`broker_core.frontends.pulsar.authentication`).

Only principals whose credentials expire (a token with ``exp``) are registered; the sweep runs on the
broker's event loop and costs nothing while none is.

Example::

    watch = CredentialChecks(interval_s=60)
    forget = watch.add(lambda: stream.end_if_expired())   # called every 60 s
    ...
    forget()                                               # the stream ended
"""
from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Callable

log = logging.getLogger(__name__)


class CredentialChecks:
    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._checks: dict[int, Callable[[], None]] = {}
        self._ids = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._stopped = False

    def add(self, check: Callable[[], None]) -> Callable[[], None]:
        """Run ``check()`` every interval (on the event loop) until the returned function is called."""
        key = next(self._ids)
        self._checks[key] = check
        if self._timer is None and not self._stopped:
            self._timer = asyncio.get_running_loop().call_later(self.interval_s, self._sweep)
        return lambda: self._checks.pop(key, None)

    def _sweep(self) -> None:
        self._timer = None
        for check in list(self._checks.values()):
            try:
                check()
            except Exception:  # one connection's check must not stop the others'
                log.exception("event=credential_check_failed")
        if self._checks and not self._stopped:
            self._timer = asyncio.get_running_loop().call_later(self.interval_s, self._sweep)

    def stop(self) -> None:
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._checks.clear()

    def __len__(self) -> int:
        return len(self._checks)
