"""The security layer both front ends call: who a client is (authentication), and what it may do
(authorization).

Issue 13 (authentication providers, authorization, TLS) fills this in; until then authentication is off, as
Pulsar's ``authenticationEnabled=false``: every client is accepted, with the anonymous role, and may do
everything. The front ends already call it at the right places, so the providers plug in here only:

- the Pulsar binary front end hands ``CONNECT``'s ``auth_method_name`` and ``auth_data``, with the
  connection's :class:`~broker_core.service.peers.ClientIdentity` (its address; its TLS certificate's
  subject once the listener terminates TLS), to :meth:`Security.authenticate`, and answers
  ``AuthenticationError`` and closes the connection when it raises;
- each command on a topic goes through :meth:`Security.authorize`; a refusal is ``AuthorizationError``.
"""
from __future__ import annotations

from dataclasses import dataclass

from broker_core.service.peers import ClientIdentity

ANONYMOUS = ""
"""The role of every client while authentication is off (Pulsar's ``anonymousUserRole``, unset)."""


@dataclass(frozen=True)
class Principal:
    """An authenticated client."""

    role: str
    method: str
    """The authentication method that admitted it (``none`` while authentication is off)."""


class Security:
    """Authentication off, everything allowed (see the module docstring)."""

    def authenticate(self, method: str, data: bytes, identity: ClientIdentity) -> Principal:
        """The principal of a client that presents ``data`` for ``method``; raises when it is refused."""
        return Principal(ANONYMOUS, "none")

    def authorize(self, principal: Principal, action: str, resource: str) -> None:
        """Raises when ``principal`` may not do ``action`` (``produce``, ``consume``, ``lookup``) on
        ``resource`` (a topic or namespace name)."""
