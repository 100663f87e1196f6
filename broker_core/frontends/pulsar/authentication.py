"""A binary protocol connection's credentials: CONNECT's, and their refresh (Pulsar's ``AUTH_CHALLENGE``).

1. ``CONNECT``'s ``auth_method_name`` (``token``, ``tls``, ``basic``, or none) and ``auth_data`` go to the
   security layer (:class:`~broker_core.security.Security`) with the connection's identity (address, TLS
   client certificate's CN), awaited: a Basic password is hashed on a worker thread, and the connection
   handles none of its later frames until the answer; a refusal is answered ``ERROR(AuthenticationError)``
   and the connection closes.
2. A principal whose credentials expire (a token's ``exp``) is checked every
   ``authenticationRefreshCheckSeconds`` (:mod:`broker_core.security.credential_checks`). Once expired, as
   Pulsar's ``ServerCnx.refreshAuthenticationCredentials``: a client that did not announce
   ``supports_auth_refresh`` is disconnected; otherwise it is sent ``AUTH_CHALLENGE`` (the ``PulsarAuthRefresh``
   challenge) and must answer ``AUTH_RESPONSE`` with valid credentials of the same role before the next check,
   or it is disconnected. A refused answer is ``ERROR(AuthenticationError)`` and a disconnection.

Every refusal and disconnection logs one line with the peer and the role, never the credentials.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Awaitable, Callable

from broker_core.errors import AuthenticationError, PulsarLikeError
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.status import wire_message
from broker_core.security import Principal

if TYPE_CHECKING:
    from broker_core.frontends.pulsar.connection import PulsarConnection

log = logging.getLogger(__name__)

T = cmd.BaseCommand
REFRESH_CHALLENGE = b"PulsarAuthRefresh"
"""Pulsar's ``AuthData.REFRESH_AUTH_DATA``: the challenge asking a client for fresh credentials."""


class ConnectionAuthentication:
    def __init__(self, conn: "PulsarConnection") -> None:
        self._conn = conn
        self._refresh_supported = False
        self._challenged = False
        self._forget: Callable[[], None] | None = None
        self._pending: asyncio.Future | None = None
        """The credentials being checked (a CONNECT's or an AUTH_RESPONSE's)."""

    def handlers(self) -> dict:
        return {T.AUTH_RESPONSE: self.auth_response}

    def connect(self, connect: cmd.CommandConnect, admitted: Callable[[Principal], None]) -> None:
        """Check CONNECT's credentials; ``admitted(principal)`` once they pass (later: the connection holds
        its frames meanwhile); a refusal is answered and closes the connection."""
        conn = self._conn
        assert conn.identity is not None

        def then(principal: Principal) -> None:
            self._refresh_supported = connect.feature_flags.supports_auth_refresh
            checks = conn.front.checks
            if principal.expires_at_ms is not None and checks is not None:
                self._forget = checks.add(self.check)
            admitted(principal)
        self._checking(conn.front.security.authenticate_async(connect.auth_method_name, connect.auth_data,
                                                              conn.identity), then)

    def _checking(self, check: Awaitable[Principal], then: Callable[[Principal], None]) -> None:
        """``then(principal)`` once ``check`` passes, unless the connection closed meanwhile; a refusal
        answered."""
        def done(task: asyncio.Task) -> None:
            self._pending = None
            if task.cancelled() or self._conn.closed:
                if not task.cancelled():
                    task.exception()  # nobody to tell
                return
            exc = task.exception()
            if isinstance(exc, PulsarLikeError):
                self._refuse(exc)
            elif exc is not None:
                log.error("event=unexpected_error peer=%s error_type=%s error=%s", self._conn.peer,
                          type(exc).__name__, exc, exc_info=exc)
                self._conn.abort("internal broker error")
            else:
                then(task.result())
        self._pending = asyncio.ensure_future(check)
        self._pending.add_done_callback(done)

    def check(self) -> None:
        """Every ``authenticationRefreshCheckSeconds``: challenge or disconnect a client whose credentials
        expired."""
        conn = self._conn
        principal = conn.principal
        if conn.closed or principal is None or conn.front.security.still_valid(principal):
            return
        if not self._refresh_supported:
            self._disconnect("its credentials expired and the client cannot refresh them (no supports_auth_refresh)")
        elif self._challenged:
            self._disconnect("its credentials expired and it did not answer AUTH_CHALLENGE with new ones in time")
        else:
            self._challenged = True
            log.info("event=auth_challenge peer=%s role=%s", conn.peer, principal.role)
            conn.send(T(type=T.AUTH_CHALLENGE, authChallenge=cmd.CommandAuthChallenge(
                server_version="pulsarlike", protocol_version=conn.protocol_version,
                challenge=cmd.AuthData(auth_method_name=principal.method, auth_data=REFRESH_CHALLENGE))))

    def auth_response(self, response: cmd.CommandAuthResponse) -> None:
        conn = self._conn
        assert conn.identity is not None and conn.principal is not None
        if self._pending is not None:
            return  # answered already: the first answer's check decides
        data = response.response

        def then(principal: Principal) -> None:
            assert conn.principal is not None
            if principal.role != conn.principal.role:
                self._refuse(AuthenticationError(f"the refreshed credentials are for another role ({principal.role!r}"
                                                 f" instead of {conn.principal.role!r}): reconnect instead",
                                                 reason="role changed"))
                return
            conn.principal = principal
            self._challenged = False
            log.info("event=auth_refreshed peer=%s role=%s", conn.peer, principal.role)
        self._checking(conn.front.security.authenticate_async(data.auth_method_name, data.auth_data, conn.identity),
                       then)

    def _refuse(self, exc: PulsarLikeError) -> None:
        self._conn.send(T(type=T.ERROR, error=cmd.CommandError(request_id=0, error=cmd.AuthenticationError,
                                                              message=wire_message(exc))))
        self._conn.close()

    def _disconnect(self, why: str) -> None:
        conn = self._conn
        log.warning("event=connection_closed peer=%s role=%s reason=%s", conn.peer,
                    conn.principal.role if conn.principal else "", why)
        conn.close()

    def closed(self) -> None:
        if self._forget is not None:
            self._forget()
            self._forget = None
        if self._pending is not None:
            self._pending.cancel()  # the password's hash, if one is under way, goes on for its other waiters
