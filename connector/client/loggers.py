"""``Client(logger=...)``: pulsar-client's logger objects, and the routing of the client's log records.

The client logs through the standard ``logging`` module, under the ``connector`` logger (every module's
``logging.getLogger(__name__)``). ``logger=`` takes what pulsar-client's ``Client`` takes: a
``logging.Logger``, a :class:`ConsoleLogger` (standard output) or a :class:`FileLogger` (a file), ours or
pulsar-client's own (recognised by their attributes, ``log_level`` and ``log_file``). While the client is open,
the ``connector`` logger's records go there instead of propagating to the root logger, so an application
that configured its own logger sees the client's lines once, in its format.
"""
from __future__ import annotations

import enum
import logging
import sys
import threading
from typing import Any

from broker_core import errors

CLIENT_LOGGER = "connector"
"""The logger every client module logs under."""


class LoggerLevel(enum.IntEnum):
    """pulsar-client's ``LoggerLevel`` (same values)."""
    Debug = 0
    Info = 1
    Warn = 2
    Error = 3


_TO_LOGGING = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING, 3: logging.ERROR}


class ConsoleLogger:
    """Log the client's lines on standard output, at ``log_level`` and above (pulsar-client's name)."""

    def __init__(self, log_level: LoggerLevel = LoggerLevel.Info) -> None:
        self.log_level = _check_level(log_level)


class FileLogger:
    """Log the client's lines into ``log_file`` (appended), at ``log_level`` and above."""

    def __init__(self, log_level: LoggerLevel, log_file: str) -> None:
        if not isinstance(log_file, str) or not log_file:
            raise ValueError(f"log_file={log_file!r} is not valid; use a file path (str)")
        self.log_level = _check_level(log_level)
        self.log_file = log_file


def _check_level(level: Any) -> LoggerLevel:
    # pulsar-client's own LoggerLevel is a pybind11 enum: int() gives its value.
    try:
        value = int(level)
    except (TypeError, ValueError):
        value = -1
    if isinstance(level, bool) or value not in _TO_LOGGING:
        raise ValueError(f"log_level={level!r} is not valid; use LoggerLevel.Debug, Info, Warn or Error")
    return LoggerLevel(value)


class _Forward(logging.Handler):
    """Hands the client's records to the application's logger (its level and handlers decide)."""

    def __init__(self, target: logging.Logger) -> None:
        super().__init__(logging.NOTSET)
        self.target = target

    def emit(self, record: logging.LogRecord) -> None:
        if self.target.isEnabledFor(record.levelno):
            self.target.handle(record)


class LogRoute:
    """One client's ``logger=``: installed on the ``connector`` logger at construction, removed at close.
    Several open clients with loggers each get the records (the client's loggers are per module, not per
    client); the ``connector`` logger's own level and propagation come back when the last route goes."""

    _lock = threading.Lock()
    _routes: list["LogRoute"] = []
    _saved: tuple[int, bool] | None = None

    def __init__(self, handler: logging.Handler, level: int, owned: logging.Handler | None = None) -> None:
        self._handler, self._level, self._owned = handler, level, owned
        self._closed = False

    @classmethod
    def of(cls, logger: Any) -> "LogRoute | None":
        """The route for ``logger`` (None: the default, ``logging``'s own configuration), installed."""
        if logger is None:
            return None
        if isinstance(logger, logging.Logger):
            route = cls(_Forward(logger), logger.getEffectiveLevel())
        elif hasattr(logger, "log_level") and hasattr(logger, "log_file"):  # FileLogger, ours or pulsar's
            level = _TO_LOGGING[_check_level(logger.log_level)]
            handler = logging.FileHandler(str(logger.log_file), encoding="utf-8")
            route = cls(_formatted(handler, level), level, owned=handler)
        elif hasattr(logger, "log_level"):  # ConsoleLogger, ours or pulsar's
            level = _TO_LOGGING[_check_level(logger.log_level)]
            route = cls(_formatted(logging.StreamHandler(sys.stdout), level), level)
        else:
            raise errors.InvalidConfiguration(
                f"logger={logger!r} is not valid; use a logging.Logger, ConsoleLogger(level) or "
                "FileLogger(level, path)")
        route._install()
        return route

    def _install(self) -> None:
        root = logging.getLogger(CLIENT_LOGGER)
        with self._lock:
            if not self._routes:
                LogRoute._saved = (root.level, root.propagate)
                root.propagate = False
            self._routes.append(self)
            root.addHandler(self._handler)
            root.setLevel(min(r._level for r in self._routes))

    def close(self) -> None:
        root = logging.getLogger(CLIENT_LOGGER)
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._routes.remove(self)
            root.removeHandler(self._handler)
            if self._routes:
                root.setLevel(min(r._level for r in self._routes))
            elif LogRoute._saved is not None:
                root.setLevel(LogRoute._saved[0])
                root.propagate = LogRoute._saved[1]
                LogRoute._saved = None
        if self._owned is not None:
            self._owned.close()


def _formatted(handler: logging.Handler, level: int) -> logging.Handler:
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    return handler
