"""Failed Basic logins counted per client address; an address that failed too often is refused at once, with
nothing hashed, for a while. Pulsar has no such limit (its ``AuthenticationProviderBasic`` checks every
attempt); a pulsarlike extension, configured by ``basicAuthMaxFailuresPerAddress`` (0: no limit),
``basicAuthFailureWindowSeconds`` and ``basicAuthBlockSeconds``.

An address is a client's host (its port dropped); an IPv6 host counts as its /64 network, which one machine
usually has whole. Its logins that are being checked count as failures in waiting, so opening many
connections at once with different passwords does not get more guesses hashed; the same credentials checked
twice at once count once (the check is shared). A blocked address is refused even credentials that passed
before: remembered credentials would otherwise answer guesses without hashing. Clients behind one NAT or
proxy share its address, and its block.

Example, 3 failures within 60 s, blocked 30 s::

    t=0 s    failed        (1 within the window)
    t=10 s   failed        (2)
    t=20 s   failed        (3)  -> blocked until t=50 s: event=authentication_blocked (WARNING)
    t=25 s   any login     -> TooManyRequests at once, nothing hashed; the block is not extended
    t=50 s   login         -> checked again, failures counted from none

Not thread-safe: the broker calls it on its event loop (the hashing happens elsewhere,
:mod:`.password_checks`). Addresses are forgotten once their failures left the window; at most
``max_addresses`` are remembered (the oldest are dropped first).
"""
from __future__ import annotations

import ipaddress
import logging
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any

from broker_core.clock import SYSTEM_CLOCK, Clock
from broker_core.errors import TooManyRequests
from broker_core.log_limits import LogLimiter
from broker_core.net.client_limits import peer_host

log = logging.getLogger(__name__)

MAX_ADDRESSES = 10_000
"""Addresses with failures (or a block) remembered at once."""


@dataclass(frozen=True)
class FailureLimits:
    max_failures: int = 10
    """Refused logins from one address within ``window_ms`` that block it (0: no limit)."""
    window_ms: float = 60_000
    block_ms: float = 60_000
    """How long a blocked address is refused at once."""

    @classmethod
    def from_config(cls, config: Any) -> "FailureLimits":
        return cls(config.basicAuthMaxFailuresPerAddress, config.basicAuthFailureWindowSeconds * 1000.0,
                   config.basicAuthBlockSeconds * 1000.0)


def client_address(peer: str) -> str:
    """Who failures are counted for: ``ipv4:10.0.0.5:51234`` -> ``ipv4:10.0.0.5``, ``ipv6:[2001:db8::1]:4000``
    -> ``ipv6:[2001:db8::]/64``; anything else as :func:`~broker_core.net.client_limits.peer_host` gives it."""
    host = peer_host(peer)
    if host.startswith("ipv6:["):
        try:
            network = ipaddress.IPv6Network(host[len("ipv6:["):].rstrip("]") + "/64", strict=False)
        except ValueError:
            return host
        return f"ipv6:[{network.network_address}]/64"
    return host


class FailedLogins:
    def __init__(self, limits: FailureLimits, clock: Clock = SYSTEM_CLOCK, max_addresses: int = MAX_ADDRESSES) -> None:
        self.limits = limits
        self._clock = clock
        self._max_addresses = max_addresses
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        """Address -> when its failures within the window happened (oldest first)."""
        self._blocked: OrderedDict[str, float] = OrderedDict()
        """Address -> until when (monotonic ms) it is refused."""
        self._checking: dict[str, set[bytes]] = {}
        """Address -> the credentials (their digests) being checked for it."""
        self._log = LogLimiter(log, clock=clock)

    def admit(self, address: str, key: bytes) -> None:
        """Before ``address``'s login with credentials ``key`` is checked (or taken as remembered):
        ``TooManyRequests`` when the address is blocked, or when its failures within the window and its
        other checks under way reach the limit."""
        limits = self.limits
        if not limits.max_failures:
            return
        now = self._clock.monotonic_ms()
        until = self._blocked.get(address)
        if until is not None:
            if now < until:
                left_s = (until - now) / 1000
                self._log.warning(f"refused {address}", "event=authentication_refused peer=%s method=basic reason="
                                  "blocked for %.0f s more after %d failed logins", address, left_s,
                                  limits.max_failures)
                raise TooManyRequests(
                    f"authentication refused: {limits.max_failures} failed logins from this address within "
                    f"{limits.window_ms / 1000:g} s; its logins are refused for {left_s:.0f} s more (the broker's "
                    "basicAuthMaxFailuresPerAddress / basicAuthBlockSeconds)", limit="basicAuthMaxFailuresPerAddress",
                    allowed=limits.max_failures, retry_after_s=round(left_s, 3))
            del self._blocked[address]
        checking = self._checking.get(address, ())
        if key not in checking and len(checking) + len(self._recent(address, now)) >= limits.max_failures:
            raise TooManyRequests(
                f"authentication refused: {len(checking)} logins from this address are being checked and "
                f"{len(self._recent(address, now))} failed within {limits.window_ms / 1000:g} s; wait for their "
                f"answers (the broker's basicAuthMaxFailuresPerAddress={limits.max_failures})",
                limit="basicAuthMaxFailuresPerAddress", allowed=limits.max_failures)

    def checking(self, address: str, key: bytes) -> None:
        """``address``'s login with credentials ``key`` is being checked (after :meth:`admit`)."""
        if self.limits.max_failures:
            self._checking.setdefault(address, set()).add(key)

    def checked(self, address: str, key: bytes, *, failed: bool) -> None:
        """The check :meth:`checking` announced ended; ``failed``: the credentials were refused (counted
        once for logins with the same credentials checked at once)."""
        checking = self._checking.get(address)
        if checking is None or key not in checking:
            return  # no limit, or told already by another login sharing the check
        checking.discard(key)
        if not checking:
            del self._checking[address]
        if failed:
            self._failed(address)

    def blocked(self, address: str) -> bool:
        until = self._blocked.get(address)
        return until is not None and self._clock.monotonic_ms() < until

    def _recent(self, address: str, now: float) -> deque[float]:
        """``address``'s failures within the window (older ones dropped)."""
        times = self._failures.get(address)
        if times is None:
            return deque()
        while times and times[0] <= now - self.limits.window_ms:
            times.popleft()
        if not times:
            del self._failures[address]
        return times

    def _failed(self, address: str) -> None:
        limits = self.limits
        now = self._clock.monotonic_ms()
        times = self._recent(address, now)
        times.append(now)
        self._failures[address] = times
        self._failures.move_to_end(address)
        if len(times) >= limits.max_failures:
            del self._failures[address]
            self._blocked[address] = now + limits.block_ms
            self._blocked.move_to_end(address)
            self._log.warning(f"blocked {address}", "event=authentication_blocked peer=%s method=basic failures=%d "
                              "window_s=%g block_s=%g", address, len(times), limits.window_ms / 1000,
                              limits.block_ms / 1000)
        for remembered in (self._failures, self._blocked):
            while len(remembered) > self._max_addresses:
                remembered.popitem(last=False)
