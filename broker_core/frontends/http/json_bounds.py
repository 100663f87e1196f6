"""A JSON request body measured before it is parsed, so that parsing it costs the event loop a bounded time.

Why not parse it on a worker thread: Python's JSON decoder is C that never releases the interpreter's lock, so
the event loop waits for it wherever it runs -- 1 MiB of ``[[],[],...]`` is 80-130 ms of a stalled broker on a
thread as on the loop. What it costs grows with the values it builds (0.1-0.4 us each) and the bytes it reads
(a few ns each). The bytes are bounded by ``httpMaxRequestSize``; the values are counted first, by
:func:`measure`, in turns of at most :data:`TURN_S`, the event loop serving others in between:

1. Outside strings, one regular expression finds the next ``"``, ``[``, ``{``, ``,``, ``]`` or ``}`` within
   the next :data:`WINDOW` bytes (numbers, ``true``, ``false``, ``null``, colons and spaces are skipped in C,
   never more than a window per step).
2. Inside a string, the next quote within the window ends it when no backslash comes before it (two
   ``bytes.find``, at memory speed); else another expression takes its characters and whole escapes
   (``\\"`` is not its end) up to the window's end.
3. ``values`` counts the arrays, objects, strings and commas, plus one: every value the decoder builds is one
   of those, a key's value or an array's first element, so it builds at most about twice ``values``.
   ``depth`` follows the brackets.
4. The count stops at the first bound passed (:class:`JsonTooLarge`), or where the body cannot be JSON (a
   closing bracket without an opening one, a backslash escaping nothing): the decoder then says what is
   wrong, having built at most what was counted before.

No step holds the interpreter for more than a window's worth of C (about a millisecond at worst, a window of
escapes); a body costs at most about twice the bound's values plus one step per window.

Worked example: ``{"a": [1, 2, "x,]"]}`` has the tokens ``{`` ``"a"`` ``[`` ``,`` ``,`` ``"x,]"`` ``]`` ``}``:
values 1 + 1 + 1 + 2 + 1, plus one = 7 (the decoder builds 6: the object, "a", the array, 1, 2, "x,]"), depth 2.
"""
from __future__ import annotations

import asyncio
import re
from typing import NamedTuple

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects taken: the admin API's documents nest four deep."""
WINDOW = 4096
"""Most bytes one step reads."""
TURN_S = 0.001
"""Longest the count holds the event loop before giving it back (a step may overrun it by a step)."""

_STRUCTURE = re.compile(rb'["\[\]{},]')
_STRING_PART = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*')
"""A string's characters and whole escapes, as far as they go (up to its end, or a backslash whose escaped
character lies past the window)."""
_QUOTE, _COMMA = ord('"'), ord(",")
_OPENS = frozenset(b"[{")


class JsonTooLarge(ValueError):
    """A body with more values than allowed (``key``: the setting that allows them), or nested deeper than
    :data:`MAX_DEPTH` (``key`` empty)."""

    def __init__(self, what: str, key: str = "") -> None:
        super().__init__(what)
        self.what = what
        self.key = key


class Shape(NamedTuple):
    """What :func:`measure` counted."""

    values: int
    """Arrays, objects, strings and commas, plus one: at least half the values the decoder builds."""
    depth: int
    """Deepest nesting of arrays and objects."""


async def measure(raw: bytes, max_values: int, max_depth: int = MAX_DEPTH) -> Shape:
    """Count ``raw``'s values and depth (see the module docstring), giving the event loop back after each
    :data:`TURN_S`; :class:`JsonTooLarge` as soon as a bound is passed."""
    loop = asyncio.get_running_loop()
    values, depth, deepest = 1, 0, 0
    pos, size = 0, len(raw)
    in_string = False
    turn_ends = loop.time() + TURN_S
    while pos < size:
        if loop.time() > turn_ends:
            await asyncio.sleep(0)
            turn_ends = loop.time() + TURN_S
        end = min(pos + WINDOW, size)
        if in_string:
            quote = raw.find(b'"', pos, end)
            if raw.find(b"\\", pos, end if quote < 0 else quote) < 0:  # no escape on the way (memchr, fast)
                in_string, pos = (True, end) if quote < 0 else (False, quote + 1)
                continue
            stop = _STRING_PART.match(raw, pos, end).end()
            if stop < end and raw[stop] == _QUOTE:
                in_string, pos = False, stop + 1
            elif stop == pos:  # a backslash ending the body or escaping a line break: not JSON
                break
            else:  # the window's end, or an escape it cuts: the next step starts there
                pos = stop
            continue
        found = _STRUCTURE.search(raw, pos, end)
        if found is None:
            pos = end
            continue
        pos = found.end()
        token = raw[pos - 1]
        if token in _OPENS:
            depth += 1
            if depth > max_depth:
                raise JsonTooLarge(f"arrays and objects nested deeper than {max_depth} levels")
            deepest = max(deepest, depth)
        elif token == _QUOTE:
            in_string = True
        elif token != _COMMA:  # ] or }
            depth -= 1
            if depth < 0:  # not JSON: the decoder reports it
                break
            continue
        values += 1
        if values > max_values:
            raise JsonTooLarge(f"more than {max_values} values", "httpMaxRequestJsonValues")
    return Shape(values, deepest)
