"""The broker's event loop, as ``eventLoop`` says: the standard library's ``asyncio`` loop or ``uvloop``'s.

uvloop (libuv under asyncio's API, an optional dependency: ``pip install 'pulsarlike[uvloop]'``) runs the same
broker code with less CPU per command: the readiness loop, the transports' reads and writes and the
thread-safe wake-ups of the fsync threads are C. Asked for but not installed, the start is refused with
``InvalidConfiguration`` saying how to install it.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable, Coroutine

from broker_core.config import BrokerConfig
from broker_core.errors import InvalidConfiguration


def loop_factory(config: BrokerConfig) -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes a new event loop of the configured kind."""
    if config.eventLoop == "asyncio":
        return asyncio.new_event_loop
    try:
        import uvloop
    except ImportError:
        raise InvalidConfiguration("eventLoop=uvloop needs the uvloop package: pip install 'pulsarlike[uvloop]' "
                                   "(or uvloop), or set eventLoop=asyncio", key="eventLoop") from None
    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, None], config: BrokerConfig) -> None:
    """``asyncio.run(main)`` on a loop of the configured kind (``uvloop.run`` does what ``asyncio.run`` does)."""
    factory = loop_factory(config)
    if factory is asyncio.new_event_loop:
        asyncio.run(main)
    else:
        import uvloop

        uvloop.run(main)
