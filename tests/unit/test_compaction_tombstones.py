"""Tombstones kept for compacted readers behind a compaction (issue 30, item 5): which ones a run keeps
(broker_core.core.persistent.compaction), the floor a topic's runs keep them from and the run made again for
a reader that came meanwhile (broker_core.core.persistent.compacted_readers, compaction_runs), and how they
are dropped once no compacted reader can be behind them."""
from __future__ import annotations

import asyncio

import pytest

from broker_core.clock import FakeClock
from broker_core.config import BrokerConfig
from broker_core.core.persistent.compacted_readers import GoneReaders, TombstoneKeeping
from broker_core.core.persistent.compaction import FOLDER, CompactionResult, load
from broker_core.core.persistent.compaction_runs import TopicCompaction
from broker_core.protocol import codec
from broker_core.storage.compacted import CompactedLedger
from tests.unit.test_compaction import Topic, values

HOLD_MS = 60_000


@pytest.fixture
def topic(tmp_path) -> Topic:
    return Topic(tmp_path)


def deleted_twice(topic: Topic) -> tuple[int, int]:
    """raw 0:k1=v1 1:k2=v2 2:k1=<tombstone> 3:k2=<tombstone> 4:k3=v3; returns the tombstones' offsets."""
    topic.send("k1", b"v1")
    topic.send("k2", b"v2")
    first = topic.send("k1", b"")
    second = topic.send("k2", b"", null_value=True)
    topic.send("k3", b"v3")
    return first, second


# ------------------------------------------------------------------ what a run keeps
def test_without_a_floor_a_run_keeps_no_tombstone_as_pulsar(topic):
    first, second = deleted_twice(topic)
    result = topic.compact()
    assert values(result.ledger) == {4: ("k3", b"v3")}
    assert result.tombstones == 0 and result.ledger.tombstones == 0
    assert result.dropped_tombstone == second and result.ledger.tombstones_from == result.ledger.horizon


def test_a_run_keeps_every_tombstone_at_or_after_the_floor(topic):
    first, second = deleted_twice(topic)
    result = topic.compact(keep_tombstones_from=first)
    assert values(result.ledger) == {first: ("k1", b""), second: ("k2", b""), 4: ("k3", b"v3")}
    assert (result.tombstones, result.dropped_tombstone, result.ledger.tombstones_from) == (2, -1, first)
    assert result.kept == 3 and result.removed == 2  # k1=v1 and k2=v2


def test_tombstones_before_the_floor_go_with_their_key(topic):
    first, second = deleted_twice(topic)
    result = topic.compact(keep_tombstones_from=second)
    assert values(result.ledger) == {second: ("k2", b""), 4: ("k3", b"v3")}
    assert result.dropped_tombstone == first


def test_a_kept_tombstone_is_the_produced_message_null_value_included(topic):
    first, second = deleted_twice(topic)
    ledger = topic.compact(keep_tombstones_from=0).ledger
    entry = ledger.entry_at_or_after(second)
    _, _, start = codec.split_broker_entry(entry.data)
    meta, payload = codec.decode_entry(memoryview(entry.data)[start:])
    assert meta.partition_key == "k2" and meta.null_value and bytes(payload) == b""


def test_a_tombstone_inside_a_batch_is_kept_as_a_single_message(topic):
    batch = topic.send_batch([("a", b"a1"), ("b", b"b1"), ("a", b"")])
    result = topic.compact(keep_tombstones_from=0)
    assert values(result.ledger) == {batch + 1: ("b", b"b1"), batch + 2: ("a", b"")}
    assert result.tombstones == 1


def test_a_key_set_again_after_its_tombstone_keeps_only_its_value(topic):
    topic.send("k", b"v1")
    topic.send("k", b"")
    again = topic.send("k", b"v2")
    result = topic.compact(keep_tombstones_from=0)
    assert values(result.ledger) == {again: ("k", b"v2")} and result.tombstones == 0


def test_the_next_run_drops_kept_tombstones_once_the_floor_passed_them(topic):
    first, second = deleted_twice(topic)
    kept = topic.compact(keep_tombstones_from=0).ledger
    assert kept.tombstones == 2
    topic.send("k4", b"v4")  # 5
    held = topic.compact(kept, keep_tombstones_from=second).ledger  # a reader still before k2's tombstone
    assert values(held) == {second: ("k2", b""), 4: ("k3", b"v3"), 5: ("k4", b"v4")} and held.tombstones == 1
    topic.send("k4", b"v5")  # 6
    dropped = topic.compact(held).ledger  # no compacted reader any more
    assert values(dropped) == {4: ("k3", b"v3"), 6: ("k4", b"v5")} and dropped.tombstones == 0
    assert dropped.size_bytes < held.size_bytes


def test_the_kept_tombstones_and_their_floor_are_reloaded(topic):
    first, _ = deleted_twice(topic)
    topic.compact(keep_tombstones_from=first)
    loaded = load(topic.folder / FOLDER)
    assert (loaded.tombstones, loaded.tombstones_from, loaded.horizon) == (2, first, 5)


def test_a_ledger_written_before_tombstones_were_kept_loads_as_keeping_none(topic):
    import json
    deleted_twice(topic)
    topic.compact()
    pointer = topic.folder / FOLDER / "HORIZON"
    state = json.loads(pointer.read_bytes())
    del state["tombstones"], state["tombstones_from"]
    pointer.write_text(json.dumps(state))
    loaded = load(topic.folder / FOLDER)
    assert (loaded.tombstones, loaded.tombstones_from) == (0, loaded.horizon)


def test_a_sealed_ledger_is_not_current_until_made_so_and_a_discarded_one_leaves_nothing(topic):
    deleted_twice(topic)
    before = topic.compact()
    topic.send("k5", b"v5")
    sealed = topic.compact(before.ledger, current=False).sealed
    assert load(topic.folder / FOLDER).horizon == before.ledger.horizon
    sealed.discard()
    assert [p.name for p in (topic.folder / FOLDER).iterdir() if p.suffix == ".ledger"] == \
        [before.ledger.path.name]
    assert load(topic.folder / FOLDER).horizon == before.ledger.horizon


# ------------------------------------------------------------------ the floor
def test_gone_readers_hold_their_position_for_the_hold_then_are_forgotten():
    clock = FakeClock()
    gone = GoneReaders(clock, HOLD_MS)
    gone.left("reader-1", 7)
    gone.left("reader-2", 3)
    assert sorted(gone.positions()) == [3, 7]
    gone.back("reader-2")  # it subscribed again: it counts as a subscription now
    assert gone.positions() == [7]
    clock.advance(HOLD_MS)
    assert gone.positions() == [] and len(gone) == 0


def test_gone_readers_are_forgotten_as_others_leave_even_without_a_compaction():
    clock = FakeClock()
    gone = GoneReaders(clock, HOLD_MS)
    for i in range(100):
        gone.left(f"reader-{i}", i)
        clock.advance(HOLD_MS // 10)
    assert len(gone) == 10  # those gone less than the hold ago: memory does not grow with every reader ever


def test_a_reader_leaving_again_is_held_from_its_last_leaving():
    clock = FakeClock()
    gone = GoneReaders(clock, HOLD_MS)
    gone.left("reader", 3)
    clock.advance(HOLD_MS - 1)
    gone.left("other", 9)
    gone.left("reader", 5)
    clock.advance(2)
    assert sorted(gone.positions()) == [5, 9]


def test_without_a_hold_a_gone_reader_is_forgotten_at_once():
    gone = GoneReaders(FakeClock(), 0)
    gone.left("reader", 7)
    assert gone.positions() == []


def test_the_floor_is_the_lowest_position_and_none_without_compacted_readers():
    positions: list[int] = []
    keeping = TombstoneKeeping(FakeClock(), HOLD_MS, lambda: positions, None)
    assert keeping.floor() is None
    positions.extend([12, 5, 9])
    assert keeping.floor() == 5


def test_after_a_load_the_loaded_ledgers_floor_holds_for_the_hold():
    clock = FakeClock()
    loaded = CompactedLedger.empty(horizon=20)
    loaded.tombstones_from = 8
    positions = [15]
    keeping = TombstoneKeeping(clock, HOLD_MS, lambda: positions, loaded)
    assert keeping.floor() == 8  # the readers of before the restart are not back yet
    clock.advance(HOLD_MS)
    assert keeping.floor() == 15


def result(dropped: int) -> CompactionResult:
    return CompactionResult(CompactedLedger.empty(10), read=0, kept=0, dropped_tombstone=dropped)


@pytest.mark.parametrize("positions, dropped, redo", [
    ([], 7, None),  # no compacted reader: nothing to redo
    ([8], 7, None),  # every reader is past what the run dropped
    ([7], 7, 4),  # a reader at a dropped tombstone: again, from min(its position, the previous horizon)
    ([3], 7, 3),
    ([2], -1, None),  # nothing dropped
])
def test_a_run_is_made_again_only_when_a_reader_known_now_is_at_or_before_a_dropped_tombstone(positions, dropped,
                                                                                               redo):
    keeping = TombstoneKeeping(FakeClock(), HOLD_MS, lambda: positions, None)
    assert keeping.redo_floor(result(dropped), CompactedLedger.empty(horizon=4)) == redo


def test_without_a_previous_ledger_a_run_made_again_keeps_every_tombstone():
    keeping = TombstoneKeeping(FakeClock(), HOLD_MS, lambda: [7], None)
    assert keeping.redo_floor(result(9), None) == 0


# ------------------------------------------------------------------ a topic's runs
class Runs:
    """A topic's log and its TopicCompaction, with the compacted readers' positions the test sets."""

    def __init__(self, tmp_path, config: BrokerConfig | None = None) -> None:
        self.topic = Topic(tmp_path)
        self.positions: list[int] = []
        self.clock = FakeClock()
        self.compaction = TopicCompaction(
            "t", tmp_path, config or BrokerConfig(), self.clock, self.topic.read_raw, self.topic.log.sync,
            lambda offset: 0, lambda: None, lambda: False, lambda: self.positions)


def test_a_topic_keeps_the_tombstones_from_its_slowest_compacted_reader_then_drops_them(tmp_path):
    async def scenario():
        runs = Runs(tmp_path)
        first, second = deleted_twice(runs.topic)
        runs.positions[:] = [1]  # a reader that read k1=v1
        await runs.compaction.trigger()
        ledger = runs.compaction.compacted
        assert ledger.tombstones == 2 and runs.compaction.record.stats()["compactedTombstonesCount"] == 2
        runs.positions[:] = [5]  # it read both tombstones
        runs.topic.send("k3", b"v4")
        await runs.compaction.trigger()
        assert runs.compaction.compacted.tombstones == 0
        assert runs.compaction.record.stats()["compactedTombstonesCount"] == 0

    asyncio.run(scenario())


def test_a_reader_that_comes_during_a_run_before_a_tombstone_it_drops_has_the_run_made_again(tmp_path):
    async def scenario():
        runs = Runs(tmp_path)
        runs.topic.send("k1", b"v1")
        await runs.compaction.trigger()  # horizon 1, no reader
        tombstone = runs.topic.send("k1", b"")
        runs.topic.send("k2", b"v2")
        run = runs.compaction.trigger()  # no reader known: the run drops k1's tombstone
        runs.positions[:] = [0]  # a TableView subscribes meanwhile and reads k1=v1 from the previous view
        outcome = await run
        assert runs.compaction.status == "SUCCESS"
        assert values(runs.compaction.compacted) == {tombstone: ("k1", b""), 2: ("k2", b"v2")}
        assert outcome.tombstones == 1 and runs.compaction.compacted.tombstones_from == 0
        leftovers = [p for p in (tmp_path / FOLDER).iterdir() if p.suffix in (".ledger", ".tmp")]
        assert leftovers == [runs.compaction.compacted.path]  # the first attempt's ledger was removed

    asyncio.run(scenario())


def test_a_reader_that_comes_during_a_run_past_what_it_drops_changes_nothing(tmp_path):
    async def scenario():
        runs = Runs(tmp_path)
        deleted_twice(runs.topic)
        run = runs.compaction.trigger()
        runs.positions[:] = [4]
        await run
        assert runs.compaction.compacted.tombstones == 0 and runs.compaction.compacted.tombstones_from == 5

    asyncio.run(scenario())


def test_after_a_restart_the_tombstones_kept_before_stay_for_the_hold(tmp_path):
    async def scenario():
        config = BrokerConfig(compactionTombstoneRetentionSeconds=60)
        runs = Runs(tmp_path, config)
        first, _ = deleted_twice(runs.topic)
        runs.positions[:] = [first]
        await runs.compaction.trigger()
        restarted = Runs(tmp_path, config)  # the same folder: the log and the compacted ledger are reloaded
        restarted.topic.send("k5", b"v5")
        await restarted.compaction.trigger()  # its readers are not back yet
        assert restarted.compaction.compacted.tombstones == 2
        restarted.clock.advance(60_000)
        restarted.topic.send("k5", b"v6")
        await restarted.compaction.trigger()
        assert restarted.compaction.compacted.tombstones == 0

    asyncio.run(scenario())
