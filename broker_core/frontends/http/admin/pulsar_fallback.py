"""Pulsar's admin routes that pulsarlike does not serve answer as such: 501 with a reason naming the route,
instead of aiohttp's bare 404/405 or, worse, another route's answer.

The table is Pulsar's own (:mod:`~broker_core.frontends.http.admin.pulsar_routes`, generated from
``tests/data/pulsar_admin_v2_routes.json``). :func:`pulsar_fallback`, the admin app's innermost middleware,
looks at what aiohttp's router made of a request under ``/admin/v2``:

1. no route for the path (404), or the path served with other methods (405): when Pulsar has the request's
   method on a template matching the path, 501 ``PUT /admin/v2/namespaces/{tenant}/{namespace}/offloadThreshold
   (Pulsar's "Set maximum number of bytes ...") is not served by pulsarlike``, with why when it cannot apply to
   a one-process broker, and the methods pulsarlike serves the path with; when Pulsar has the path but not the
   method, 405 naming Pulsar's methods; anything else keeps aiohttp's answer;
2. a served route: when Pulsar routes the request to a more specific template than the one aiohttp matched
   (more literal segments, as JAX-RS picks), the request is not what the served route thinks it is --
   ``GET /admin/v2/brokers/configuration`` is Pulsar's dynamic-configuration list, not the active brokers of a
   cluster named "configuration" -- so it is answered as an unserved route (1); otherwise the route's handler
   answers. A served route is never shadowed by a template of equal or less specificity.

Example::

    routes = PulsarRoutes()
    routes.best("PUT", "/admin/v2/namespaces/acme/orders/offloadThreshold").template
    # '/admin/v2/namespaces/{tenant}/{namespace}/offloadThreshold'
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Awaitable, Callable, Iterable

from aiohttp import web

from broker_core.frontends.http.admin.answers import failure
from broker_core.frontends.http.admin.pulsar_routes import REASONS, ROUTES

PREFIX = "/admin/v2/"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class PulsarRoute:
    """One of Pulsar's resource methods."""

    method: str
    template: str
    """``/admin/v2/persistent/{tenant}/{namespace}/{topic}/stats``: a ``{name}`` matches one non-empty segment."""
    summary: str
    """Its ``@ApiOperation`` value."""
    not_applicable: str
    """A key of :data:`~broker_core.frontends.http.admin.pulsar_routes.REASONS`; empty when it applies."""
    segments: tuple[str, ...] = ()
    literals: int = 0
    """How many of its segments are literal: the more, the more specific (JAX-RS prefers it)."""

    @classmethod
    def of(cls, method: str, template: str, summary: str, not_applicable: str) -> PulsarRoute:
        return cls(method, template, summary, not_applicable, _segments(template), literal_count(template))

    def matches(self, segments: tuple[str, ...]) -> bool:
        return len(segments) == len(self.segments) and all(
            (mine.startswith("{") and theirs != "") or mine == theirs for mine, theirs in zip(self.segments, segments))

    def not_served(self, served_with: Iterable[str] = ()) -> str:
        """The reason a 501 gives."""
        reason = f'{self.method} {self.template} (Pulsar\'s "{self.summary.strip()}") is not served by pulsarlike'
        if self.not_applicable:
            reason += f": {REASONS[self.not_applicable]}"
        methods = sorted(set(served_with))
        if methods:
            reason += f"; pulsarlike serves this path with {', '.join(methods)}"
        return reason


def _segments(path: str) -> tuple[str, ...]:
    """The path's segments; a trailing slash leaves an empty last one, which no template has."""
    return tuple(path[1:].split("/")) if path.startswith("/") else tuple(path.split("/"))


def literal_count(template: str) -> int:
    """Literal segments of a Pulsar template."""
    return sum(1 for part in _segments(template) if not part.startswith("{"))


def route_literals(resource: web.AbstractResource) -> int:
    """Literal segments of an aiohttp route; a parameter with a pattern of its own
    (``{domain:persistent|non-persistent}``) counts as literal: it admits only Pulsar's literals."""
    info = resource.get_info()
    formatter = info.get("formatter") or info.get("path") or ""
    pattern = info["pattern"].pattern if "pattern" in info else ""
    return sum(1 for part in formatter.strip("/").split("/")
               if not part.startswith("{") or f"(?P<{part[1:-1]}>[^{{}}/]+)" not in pattern)


class PulsarRoutes:
    """Pulsar's routes indexed by segment count and resource (the segment after ``/admin/v2``)."""

    def __init__(self, rows: Iterable[tuple[str, str, str, str]] = ROUTES) -> None:
        self._index: dict[tuple[int, str], list[PulsarRoute]] = {}
        for row in rows:
            route = PulsarRoute.of(*row)
            self._index.setdefault(self._key(route.segments), []).append(route)

    @staticmethod
    def _key(segments: tuple[str, ...]) -> tuple[int, str]:
        return len(segments), segments[2] if len(segments) > 2 else ""

    def matching(self, path: str) -> list[PulsarRoute]:
        """Every route (any method) whose template matches ``path``, the most specific first."""
        segments = _segments(path)
        found = [route for route in self._index.get(self._key(segments), ()) if route.matches(segments)]
        return sorted(found, key=lambda route: -route.literals)

    def best(self, method: str, path: str) -> PulsarRoute | None:
        """The route Pulsar picks for ``method`` on ``path`` (the most literal template), or None."""
        return next((route for route in self.matching(path) if route.method == method), None)


ROUTE_TABLE = PulsarRoutes()


def misrouted(match_info: web.UrlMappingMatchInfo, method: str, path: str,
              routes: PulsarRoutes = ROUTE_TABLE) -> PulsarRoute | None:
    """The Pulsar route a request aiohttp matched to a served route really is, when that one is more specific
    than the served route's template (see the module docstring, 2); None when the served route is the one."""
    if match_info.http_exception is not None or match_info.route.resource is None:
        return None
    pulsar = routes.best(method, path)
    if pulsar is None or pulsar.literals <= route_literals(match_info.route.resource):
        return None
    return pulsar


def served(match_info: web.UrlMappingMatchInfo, method: str, path: str) -> bool:
    """Whether the admin app answers ``method`` on ``path`` with a handler of its own (docs and tests ask)."""
    return match_info.http_exception is None and misrouted(match_info, method, path) is None


def _method(request: web.Request) -> str:
    """The method Pulsar routes the request by: JAX-RS answers HEAD with the GET method."""
    return "GET" if request.method == "HEAD" else request.method


def _unserved(request: web.Request, served_with: Iterable[str]) -> web.Response | None:
    path = request.rel_url.raw_path
    candidates = ROUTE_TABLE.matching(path)
    same = [route for route in candidates if route.method == _method(request)]
    if same:
        return failure(501, same[0].not_served(served_with))
    if candidates:
        pulsar_methods = sorted({route.method for route in candidates})
        return failure(405, f"method {request.method} is not allowed on {candidates[0].template}: Pulsar serves it"
                            f" with {', '.join(pulsar_methods)}")
    return None


@web.middleware
async def pulsar_fallback(request: web.Request, handler: Handler) -> web.StreamResponse:
    """See the module docstring."""
    if not request.path.startswith(PREFIX):
        return await handler(request)
    match_info = request.match_info
    error = match_info.http_exception
    if error is None:
        pulsar = misrouted(match_info, _method(request), request.rel_url.raw_path)
        if pulsar is None:
            return await handler(request)
        taken = match_info.route.resource.canonical if match_info.route.resource is not None else "?"
        return failure(501, f"{pulsar.not_served()} (it is not {request.method} {taken}, which pulsarlike serves)")
    if error.status not in (404, 405):
        return await handler(request)
    answer = _unserved(request, getattr(error, "allowed_methods", ()))
    return answer if answer is not None else await handler(request)
