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


def read_all(client, topic: str) -> list:
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    try:
        found = {}
        while reader.has_message_available():
            message = reader.read_next(RECEIVE_MS)
            found[str(message.message_id())] = message  # pulsar-lite may deliver one twice
        return list(found.values())
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
