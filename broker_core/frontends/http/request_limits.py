"""What one request may cost the web service port, whoever sends it: :func:`request_limits` is the
application's first middleware, so these bounds hold before authentication, for the admin API, ``/metrics``
and ``/status.html`` alike (a request with no body passes straight through).

- **Compression**: a body with a ``Content-Encoding`` other than ``identity`` is refused with 415 naming the
  header. The application runs with aiohttp's automatic decompression off
  (:func:`~broker_core.frontends.http.web.start_app`), so no request body is ever inflated, whoever sent it.
- **Size** (``httpMaxRequestSize``): a ``Content-Length`` over it is refused with 413 before a byte of the
  body is read; :func:`read_body` refuses a chunked body (413) as soon as it has read more.
- **Time** (``httpRequestBodyTimeoutMs``): the whole body must have come that long after the end of its
  headers, however it trickles; :func:`read_body` answers 408 past it.
- **What is left**: when the answer is ready and the body has not all come (refused before it was read, or
  past a bound), the answer says ``Connection: close`` and is sent, and what is left of the body is read and
  thrown away -- never inflated, never kept -- for at most another ``httpMaxRequestSize`` bytes and until
  its deadline, so that the client reads the answer rather than a reset; past either, the connection is
  closed at once.

The headers before all this are aiohttp's to bound (8190 bytes a line, 128 fields) and the port's idle
deadline (:data:`~broker_core.frontends.http.web.IDLE_TIMEOUT_S` from the accept or the previous answer).
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_DEADLINE = web.RequestKey("body_deadline", float)
"""The request's body's deadline (the event loop's time)."""


@dataclass(frozen=True)
class RequestLimits:
    """The bounds of one request (see the module docstring for their keys)."""

    max_body_bytes: int = 1 << 20
    body_timeout_s: float = 30.0
    max_json_values: int = 10_000

    @classmethod
    def from_config(cls, config: Any, max_body_bytes: int | None = None) -> "RequestLimits":
        return cls(max_body_bytes or config.httpMaxRequestSize, config.httpRequestBodyTimeoutMs / 1000.0,
                   config.httpMaxRequestJsonValues)


LIMITS = web.AppKey("request_limits", RequestLimits)
JSON_TURNS = web.AppKey("json_turns", asyncio.Lock)
"""Held while a JSON body is measured and parsed (``answers.body``): one at a time, so that the event loop
runs one body's turn between two looks at its sockets, not one turn of every body that came at once."""


def _refusal(request: web.Request, limits: RequestLimits) -> web.Response | None:
    """Pulsar's error body (``{"reason": ...}``, as the admin API's) for a request refused on its headers."""
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("identity", ""):
        return web.json_response({"reason": f"Content-Encoding: {encoding[:64]}: the broker takes request bodies "
                                            "uncompressed only; send it again without Content-Encoding"}, status=415)
    length = request.content_length
    if length is not None and length > limits.max_body_bytes:
        return web.json_response({"reason": f"request body too large: the limit is {limits.max_body_bytes} bytes "
                                            "(httpMaxRequestSize)"}, status=413)
    return None


@web.middleware
async def request_limits(request: web.Request, handler: Handler) -> web.StreamResponse:
    """See the module docstring."""
    if not request.body_exists:
        return await handler(request)
    limits = request.app[LIMITS]
    loop = asyncio.get_running_loop()
    deadline = request[_DEADLINE] = loop.time() + limits.body_timeout_s
    response = _refusal(request, limits) or await handler(request)
    if not request.content.is_eof():
        await _answer_then_close(request, response, deadline, limits.max_body_bytes)
    return response


async def _answer_then_close(request: web.Request, response: web.StreamResponse, deadline: float,
                             allowance: int) -> None:
    """Send ``response`` (the connection to close after it), then throw away at most ``allowance`` more
    bytes of the body until ``deadline``; the connection is closed at once when it goes on past them (or
    says it will: a ``Content-Length`` with more than that left)."""
    response.force_close()
    try:
        await response.prepare(request)
        await response.write_eof()
    except ConnectionError:  # the client is gone
        request.protocol.force_close()
        return
    content = request.content
    declared = request.content_length
    if declared is None or declared - content.total_bytes <= allowance:
        try:
            async with asyncio.timeout_at(deadline):
                while allowance > 0:
                    chunk = await content.readany()
                    if not chunk:
                        return
                    allowance -= len(chunk)
        except (TimeoutError, web.RequestPayloadError, ConnectionError):
            pass
    request.protocol.force_close()


async def read_body(request: web.Request) -> bytes:
    """The request's whole body, within its bounds: 413 past ``httpMaxRequestSize``, 408 past its deadline,
    400 when the client ended it early (aiohttp's exceptions, which the admin API's guard answers with their
    status)."""
    limits = request.app[LIMITS]
    loop = asyncio.get_running_loop()
    deadline = request.get(_DEADLINE) or loop.time() + limits.body_timeout_s
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout_at(deadline):
            while chunk := await request.content.readany():
                size += len(chunk)
                if size > limits.max_body_bytes:
                    raise web.HTTPRequestEntityTooLarge(limits.max_body_bytes, size)
                chunks.append(chunk)
    except TimeoutError:
        raise web.HTTPRequestTimeout(reason=f"the request body did not come whole within {limits.body_timeout_s:g}s"
                                            " of its headers (httpRequestBodyTimeoutMs)") from None
    except web.RequestPayloadError as exc:
        raise web.HTTPBadRequest(reason=f"the request body is not well formed or ended early ({exc})") from None
    return b"".join(chunks)
