"""Compaction of one topic partition's log (broker_core.core.persistent.compaction): the latest message per
key, tombstones, keyless messages, batches split, chunked messages kept whole, the horizon, a second run
building on the first, leftovers of a killed run, memory by keys."""
from __future__ import annotations

import gc
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from broker_core.core.persistent.compaction import FOLDER, compact, load
from broker_core.protocol import codec, pulsar_api_pb2
from broker_core.storage.log import ManagedLog

REPO = Path(__file__).resolve().parents[2]


class Topic:
    """A log and what a producer would write to it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.log = ManagedLog(folder / "log", max_segment_bytes=1 << 16)
        self.sequence = 0

    def _meta(self, **fields) -> pulsar_api_pb2.MessageMetadata:
        self.sequence += 1
        return pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=self.sequence,
                                              publish_time=1000 + self.sequence, **fields)

    def send(self, key: str | None, value: bytes, **fields) -> int:
        meta = self._meta(**fields) if key is None else self._meta(partition_key=key, **fields)
        data = codec.broker_entry_prefix(5, self.log.end_offset) + codec.encode_entry(meta, value)
        return self.log.append(data, 1, meta.publish_time).offset

    def send_batch(self, messages: list[tuple[str | None, bytes]]) -> int:
        meta = self._meta(num_messages_in_batch=len(messages))
        payload = codec.encode_batch([codec.BatchMessage(v, k, properties={"n": str(i)}, event_time=77)
                                      for i, (k, v) in enumerate(messages)])
        return self.log.append(codec.encode_entry(meta, payload), len(messages), meta.publish_time).offset

    def send_chunked(self, key: str, value: bytes, chunks: int, *, uuid: str, only: range | None = None) -> list[int]:
        size = -(-len(value) // chunks)
        offsets = []
        for i in (only if only is not None else range(chunks)):
            meta = self._meta(partition_key=key, uuid=uuid, chunk_id=i, num_chunks_from_msg=chunks,
                              total_chunk_msg_size=len(value))
            part = value[i * size:(i + 1) * size]
            offsets.append(self.log.append(codec.encode_entry(meta, part), 1, meta.publish_time).offset)
        return offsets

    def read_raw(self, start: int, end: int):
        return self.log.read(start, 100, 1 << 20, end)

    def compact(self, previous=None, **options):
        self.log.sync()
        return compact(self.folder / FOLDER, previous, self.read_raw, self.log.durable_end_offset, **options)


def values(ledger) -> dict:
    """{offset: (key, value)} of every message the compacted ledger holds."""
    out = {}
    for entry in ledger.read(0, 1 << 20, 1 << 30):
        _, _, start = codec.split_broker_entry(entry.data)
        meta, payload = codec.decode_entry(memoryview(entry.data)[start:])
        assert entry.num_messages == 1 and not meta.HasField("num_messages_in_batch")
        out[entry.offset] = (meta.partition_key if meta.HasField("partition_key") else None, bytes(payload))
    return out


@pytest.fixture
def topic(tmp_path: Path) -> Topic:
    return Topic(tmp_path)


def test_the_latest_value_of_each_key_is_kept_and_a_tombstone_removes_its_key(topic):
    topic.send("a", b"a1")
    topic.send("b", b"b1")
    a2 = topic.send("a", b"a2")
    topic.send("c", b"c1")
    topic.send("c", b"")  # tombstone
    b2 = topic.send("b", b"b2")
    result = topic.compact()
    assert values(result.ledger) == {a2: ("a", b"a2"), b2: ("b", b"b2")}
    assert (result.read, result.kept, result.removed) == (6, 2, 4)
    assert result.ledger.horizon == topic.log.end_offset
    assert result.ledger.last_offset == b2


def test_a_null_value_message_is_a_tombstone_too(topic):
    topic.send("a", b"a1")
    topic.send("a", b"", null_value=True)
    assert values(topic.compact().ledger) == {}


def test_keyless_messages_are_dropped_unless_retain_null_key(topic):
    topic.send(None, b"x")
    k = topic.send("k", b"v")
    assert values(topic.compact().ledger) == {k: ("k", b"v")}
    assert values(topic.compact(retain_null_key=True).ledger) == {0: (None, b"x"), k: ("k", b"v")}


def test_batches_are_split_and_each_kept_message_keeps_its_offset_and_metadata(topic):
    first = topic.send_batch([("a", b"a1"), ("b", b"b1"), ("a", b"a2")])
    second = topic.send_batch([("b", b""), ("c", b"c1")])
    ledger = topic.compact().ledger
    assert values(ledger) == {first + 2: ("a", b"a2"), second + 1: ("c", b"c1")}
    entry = ledger.entry_at_or_after(0)
    _, _, start = codec.split_broker_entry(entry.data)
    meta, _ = codec.decode_entry(memoryview(entry.data)[start:])
    assert entry.offset == first + 2 and meta.sequence_id == 1 + 2  # the batch's sequence id + index
    assert {kv.key: kv.value for kv in meta.properties} == {"n": "2"} and meta.event_time == 77
    assert meta.producer_name == "p" and meta.publish_time == entry.publish_time


def test_a_chunked_message_is_kept_whole_or_not_at_all(topic):
    whole = topic.send_chunked("big", b"0123456789", 3, uuid="p-1")
    topic.send_chunked("torn", b"abcdef", 3, uuid="p-2", only=range(1, 3))  # its first chunk is missing
    ledger = topic.compact().ledger
    assert sorted(values(ledger)) == whole
    assert b"".join(v for _, v in values(ledger).values()) == b"0123456789"


def test_a_newer_value_replaces_a_chunked_message(topic):
    topic.send_chunked("big", b"0123456789", 2, uuid="p-1")
    newer = topic.send("big", b"small")
    assert values(topic.compact().ledger) == {newer: ("big", b"small")}


def test_a_chunked_message_still_being_written_moves_the_horizon_back_to_its_first_chunk(topic):
    a = topic.send("a", b"a1")
    first, _ = topic.send_chunked("big", b"0123456789", 3, uuid="p-1", only=range(0, 2))
    ledger = topic.compact().ledger
    assert ledger.horizon == first and values(ledger) == {a: ("a", b"a1")}


def test_messages_after_the_horizon_are_untouched_and_a_second_run_builds_on_the_first(topic):
    topic.send("a", b"a1")
    b1 = topic.send("b", b"b1")
    first = topic.compact()
    a2 = topic.send("a", b"a2")  # after the horizon: read raw, not in the first ledger
    assert first.ledger.horizon == a2 and values(first.ledger) == {0: ("a", b"a1"), b1: ("b", b"b1")}
    topic.send("c", b"c1")
    topic.send("c", b"")
    second = topic.compact(first.ledger)
    assert values(second.ledger) == {b1: ("b", b"b1"), a2: ("a", b"a2")}
    assert second.read == 2 + 3  # the first ledger's messages, then the raw ones after its horizon
    # the raw log is unchanged by compaction
    assert [e.offset for e in topic.log.read(0, 100, 1 << 20)] == list(range(5))


def test_the_second_run_does_not_need_the_raw_messages_below_the_first_horizon(topic):
    topic.send("a", b"a1")
    first = topic.compact()
    topic.send("b", b"b1")

    def no_reads_below_horizon(start, end):
        assert start >= first.ledger.horizon
        return topic.read_raw(start, end)

    topic.log.sync()
    second = compact(topic.folder / FOLDER, first.ledger, no_reads_below_horizon, topic.log.durable_end_offset)
    assert values(second.ledger) == {0: ("a", b"a1"), 1: ("b", b"b1")}


def test_the_current_state_is_reloaded_and_a_killed_runs_leftovers_are_removed(topic):
    topic.send("a", b"a1")
    made = topic.compact().ledger
    folder = topic.folder / FOLDER
    (folder / ".dead.tmp").write_bytes(b"half a ledger")
    (folder / "00000000000000000009-dead.ledger").write_bytes(b"never made current")
    loaded = load(folder)
    assert loaded.horizon == made.horizon and values(loaded) == values(made)
    assert sorted(p.name for p in folder.iterdir()) == sorted(["HORIZON", made.path.name])


def test_a_run_stopped_midway_leaves_the_previous_state(topic):
    topic.send("a", b"a1")
    first = topic.compact()
    topic.send("a", b"a2")
    calls = iter([False, True])
    from broker_core.core.persistent.compaction import CompactionStopped
    with pytest.raises(CompactionStopped):
        topic.compact(first.ledger, stopping=lambda: next(calls, True))
    loaded = load(topic.folder / FOLDER)
    assert values(loaded) == {0: ("a", b"a1")}
    assert not [p for p in (topic.folder / FOLDER).iterdir() if p.suffix == ".tmp"]


def _compaction_peaks(folder: str) -> tuple[int, int]:
    """Peak traced memory of compacting 40 rounds of the same 50 keys, then of 400 rounds (runs in a process of
    its own: tracemalloc counts every thread's allocations, and a test process may hold other tests' threads)."""
    topic = Topic(Path(folder))
    peaks = []
    for rounds in (range(40), range(40, 400)):
        for round_ in rounds:
            topic.send_batch([(f"k{i}", b"v%d" % round_) for i in range(50)])
        topic.log.sync()
        gc.collect()
        tracemalloc.start()
        try:
            result = topic.compact()
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        assert result.kept == 50 and result.read == 50 * rounds.stop
    return peaks[0], peaks[1]


def test_memory_grows_with_keys_not_messages(tmp_path):
    code = ("import sys; from tests.unit.test_compaction import _compaction_peaks; "
            "print(*_compaction_peaks(sys.argv[1]))")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    peak_few_rounds, peak_many_rounds = map(int, done.stdout.split())
    assert peak_many_rounds < 2 * peak_few_rounds  # 10x the messages, same keys: about the same memory


def test_a_batch_the_broker_cannot_read_counts_as_one_message_of_its_key_kept_whole(topic):
    meta = topic._meta(num_messages_in_batch=3, partition_key="e")  # e.g. encrypted: its payload is opaque
    sealed = topic.log.append(codec.encode_entry(meta, b"\xff" * 40), 3, meta.publish_time).offset
    topic.send("a", b"a1")
    ledger = topic.compact().ledger
    whole = ledger.entry_at_or_after(0)
    assert (whole.offset, whole.num_messages) == (sealed, 3) and ledger.last_offset == sealed + 3
    assert load(topic.folder / FOLDER).last_offset == sealed + 3
    topic.send("e", b"newer")
    assert ledger.horizon == sealed + 4
    second = topic.compact(ledger).ledger
    assert [e.offset for e in second.read(0, 10, 1 << 20)] == [sealed + 3, sealed + 4]
    topic.send("x", b"")  # a tombstone for a key never seen
    topic.send("a", b"")
    topic.send("e", b"")
    assert topic.compact(second).ledger.last_offset == -1


def test_the_last_offset_of_a_kept_batch_the_broker_cannot_read_is_its_last_message(topic):
    meta = topic._meta(num_messages_in_batch=3, partition_key="e")
    sealed = topic.log.append(codec.encode_entry(meta, b"\xff" * 40), 3, meta.publish_time).offset
    assert topic.compact().ledger.last_offset == sealed + 2
    assert load(topic.folder / FOLDER).last_offset == sealed + 2
