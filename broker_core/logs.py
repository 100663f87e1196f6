"""The broker's log format: one line per event, ``key=value`` pairs (logfmt).

    ts=2026-01-01T12:00:00.123Z level=INFO logger=broker_core.server event=broker_started port=6650

Broker code logs ``"event=NAME key=%s ..."`` with %-style arguments. Records that do not start with
``event=`` (other libraries, asyncio, gRPC) become ``event=log msg="..."``; a traceback becomes one quoted
``exc="..."`` value, so a record never spans lines.
"""
from __future__ import annotations

import logging
import time

FORMAT_HINT = "ts=... level=... logger=... event=... key=value ..."
MAX_MESSAGE = 4096
"""Characters of a record's message kept (its traceback aside): a client's 4 MB producer name must not
become a 4 MB line."""


def quote(text: str) -> str:
    """A logfmt value: bare when it has no space, quote or '=' in it; else double-quoted with escapes."""
    if text and not any(c in text for c in ' "=\n\r\t\\'):
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return '"' + escaped.replace("\t", "\\t") + '"'


class KeyValueFormatter(logging.Formatter):
    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        seconds = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        return f"{seconds}.{int(record.msecs):03d}Z"

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if len(message) > MAX_MESSAGE:
            message = f"{message[:MAX_MESSAGE]}... cut={len(message) - MAX_MESSAGE}"
        if not message.startswith("event="):
            message = f"event=log msg={quote(message)}"
        line = f"ts={self.formatTime(record)} level={record.levelname} logger={record.name} {message}"
        if record.exc_info:
            line += f" exc={quote(self.formatException(record.exc_info))}"
        if record.stack_info:
            line += f" stack={quote(self.formatStack(record.stack_info))}"
        return line.replace("\r", "\\r").replace("\n", "\\n")


def configure(level: str = "INFO") -> None:
    """Send every log record to stderr in this format (the ``pulsarlike broker`` process)."""
    handler = logging.StreamHandler()
    handler.setFormatter(KeyValueFormatter())
    logging.basicConfig(level=level, handlers=[handler], force=True)
