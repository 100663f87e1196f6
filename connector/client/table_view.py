"""``TableView`` (pulsar-client's API): the latest value of every key of a topic, kept up to date.

A table view is a compacted reader (``is_read_compacted=True``) over every partition of the topic, from the
earliest message. :meth:`TableView.start` reads it to its end -- so ``create_table_view`` returns a table as
of the moment it was called, as Pulsar's does -- and then a background thread follows the new messages:

- a message with a partition key sets the key to its payload;
- a message with an empty (or null) payload is a tombstone: the key is removed;
- a message without a key is ignored (it cannot be a row of the table).

Listeners (:meth:`TableView.for_each_and_listen`) are called on that thread, in message order, with
``(key, value)`` -- ``b""`` for a tombstone, as pulsar-client's (its ``BytesSchema`` decodes the empty value to
``b""``). A listener that raises is logged and the others still run.

The compacted reader gives the same table as a raw read from the earliest message, only sooner: below the
compaction horizon it skips what a later message of the same key replaced. That holds while the view is
behind a compaction too (a slow listener, a full receiver queue, a reconnection): a pulsarlike broker keeps the
tombstones a compacted reader it knows may still need, so a key deleted meanwhile is removed here and the
listeners hear it (``b""``), as for any update. Pulsar's compactor keeps none; against an Apache Pulsar broker
a view behind a compaction keeps such a key (docs/compaction.md says how the two differ and the bound: a view
gone longer than the broker's ``compactionTombstoneRetentionSeconds`` may miss deletions too). Partitions
added to the topic are read from their first message (the reader's consumer subscribes them,
:mod:`connector.client.partition_updates`).

``keys()``, ``values()``, ``items()`` and ``in`` are pulsarlike's (the Java client's ``keySet``, ``values``,
``entrySet``, ``containsKey``); pulsar-client's Python ``TableView`` has ``get``, ``for_each``,
``for_each_and_listen``, ``len()`` and ``close``.
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Iterator, Protocol

from broker_core import errors

from connector.client.message import Message

log = logging.getLogger(__name__)

POLL_MS = 200
"""How long one read of the following thread waits, so that a close is seen promptly."""

Listener = Callable[[str, bytes], None]


class TableReader(Protocol):
    """What a table view needs of its reader (:class:`~connector.client.reader.Reader`)."""

    def read_next(self, timeout_millis: int | None = None) -> Message: ...

    def has_message_available(self) -> bool: ...

    def close(self) -> None: ...


class TableView:
    """The latest value per key of ``topic`` (see the module docstring). Made by ``Client.create_table_view``."""

    def __init__(self, reader: TableReader, topic: str, subscription: str | None,
                 catch_up_timeout_ms: int = 30_000, on_close: Callable[["TableView"], None] | None = None) -> None:
        """``catch_up_timeout_ms``: the longest :meth:`start` waits for one message the reader says is there."""
        self._reader = reader
        self._topic = topic
        self._subscription = subscription
        self._catch_up_timeout_ms = catch_up_timeout_ms
        self._on_close = on_close
        self._data: dict[str, bytes] = {}
        self._data_lock = threading.Lock()
        self._dispatch = threading.RLock()
        """Held while a message is applied and its listeners called, and while ``for_each_and_listen``
        replays the table and registers its listener: no message falls between the two."""
        self._listeners: list[Listener] = []
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    # --- reading ------------------------------------------------------------------------------------------
    def start(self) -> "TableView":
        """Read the topic to its end, then follow it on a background thread."""
        while not self._closed.is_set() and self._reader.has_message_available():
            try:
                msg = self._reader.read_next(self._catch_up_timeout_ms)
            except errors.MessageDecodeError as exc:
                log.error("event=table_view_skips_undecodable_message topic=%s error=%s", self._topic, exc)
                continue
            except errors.Timeout:
                # The reader said a message was there and none came within the deadline: the table is as
                # complete as can be had now; the following thread takes what comes later.
                log.warning("event=table_view_catch_up_timeout topic=%s timeout_ms=%d", self._topic,
                            self._catch_up_timeout_ms)
                break
            self._apply(msg)
        self._thread = threading.Thread(target=self._follow, daemon=True,
                                        name=f"pulsarlike-table-view-{self._topic}")
        self._thread.start()
        return self

    def _follow(self) -> None:
        while not self._closed.is_set():
            try:
                msg = self._reader.read_next(POLL_MS)
            except errors.Timeout:
                continue
            except errors.MessageDecodeError as exc:
                log.error("event=table_view_skips_undecodable_message topic=%s error=%s", self._topic, exc)
                continue
            except errors.AlreadyClosed:
                return
            except errors.PulsarLikeError as exc:
                if self._closed.is_set():
                    return
                # The reader's streams reconnect by themselves; what failed for good ends the table's updates.
                log.error("event=table_view_stopped_following topic=%s error=%r", self._topic, exc)
                return
            self._apply(msg)

    def _apply(self, msg: Message) -> None:
        if not msg.has_partition_key():
            return  # a keyless message is no row of the table (Pulsar's table view skips it too)
        key, raw = msg.partition_key(), msg.data()
        value = msg.value() if raw else raw  # decoded by the view's schema (an empty payload: a tombstone)
        with self._dispatch:
            with self._data_lock:
                if raw:
                    self._data[key] = value
                else:  # a tombstone
                    self._data.pop(key, None)
            for listener in list(self._listeners):
                try:
                    listener(key, value)
                except Exception:  # the listener's bug must not stop the table
                    log.exception("event=table_view_listener_failed topic=%s key=%s", self._topic, key)

    # --- the table ----------------------------------------------------------------------------------------
    def get(self, key: str) -> Any:
        """The latest value of ``key`` (decoded by the view's ``schema=``; bytes without one), or None when the key
        is absent (never set, or removed by a tombstone)."""
        with self._data_lock:
            return self._data.get(key)

    def __len__(self) -> int:
        with self._data_lock:
            return len(self._data)

    def size(self) -> int:
        return len(self)

    def __contains__(self, key: object) -> bool:
        with self._data_lock:
            return key in self._data

    def keys(self) -> list[str]:
        """The keys now in the table (a snapshot)."""
        with self._data_lock:
            return list(self._data)

    def values(self) -> list[bytes]:
        with self._data_lock:
            return list(self._data.values())

    def items(self) -> list[tuple[str, bytes]]:
        with self._data_lock:
            return list(self._data.items())

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def for_each(self, callback: Listener) -> None:
        """Call ``callback(key, value)`` for every entry now in the table (on the calling thread)."""
        for key, value in self.items():
            callback(key, value)

    def for_each_and_listen(self, callback: Listener) -> None:
        """:meth:`for_each`, then call ``callback(key, value)`` for every later update, on the table's thread
        (``value`` is ``b""`` when a tombstone removed the key)."""
        with self._dispatch:
            self.for_each(callback)
            self._listeners.append(callback)

    # --- lifecycle ----------------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop following the topic and close the reader (the table keeps what it holds)."""
        if self._closed.is_set():
            return
        self._closed.set()
        try:
            self._reader.close()
        finally:
            thread = self._thread
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout=5)
            if self._on_close is not None:
                self._on_close(self)

    def __enter__(self) -> "TableView":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __str__(self) -> str:
        if self._subscription is None:
            return f"TableView(topic={self._topic})"
        return f"TableView(topic={self._topic}, subscription={self._subscription})"

    __repr__ = __str__
