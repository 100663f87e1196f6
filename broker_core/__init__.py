"""pulsarlike's broker. ``from broker_core import Broker`` starts one in-process."""
from __future__ import annotations

import importlib.util
import sys
from typing import Any

__all__ = ["Broker"]


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


if not _installed("google.protobuf"):  # the checkout imported by a Python without its packages
    raise ModuleNotFoundError(
        f"pulsarlike's dependencies (protobuf, grpcio, ...) are not installed for this Python ({sys.executable}): "
        "run it with the venv's Python (.venv/bin/python, or `. .venv/bin/activate` first) or install pulsarlike "
        "into it (pip install '.[spark]' in the checkout); see README.md, Quickstart", name="google.protobuf")


def __getattr__(name: str) -> Any:
    # Lazy, so that importing broker_core.types (as the client does) does not load the server.
    if name == "Broker":
        from broker_core.broker import Broker

        return Broker
    raise AttributeError(name)
