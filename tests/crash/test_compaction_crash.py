"""A broker process SIGKILLed during a compaction (``PULSARLIKE_CRASH_AT_COMPACTION``: half the new ledger
written, or the new ledger durable but not yet current) restarts with the previous compacted state, without
the dead run's files, and compacts again."""
from __future__ import annotations

import pytest

from connector import Admin, Client
from tests.waiting import wait_until

pytestmark = pytest.mark.crash

TOPIC = "persistent://public/default/compacted"


def send_updates(service_url: str, rounds: range, keys: int = 20) -> None:
    with Client(service_url) as client:
        producer = client.create_producer(TOPIC, batching_enabled=True, batching_max_messages=7)
        for r in rounds:
            for k in range(keys):
                producer.send_async(b"r%d" % r, None, partition_key=f"k{k}")
        producer.flush()
        producer.close()


def compact(service_url: str) -> dict:
    with Admin(service_url) as admin:
        admin.trigger_compaction(TOPIC)
        wait_until(lambda: admin.compaction_status(TOPIC)["status"] == "SUCCESS")
        return admin.topic_internal_stats(TOPIC)["compactedLedger"]


def compacted_ledger(service_url: str) -> dict:
    with Admin(service_url) as admin:
        return admin.topic_internal_stats(TOPIC)["compactedLedger"]


@pytest.mark.parametrize("point", ["mid_write", "before_horizon"])
def test_a_broker_killed_during_compaction_restarts_with_the_previous_compacted_state(broker_process, tmp_path, point):
    data = tmp_path / "data"
    first = broker_process(data_dir=data, restartable=True)
    send_updates(first.service_url, range(3))
    before = compact(first.service_url)
    assert before["entries"] == 20 and before["horizon"] == 60
    first.terminate()

    doomed = broker_process(data_dir=data, env={"PULSARLIKE_CRASH_AT_COMPACTION": point}, restartable=True)
    send_updates(doomed.service_url, range(3, 6), keys=30)  # 10 new keys, 90 more messages
    with Admin(doomed.service_url) as admin:
        try:
            admin.trigger_compaction(TOPIC)
        except Exception:  # the broker may die before it answers
            pass
    assert doomed.proc.wait(30) == -9  # SIGKILLed by the crash point

    survivor = broker_process(data_dir=data, restartable=True)
    assert compacted_ledger(survivor.service_url) == before  # the previous state, loaded at topic load
    folder = data / "topics"
    leftovers = [p.name for p in folder.rglob("compacted/*") if p.suffix in (".tmp", ".ledger")]
    assert len(leftovers) == 1, leftovers  # only the current ledger: the dead run's files were removed
    after = compact(survivor.service_url)
    assert after["entries"] == 30 and after["horizon"] == 150
