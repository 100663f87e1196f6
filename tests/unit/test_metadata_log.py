"""Partitioned topics' metadata as a snapshot plus an append-only change log (broker_core.core.metadata_log):
a change costs one appended line however many topics exist, survives a restart, a torn last line is
dropped, a damaged earlier one refused, and compaction (off the event loop) loses nothing at any step."""
from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from broker_core.core.metadata import PartitionedTopicsStore
from broker_core.core.metadata_log import MapLog
from broker_core.errors import CorruptLog


def name(i: int) -> str:
    return f"persistent://public/default/t-{i}"


def changes(tmp_path) -> list:
    return sorted(tmp_path.glob("partitioned-topics.*.changes"))


def test_a_change_appends_one_line_and_leaves_the_snapshot_alone(tmp_path):
    store = PartitionedTopicsStore(tmp_path)
    for i in range(200):
        store.set(name(i), 4)
    assert not (tmp_path / "partitioned-topics.json").exists()  # no rewrite of the whole map per change
    before = sum(f.stat().st_size for f in changes(tmp_path))
    store.set(name(500), 2)
    assert sum(f.stat().st_size for f in changes(tmp_path)) - before < 100


def test_changes_survive_a_restart(tmp_path):
    store = PartitionedTopicsStore(tmp_path)
    store.set(name(1), 3)
    store.set(name(2), 5)
    store.remove(name(1))
    store.set(name(2), 6)
    assert PartitionedTopicsStore(tmp_path).topics() == {name(2): 6}


def test_a_data_folder_with_the_old_single_file_is_read_as_is(tmp_path):
    (tmp_path / "partitioned-topics.json").write_text(json.dumps({name(1): 2}))
    store = PartitionedTopicsStore(tmp_path)
    store.set(name(3), 1)
    assert PartitionedTopicsStore(tmp_path).topics() == {name(1): 2, name(3): 1}


def test_a_last_line_cut_short_by_a_crash_is_dropped_and_appending_goes_on(tmp_path):
    store = PartitionedTopicsStore(tmp_path)
    store.set(name(1), 3)
    store.close()
    with open(changes(tmp_path)[-1], "ab") as f:
        f.write(b'{"k":"persistent://public/default/t-2","v"')
    again = PartitionedTopicsStore(tmp_path)
    assert again.topics() == {name(1): 3}
    again.set(name(4), 1)
    assert PartitionedTopicsStore(tmp_path).topics() == {name(1): 3, name(4): 1}


def test_a_damaged_line_before_the_last_is_refused(tmp_path):
    store = PartitionedTopicsStore(tmp_path)
    store.set(name(1), 3)
    store.close()
    path = changes(tmp_path)[-1]
    path.write_bytes(b"garbage\n" + path.read_bytes())
    with pytest.raises(CorruptLog, match="changes"):
        PartitionedTopicsStore(tmp_path)


def test_compaction_writes_the_snapshot_off_the_loop_and_keeps_every_change(tmp_path):
    async def run() -> PartitionedTopicsStore:
        with ThreadPoolExecutor(1) as pool:
            store = PartitionedTopicsStore(tmp_path, pool)
            store._log._compact_after = 10
            for i in range(25):
                store.set(name(i), i + 1)
            store.remove(name(0))
            while store._log.compacting:
                await asyncio.sleep(0)
            return store

    store = asyncio.run(run())
    assert json.loads((tmp_path / "partitioned-topics.json").read_text())  # a snapshot was written
    assert len(changes(tmp_path)) <= 2  # the live one, and those the snapshot before the newest still needs
    expected = {name(i): i + 1 for i in range(1, 25)}
    assert store.topics() == expected == PartitionedTopicsStore(tmp_path).topics()


def test_a_crash_between_the_snapshot_and_removing_old_changes_loses_nothing(tmp_path):
    store = PartitionedTopicsStore(tmp_path)
    for i in range(5):
        store.set(name(i), 2)
    store.remove(name(1))
    store.close()
    old = {path: path.read_bytes() for path in changes(tmp_path)}
    log = MapLog(tmp_path, "partitioned-topics")
    log.load()
    log.rewrite(store.topics())  # the snapshot written, the old change files removed...
    for path, data in old.items():  # ...but as if the crash came before their removal
        path.write_bytes(data)
    assert PartitionedTopicsStore(tmp_path).topics() == store.topics()


def test_policies_are_kept_the_same_way_and_survive_a_restart_and_a_compaction(tmp_path):
    from broker_core.core.policies import NAMESPACE, TOPIC, PoliciesStore

    store = PoliciesStore(tmp_path)
    store._log._compact_after = 5
    for i in range(8):
        store.set(TOPIC, name(i), "messageTTLInSeconds", i + 1)
    store.grant(NAMESPACE, "public/default", "billing", ["consume"])
    store.forget_topic(name(0))
    store.set(TOPIC, name(1), "messageTTLInSeconds", None)
    before = sum(f.stat().st_size for f in tmp_path.glob("policies.*.changes"))
    store.set(TOPIC, name(2), "maxProducersPerTopic", 3)
    assert sum(f.stat().st_size for f in tmp_path.glob("policies.*.changes")) - before < 200
    again = PoliciesStore(tmp_path)
    assert again.get(TOPIC, name(2)) == {"messageTTLInSeconds": 3, "maxProducersPerTopic": 3}
    assert again.get(TOPIC, name(0)) == {} and again.get(TOPIC, name(1)) == {}
    assert again.permissions(NAMESPACE, "public/default") == {"billing": ["consume"]}
