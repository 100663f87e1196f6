"""Dispatch over the real ManagedLog (an EntrySource on disk) instead of the in-memory fake."""
from __future__ import annotations

from pathlib import Path

from broker_core.storage.log import ManagedLog
from dispatch import SubType, Subscription
from dispatch.testing import RecordingConsumer, make_cursor


def test_exclusive_subscription_reads_a_managed_log_up_to_its_durable_end(tmp_path: Path) -> None:
    log = ManagedLog(tmp_path / "t")
    try:
        for i in range(10):
            log.append(b"entry-%d" % i, 3, 0)
        sub = Subscription("sub", "t", -1, log, make_cursor())  # type: ignore[arg-type]
        c = RecordingConsumer(1)
        sub.add_consumer(c, SubType.EXCLUSIVE)
        sub.flow(c, 1000)
        durable = log.durable_end_offset
        assert all(d.entry.end_offset <= durable for d in c.deliveries())
        log.sync()
        sub.on_new_entries()
        assert c.received() == list(range(0, 30, 3))
        assert c.deliveries()[4].entry.data == b"entry-4"
        sub.acknowledge_cumulative(c, 29)
        assert sub.backlog == 0
    finally:
        log.close()


def test_dispatch_does_no_per_message_work_for_large_batches(tmp_path: Path) -> None:
    # 2,000 entries of 1,000 messages: per-entry bookkeeping only, so this is instant
    log = ManagedLog(tmp_path / "t")
    try:
        log.append_many([(b"x" * 100, 1000, 0)] * 2000)
        log.sync()
        sub = Subscription("sub", "t", -1, log, make_cursor(),  # type: ignore[arg-type]
                           max_unacked_per_consumer=0)  # all 2M messages in flight at once
        c = RecordingConsumer(1)
        sub.add_consumer(c, SubType.EXCLUSIVE)
        sub.flow(c, 2_000_000)
        assert c.msg_out_counter == 2_000_000
        assert len(c.pending) == 2000
        assert sub.acknowledge_cumulative(c, 1_999_999) == 2_000_000
        assert c.unacked_messages == 0
    finally:
        log.close()
