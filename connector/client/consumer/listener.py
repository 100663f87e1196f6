"""A consumer's ``message_listener``: a thread that takes each message and calls ``listener(owner, msg)``,
with pulsar-client's ``pause_message_listener`` / ``resume_message_listener`` (messages stay buffered while
paused; the broker stops sending once the permits run out)."""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from broker_core import errors

from connector.client.message import Message

log = logging.getLogger(__name__)

POLL_MS = 200
"""How long one take waits, so that a close or a pause is seen promptly."""


class MessageListener:
    """``take(timeout_ms)`` gives the next message (raising ``Timeout``, or ``MessageDecodeError`` for an
    undecodable entry, or ``DataLost`` for a damaged range the broker cannot read, each logged and passed
    over); ``listener(owner, msg)`` runs for each."""

    def __init__(self, name: str, listener: Callable[[Any, Message], None], owner: Any,
                 take: Callable[[int], Message]) -> None:
        self._listener = listener
        self._owner = owner
        self._take = take
        self._running = threading.Event()
        self._running.set()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"pulsarlike-listener-{name}")

    def start(self) -> None:
        self._thread.start()

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def stop(self) -> None:
        self._stopped.set()
        self._running.set()
        if threading.current_thread() is not self._thread and self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stopped.is_set():
            if not self._running.wait(POLL_MS / 1000.0):
                continue
            try:
                msg = self._take(POLL_MS)
            except errors.Timeout:
                continue
            except errors.MessageDecodeError as exc:
                log.error("event=listener_skips_undecodable_message error=%s", exc)
                continue
            except errors.DataLost as exc:  # raised once; the consumer stays and waits (a seek moves it on)
                log.error("event=listener_meets_damaged_range error=%s", exc)
                continue
            except errors.PulsarLikeError:
                return
            try:
                self._listener(self._owner, msg)
            except Exception:  # the listener's bug must not stop delivery
                log.exception("message_listener failed")
