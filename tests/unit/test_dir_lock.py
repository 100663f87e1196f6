"""One broker per data dir: the data dir's flock (broker_core.storage.dir_lock)."""
from __future__ import annotations

import os

import pytest

from broker_core.errors import DataDirLocked
from broker_core.storage.dir_lock import LOCK_FILE, DataDirLock


def test_the_lock_file_holds_the_holders_pid(tmp_path):
    lock = DataDirLock(tmp_path)
    lock.acquire()
    try:
        assert (tmp_path / LOCK_FILE).read_text() == f"{os.getpid()}\n"
    finally:
        lock.release()


def test_a_second_lock_on_the_same_data_dir_is_refused_naming_the_holder(tmp_path):
    first = DataDirLock(tmp_path)
    first.acquire()
    try:
        with pytest.raises(DataDirLocked, match=f"pid {os.getpid()}") as info:
            DataDirLock(tmp_path).acquire()
        assert info.value.pid == os.getpid()
    finally:
        first.release()


def test_a_released_lock_can_be_taken_again(tmp_path):
    first = DataDirLock(tmp_path)
    first.acquire()
    first.release()
    second = DataDirLock(tmp_path)
    second.acquire()
    second.release()
    assert (tmp_path / LOCK_FILE).exists()  # kept: unlinking it would let two brokers lock two files


def test_release_is_idempotent_and_harmless_without_acquire(tmp_path):
    lock = DataDirLock(tmp_path)
    lock.release()
    lock.acquire()
    lock.release()
    lock.release()


def test_a_holder_that_has_not_written_its_pid_yet_is_reported_as_unknown(tmp_path):
    import fcntl

    fd = os.open(tmp_path / LOCK_FILE, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with pytest.raises(DataDirLocked, match="pid could not be read") as info:
            DataDirLock(tmp_path).acquire()
        assert info.value.pid == 0
    finally:
        os.close(fd)
