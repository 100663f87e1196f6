"""What the admin REST API answers and what it reads: broker errors as Pulsar's HTTP statuses with a
``{"reason": "..."}`` body, replies as JSON, and request bodies and query parameters checked for their type.

Statuses follow Pulsar's REST API: 404 for a missing tenant, namespace, topic, subscription or message; 409
for something that already exists, a tenant/namespace that is not empty, a compaction already running or an
incompatible schema; 406 for a partition count out of range; 412 for a name or a policy value the broker
refuses and for an operation its state refuses (a topic with connected clients deleted without ``force``);
422 for a schema definition that does not parse; 401/403 for authentication/authorization. Malformed bodies
and parameters of the wrong type are 400 naming the field: :class:`BadRequest` for what HTTP carries (a body
that is not JSON, a path segment, a query parameter), the admin core's ``InvalidMessage`` for a JSON value of
the wrong type (:mod:`broker_core.core.admin.values`' checks, re-exported here: ``integer``, ``boolean``,
``obj``, ``strings``, ``preview``).

The mapping walks the error's classes from the most specific, as :mod:`broker_core.protocol.status` does
for gRPC, so ``NamespaceNotEmpty`` (a ``NotAllowedError``) is 409 while ``NotAllowedError`` is 412.
"""
from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from broker_core import errors
from broker_core.core.admin.values import boolean, integer, obj, preview, strings  # noqa: F401 (re-exported)
from broker_core.frontends.http.json_bounds import JsonTooLarge, measure
from broker_core.frontends.http.request_limits import JSON_TURNS, LIMITS, read_body
from broker_core.types import ACKNOWLEDGED_HEADER

_STATUS: dict[type[errors.PulsarLikeError], int] = {
    errors.AuthenticationError: 401,
    errors.AuthorizationError: 403,
    errors.TopicNotFound: 404,  # NamespaceNotFound, TenantNotFound and ClusterNotFound are TopicNotFounds
    errors.SubscriptionNotFound: 404,
    errors.MessageNotFound: 404,
    errors.TopicAlreadyExists: 409,
    errors.TenantAlreadyExists: 409,
    errors.NamespaceAlreadyExists: 409,
    errors.SubscriptionAlreadyExists: 409,
    errors.NamespaceNotEmpty: 409,
    errors.TenantNotEmpty: 409,
    errors.ResourceGroupInUse: 409,
    errors.CompactionAlreadyRunning: 409,
    errors.IncompatibleSchema: 409,
    errors.InvalidSchema: 422,  # a definition Pulsar cannot parse
    errors.InvalidPartitionCount: 406,
    errors.InvalidTopicName: 412,
    errors.InvalidConfiguration: 412,  # bad tenant/namespace names and policy values, as Pulsar's 412
    errors.NotAllowedError: 412,
    errors.TopicTerminated: 412,
    errors.InvalidMessage: 400,
    errors.TooManyRequests: 429,
    errors.ServiceNotReady: 503,
    errors.PersistenceError: 503,
    errors.Timeout: 504,
}

MAX_REASON = 1024
"""Longest reason sent: a refusal may quote what the client sent."""


class Refused(Exception):
    """An answer other than a broker error: a bad body (400), a conflict the core reports as a generic
    refusal (409), an endpoint that is not served."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class BadRequest(Refused):
    """400: a body or parameter that does not parse or has the wrong type; ``reason`` names the field."""

    def __init__(self, reason: str) -> None:
        super().__init__(400, reason)


def status_of(exc: errors.PulsarLikeError) -> int:
    for cls in type(exc).__mro__:
        if cls in _STATUS:
            return _STATUS[cls]
    return 500


def failure(status: int, reason: str) -> web.Response:
    """Pulsar's error body: ``{"reason": "..."}``."""
    if len(reason) > MAX_REASON:
        reason = f"{reason[:MAX_REASON]}... ({len(reason)} characters)"
    return web.json_response({"reason": reason}, status=status)


def ok(value: Any = None, status: int = 200) -> web.Response:
    """``value`` as JSON; ``None`` is 204 No Content (what Pulsar's JAX-RS answers for void and unset)."""
    if value is None:
        return web.Response(status=204)
    return web.json_response(value, status=status)


def acknowledged(count: int) -> web.Response:
    """204, as Pulsar answers a skip, clear-backlog or expire, with the count of messages it acknowledged in
    :data:`~broker_core.types.ACKNOWLEDGED_HEADER`."""
    return web.Response(status=204, headers={ACKNOWLEDGED_HEADER: str(count)})


def text(value: str) -> web.Response:
    return web.Response(text=value, content_type="text/plain")


# ------------------------------------------------------------------ request bodies
_MISSING = object()
SMALL_JSON_BYTES = 4096
"""A JSON body this small is parsed without waiting its turn: it holds at most ~2,000 values (0.5 ms)."""


async def body(request: web.Request, field: str, default: Any = _MISSING) -> Any:
    """The request's JSON body (``field`` names it in errors); ``default`` when empty (else 400). Read within
    the web port's bounds (:func:`~broker_core.frontends.http.request_limits.read_body`), measured before it is
    parsed (:mod:`~broker_core.frontends.http.json_bounds`: 400 past ``httpMaxRequestJsonValues`` values),
    then parsed on the event loop, which that bound keeps to a few milliseconds; bodies over
    :data:`SMALL_JSON_BYTES` one at a time (``JSON_TURNS``)."""
    raw = await read_body(request)
    if not raw.strip():
        if default is _MISSING:
            raise BadRequest(f"{field}: the request needs a JSON body")
        return default
    try:
        if len(raw) <= SMALL_JSON_BYTES:
            await measure(raw, request.app[LIMITS].max_json_values)
            return json.loads(raw)
        async with request.app[JSON_TURNS]:
            await asyncio.sleep(0)  # a turn of the loop of its own, not one shared with the bodies that came with it
            await measure(raw, request.app[LIMITS].max_json_values)
            await asyncio.sleep(0)  # the parse too (up to a few ms)
            return json.loads(raw)
    except JsonTooLarge as exc:
        if not exc.key:  # "[[[[...": deeper than MAX_DEPTH
            raise BadRequest(f"{field}: the body's JSON is nested too deeply") from None
        raise BadRequest(f"{field}: the body's JSON holds {exc.what} ({exc.key})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"{field}: the body is not valid JSON ({exc})") from None
    except RecursionError:  # not after measure(); kept should the decoder ever recurse deeper than it counts
        raise BadRequest(f"{field}: the body's JSON is nested too deeply") from None


def path_int(request: web.Request, name: str) -> int:
    """An integer path segment (``skip/{numMessages}``)."""
    raw = request.match_info[name]
    try:
        return int(raw)
    except ValueError:
        raise BadRequest(f"{name}: expected an integer, got {raw[:64]!r}") from None


def flag(request: web.Request, name: str) -> bool:
    """A boolean query parameter (``?force=true``); absent is false."""
    raw = request.query.get(name, "false").lower()
    if raw not in ("true", "false"):
        raise BadRequest(f"{name}: expected true or false, got {raw[:64]!r}")
    return raw == "true"
