"""Producer access modes (seed 002 "Access mode", PIP-68) as pure bookkeeping."""
import pytest

from broker_core.errors import ProducerBusy, ProducerFenced
from broker_core.core.access import AccessMode, ProducerAccess


class Recorder:
    def __init__(self):
        self.fenced = []
        self.granted = []

    def add(self, access, pid, mode, name=None):
        return access.add(pid, name or f"p{pid}", mode,
                          fence=lambda error, pid=pid: self.fenced.append((pid, error)),
                          granted=lambda pid=pid: self.granted.append(pid))


def test_shared_producers_publish_side_by_side():
    access, r = ProducerAccess("t"), Recorder()
    assert r.add(access, 1, AccessMode.SHARED) and r.add(access, 2, AccessMode.SHARED)
    assert access.exclusive_producer is None


def test_second_exclusive_producer_fails_at_once_with_producer_fenced():
    access, r = ProducerAccess("t"), Recorder()
    assert r.add(access, 1, AccessMode.EXCLUSIVE)
    with pytest.raises(ProducerFenced, match="existing exclusive producer: p1"):
        r.add(access, 2, AccessMode.EXCLUSIVE)
    assert access.exclusive_producer == "p1"


def test_exclusive_producer_is_refused_while_shared_producers_are_connected():
    access, r = ProducerAccess("t"), Recorder()
    r.add(access, 1, AccessMode.SHARED)
    with pytest.raises(ProducerFenced, match="existing shared producers"):
        r.add(access, 2, AccessMode.EXCLUSIVE)


def test_shared_producer_is_busy_while_an_exclusive_producer_holds_the_topic():
    access, r = ProducerAccess("t"), Recorder()
    r.add(access, 1, AccessMode.EXCLUSIVE)
    with pytest.raises(ProducerBusy, match="existing exclusive producer"):
        r.add(access, 2, AccessMode.SHARED)


def test_exclusive_access_is_free_again_once_the_holder_leaves():
    access, r = ProducerAccess("t"), Recorder()
    r.add(access, 1, AccessMode.EXCLUSIVE)
    access.remove(1)
    assert r.add(access, 2, AccessMode.EXCLUSIVE)
    assert access.exclusive_producer == "p2"


def test_exclusive_with_fencing_fences_connected_and_waiting_producers():
    access, r = ProducerAccess("t"), Recorder()
    r.add(access, 1, AccessMode.SHARED)
    r.add(access, 2, AccessMode.SHARED)
    assert r.add(access, 3, AccessMode.WAIT_FOR_EXCLUSIVE) is False
    assert r.add(access, 4, AccessMode.EXCLUSIVE_WITH_FENCING)
    assert sorted(pid for pid, _ in r.fenced) == [1, 2, 3]
    assert all(isinstance(error, ProducerFenced) for _, error in r.fenced)
    assert access.exclusive_producer == "p4" and access.waiting == []
    access.remove(1)  # the fenced producer's session ending later changes nothing
    assert access.exclusive_producer == "p4"


def test_wait_for_exclusive_producers_are_granted_in_fifo_order():
    access, r = ProducerAccess("t"), Recorder()
    assert r.add(access, 1, AccessMode.WAIT_FOR_EXCLUSIVE)  # nobody there: exclusive at once
    assert r.add(access, 2, AccessMode.WAIT_FOR_EXCLUSIVE) is False
    assert r.add(access, 3, AccessMode.WAIT_FOR_EXCLUSIVE) is False
    assert access.waiting == ["p2", "p3"] and r.granted == []
    access.remove(1)
    assert r.granted == [2] and access.exclusive_producer == "p2"
    access.remove(2)
    assert r.granted == [2, 3] and access.exclusive_producer == "p3"


def test_wait_for_exclusive_waits_for_shared_producers_to_leave():
    access, r = ProducerAccess("t"), Recorder()
    r.add(access, 1, AccessMode.SHARED)
    r.add(access, 2, AccessMode.SHARED)
    assert r.add(access, 3, AccessMode.WAIT_FOR_EXCLUSIVE) is False
    with pytest.raises(ProducerBusy):  # shared producers may not jump the queue
        r.add(access, 4, AccessMode.SHARED)
    access.remove(1)
    assert r.granted == []
    access.remove(2)
    assert r.granted == [3]


def test_a_waiting_producer_that_gives_up_leaves_the_queue():
    access, r = ProducerAccess("t"), Recorder()
    r.add(access, 1, AccessMode.EXCLUSIVE)
    r.add(access, 2, AccessMode.WAIT_FOR_EXCLUSIVE)
    r.add(access, 3, AccessMode.WAIT_FOR_EXCLUSIVE)
    access.remove(2)
    access.remove(1)
    assert r.granted == [3]


def test_producer_names_are_unique_on_a_topic():
    access, r = ProducerAccess("t"), Recorder()
    r.add(access, 1, AccessMode.SHARED, name="writer")
    with pytest.raises(ProducerBusy, match="'writer' is already connected"):
        r.add(access, 2, AccessMode.SHARED, name="writer")
    access.remove(1)
    assert r.add(access, 3, AccessMode.SHARED, name="writer")
