"""The web service port's accepting (frontends/http/server.py), with a stand-in application: built once, at the
first connection; each connection in the broker's connection budget until it is lost; the port closed on stop
whether or not a connection ever came; a taken port named by its key."""
from __future__ import annotations

import asyncio
import socket

import pytest

from broker_core.errors import InvalidConfiguration
from broker_core.frontends.http.server import WebServer
from broker_core.net.connection_budget import ConnectionBudget


class Echo(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.transport.write(data)


class Runner:
    """What ``aiohttp.web.AppRunner`` offers the port: a protocol factory and ``cleanup()``."""

    def __init__(self):
        self.server = Echo
        self.cleaned = False

    async def cleanup(self):
        self.cleaned = True


class Builds:
    def __init__(self):
        self.runners: list[Runner] = []

    async def __call__(self) -> Runner:
        await asyncio.sleep(0)  # as the real one does: concurrent first connections wait for one build
        self.runners.append(Runner())
        return self.runners[-1]


async def eventually(check, timeout_s: float = 10.0) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not check() and loop.time() < deadline:
        await asyncio.sleep(0.01)
    return bool(check())


async def echo(port: int, data: bytes = b"ping") -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        return await asyncio.wait_for(reader.read(100), 10)
    finally:
        writer.close()


def budget(**limits) -> ConnectionBudget:
    return ConnectionBudget(file_limit=0, **limits)


def test_the_application_is_built_once_by_the_first_connections_not_at_start():
    async def scenario():
        builds = Builds()
        web = WebServer(budget())
        port = web.bind("127.0.0.1", 0)
        web.start(builds)
        await asyncio.sleep(0)
        assert builds.runners == []
        assert await asyncio.gather(echo(port, b"a"), echo(port, b"b"), echo(port, b"c")) == [b"a", b"b", b"c"]
        assert len(builds.runners) == 1
        await web.stop()
        assert builds.runners[0].cleaned
    asyncio.run(scenario())


def test_a_connection_holds_its_place_in_the_budget_until_it_is_lost():
    async def scenario():
        limits = budget(max_connections_per_ip=1)
        web = WebServer(limits)
        port = web.bind("127.0.0.1", 0)
        web.start(Builds())
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"first")
        assert await reader.read(100) == b"first"
        assert limits.open == 1
        assert await echo(port, b"second") == b""  # over brokerMaxConnectionsPerIp: closed at once
        writer.close()
        assert await eventually(lambda: limits.open == 0)
        assert await echo(port, b"third") == b"third"
        assert await eventually(lambda: limits.open == 0)
        await web.stop()
    asyncio.run(scenario())


def test_a_port_stopped_before_any_connection_is_closed_and_never_built():
    async def scenario():
        builds = Builds()
        web = WebServer(budget())
        port = web.bind("127.0.0.1", 0)
        web.start(builds)
        await web.stop()
        return port, builds
    port, builds = asyncio.run(scenario())
    assert builds.runners == []
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_a_taken_port_fails_naming_its_key():
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        with pytest.raises(InvalidConfiguration, match="webServicePortTls"):
            WebServer(budget()).bind("127.0.0.1", taken.getsockname()[1], "webServicePortTls")
    finally:
        taken.close()
