"""A process killed in the middle of a frame write leaves a log holding an exact prefix of its entries.

The child appends 20 deterministic entries, syncing after each and printing each acknowledged end
offset; ``PULSARLIKE_CRASH_AT_WRITE=N`` makes it write half of its N-th frame and SIGKILL itself.
"""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from broker_core.storage.log import ManagedLog

ENTRIES = 20
SEGMENT_BYTES = 600  # small, so the child also rolls segments before some crashes

CHILD = textwrap.dedent(f"""
    import sys
    from broker_core.storage.log import ManagedLog
    log = ManagedLog(sys.argv[1], max_segment_bytes={SEGMENT_BYTES})
    for i in range({ENTRIES}):
        log.append(bytes([i % 256]) * (40 + 17 * i), 1 + i % 3, 1000 + i)
        print(log.sync(), flush=True)
""")


def expected_entries():
    offset = 0
    for i in range(ENTRIES):
        yield offset, bytes([i % 256]) * (40 + 17 * i), 1 + i % 3, 1000 + i
        offset += 1 + i % 3


@pytest.mark.crash
@pytest.mark.parametrize("crash_at", range(1, ENTRIES + 1))
def test_a_torn_frame_write_recovers_to_an_exact_prefix(tmp_path, crash_at):
    env = dict(os.environ, PULSARLIKE_CRASH_AT_WRITE=str(crash_at))
    child = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "log")], env=env,
                           capture_output=True, text=True, timeout=60)
    assert child.returncode == -signal.SIGKILL, child.stderr
    acknowledged = [int(line) for line in child.stdout.split()]
    assert len(acknowledged) == crash_at - 1

    log = ManagedLog(tmp_path / "log", max_segment_bytes=SEGMENT_BYTES)
    stored = log.read(0, 1000)
    want = list(expected_entries())[:crash_at - 1]
    assert [(e.offset, e.data, e.num_messages, e.publish_time) for e in stored] == want
    assert all(end <= log.end_offset for end in acknowledged)
    assert log.end_offset == log.durable_end_offset == (acknowledged[-1] if acknowledged else 0)
    assert log.append(b"next", 1, 0).offset == log.end_offset - 1
    log.sync()
    log.close()
    assert ManagedLog(tmp_path / "log").read(0, 1000)[-1].data == b"next"
