"""The jobs against a Pulsar broker that is not ours (pulsar-lite), over Pulsar's binary protocol: backfill writes
every row once through the sink; export plans by message id (a manifest of message-id ends, an incremental
second run, a manifest of the other kind refused); redrive moves each unacknowledged dead letter back once and
acknowledges it on the DLQ's subscription."""
from __future__ import annotations

import json
import uuid

import pytest

from jobs import backfill, export, redrive
from tests.pulsar_lite import pulsar_lite_broker  # noqa: F401

pytestmark = pytest.mark.spark
pulsar = pytest.importorskip("pulsar")
RECEIVE_MS = 5_000


def _topic() -> str:
    return f"persistent://public/default/jobs-any-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def official(pulsar_lite_broker):
    """pulsar-client on the broker (what writes and checks the data: not the code under test)."""
    client = pulsar.Client(pulsar_lite_broker.service_url)
    yield client
    client.close()


def produce(client, topic: str, values, properties=None, keys=None) -> None:
    producer = client.create_producer(topic, batching_enabled=False)
    for i, value in enumerate(values):
        producer.send(value.encode(), properties=properties or {}, partition_key=keys[i] if keys else None)
    producer.close()


def receive_first(client, topic: str, subscription: str) -> str:
    """The first message ``subscription`` holds (the consumer closes without acknowledging it)."""
    consumer = client.subscribe(topic, subscription, initial_position=pulsar.InitialPosition.Earliest)
    try:
        return consumer.receive(RECEIVE_MS).data().decode()
    finally:
        consumer.close()


def read_all(client, topic: str, quiet_ms: int = 1_000) -> list:
    """Every message of ``topic``, each id once (pulsar-lite may deliver one twice), read until none comes for
    ``quiet_ms`` (its last message id names no batch index, so ``has_message_available`` ends inside a batch)."""
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    found = {}
    try:
        while True:
            try:
                message = reader.read_next(quiet_ms)
            except pulsar.Timeout:
                return list(found.values())
            found[str(message.message_id())] = message
    finally:
        reader.close()


def test_backfill_into_pulsar_lite_stores_every_row_once(spark, pulsar_lite_broker, tmp_path, capsys):
    topic = _topic()
    (tmp_path / "in").mkdir()
    for part in range(2):
        (tmp_path / "in" / f"part-{part}.jsonl").write_text(
            "".join(json.dumps({"value": f"p{part}-{i}", "sensor": f"s{i % 3}"}) + "\n" for i in range(150)))

    assert backfill.main([str(tmp_path / "in"), "--topic", topic, "--key-column", "sensor", "--service-url",
                          pulsar_lite_broker.service_url, "--no-progress"], spark) == 0

    out = capsys.readouterr().out
    assert "rows read        300 (2 json" in out and "written          not counted" in out
    client = pulsar.Client(pulsar_lite_broker.service_url)
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        stored = []
        while reader.has_message_available():
            stored.append(reader.read_next(5000))
    finally:
        client.close()
    assert sorted(m.data() for m in stored) == sorted(f"p{p}-{i}".encode() for p in range(2) for i in range(150))
    assert {m.partition_key() for m in stored} == {"s0", "s1", "s2"}


def export_run(spark, broker, topic: str, out, *more: str) -> int:
    return export.main([topic, "--output", str(out), *more, "--service-url", broker.service_url, "--no-progress"],
                       spark)


def exported(spark, out) -> list[str]:
    return sorted(r["v"] for r in spark.read.parquet(str(out)).selectExpr("CAST(value AS STRING) v").collect())


def test_export_of_a_pulsar_lite_topic_records_message_id_ends_and_a_second_run_exports_only_the_new(
        spark, pulsar_lite_broker, official, tmp_path, capsys):
    topic, out = _topic(), tmp_path / "out"
    produce(official, topic, [f"m{i:02}" for i in range(12)])

    assert export_run(spark, pulsar_lite_broker, topic, out, "--subscription", "exports") == 0

    assert exported(spark, out) == [f"m{i:02}" for i in range(12)]
    first = json.loads((out / export.MANIFEST).read_text())
    end = first["endOffsets"][topic]["-1"]
    assert first["offsetKind"] == "messageId" and end["entry"] == 11 and end["batch"] == -1
    assert "to (inclusive)" in capsys.readouterr().out

    produce(official, topic, [f"m{i:02}" for i in range(12, 17)])
    assert export_run(spark, pulsar_lite_broker, topic, out, "--subscription", "exports") == 0

    second = json.loads((out / export.MANIFEST).read_text())
    assert second["runs"][1]["rows"] == 5 and second["runs"][1]["startOffsets"] == first["endOffsets"]
    assert second["endOffsets"][topic]["-1"]["entry"] == 16
    assert exported(spark, out) == [f"m{i:02}" for i in range(17)]  # each message once over both runs
    produce(official, topic, ["after"])
    assert receive_first(official, topic, "exports") == "after"  # acknowledged up to the exported end


@pytest.mark.parametrize("kind, ends", [(None, 5), ("dense", 5)])
def test_export_to_pulsar_lite_refuses_a_manifest_of_dense_offsets(spark, pulsar_lite_broker, official, tmp_path,
                                                                   capsys, kind, ends):
    topic, out = _topic(), tmp_path / "out"
    produce(official, topic, ["a"])
    out.mkdir()
    old = {"format": export.MANIFEST_FORMAT, "topic": topic, "endOffsets": {topic: {"-1": ends}}, "runs": []}
    if kind:
        old["offsetKind"] = kind
    (out / export.MANIFEST).write_text(json.dumps(old))

    assert export_run(spark, pulsar_lite_broker, topic, out) == 2

    err = capsys.readouterr().err
    assert "dense offsets (pulsarlike)" in err and "offsetKind" in err and "new folder" in err
    assert sorted(p.name for p in out.iterdir()) == [export.MANIFEST]


def test_a_message_id_manifest_is_refused_on_pulsarlike(tmp_path):
    topic = _topic()
    (tmp_path / export.MANIFEST).write_text(json.dumps({
        "format": export.MANIFEST_FORMAT, "topic": topic, "offsetKind": "messageId", "runs": [],
        "endOffsets": {topic: {"-1": {"ledger": 0, "entry": 3, "batch": -1}}}}))
    with pytest.raises(export.JobInputError, match=r"as message ids .*by dense offsets \(pulsarlike\)"):
        export.load_manifest(str(tmp_path), topic, "dense")


def test_export_by_time_on_pulsar_lite_asks_for_the_admin_url(spark, pulsar_lite_broker, tmp_path, capsys):
    assert export_run(spark, pulsar_lite_broker, _topic(), tmp_path / "out", "--starting-time", "2024-05-01") == 2
    assert "--admin-url" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_redrive_on_pulsar_lite_moves_each_unacknowledged_dead_letter_back_once(spark, pulsar_lite_broker, official,
                                                                               capsys):
    real, dlq = _topic(), _topic() + "-DLQ"
    produce(official, dlq, [f"d{i}" for i in range(8)], properties={"REAL_TOPIC": real, "ORIGIN_MESSAGE_ID": "0:1:-1",
                                                                     "reason": "timeout"})
    consumer = official.subscribe(dlq, redrive.DEFAULT_SUBSCRIPTION, consumer_type=pulsar.ConsumerType.Shared,
                                  initial_position=pulsar.InitialPosition.Earliest)
    for _ in range(3):  # d2 was dealt with by hand already: acknowledged, so it is not re-driven
        message = consumer.receive(RECEIVE_MS)
        if message.data() == b"d2":
            consumer.acknowledge(message)
    consumer.close()

    assert redrive.main([dlq, "--service-url", pulsar_lite_broker.service_url, "--no-progress"], spark) == 0

    moved = read_all(official, real)
    assert sorted(m.data().decode() for m in moved) == [f"d{i}" for i in range(8) if i != 2]
    assert moved[0].properties() == {"reason": "timeout"}  # the dead letter hop's properties dropped
    out = capsys.readouterr().out
    assert "re-driven        7" in out and "acknowledged     7" in out and "not counted" in out
    produce(official, dlq, ["later"], properties={"REAL_TOPIC": real})
    assert receive_first(official, dlq, redrive.DEFAULT_SUBSCRIPTION) == "later"  # the 7 were acknowledged


def test_redrive_on_pulsar_lite_with_a_filter_acknowledges_only_what_it_moved(spark, pulsar_lite_broker, official):
    real, dlq = _topic(), _topic() + "-DLQ"
    produce(official, dlq, [f"d{i}" for i in range(6)], properties={"REAL_TOPIC": real}, keys=list("ababab"))

    assert redrive.main([dlq, "--filter", "__key = 'a'", "--service-url", pulsar_lite_broker.service_url,
                         "--no-progress"], spark) == 0

    assert sorted(m.data().decode() for m in read_all(official, real)) == ["d0", "d2", "d4"]
    assert receive_first(official, dlq, redrive.DEFAULT_SUBSCRIPTION) == "d1"  # the b's wait in the backlog


def test_redrive_on_pulsar_lite_leaves_a_batch_the_filter_split_unacknowledged(spark, pulsar_lite_broker, official,
                                                                              capsys):
    real, dlq = _topic(), _topic() + "-DLQ"
    producer = official.create_producer(dlq, batching_enabled=True, batching_max_messages=4,
                                        batching_max_publish_delay_ms=60_000)
    for i, key in enumerate("abab"):  # one batched entry of four messages
        producer.send_async(f"d{i}".encode(), None, properties={"REAL_TOPIC": real}, partition_key=key)
    producer.flush()
    producer.close()

    assert redrive.main([dlq, "--filter", "__key = 'a'", "--service-url", pulsar_lite_broker.service_url,
                         "--no-progress"], spark) == 0

    assert sorted(m.data().decode() for m in read_all(official, real)) == ["d0", "d2"]
    assert "acknowledged     0" in capsys.readouterr().out
    assert receive_first(official, dlq, redrive.DEFAULT_SUBSCRIPTION) == "d0"  # the whole entry is kept


def test_redrive_dry_run_on_pulsar_lite_counts_and_says_it_attached_the_subscription(spark, pulsar_lite_broker,
                                                                                    official, capsys):
    real, dlq = _topic(), _topic() + "-DLQ"
    produce(official, dlq, ["d0", "d1", "d2"], properties={"REAL_TOPIC": real})

    assert redrive.main([dlq, "--dry-run", "--service-url", pulsar_lite_broker.service_url, "--no-progress"],
                        spark) == 0

    captured = capsys.readouterr()
    assert "re-driven        3" in captured.out and f"-> {real}  3" in captured.out
    assert "attaches a consumer to pulsarlike-redrive" in captured.err
    produce(official, real, ["marker"])  # pulsar-lite cannot say a topic is empty: read up to a marker
    assert [m.data() for m in read_all(official, real)] == [b"marker"]
    assert receive_first(official, dlq, redrive.DEFAULT_SUBSCRIPTION) == "d0"  # nothing acknowledged


class FakeAdminRest:
    """Pulsar's REST ``GET .../messageid/{timestamp}`` for a broker that has no REST API (pulsar-lite): answers
    the ids the test gives per timestamp, 404 for the others, as Pulsar does when no message is that late."""

    def __init__(self, ids: dict[int, tuple[int, int]]) -> None:
        import http.server
        import threading

        self.asked: list[str] = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802  (http.server's name)
                fake.asked.append(self.path)
                found = ids.get(int(self.path.rsplit("/", 1)[1])) if "/messageid/" in self.path else None
                body = json.dumps({"ledgerId": found[0], "entryId": found[1], "partitionIndex": -1} if found
                                  else {"reason": "Message ID not found"}).encode()
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_export_by_time_on_another_broker_looks_message_ids_up_over_the_admin_url(spark, pulsar_lite_broker, official,
                                                                                  tmp_path):
    topic, out = _topic(), tmp_path / "out"
    producer = official.create_producer(topic, batching_enabled=False)
    ledger = [producer.send(f"m{i}".encode()) for i in range(6)][0].ledger_id()
    producer.close()
    rest = FakeAdminRest({1_000: (ledger, 2)})  # published at/after 1000: m2; after 9000: none (404)
    try:
        assert export_run(spark, pulsar_lite_broker, topic, out, "--starting-time", "1000", "--ending-time", "9000",
                          "--admin-url", rest.url) == 0
    finally:
        rest.close()

    assert exported(spark, out) == ["m2", "m3", "m4", "m5"]
    local = topic.rsplit("/", 1)[1]
    assert rest.asked == [f"/admin/v2/persistent/public/default/{local}/messageid/1000",
                          f"/admin/v2/persistent/public/default/{local}/messageid/9000"]


@pytest.mark.parametrize("message, exact, boundary", [
    ((7, 4, 2), False, (7, 4, 1)),    # inside a batch: the index before
    ((7, 4, 0), False, (7, 3, -1)),   # a batch's first message: the whole entry before
    ((7, 4, -1), False, (7, 3, -1)),
    ((7, 0, -1), True, (7, -1, -1)),  # a ledger's first entry: Pulsar's position before it
    ((7, 0, -1), False, (-1, -1, -1)),  # or before everything, for a caller that picks messages by id
])
def test_the_boundary_before_a_message(message, exact, boundary):
    from jobs.positions import before

    assert tuple(before(*message, exact=exact)) == boundary
