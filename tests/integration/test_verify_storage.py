"""``pulsarlike admin topics verify`` against a real broker process restarted on damaged files (a flipped byte
in a sealed segment, a damaged copy of a cursor): the CLI (over gRPC and over REST) and the REST routes with
real HTTP report exactly the damaged range and the damaged copy, exit 3, and change nothing in the data dir
-- the topic is not even loaded for it. Once the topic is loaded (its cursor recovered), the verification
runs under its running log and still finds the range no read has reached."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from broker_core.storage.cursor_store import CursorStore
from broker_core.storage.format import HEADER_SIZE, decode_header
from connector import Admin, Client, ConsumerType, MessageId
from tests.brokers import BrokerProcess, restartable_port
from tests.waiting import wait_until

TOPIC = "persistent://public/default/verified"
SOUND = "persistent://public/default/sound"
MESSAGES, DAMAGED, S_ACKED = 1000, 250, 300
CONFIG = ("--set", "managedLedgerMaxEntriesPerLedger=100", "--log-level", "WARNING")
SEGMENT = "00000000000000000200.log"


def topic_folder(data_dir: Path, local: str = "verified") -> Path:
    return data_dir / "topics" / "persistent" / "public" / "default" / local


def stored_copies(data_dir: Path):
    """``s``'s usable copies, newest first (read only)."""
    stored = [s for s in CursorStore(topic_folder(data_dir) / "cursors").load() if s.name == "s"]
    return stored[0].usable if stored else ()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """1,000 unbatched messages on ``verified`` (segments of 100 entries), ``s`` acknowledged 0..299 with two
    saved copies, ``other`` nothing; 10 messages on ``sound``; stopped cleanly."""
    data_dir = tmp_path_factory.mktemp("pristine")
    broker = BrokerProcess(data_dir, *CONFIG).start()
    try:
        with Admin(broker.service_url) as admin, Client(broker.service_url) as client:
            admin.create_topic(TOPIC)
            for subscription in ("s", "other"):  # other acknowledges nothing: retention keeps every segment
                admin.create_subscription(TOPIC, subscription, MessageId.earliest)
            producer = client.create_producer(TOPIC)
            for i in range(MESSAGES):
                producer.send(f"m-{i}".encode())
            sound = client.create_producer(SOUND)
            for i in range(10):
                sound.send(b"fine")
            consumer = client.subscribe(TOPIC, "s", consumer_type=ConsumerType.Exclusive)
            for half in (S_ACKED // 2, S_ACKED // 2):
                for _ in range(half):
                    msg = consumer.receive(timeout_millis=10_000)
                consumer.acknowledge_cumulative(msg)
                last = msg.message_id().entry_id()
                assert wait_until(lambda: [c.cursor.mark_delete_offset for c in stored_copies(data_dir)][:1] == [last])
            consumer.close()
        assert broker.terminate() == 0
    finally:
        broker.stop()
    assert len(stored_copies(data_dir)) == 2
    return data_dir


def frame_of(segment: Path, offset: int) -> tuple[int, int]:
    """(byte, size) of the frame holding ``offset``."""
    raw, position = segment.read_bytes(), 0
    while position < len(raw):
        header = decode_header(raw[position:position + HEADER_SIZE])
        if header.offset == offset:
            return position, header.frame_size
        position += header.frame_size
    raise AssertionError(f"no frame of offset {offset} in {segment}")


def flip(path: Path, position: int) -> None:
    raw = bytearray(path.read_bytes())
    raw[position] ^= 0x20
    path.write_bytes(bytes(raw))


@pytest.fixture
def damaged(pristine, tmp_path) -> tuple[Path, dict, str]:
    """A copy of the data dir with a flipped byte in the frame of offset 250 and in ``s``'s newest copy; returns
    (data dir, the range expected, the damaged copy's file)."""
    data_dir = tmp_path / "data"
    shutil.copytree(pristine, data_dir)
    position, size = frame_of(topic_folder(data_dir) / SEGMENT, DAMAGED)
    flip(topic_folder(data_dir) / SEGMENT, position + size - 3)
    newest = stored_copies(data_dir)[0].file
    copy = topic_folder(data_dir) / "cursors" / newest
    flip(copy, copy.stat().st_size - 3)  # in its state: its header still proves it the newest
    expected = {"firstOffset": DAMAGED, "lastOffset": DAMAGED, "messages": 1, "position": position,
                "resumePosition": position + size, "reason": "CRC mismatch"}
    return data_dir, expected, newest


def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.name != "broker.lock"}


def cli(url: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "broker_core.cli", "admin", "--admin-url", url, "topics", "verify",
                           *args], capture_output=True, text=True, timeout=120)


def http_get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=60) as reply:
        assert reply.status == 200
        return json.loads(reply.read())


def damage_of(answer: dict, topic: str = TOPIC) -> tuple[list, list]:
    """(the damaged ranges by segment file, the damaged cursor copies) of ``topic`` in an answer."""
    [found] = [t for t in answer["topics"] if t["topic"] == topic]
    ranges = [(seg["file"], r) for seg in found["segments"] for r in seg["damaged"]]
    copies = [(c["subscription"], copy["file"], copy["damage"]) for c in found["cursors"] for copy in c["copies"]
              if not copy["ok"]]
    return ranges, copies


def test_verify_reports_the_damage_of_a_stopped_brokers_files_and_changes_nothing(broker_process, damaged):
    data_dir, expected, newest = damaged
    web_port = restartable_port()
    broker = broker_process(*CONFIG, "--set", f"webServicePort={web_port}", data_dir=data_dir)
    web = f"http://127.0.0.1:{web_port}"
    before = snapshot(data_dir)

    done = cli(broker.service_url, TOPIC)  # the CLI's default transport: the broker's gRPC admin
    assert done.returncode == 3, done.stderr
    assert f"{SEGMENT}: offsets {DAMAGED}..{DAMAGED} (1 message) lost at bytes {expected['position']}.." in done.stdout
    assert f"cursor s: {newest}: CRC mismatch; recovered to its last good copy" in done.stdout
    assert "1 topic partition verified" in done.stdout and "1 damaged range (1 message lost)" in done.stdout

    answer = json.loads(cli(broker.service_url, TOPIC, "--json").stdout)
    assert answer["ok"] is False and answer["topics"][0]["live"] is False
    assert damage_of(answer) == ([(SEGMENT, expected)], [("s", newest, "CRC mismatch")])
    assert answer["totals"]["messagesLost"] == 1 and answer["totals"]["cursorProblems"] == 1
    assert [s["frames"] for s in answer["topics"][0]["segments"]] == [100, 100, 99] + [100] * 7

    everything = cli(broker.service_url, "--all", "--json")
    assert everything.returncode == 3
    answer = json.loads(everything.stdout)
    assert [t["topic"] for t in answer["topics"]] == [SOUND, TOPIC] and answer["topics"][0]["ok"] is True
    assert damage_of(answer) == ([(SEGMENT, expected)], [("s", newest, "CRC mismatch")])

    over_rest = cli(web, TOPIC, "--json")  # the CLI over the REST API
    assert over_rest.returncode == 3 and damage_of(json.loads(over_rest.stdout))[0] == [(SEGMENT, expected)]
    assert cli(web, SOUND).returncode == 0

    answer = http_get(f"{web}/admin/v2/persistent/public/default/verified/verify")
    assert answer["ok"] is False and damage_of(answer) == ([(SEGMENT, expected)], [("s", newest, "CRC mismatch")])
    answer = http_get(f"{web}/admin/v2/pulsarlike/verify")
    assert answer["totals"]["topics"] == 2 and damage_of(answer)[0] == [(SEGMENT, expected)]

    assert snapshot(data_dir) == before  # nothing written, renamed or removed: the topic was not even loaded


def test_a_loaded_topic_is_verified_under_its_running_log(broker_process, damaged):
    data_dir, expected, newest = damaged
    broker = broker_process(*CONFIG, data_dir=data_dir)
    with Admin(broker.service_url) as admin, Client(broker.service_url) as client:
        assert admin.topic_stats(TOPIC)["msgInCounter"] == 0  # loads it: the cursor is recovered and saved
        producer = client.create_producer(TOPIC)
        assert producer.send(b"more").entry_id() == MESSAGES
        answer = admin.verify_topic(TOPIC)
    [found] = answer["topics"]
    assert found["live"] is True and found["endOffset"] == MESSAGES + 1
    assert damage_of(answer) == ([(SEGMENT, expected)], [])  # no read reached it; the cursor is whole again
    assert [c["outcome"] for c in found["cursors"]] == ["ok", "ok"]
    done = cli(broker.service_url, TOPIC)
    assert done.returncode == 3 and "cursor s" not in done.stdout
