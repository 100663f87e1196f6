"""TableView over a scripted reader: the table it builds (updates, tombstones, keyless messages), the catch-up
before start() returns, listeners in order, and close."""
from __future__ import annotations

import queue
import threading

import pytest

from broker_core import errors
from connector.client.table_view import TableView
from tests.waiting import wait_until


class FakeMessage:
    def __init__(self, key: str | None, value: bytes) -> None:
        self._key, self._value = key, value

    def has_partition_key(self) -> bool:
        return self._key is not None

    def partition_key(self) -> str:
        return self._key or ""

    def data(self) -> bytes:
        return self._value

    def value(self) -> bytes:  # a message read without a schema: its bytes
        return self._value


class ScriptedReader:
    """``existing`` messages are there when the view starts; ``publish`` adds later ones."""

    def __init__(self, existing: list[tuple[str | None, bytes]]) -> None:
        self._queue: queue.Queue[FakeMessage] = queue.Queue()
        for key, value in existing:
            self._queue.put(FakeMessage(key, value))
        self.closed = threading.Event()

    def publish(self, key: str | None, value: bytes) -> None:
        self._queue.put(FakeMessage(key, value))

    def has_message_available(self) -> bool:
        return not self._queue.empty()

    def read_next(self, timeout_millis: int | None = None) -> FakeMessage:
        if self.closed.is_set():
            raise errors.AlreadyClosed("closed")
        try:
            return self._queue.get(timeout=None if timeout_millis is None else timeout_millis / 1000)
        except queue.Empty:
            raise errors.Timeout("no message") from None

    def close(self) -> None:
        self.closed.set()


@pytest.fixture
def view_of():
    views: list[TableView] = []

    def make(existing: list[tuple[str | None, bytes]]) -> tuple[TableView, ScriptedReader]:
        reader = ScriptedReader(existing)
        view = TableView(reader, "persistent://public/default/t", None).start()
        views.append(view)
        return view, reader

    yield make
    for view in views:
        view.close()


def test_the_table_holds_the_latest_value_per_key_as_soon_as_it_is_created(view_of):
    view, _ = view_of([("a", b"1"), ("b", b"1"), ("a", b"2"), ("c", b"1")])
    assert view.get("a") == b"2" and view.get("b") == b"1" and view.get("c") == b"1"
    assert len(view) == 3 and sorted(view.keys()) == ["a", "b", "c"]
    assert dict(view.items()) == {"a": b"2", "b": b"1", "c": b"1"}
    assert "a" in view and "z" not in view and view.get("z") is None


def test_a_tombstone_removes_its_key_and_a_keyless_message_is_ignored(view_of):
    view, _ = view_of([("a", b"1"), ("b", b"1"), ("a", b""), (None, b"no key")])
    assert view.get("a") is None and "a" not in view
    assert view.items() == [("b", b"1")]


def test_a_key_set_again_after_its_tombstone_is_back(view_of):
    view, _ = view_of([("a", b"1"), ("a", b""), ("a", b"3")])
    assert view.get("a") == b"3"


def test_later_messages_update_the_table_in_the_background(view_of):
    view, reader = view_of([("a", b"1")])
    reader.publish("a", b"2")
    reader.publish("b", b"9")
    assert wait_until(lambda: view.get("a") == b"2" and view.get("b") == b"9")
    reader.publish("b", b"")
    assert wait_until(lambda: "b" not in view)


def test_for_each_sees_the_table_and_for_each_and_listen_then_every_update_in_order(view_of):
    view, reader = view_of([("a", b"1"), ("b", b"2")])
    seen: list[tuple[str, bytes]] = []
    view.for_each(lambda k, v: seen.append((k, v)))
    assert sorted(seen) == [("a", b"1"), ("b", b"2")]
    heard: list[tuple[str, bytes]] = []
    view.for_each_and_listen(lambda k, v: heard.append((k, v)))
    reader.publish("c", b"3")
    reader.publish("a", b"")
    reader.publish(None, b"keyless")
    assert wait_until(lambda: len(heard) == 4)
    assert sorted(heard[:2]) == [("a", b"1"), ("b", b"2")]
    assert heard[2:] == [("c", b"3"), ("a", b"")]  # a tombstone is heard with the empty value


def test_a_listener_that_raises_does_not_stop_the_table_or_the_other_listeners(view_of):
    view, reader = view_of([])
    heard: list[str] = []

    def broken(key: str, value: bytes) -> None:
        raise RuntimeError("listener bug")
    view.for_each_and_listen(broken)
    view.for_each_and_listen(lambda k, v: heard.append(k))
    reader.publish("a", b"1")
    reader.publish("b", b"1")
    assert wait_until(lambda: heard == ["a", "b"])
    assert view.get("b") == b"1"


def test_close_stops_following_and_keeps_the_table(view_of):
    view, reader = view_of([("a", b"1")])
    view.close()
    assert reader.closed.is_set()
    assert view._thread is not None and not view._thread.is_alive()
    assert view.get("a") == b"1"
    view.close()  # a second close does nothing


def test_str_names_the_topic_and_subscription():
    view = TableView(ScriptedReader([]), "persistent://public/default/t", "sub")
    assert str(view) == "TableView(topic=persistent://public/default/t, subscription=sub)"
