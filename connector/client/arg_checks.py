"""pulsar-client's argument checks: an argument of the wrong type is a ``ValueError`` with pulsar-client 3.13's
words (its ``_check_type`` / ``_check_type_or_none``), raised before anything is sent.

Where pulsarlike takes more than pulsar-client (a float timeout, a ``bytes`` ordering key), :func:`check_number`
and the callers' own checks keep taking it; what neither takes (a str where a number goes, a str where a bool
goes, a non-str name) fails the same way in both::

    check_type(bool, "yes", "use_tls")
    # ValueError: Argument use_tls is expected to be of type 'bool' and not 'str'
"""
from __future__ import annotations

from typing import Any


def check_type(expected: type | tuple[type, ...], value: Any, name: str) -> None:
    if not isinstance(value, expected):
        raise ValueError(f"Argument {name} is expected to be of type '{_name(expected)}' and not "
                         f"'{type(value).__name__}'")


def check_type_or_none(expected: type | tuple[type, ...], value: Any, name: str) -> None:
    if value is not None and not isinstance(value, expected):
        raise ValueError(f"Argument {name} is expected to be either None or of type '{_name(expected)}'")


def check_number(value: Any, name: str) -> None:
    """An int as pulsar-client wants it, or a float (pulsarlike also takes fractions of a second or ms)."""
    check_type((int, float), value, name)


def check_number_or_none(value: Any, name: str) -> None:
    check_type_or_none((int, float), value, name)


def _name(expected: type | tuple[type, ...]) -> str:
    return expected[0].__name__ if isinstance(expected, tuple) else expected.__name__
