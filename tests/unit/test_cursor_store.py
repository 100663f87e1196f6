"""CursorStore: atomic saves, reloads, damage detection."""
import os

import pytest

from broker_core.errors import CorruptLog
from broker_core.storage.cursor import ManagedCursor
from broker_core.storage.cursor_store import CursorStore, cursor_file_name


def test_a_saved_cursor_survives_reopening_the_store(tmp_path):
    store = CursorStore(tmp_path / "cursors")
    cursor = ManagedCursor("sub", 4)
    cursor.ack(7, 9)
    store.save(cursor)
    assert not cursor.dirty
    loaded = CursorStore(tmp_path / "cursors").load_all()
    assert list(loaded) == ["sub"]
    assert (loaded["sub"].mark_delete_offset, loaded["sub"].individually_acked) == (4, [(7, 9)])


def test_saving_again_replaces_the_previous_state(tmp_path):
    store = CursorStore(tmp_path)
    cursor = ManagedCursor("sub")
    store.save(cursor)
    cursor.ack_cumulative(41)
    store.save(cursor)
    assert store.load_all()["sub"].mark_delete_offset == 41
    assert [p.name for p in tmp_path.iterdir()] == ["sub.cursor"]


def test_names_with_any_characters_map_to_safe_file_names(tmp_path):
    store = CursorStore(tmp_path)
    names = ["a/b", "..", "sp ace%", "ü", "x" * 500, ""]
    for name in names:
        store.save(ManagedCursor(name, 1))
    assert sorted(store.load_all()) == sorted(names)
    assert all("/" not in cursor_file_name(n) and len(cursor_file_name(n)) < 255 for n in names)


def test_a_truncated_cursor_file_raises_corrupt_log_naming_it(tmp_path):
    store = CursorStore(tmp_path)
    store.save(ManagedCursor("sub", 3, [(5, 6)]))
    path = store.path_of("sub")
    raw = path.read_bytes()
    for cut in (0, 5, len(raw) - 1):
        path.write_bytes(raw[:cut])
        with pytest.raises(CorruptLog) as err:
            store.load_all()
        assert err.value.path == path.name and str(tmp_path) not in err.value.message


def test_a_bit_flip_in_a_cursor_file_raises_corrupt_log(tmp_path):
    store = CursorStore(tmp_path)
    store.save(ManagedCursor("sub", 123456))
    path = store.path_of("sub")
    raw = bytearray(path.read_bytes())
    raw[-5] ^= 0x01
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptLog, match="CRC"):
        store.load_all()


def test_a_leftover_temp_file_is_ignored_and_removed(tmp_path):
    store = CursorStore(tmp_path)
    store.save(ManagedCursor("sub", 2))
    (tmp_path / ".abc.tmp").write_bytes(b"half written")
    assert store.load_all()["sub"].mark_delete_offset == 2
    assert not (tmp_path / ".abc.tmp").exists()


def test_save_fsyncs_the_file_before_renaming_it(tmp_path, monkeypatch):
    store = CursorStore(tmp_path)
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: events.append("fsync") or real_fsync(fd))
    monkeypatch.setattr(os, "replace", lambda a, b: events.append("replace") or real_replace(a, b))
    store.save(ManagedCursor("sub"))
    assert events == ["fsync", "replace", "fsync"]


def test_delete_forgets_a_cursor(tmp_path):
    store = CursorStore(tmp_path)
    store.save(ManagedCursor("a"))
    store.save(ManagedCursor("b"))
    store.delete("a")
    store.delete("never-saved")
    assert list(store.load_all()) == ["b"]
