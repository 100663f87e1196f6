"""``eventLoop``: which event loop the broker runs on (broker_core.event_loops)."""
from __future__ import annotations

import asyncio
import sys

import pytest

from broker_core.config import BrokerConfig
from broker_core.errors import InvalidConfiguration
from broker_core.event_loops import loop_factory, run


def test_the_default_event_loop_is_asyncios():
    assert BrokerConfig.__dataclass_fields__["eventLoop"].default == "asyncio"
    assert loop_factory(BrokerConfig.from_mapping({"eventLoop": "asyncio"})) is asyncio.new_event_loop


def test_an_unknown_event_loop_is_refused_naming_the_key_and_the_choices():
    with pytest.raises(InvalidConfiguration, match="eventLoop.*asyncio, uvloop"):
        BrokerConfig.from_mapping({"eventLoop": "tokio"})


def test_uvloop_makes_uvloop_loops_and_runs_a_coroutine_on_one():
    uvloop = pytest.importorskip("uvloop")
    config = BrokerConfig.from_mapping({"eventLoop": "uvloop"})
    loop = loop_factory(config)()
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()
    seen = []

    async def main() -> None:
        seen.append(type(asyncio.get_running_loop()))
    run(main(), config)
    assert seen == [uvloop.Loop]


def test_uvloop_asked_for_but_not_installed_is_refused_saying_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "uvloop", None)  # what `import uvloop` finds missing
    with pytest.raises(InvalidConfiguration, match=r"pip install 'pulsarlike\[uvloop\]'"):
        loop_factory(BrokerConfig.from_mapping({"eventLoop": "uvloop"}))
