"""What the gRPC front end's two streams (Produce, Consume) share: running a session beside the stream,
reading requests only while replies have room, and turning errors into replies.

A session reads its requests and puts responses on a bounded
:class:`~broker_core.core.backpressure.Outbox`; the handler yields from it. A full outbox stops its stream: it
reads no more requests, and a consumer's permits are withheld. A stream ended by a malformed request logs one
WARNING line.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any, AsyncIterator, Coroutine

from broker_core.errors import InvalidMessage, PulsarLikeError, UnknownError
from broker_core.core.backpressure import END, Outbox

log = logging.getLogger("broker_core.frontends.grpc.servicer")


def unexpected(exc: BaseException) -> PulsarLikeError:
    # the exception's text may hold server paths (an OSError's file name): it goes to the log, never the client
    error_id = uuid.uuid4().hex[:12]
    log.error("event=unexpected_error error_id=%s error_type=%s error=%s", error_id, type(exc).__name__, exc,
              exc_info=exc)
    return UnknownError(f"internal broker error (error id {error_id}); the broker's log has the details",
                        error_id=error_id)



async def serve(session: Coroutine[Any, Any, None], out: Outbox) -> AsyncIterator:
    """Run ``session`` (which reads its requests and puts responses on ``out``, then ends it) and yield
    its responses; the session is cancelled when the client goes away."""
    task = asyncio.get_running_loop().create_task(session)
    try:
        while (item := await out.get()) is not END:
            yield item
    finally:
        task.cancel()
        out.close()


async def while_read(requests, out: Outbox) -> AsyncIterator:
    """``requests``, each taken only while ``out`` has room: replies the client leaves unread stop its
    requests (and whatever replies they would add) until it reads them."""
    while True:
        await out.wait_room()
        request = await anext(requests, None)
        if request is None:
            return
        yield request


def bad_request(exc: PulsarLikeError, stream: str, peer: str) -> None:
    """A stream ended by a request that makes no sense (garbage, a wrong first request): one line, no
    traceback -- a client bug or an attack, not a broker bug."""
    if isinstance(exc, InvalidMessage):
        log.warning("event=bad_request stream=%s peer=%s error=%s", stream, peer, exc.message)


async def first_request(requests, kind: str, stream: str):
    """The stream's opening request, which must be ``kind``; None when the client sent nothing."""
    try:
        first = await requests.__anext__()
    except StopAsyncIteration:
        return None
    if first.WhichOneof("request") != kind:
        raise InvalidMessage(f"the first request on a {stream} stream must be {kind!r}")
    return first
