"""What a client connection may cost before it has shown who it is: how many sockets are open, per client
address and in all, and how long one may take to complete its handshake.

The broker's port listener (:mod:`broker_core.net.listener`) asks :meth:`ConnectionBudget.admit` for
every socket it accepts, on the plain and the TLS port, before it reads a byte:

- ``brokerMaxConnectionsPerIp`` / ``brokerMaxConnections`` (Pulsar's names): a socket over either is closed
  at once. Refusals are logged as one line per limit and interval with their count (``occurrences=N``),
  never one per connection: a client opening connections in a loop must not fill the log.
- The total is never above what the process's open-file limit (``ulimit -n``) leaves once
  ``managedLedgerMaxOpenFiles`` + :data:`FD_RESERVE` descriptors are kept for storage (segment and index
  files, the journal) and the broker's own sockets: clients can use up their budget, not the descriptors
  the topics need. The broker raises its soft limit to the hard one first (:func:`raise_open_file_limit`,
  as Go programs do), so a default soft limit of 1,024 does not cap it at 256 clients.
- Each admitted socket gets a deadline, ``handshakeTimeoutSeconds`` after its accept, by which it must have
  completed its handshake (the listener's sniff of the first bytes, the HTTP/2 preface, a Pulsar
  ``CONNECT`` answered ``CONNECTED``). Trickling bytes does not move it.

The count is of sockets, whatever is served on them: a gRPC connection counts from its accept until the
relay says it ended, a Pulsar connection until it is lost. The web service port has a budget of its own
(:meth:`ConnectionBudget.for_web`: ``maxHttpServerConnections``, and ``brokerMaxConnectionsPerIp`` counted
apart), so web clients, slow or not, never take a place of the broker's port. The gRPC front end's own limits
(:mod:`broker_core.net.client_limits`) count the connections *with a call open*, a subset of these
sockets, so a client within the socket limits is never refused there for a connection counted here.

Example, ``brokerMaxConnectionsPerIp=2``::

    a = budget.admit("10.0.0.5", now)   # Admitted
    b = budget.admit("10.0.0.5", now)   # Admitted
    budget.admit("10.0.0.5", now)       # None: refused, logged once with its count
    budget.admit("10.0.0.6", now)       # Admitted: another address
    a.release()                          # (twice is harmless)
    budget.admit("10.0.0.5", now)       # Admitted again
"""
from __future__ import annotations

import logging
import resource
from collections import Counter

from broker_core.clock import SYSTEM_CLOCK, Clock
from broker_core.log_limits import LogLimiter

log = logging.getLogger(__name__)

MAX_OPEN_FILES = 1 << 20
"""The most :func:`raise_open_file_limit` asks for (Linux's default ``fs.nr_open``)."""
FD_RESERVE = 512
"""Descriptors kept from clients beyond ``managedLedgerMaxOpenFiles``: the journal and metadata files, the
gRPC server's and the metrics server's sockets, the relay's control socket, log files."""


def raise_open_file_limit() -> int:
    """Raise the process's soft limit of open files to its hard limit (at most :data:`MAX_OPEN_FILES`);
    the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = MAX_OPEN_FILES if hard == resource.RLIM_INFINITY else min(hard, MAX_OPEN_FILES)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (OSError, ValueError) as exc:
            log.warning("event=open_file_limit_not_raised soft=%d hard=%d error=%r", soft, hard, exc)
    return open_file_limit()


def open_file_limit() -> int:
    """The process's soft limit of open files (``ulimit -n``); 0 when it has none."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 0 if soft == resource.RLIM_INFINITY else int(soft)


def descriptor_budget(max_connections: int, max_open_files: int, file_limit: int,
                      key: str = "brokerMaxConnections") -> tuple[int, str]:
    """The total connection limit and the name it is reported under: ``key`` (the setting that gave
    ``max_connections``) when set and within what ``file_limit`` leaves, else what the descriptors leave (at
    least 64: a broker whose limit is that low cannot serve anyway, and this one still serves a few clients)."""
    if not file_limit:
        return max_connections, key
    spare = max(file_limit - max_open_files - FD_RESERVE, 64)
    if max_connections and max_connections <= spare:
        return max_connections, key
    return spare, "open file limit (ulimit -n)"


def client_host(host: str) -> str:
    """The address a client's connections are counted under: an IPv4 client on a dual-stack socket
    (``::ffff:10.0.0.5``) is the same client as ``10.0.0.5``."""
    return host[7:] if host.startswith("::ffff:") and "." in host else host


class Admitted:
    """One accepted socket's place in the budget, its handshake deadline (in the event loop's time), and
    where refusals of it before its handshake completed are logged (:attr:`ConnectionBudget.refusals`)."""

    __slots__ = ("host", "deadline", "refusals", "_budget")

    def __init__(self, budget: "ConnectionBudget", host: str, deadline: float) -> None:
        self.host = host
        self.deadline = deadline
        self.refusals = budget.refusals
        self._budget: ConnectionBudget | None = budget

    def release(self) -> None:
        """The socket is closed (or handed to whoever closes it and says so); idempotent."""
        budget, self._budget = self._budget, None
        if budget is not None:
            budget._release(self.host)


class ConnectionBudget:
    """Counts the sockets open per client address and in all. Not thread-safe: the listener uses it on the
    event loop only (the relay reports ended connections there too)."""

    def __init__(self, max_connections: int = 0, max_connections_per_ip: int = 0,
                 handshake_timeout_s: float = 30.0, *, max_open_files: int = 0, file_limit: int | None = None,
                 clock: Clock = SYSTEM_CLOCK, key: str = "brokerMaxConnections") -> None:
        """``max_open_files``: storage's own bound (``managedLedgerMaxOpenFiles``); ``file_limit``: the
        process's open-file limit (None: read it); ``key``: the setting ``max_connections`` comes from."""
        self.max_connections, self._total_name = descriptor_budget(
            max_connections, max_open_files, open_file_limit() if file_limit is None else file_limit, key)
        self.max_connections_per_ip = max_connections_per_ip
        self.handshake_timeout_s = handshake_timeout_s
        self.open = 0
        """Sockets admitted and not yet released."""
        self._per_host: Counter[str] = Counter()
        self.refusals = LogLimiter(log, clock=clock)
        """Where refusals of unauthenticated clients are logged (one line per event and interval)."""

    @classmethod
    def from_config(cls, config, clock: Clock = SYSTEM_CLOCK) -> "ConnectionBudget":
        """The broker's port's (plain and TLS)."""
        return cls(config.brokerMaxConnections, config.brokerMaxConnectionsPerIp,
                   float(config.handshakeTimeoutSeconds), max_open_files=config.managedLedgerMaxOpenFiles,
                   clock=clock)

    @classmethod
    def for_web(cls, config, clock: Clock = SYSTEM_CLOCK) -> "ConnectionBudget":
        """The web service port's (plain and TLS), apart from the broker's port's."""
        return cls(config.maxHttpServerConnections, config.brokerMaxConnectionsPerIp,
                   float(config.handshakeTimeoutSeconds), max_open_files=config.managedLedgerMaxOpenFiles,
                   clock=clock, key="maxHttpServerConnections")

    def connections(self, host: str) -> int:
        return self._per_host.get(client_host(host), 0)

    def admit(self, host: str, now: float) -> Admitted | None:
        """A place for a socket from ``host`` accepted at ``now`` (the event loop's time), or None when it
        is over a limit (then logged; the caller closes it)."""
        host = client_host(host)
        if self.max_connections and self.open >= self.max_connections:
            self.refusals.warning("total", "event=connection_refused limit=%s allowed=%d peer=%s",
                                  self._total_name, self.max_connections, host)
            return None
        if self.max_connections_per_ip and self._per_host[host] >= self.max_connections_per_ip:
            self.refusals.warning("per_ip", "event=connection_refused limit=brokerMaxConnectionsPerIp allowed=%d "
                                  "peer=%s", self.max_connections_per_ip, host)
            return None
        self.open += 1
        self._per_host[host] += 1
        return Admitted(self, host, now + self.handshake_timeout_s)

    def _release(self, host: str) -> None:
        self.open -= 1
        left = self._per_host[host] - 1
        if left > 0:
            self._per_host[host] = left
        else:
            del self._per_host[host]
