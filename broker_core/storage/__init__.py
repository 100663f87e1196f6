"""Storage: the segmented managed log of a topic partition and its subscription cursors."""
from __future__ import annotations

import importlib

__all__ = ["CursorStore", "ManagedCursor", "ManagedLog", "StoredEntry"]

_WHERE = {"ManagedCursor": "cursor", "CursorStore": "cursor_store", "ManagedLog": "log", "StoredEntry": "log"}
"""Where each name lives: imported at its first use (PEP 562), so that importing any module of this package
(``storage.atomic`` for the broker's metadata at start) does not import the log and cursor code with it."""


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
