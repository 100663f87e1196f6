"""Topic-name patterns the broker evaluates for a client (GET_TOPICS_OF_NAMESPACE's ``topics_pattern``):
Java regular expressions, matched with RE2, whose time is linear in the name whatever the pattern.

Python's ``re`` backtracks: ``(.|.)*Z`` against a 48-character name never ends, and the event loop with
it. Pulsar's broker matches these patterns with RE2/J for the same reason. A pattern is not applied at all
(:func:`safe_pattern` returns None: the broker answers ``filtered=false`` and the client filters with its
own engine) when it is longer than :data:`MAX_PATTERN`, or when RE2 could not match it exactly as Java
would:

- RE2 refuses it: backreferences (``(a)\\1``), lookaround (``(?=a)``), possessive (``a*+``) and atomic
  (``(?>a)``) groups, ``\\Z``, ``\\h``, Java's POSIX classes (``\\p{Lower}``), ...
- both read it, differently: a ``[`` or ``&&`` inside a character class (Java's union and intersection
  of classes, literal characters to RE2), or a class opening with ``]``.

Example: ``safe_pattern("persistent://public/default/orders-.*")`` matches ``public/default/orders-eu``
(the scheme is dropped, the match is whole, as Pulsar's ``TopicList.filterTopics``);
``safe_pattern("persistent://public/default/(a)\\1")`` is None.
"""
from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import re2

MAX_PATTERN = 1024
"""Longest pattern (without its scheme) the broker applies; a longer one is left to the client."""
_SCHEME = re.compile(r"^(persistent|non-persistent)://")


@functools.cache
def _options() -> re2.Options:
    """RE2 and its options, by the first pattern (most brokers never see one: not at every start, nor at
    every client's first connection, which imports this module)."""
    import re2

    options = re2.Options()
    options.log_errors = False  # a refused pattern is an answer (filtered=false), not a line on stderr per request
    options.never_capture = True
    options.max_mem = 1 << 20  # the compiled program and its DFA cache; past it RE2 matches with its NFA (linear)
    return options


class TopicsPattern(Protocol):
    def fullmatch(self, text: str) -> object | None: ...


def safe_pattern(pattern: str) -> TopicsPattern | None:
    """``pattern`` without its scheme, compiled with RE2 (a match of the whole name: :meth:`fullmatch`);
    None when it is too long, does not compile, or RE2 would not read it as Java does."""
    shortened = _SCHEME.sub("", pattern, count=1)
    if len(shortened) > MAX_PATTERN or _java_reads_differently(shortened):
        return None
    options = _options()
    import re2

    try:
        return re2.compile(shortened, options)
    except re2.error:
        return None


def _java_reads_differently(pattern: str) -> bool:
    """Whether ``pattern`` has a character class Java reads otherwise than RE2 (one pass, no backtracking):
    a nested ``[``, an ``&&``, or a ``]`` right after the opening ``[`` or ``[^``."""
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            if pattern.startswith("Q", i + 1):  # \Q...\E: quoted, every character literal
                end = pattern.find("\\E", i + 2)
                i = n if end < 0 else end + 2
            else:
                i += 2
            continue
        if in_class:
            if c == "[" or pattern.startswith("&&", i):
                return True
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            i += 2 if pattern.startswith("^", i + 1) else 1
            if pattern.startswith("]", i):
                return True
            continue
        i += 1
    return False
