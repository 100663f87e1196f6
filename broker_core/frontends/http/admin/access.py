"""Who may call which admin endpoint, checked before the handler runs, and every failure turned into
Pulsar's ``{"reason": ...}`` answer.

Each handler declares what it needs with :func:`needs` -- an action of :mod:`broker_core.security.authorization`
and the resource it acts on, read from the path -- the same action and resource as the gRPC call doing the
same thing (:mod:`broker_core.frontends.grpc.rpc_access`). :func:`guard` (the app's middleware) then:

1. authenticates the request with the broker's security layer (:meth:`~broker_core.security.Security.
   authenticate_call_async`: a Basic password is hashed on a worker thread), as the binary and gRPC ports
   do: ``Authorization: Bearer <token>`` (``token`` provider) or ``Authorization: Basic
   base64(user:password)`` (``basic``), else on HTTPS the verified client certificate's CN (``tls``), else
   anonymous (``anonymousUserRole``, also for an ``Authorization`` no provider takes, as Pulsar's); with
   authentication on and no credentials, or refused ones, 401; from an address blocked for failed Basic
   logins, 429;
2. authorizes the role for the handler's action on its resource (403; 404 when the tenant does not exist, as
   the authorizer says); a handler that declares nothing is for super-users only, so a new endpoint is never
   open by accident; one marked :func:`public` skips both steps;
3. runs the handler, and answers each failure with its status (:mod:`~broker_core.frontends.http.admin.
   answers`): a broker error, a bad body (400), aiohttp's own 404/405/413, anything unexpected as 500 with
   an id whose details are in the log (never in the answer).
"""
from __future__ import annotations

import functools
import logging
import uuid
from typing import Any, Awaitable, Callable

from aiohttp import web

from broker_core.errors import PulsarLikeError
from broker_core.frontends.http.admin.answers import Refused, failure, status_of
from broker_core.net.peers import ClientIdentity, peer_name
from broker_core.net.relay_tls import common_name
from broker_core.security import SUPER, Security
from broker_core.types import TopicName

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Resource = Callable[[web.Request], str]

ANYONE = "authenticated"
"""Any authenticated client (Pulsar: cluster names and the broker's version are not secret)."""
PUBLIC = "public"
"""Anyone, without credentials (see :func:`public`)."""
SECURITY = web.AppKey("security", Security)
MAX_BODY = web.AppKey("max_body_bytes", int)


# ------------------------------------------------------------------ resources named by the path
def topic_of(request: web.Request) -> TopicName:
    """``{domain}://{tenant}/{namespace}/{topic}`` of the path (``InvalidTopicName`` when it does not parse)."""
    m = request.match_info
    return TopicName.parse(f"{m['domain']}://{m['tenant']}/{m['namespace']}/{m['topic']}")


def namespace_of(request: web.Request) -> str:
    return f"{request.match_info['tenant']}/{request.match_info['namespace']}"


def tenant_of(request: web.Request) -> str:
    return request.match_info["tenant"]


def broker_of(request: web.Request) -> str:
    return ""


def subscription_of(request: web.Request) -> str:
    """The subscription of a topic a route names (``""``: none), which a ``consume`` is checked against too."""
    m = request.match_info
    return (m.get("subName") or m.get("subscriptionName") or "") if "topic" in m else ""


TOPIC: Resource = lambda request: str(topic_of(request))  # noqa: E731
NAMESPACE: Resource = namespace_of
TENANT: Resource = tenant_of
BROKER: Resource = broker_of


def needs(action: str, resource: Resource) -> Callable[[Handler], Handler]:
    """Declare the action a handler performs and on what (read by :func:`guard`); decorates a handler
    function, method or bound method alike (a bound method takes no attributes, so it is wrapped)."""
    def mark(handler: Callable[..., Awaitable[web.StreamResponse]]) -> Handler:
        @functools.wraps(handler)
        async def declared(*args: Any) -> web.StreamResponse:
            return await handler(*args)
        declared.access = (action, resource)  # type: ignore[attr-defined]
        return declared
    return mark


def public(handler: Handler) -> Handler:
    """Mark a route served to anyone, credentials or not -- for what the web service port serves beside the
    admin API on the same app (``/metrics``, ``/status.html``, as Pulsar serves them without
    authentication by default)."""
    return needs(PUBLIC, BROKER)(handler)


def _rule(request: web.Request) -> tuple[str, Resource] | None:
    """The matched handler's declared need; None for aiohttp's own answers (no route, wrong method) and
    public routes."""
    if request.match_info.http_exception is not None:
        return None
    rule = getattr(request.match_info.handler, "access", (SUPER, BROKER))
    return None if rule[0] == PUBLIC else rule


def _peer(request: web.Request) -> str:
    found = request.transport.get_extra_info("peername") if request.transport is not None else None
    return peer_name(str(found[0]), int(found[1])) if found else "unknown"


def _identity(request: web.Request) -> ClientIdentity:
    """The client as the web service port saw it: its address and, on HTTPS, the CN of the client certificate
    the TLS handshake verified (``peercert`` is empty when the client sent none or it was not verified)."""
    transport = request.transport
    subject = common_name(transport.get_extra_info("peercert")) if transport is not None else None
    return ClientIdentity(_peer(request), subject)


async def _check(security: Security, request: web.Request) -> None:
    rule = _rule(request)
    if rule is None:
        return
    identity = _identity(request)
    peer = identity.address
    principal = await security.authenticate_call_async(request.headers.get("Authorization"), identity)
    action, resource = rule
    if action != ANYONE and security.authorization_enabled:
        security.authorize(principal, action, resource(request), peer, subscription_of(request))


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """See the module docstring."""
    try:
        await _check(request.app[SECURITY], request)
        return await handler(request)
    except PulsarLikeError as exc:
        return failure(status_of(exc), exc.message)
    except Refused as exc:
        return failure(exc.status, exc.reason)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return failure(exc.status, _reason(request, exc))
    except Exception:
        error_id = uuid.uuid4().hex[:12]
        log.exception("event=admin_request_failed method=%s path=%s error_id=%s", request.method,
                      request.path[:200], error_id)
        return failure(500, f"internal error (id {error_id}); the broker's log has the details")


def _reason(request: web.Request, exc: web.HTTPException) -> str:
    if exc.status == 404:
        return f"{request.path[:200]} is not served here (see docs/admin-rest.md for the endpoints served)"
    if exc.status == 405:
        allowed: Any = getattr(exc, "allowed_methods", ())
        return f"method {request.method} is not allowed on {request.path[:200]}; allowed: {', '.join(sorted(allowed))}"
    if exc.status == 413:
        return f"request body too large: the limit is {request.app[MAX_BODY]} bytes"
    return exc.reason
