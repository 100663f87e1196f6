"""Argument parsing shared by the command-line tools: a mistyped flag, argument or choice names the
closest known one, then the usage is printed and the tool exits 2 (argparse's convention)."""
from __future__ import annotations

import argparse
import difflib
from typing import Any, Iterable, Sequence


def closest(word: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the known word closest to ``word``, or ``""``."""
    match = difflib.get_close_matches(word, list(known), n=1, cutoff=0.5)
    return f"; did you mean {match[0]!r}?" if match else ""


class SuggestingParser(argparse.ArgumentParser):
    """argparse whose unknown flags, unexpected arguments and bad choices name the closest match."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is not None and value not in action.choices:
            choices = [str(c) for c in action.choices]
            raise argparse.ArgumentError(
                action, f"unknown {str(action.metavar or 'choice').lower()} {value!r}{closest(str(value), choices)}"
                        f" (choose from {', '.join(choices)})")

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            leaf = self.leaf(parsed)
            unknown = extra[0].split("=", 1)[0]
            if unknown.startswith("-"):
                flags = [o for action in leaf._actions for o in action.option_strings]
                leaf.error(f"unknown option {unknown!r}{closest(unknown, flags)}")
            leaf.error(f"unexpected argument {unknown!r}")
        return parsed

    def leaf(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        """The (sub)parser whose flags an unknown one is compared with (subcommand tools override it)."""
        return self
