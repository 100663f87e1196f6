"""CursorStore: two copies per cursor saved in turn, reloads, damage found per copy; and what a loading topic
makes of a damaged cursor (broker_core.core.persistent.recovery, step 1): only that subscription is
recovered, to its last good copy or the log's start, with one ERROR line."""
import json
import logging
import os
from types import SimpleNamespace

import google_crc32c
import pytest

from broker_core.core.persistent.recovery import load_cursors
from broker_core.storage.cursor import ManagedCursor
from broker_core.storage.cursor_store import (CURSOR_HEADER, CURSOR_HEADER_V1, CURSOR_MAGIC_V1, CursorStore,
                                              cursor_file_name, encode_copy, read_copy)

TOPIC = "persistent://public/default/t"


def saved_twice(tmp_path, name="sub"):
    """A store whose cursor ``name`` was saved at mark-delete 9 (the last good copy), then at 29 with a
    range and a property (the newest copy); returns (store, the newest copy's path, the older one's)."""
    store = CursorStore(tmp_path)
    cursor = ManagedCursor(name, 9, properties={"k": "v"})
    store.save(cursor)
    cursor.ack_cumulative(29)
    cursor.ack(40, 42)
    store.save(cursor)
    return store, store.path_of(name, 1), store.path_of(name, 0)


def flip_a_state_byte(path):
    raw = bytearray(path.read_bytes())
    raw[-5] ^= 0x01
    path.write_bytes(bytes(raw))


def flip_a_header_byte(path):
    raw = bytearray(path.read_bytes())
    raw[6] ^= 0x10  # inside the generation
    path.write_bytes(bytes(raw))


def empty(path):
    path.write_bytes(b"")


def truncate_in_the_header(path):
    path.write_bytes(path.read_bytes()[:7])


def truncate_the_state(path):
    path.write_bytes(path.read_bytes()[:-1])


def bad_magic(path):
    path.write_bytes(b"XXXX" + path.read_bytes()[4:])


def impossible_values(path):
    """Valid JSON and CRCs, the copy's own generation: an inverted range."""
    generation = CURSOR_HEADER.unpack_from(path.read_bytes())[1]
    state = json.dumps({"v": 1, "name": "sub", "markDelete": 29, "acked": [[7000, 6000]], "properties": {}})
    path.write_bytes(encode_copy(state.encode(), generation))


DAMAGE = [flip_a_state_byte, flip_a_header_byte, empty, truncate_in_the_header, truncate_the_state, bad_magic,
          impossible_values]


def fake_log(start=0, end=1000, proven=True):
    return SimpleNamespace(start_offset=start, end_offset=end, end_proven=proven)


def recovery_lines(caplog):
    return [r for r in caplog.records if r.levelno >= logging.WARNING]


# -- saving and loading -----------------------------------------------------------------------------
def test_a_saved_cursor_survives_reopening_the_store(tmp_path):
    store = CursorStore(tmp_path / "cursors")
    cursor = ManagedCursor("sub", 4)
    cursor.ack(7, 9)
    store.save(cursor)
    assert not cursor.dirty
    loaded = CursorStore(tmp_path / "cursors").load_all()
    assert list(loaded) == ["sub"]
    assert (loaded["sub"].mark_delete_offset, loaded["sub"].individually_acked) == (4, [(7, 9)])


def test_saves_alternate_between_two_copies_so_the_other_holds_the_previous_state(tmp_path):
    store = CursorStore(tmp_path)
    cursor = ManagedCursor("sub")
    for mark_delete in (5, 17, 41):
        cursor.ack_cumulative(mark_delete)
        store.save(cursor)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub.cursor", "sub.cursor.1"]
    [stored] = CursorStore(tmp_path).load()
    assert [(c.file, c.generation, c.cursor.mark_delete_offset) for c in stored.usable] == [
        ("sub.cursor", 3, 41), ("sub.cursor.1", 2, 17)]
    assert not stored.damaged and not stored.newest_lost
    assert CursorStore(tmp_path).load_all()["sub"].mark_delete_offset == 41


def test_names_with_any_characters_map_to_safe_file_names(tmp_path):
    store = CursorStore(tmp_path)
    names = ["a/b", "..", "sp ace%", "ü", "x" * 500, "", "~" + "0" * 64, "s.cursor.1"]
    for name in names:
        store.save(ManagedCursor(name, 1))
        store.save(ManagedCursor(name, 2))
    assert {n: c.mark_delete_offset for n, c in CursorStore(tmp_path).load_all().items()} == dict.fromkeys(names, 2)
    assert all("/" not in p.name and len(p.name) < 255 for p in tmp_path.iterdir())


def test_a_leftover_temp_file_is_ignored_and_removed(tmp_path):
    store = CursorStore(tmp_path)
    store.save(ManagedCursor("sub", 2))
    (tmp_path / ".abc.tmp").write_bytes(b"half written")
    assert store.load_all()["sub"].mark_delete_offset == 2
    assert not (tmp_path / ".abc.tmp").exists()


def test_each_save_costs_one_file_fsync_one_rename_and_one_folder_fsync(tmp_path, monkeypatch):
    store = CursorStore(tmp_path)
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: events.append("fsync") or real_fsync(fd))
    monkeypatch.setattr(os, "replace", lambda a, b: events.append("replace") or real_replace(a, b))
    cursor = ManagedCursor("sub")
    for _ in range(3):
        events.clear()
        cursor.ack_cumulative(cursor.mark_delete_offset + 1)
        store.save(cursor)
        assert events == ["fsync", "replace", "fsync"]


def test_delete_removes_both_copies(tmp_path):
    store = CursorStore(tmp_path)
    store.save(ManagedCursor("a"))
    store.save(ManagedCursor("a", 3))
    store.save(ManagedCursor("b"))
    store.delete("a")
    store.delete("never-saved")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.cursor"]
    CursorStore(tmp_path).delete("b")  # a store that never loaded it finds its copies too
    assert list(tmp_path.iterdir()) == []


def test_saved_at_is_the_newest_copys_time(tmp_path):
    store, newest, older = saved_twice(tmp_path)
    os.utime(older, ns=(1_000_000_000_000, 1_000_000_000_000))
    os.utime(newest, ns=(2_000_000_000_000, 2_000_000_000_000))
    assert store.saved_at_ms("sub") == CursorStore(tmp_path).saved_at_ms("sub") == 2_000_000


# -- crash safety of the rotation ---------------------------------------------------------------------
def test_a_crash_before_the_rename_leaves_the_last_two_states(tmp_path, monkeypatch):
    store, newest, older = saved_twice(tmp_path)
    before = (newest.read_bytes(), older.read_bytes())

    def crash(src, dst):
        raise KeyboardInterrupt("power cut")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        store.save(ManagedCursor("sub", 99))
    monkeypatch.undo()
    assert (newest.read_bytes(), older.read_bytes()) == before
    [stored] = CursorStore(tmp_path).load()
    assert [c.cursor.mark_delete_offset for c in stored.usable] == [29, 9]


def test_after_every_save_the_other_copy_holds_the_state_saved_before(tmp_path):
    cursor = ManagedCursor("sub")
    store = CursorStore(tmp_path)
    store.save(cursor)
    for mark_delete in range(0, 6):
        cursor.ack_cumulative(mark_delete)
        store = CursorStore(tmp_path)  # a restart between saves: the next save finds the older copy again
        store.load()
        store.save(cursor)
        [stored] = CursorStore(tmp_path).load()
        newest = stored.usable[0]
        empty(tmp_path / newest.file)  # the newest copy lost: the other one is one save behind
        [stored] = CursorStore(tmp_path).load()
        assert stored.newest_lost and stored.usable[0].cursor.mark_delete_offset == mark_delete - 1
        store = CursorStore(tmp_path)
        store.load()
        store.save(cursor)  # writes over the damaged copy again, keeping the last good one


def test_a_save_after_a_fallback_overwrites_the_damaged_copy_and_keeps_the_last_good_one(tmp_path):
    _, newest, older = saved_twice(tmp_path)
    flip_a_state_byte(newest)
    good = older.read_bytes()
    store = CursorStore(tmp_path)
    [stored] = store.load()
    cursor = stored.usable[0].cursor
    assert cursor.mark_delete_offset == 9 and stored.newest_lost
    cursor.ack_cumulative(11)
    store.save(cursor)
    assert older.read_bytes() == good
    [stored] = CursorStore(tmp_path).load()
    assert [c.cursor.mark_delete_offset for c in stored.usable] == [11, 9] and not stored.damaged


# -- damage found per copy ---------------------------------------------------------------------------
@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_newest_copy_falls_back_to_the_last_good_one(tmp_path, damage):
    _, newest, _ = saved_twice(tmp_path)
    damage(newest)
    [stored] = CursorStore(tmp_path).load()
    assert stored.name == "sub" and stored.newest_lost
    assert [c.file for c in stored.damaged] == [newest.name] and stored.damaged[0].damage
    last_good = stored.usable[0].cursor
    assert (last_good.mark_delete_offset, last_good.properties) == (9, {"k": "v"})
    assert CursorStore(tmp_path).load_all() == {}  # whose newest state is unknown: the topic's load decides


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_older_copy_whose_generation_is_proven_costs_nothing(tmp_path, damage):
    _, _, older = saved_twice(tmp_path)
    damage(older)
    [stored] = CursorStore(tmp_path).load()
    assert stored.usable[0].cursor.mark_delete_offset == 29
    proven = stored.damaged[0].generation is not None
    assert stored.newest_lost == (not proven)
    if damage in (flip_a_state_byte, truncate_the_state, impossible_values):
        assert proven  # the header verifies on its own


@pytest.mark.parametrize("doc", [
    {"markDelete": 5000.0, "acked": []},
    {"markDelete": "5", "acked": []},
    {"markDelete": True, "acked": []},
    {"markDelete": -2, "acked": []},
    {"markDelete": 1 << 64, "acked": []},
    {"markDelete": 3, "acked": [[7000, 6000]]},
    {"markDelete": 3, "acked": [[7, 7]]},
    {"markDelete": 3, "acked": [[4, 9]]},  # touches markDelete + 1: would have been folded into it
    {"markDelete": 3, "acked": [[2, 9]]},
    {"markDelete": 3, "acked": [[6, 9], [8, 12]]},  # overlapping
    {"markDelete": 3, "acked": [[6, 9], [9, 12]]},  # adjacent: would have been merged
    {"markDelete": 3, "acked": [[20, 30], [6, 9]]},  # unsorted
    {"markDelete": 3, "acked": [[6, "9"]]},
    {"markDelete": 3, "acked": [[6, 9.5]]},
    {"markDelete": 3, "acked": [[6, 9, 12]]},
    {"markDelete": 3, "acked": {}},
])
def test_a_state_with_impossible_values_is_a_damaged_copy(tmp_path, doc):
    store, newest, _ = saved_twice(tmp_path)
    state = json.dumps({"v": 1, "name": "sub", "properties": {}, **doc}).encode()
    newest.write_bytes(encode_copy(state, 2))
    with pytest.raises(ValueError):
        ManagedCursor.from_bytes("sub", state)
    [stored] = CursorStore(tmp_path).load()
    assert stored.damaged[0].generation == 2 and stored.newest_lost
    assert stored.usable[0].cursor.mark_delete_offset == 9


def test_a_copy_naming_another_subscription_is_damaged(tmp_path):
    _, newest, _ = saved_twice(tmp_path)
    newest.write_bytes(encode_copy(ManagedCursor("other", 29).to_bytes(), 2))
    [stored] = CursorStore(tmp_path).load()
    assert stored.name == "sub" and "other" in stored.damaged[0].damage


def test_both_copies_damaged_leave_the_name_and_no_state(tmp_path):
    _, newest, older = saved_twice(tmp_path, "a/b ü")
    flip_a_state_byte(newest)
    empty(older)
    [stored] = CursorStore(tmp_path).load()
    assert (stored.name, stored.usable, len(stored.damaged)) == ("a/b ü", (), 2)


def test_a_hashed_name_is_read_back_from_a_damaged_copy_only_when_it_proves_itself(tmp_path):
    long = "ü" * 150
    _, newest, older = saved_twice(tmp_path, long)
    assert newest.name.startswith("~")
    flip_a_state_byte(newest)
    bad_magic(older)
    [stored] = CursorStore(tmp_path).load()
    assert stored.name == long  # the CRC failed elsewhere: the name in the bytes maps to the file name
    empty(newest)
    older.write_bytes(older.read_bytes().replace(b'"name":"', b'"name":"x'))  # a name, not this file's
    [stored] = CursorStore(tmp_path).load()
    assert stored.name is None


def test_an_old_plc1_file_still_loads_as_generation_0_and_stays_the_last_good_copy(tmp_path):
    state = ManagedCursor("sub", 7, [(9, 11)], {"k": "v"}).to_bytes()
    (tmp_path / "sub.cursor").write_bytes(
        CURSOR_HEADER_V1.pack(CURSOR_MAGIC_V1, len(state), google_crc32c.value(state)) + state)
    store = CursorStore(tmp_path)
    [stored] = store.load()
    assert [(c.generation, c.cursor.mark_delete_offset, c.cursor.individually_acked) for c in stored.usable] == [
        (0, 7, [(9, 11)])]
    cursor = stored.usable[0].cursor
    cursor.ack(7, 12)  # the old file is kept as the last good copy: the save goes to the other slot
    store.save(cursor)
    assert read_copy(tmp_path / "sub.cursor.1", 1).generation == 1
    empty(tmp_path / "sub.cursor.1")
    [stored] = CursorStore(tmp_path).load()
    assert stored.usable[0].cursor.mark_delete_offset == 7 and stored.newest_lost


def test_the_header_layout_is_twenty_four_bytes():
    assert CURSOR_HEADER.size == 24 and CURSOR_HEADER_V1.size == 12
    assert cursor_file_name("a b") == "a%20b.cursor"


# -- a loading topic recovers a damaged cursor (persistent.recovery step 1) ---------------------------------
@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_cursor_is_recovered_to_its_last_good_copy_with_one_error_line(tmp_path, damage, caplog):
    store, newest, _ = saved_twice(tmp_path)
    CursorStore(tmp_path).save(ManagedCursor("other", 99))
    damage(newest)
    with caplog.at_level(logging.WARNING):
        cursors = load_cursors(TOPIC, CursorStore(tmp_path), fake_log())
    assert {n: (c.mark_delete_offset, c.properties) for n, c in cursors.items()} == {
        "sub": (9, {"k": "v"}), "other": (99, {})}
    [line] = recovery_lines(caplog)
    assert line.levelno == logging.ERROR
    message = line.getMessage()
    assert message.startswith(f"event=cursor_recovered topic={TOPIC} subscription=sub from=last_good"
                              " mark_delete_offset=9 redeliver_from=10 reason=")
    assert newest.name in message and "may see redeliveries from offset 10" in message
    caplog.clear()
    with caplog.at_level(logging.WARNING):  # saved again: the next load is clean and says nothing
        again = load_cursors(TOPIC, CursorStore(tmp_path), fake_log())
    assert again["sub"].mark_delete_offset == 9 and not recovery_lines(caplog)


@pytest.mark.parametrize("second", [flip_a_state_byte, empty, bad_magic])
def test_a_cursor_with_both_copies_damaged_restarts_at_the_log_start(tmp_path, second, caplog):
    _, newest, older = saved_twice(tmp_path)
    flip_a_header_byte(newest)
    second(older)
    with caplog.at_level(logging.WARNING):
        cursors = load_cursors(TOPIC, CursorStore(tmp_path), fake_log(start=300))
    assert (cursors["sub"].mark_delete_offset, cursors["sub"].individually_acked) == (299, [])
    [line] = recovery_lines(caplog)
    assert "subscription=sub from=log_start mark_delete_offset=299 redeliver_from=300" in line.getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert load_cursors(TOPIC, CursorStore(tmp_path), fake_log(start=300))["sub"].mark_delete_offset == 299
    assert not recovery_lines(caplog)


def test_a_cursor_beyond_a_proven_log_end_is_impossible_and_recovered(tmp_path, caplog):
    store = CursorStore(tmp_path)
    store.save(ManagedCursor("sub", 299))
    store.save(ManagedCursor("sub", 5000))
    with caplog.at_level(logging.WARNING):
        cursors = load_cursors(TOPIC, CursorStore(tmp_path), fake_log(end=1000))
    assert cursors["sub"].mark_delete_offset == 299
    [line] = recovery_lines(caplog)
    assert "from=last_good" in line.getMessage()
    assert "markDelete 5000 at or beyond the log end 1000" in line.getMessage()


def test_a_range_beyond_a_proven_log_end_with_no_good_copy_left_restarts_at_the_log_start(tmp_path, caplog):
    cursor = ManagedCursor("sub", 10)
    cursor.ack(500, 1001)
    CursorStore(tmp_path).save(cursor)
    with caplog.at_level(logging.WARNING):
        cursors = load_cursors(TOPIC, CursorStore(tmp_path), fake_log(start=100, end=1000))
    assert cursors["sub"].mark_delete_offset == 99
    assert "from=log_start" in recovery_lines(caplog)[0].getMessage()


def test_a_cursor_beyond_an_unproven_log_end_is_kept_for_the_log_to_move_past(tmp_path, caplog):
    CursorStore(tmp_path).save(ManagedCursor("sub", 5000))
    with caplog.at_level(logging.WARNING):
        cursors = load_cursors(TOPIC, CursorStore(tmp_path), fake_log(end=1000, proven=False))
    assert cursors["sub"].mark_delete_offset == 5000 and not recovery_lines(caplog)


def test_a_last_good_copy_below_the_log_start_moves_up_to_it(tmp_path):
    _, newest, _ = saved_twice(tmp_path)
    empty(newest)
    cursors = load_cursors(TOPIC, CursorStore(tmp_path), fake_log(start=20))
    assert (cursors["sub"].mark_delete_offset, cursors["sub"].properties) == (19, {"k": "v"})


def test_a_damaged_older_copy_is_a_warning_and_is_replaced(tmp_path, caplog):
    _, _, older = saved_twice(tmp_path)
    flip_a_state_byte(older)
    with caplog.at_level(logging.WARNING):
        assert load_cursors(TOPIC, CursorStore(tmp_path), fake_log())["sub"].mark_delete_offset == 29
    [line] = recovery_lines(caplog)
    assert line.levelno == logging.WARNING and "event=cursor_copy_damaged" in line.getMessage()
    [stored] = CursorStore(tmp_path).load()
    assert not stored.damaged


def test_a_cursor_whose_hashed_name_cannot_be_read_is_set_aside(tmp_path, caplog):
    long = "x" * 300
    _, newest, older = saved_twice(tmp_path, long)
    empty(newest)
    empty(older)
    with caplog.at_level(logging.WARNING):
        assert load_cursors(TOPIC, CursorStore(tmp_path), fake_log()) == {}
    [line] = recovery_lines(caplog)
    assert line.levelno == logging.ERROR and "event=cursor_lost" in line.getMessage()
    assert sorted(p.name for p in tmp_path.iterdir()) == [newest.name + ".damaged", older.name + ".damaged"]
    store = CursorStore(tmp_path)
    store.save(ManagedCursor(long, 5))  # subscribing again under that name starts afresh
    assert CursorStore(tmp_path).load_all()[long].mark_delete_offset == 5


def test_a_copy_that_cannot_be_read_is_a_damaged_copy(tmp_path):
    _, newest, _ = saved_twice(tmp_path)
    newest.unlink()
    newest.mkdir()  # reading it fails (EISDIR) as an I/O error would
    [stored] = CursorStore(tmp_path).load()
    assert stored.newest_lost and stored.damaged[0].damage.startswith("unreadable")
    assert stored.usable[0].cursor.mark_delete_offset == 9
