"""Message deduplication (seed "Message deduplication", PIP-6): state, snapshots and recovery."""
import json

from broker_core.protocol import codec, pulsar_api_pb2
from broker_core.core.persistent.dedup import SNAPSHOT_FILE, Deduplication, SequenceKey
from broker_core.storage.log import ManagedLog


def metadata(producer, seq, highest=None, chunk=None):
    meta = pulsar_api_pb2.MessageMetadata(producer_name=producer, sequence_id=seq, publish_time=1)
    if highest is not None:
        meta.highest_sequence_id = highest
        meta.num_messages_in_batch = highest - seq + 1
    if chunk is not None:
        meta.chunk_id, meta.num_chunks_from_msg = chunk
        meta.uuid = f"{producer}-{seq}"
    return meta


def append(log, meta):
    count = meta.num_messages_in_batch if meta.HasField("num_messages_in_batch") else 1
    data = codec.broker_entry_prefix(1, log.end_offset + count - 1) + codec.encode_entry(meta, b"x")
    return log.append(data, count, 1)


def key(*args, **kw):
    return SequenceKey.of(metadata(*args, **kw))


def test_sequence_id_not_above_the_highest_pushed_is_a_duplicate(tmp_path):
    dedup = Deduplication(tmp_path)
    assert not dedup.is_duplicate(key("a", 0))
    assert not dedup.is_duplicate(key("a", 1))
    assert dedup.is_duplicate(key("a", 1))
    assert dedup.is_duplicate(key("a", 0))
    assert not dedup.is_duplicate(key("b", 0))  # per producer name


def test_a_batch_counts_by_its_highest_sequence_id(tmp_path):
    dedup = Deduplication(tmp_path)
    assert not dedup.is_duplicate(key("a", 0, highest=9))
    assert dedup.is_duplicate(key("a", 5))
    assert dedup.is_duplicate(key("a", 9))
    assert not dedup.is_duplicate(key("a", 10, highest=19))


def test_only_the_last_chunk_of_a_chunked_message_is_checked(tmp_path):
    dedup = Deduplication(tmp_path)
    assert not dedup.is_duplicate(key("a", 7, chunk=(0, 3)))
    assert not dedup.is_duplicate(key("a", 7, chunk=(1, 3)))
    assert not dedup.is_duplicate(key("a", 7, chunk=(2, 3)))
    assert dedup.is_duplicate(key("a", 7, chunk=(2, 3)))  # the whole message again: its last chunk is dropped
    assert not dedup.is_duplicate(key("a", 7, chunk=(0, 3)))  # earlier chunks pass (consumers expire them)


def test_reconnecting_producer_is_told_the_highest_persisted_sequence_id(tmp_path):
    dedup = Deduplication(tmp_path)
    keys = [key("a", 0, highest=4)]
    assert not dedup.is_duplicate(keys[0])
    assert dedup.last_sequence_id("a") == -1  # pushed, not yet durable
    dedup.confirmed(keys, end_offset=5)
    assert dedup.last_sequence_id("a") == 4
    assert dedup.last_sequence_id("unknown") == -1


def test_a_failed_append_falls_back_to_what_is_stored(tmp_path):
    dedup = Deduplication(tmp_path)
    first, second = key("a", 0), key("a", 1)
    dedup.is_duplicate(first)
    dedup.confirmed([first], 1)
    dedup.is_duplicate(second)
    dedup.failed([second])
    assert not dedup.is_duplicate(key("a", 1))  # the retry of the failed send is stored
    fresh = key("b", 0)
    dedup.is_duplicate(fresh)
    dedup.failed([fresh])
    assert not dedup.is_duplicate(key("b", 0))


def test_a_snapshot_is_due_every_interval_entries(tmp_path):
    dedup = Deduplication(tmp_path, snapshot_interval=2)
    assert not dedup.confirmed([key("a", 0)], 1)
    assert dedup.confirmed([key("a", 1)], 2)
    dedup.snapshot(2)
    assert json.loads((tmp_path / SNAPSHOT_FILE).read_text()) == {"offset": 2, "producers": {"a": 1}}
    assert not dedup.confirmed([key("a", 2)], 3)


def test_recovery_replays_the_log_after_the_snapshot(tmp_path):
    log = ManagedLog(tmp_path / "log")
    append(log, metadata("a", 0))
    append(log, metadata("a", 1, highest=3))
    dedup = Deduplication(tmp_path)
    dedup.recover(log)
    dedup.snapshot(log.end_offset)  # covers a:3
    append(log, metadata("a", 4))
    append(log, metadata("b", 10))
    append(log, metadata("c", 5, chunk=(0, 2)))  # an incomplete chunked message records nothing
    log.sync()
    recovered = Deduplication(tmp_path)
    assert recovered.recover(log) == 3  # only the entries after the snapshot
    assert recovered.persisted == {"a": 4, "b": 10}
    assert recovered.is_duplicate(key("a", 4)) and recovered.is_duplicate(key("b", 9))
    assert not recovered.is_duplicate(key("c", 5, chunk=(1, 2)))
    log.close()


def test_recovery_without_a_snapshot_replays_the_whole_log(tmp_path):
    log = ManagedLog(tmp_path / "log")
    for seq in range(5):
        append(log, metadata("a", seq))
    dedup = Deduplication(tmp_path)
    assert dedup.recover(log) == 5
    assert dedup.last_sequence_id("a") == 4
    log.close()


def test_an_unreadable_snapshot_is_rebuilt_from_the_whole_log(tmp_path, caplog):
    log = ManagedLog(tmp_path / "log")
    append(log, metadata("a", 3))
    (tmp_path / SNAPSHOT_FILE).write_text('{"offset": 1, "producers": {"a": 99}')  # torn
    dedup = Deduplication(tmp_path)
    assert dedup.recover(log) == 1
    assert dedup.persisted == {"a": 3}
    assert "dedup_snapshot_unreadable" in caplog.text
    log.close()
