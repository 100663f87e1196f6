"""A package's names imported on first use (PEP 562): ``__getattr__ = lazy_exports(__name__, {name: submodule})``.

A package that re-exports its submodules' names this way costs nothing at import: the broker's start and a
topic's first SUBSCRIBE import only the submodules they use (issue 35)."""
from __future__ import annotations

import importlib
import sys
from typing import Any, Callable


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: ``name`` is imported from ``package.exports[name]`` on its
    first use and kept in the package (later uses find it there); any other name is an ``AttributeError``."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
