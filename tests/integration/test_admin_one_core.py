"""One admin core behind every front end (issue 31): the REST routes and the gRPC calls parse, call the same
core and render its answer, so they answer alike -- codes, reasons and the state they leave -- on a partitioned
topic too (Pulsar's fan-out over its partitions, with 409, 404 and 412). And what the core answers in Pulsar's
own terms: 406 for a partitioned topic of 0 partitions, internal stats with Pulsar's cursor and ledger fields,
the compaction's ``__compaction`` subscription and cursor once a topic was compacted."""
from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import grpc
import pytest

from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol import broker_pb2_grpc
from connector import Client
from tests.integration.test_http_admin_server import admin_http
from tests.waiting import wait_until

NS = "/admin/v2/persistent/public/default"
EARLIEST = {"ledgerId": -1, "entryId": -1}
PARTITIONS = 3
MODELS = json.loads((Path(__file__).resolve().parent.parent / "data" / "pulsar_admin_models.json").read_text())
STATUS_OF_CODE = {"OK": 204, "ALREADY_EXISTS": 409, "NOT_FOUND": 404, "FAILED_PRECONDITION": 412,
                  "INVALID_ARGUMENT": 400}
"""The REST status each gRPC status stands for in the core's tables (answers._STATUS, protocol.status)."""


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    with admin_http(tmp_path_factory.mktemp("one-core")) as served:
        yield served


@pytest.fixture(scope="module")
def stub(http):
    with grpc.insecure_channel(http.broker.address) as channel:
        yield broker_pb2_grpc.PulsarLikeStub(channel)


@pytest.fixture(scope="module")
def client(http):
    with Client(http.broker.service_url) as opened:
        yield opened


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def grpc_answer(call, request) -> tuple[int, str]:
    """(the REST status the gRPC answer stands for, the refusal's message; "" on success)."""
    try:
        call(request, timeout=30)
    except grpc.RpcError as exc:
        return STATUS_OF_CODE.get(exc.code().name, 500), exc.details()
    return 204, ""


def rest_answer(answer) -> tuple[int, str]:
    return answer.status, (answer.reason if answer.status >= 400 else "")


class Twins:
    """Two partitioned topics alike, one administered over REST and one over gRPC: each step is made on both
    and must answer alike (the topic's own name read as ``T``)."""

    def __init__(self, http, stub, client) -> None:
        self.http, self.stub, self.client = http, stub, client
        self.rest_name, self.grpc_name = unique("twin-rest"), unique("twin-grpc")
        for name in (self.rest_name, self.grpc_name):
            assert http.put(f"{NS}/{name}/partitions", PARTITIONS).status == 204
            for i in range(PARTITIONS):
                producer = client.create_producer(f"persistent://public/default/{name}-partition-{i}",
                                                  batching_enabled=False)
                for n in range(3):
                    producer.send(b"m%d" % n)
                producer.close()

    def topic(self, over: str) -> str:
        return f"persistent://public/default/{self.rest_name if over == 'rest' else self.grpc_name}"

    def alike(self, rest, call, request) -> tuple[int, str]:
        """The REST answer and the gRPC one (on the twin topic), checked equal; the answer."""
        found_rest = rest_answer(rest)
        found_grpc = grpc_answer(call, request)
        normalised = (found_grpc[0], found_grpc[1].replace(self.grpc_name, self.rest_name))
        assert found_rest == normalised, f"REST {found_rest} != gRPC {found_grpc}"
        return found_rest

    def state(self, over: str) -> dict[str, Any]:
        """What the subscriptions are: each partition's cursors (positions and ranges) and backlogs."""
        name = self.rest_name if over == "rest" else self.grpc_name
        internal = self.http.get(f"{NS}/{name}/partitioned-internalStats").body
        stats = self.http.get(f"{NS}/{name}/partitioned-stats").body
        return {"cursors": {p.rsplit("-partition-", 1)[1]: {n: (c["markDeletePosition"], c["individuallyDeletedMessages"])
                                                             for n, c in s["cursors"].items()}
                            for p, s in internal["partitions"].items()},
                "backlogs": {n: s["msgBacklog"] for n, s in stats["subscriptions"].items()},
                "names": self.http.get(f"{NS}/{name}/subscriptions").body}


@pytest.fixture
def twins(http, stub, client):
    return Twins(http, stub, client)


def test_a_subscription_created_reset_and_deleted_answers_alike_over_rest_and_grpc_on_a_partitioned_topic(
        twins, stub, client):
    t, rest, grpc_t = twins, twins.rest_name, twins.topic("grpc")
    create = lambda position=None: pb.SubscriptionRequest(topic=grpc_t, subscription="s",  # noqa: E731
                                                          position=position or pb.Position(earliest=True))
    assert t.alike(t.http.put(f"{NS}/{rest}/subscription/s", EARLIEST), stub.CreateSubscription, create()) == (204, "")
    assert t.state("rest") == t.state("grpc")
    assert t.state("rest")["backlogs"] == {"s": 3 * PARTITIONS}
    status, reason = t.alike(t.http.put(f"{NS}/{rest}/subscription/s", EARLIEST), stub.CreateSubscription, create())
    assert status == 409 and "already exists" in reason
    status, _ = t.alike(t.http.put(f"{NS}/{rest}/subscription/s2", {"ledgerId": 0, "entryId": 1}),
                        stub.CreateSubscription, pb.SubscriptionRequest(topic=grpc_t, subscription="s2",
                                                                        position=pb.Position(offset=1)))
    assert status == 412  # a message id names a message of one partition

    # skip everything, then back to a time before the first message: every partition moves
    assert t.alike(t.http.post(f"{NS}/{rest}/subscription/s/skip_all"), stub.ClearBacklog,
                   pb.SubscriptionRequest(topic=grpc_t, subscription="s")) == (204, "")
    assert t.state("rest") == t.state("grpc") and t.state("rest")["backlogs"] == {"s": 0}
    before = int(time.time() * 1000) - 3_600_000
    assert t.alike(t.http.post(f"{NS}/{rest}/subscription/s/resetcursor/{before}"), stub.ResetCursor,
                   pb.SubscriptionRequest(topic=grpc_t, subscription="s", publish_time_ms=before)) == (204, "")
    assert t.state("rest") == t.state("grpc") and t.state("rest")["backlogs"] == {"s": 3 * PARTITIONS}
    status, _ = t.alike(t.http.post(f"{NS}/{rest}/subscription/nope/resetcursor/{before}"), stub.ResetCursor,
                        pb.SubscriptionRequest(topic=grpc_t, subscription="nope", publish_time_ms=before))
    assert status == 404

    # a consumer on one partition: deleting without force is refused, nothing deleted
    consumers = [client.subscribe(f"{t.topic(over)}-partition-1", "s") for over in ("rest", "grpc")]
    status, reason = t.alike(t.http.delete(f"{NS}/{rest}/subscription/s"), stub.DeleteSubscription,
                             pb.UnsubscribeRequest(topic=grpc_t, subscription="s"))
    assert status == 412 and "connected consumers" in reason and "-partition-1" in reason
    assert t.state("rest")["names"] == t.state("grpc")["names"] == ["s"]
    for consumer in consumers:
        consumer.close()
    assert wait_until(lambda: all(not s["consumers"] for over in ("rest", "grpc")
                                  for s in t.http.get(f"{NS}/{getattr(t, over + '_name')}/partitioned-stats")
                                  .body["subscriptions"].values()))
    assert t.alike(t.http.delete(f"{NS}/{rest}/subscription/s"), stub.DeleteSubscription,
                   pb.UnsubscribeRequest(topic=grpc_t, subscription="s")) == (204, "")
    assert t.state("rest") == t.state("grpc") and t.state("rest")["names"] == []
    status, reason = t.alike(t.http.delete(f"{NS}/{rest}/subscription/s"), stub.DeleteSubscription,
                             pb.UnsubscribeRequest(topic=grpc_t, subscription="s"))
    assert status == 404 and "does not exist" in reason


def test_a_subscription_existing_on_one_partition_only_is_409_and_nothing_is_created(twins, stub, http):
    t = twins
    for over in ("rest", "grpc"):
        assert http.put(f"{NS}/{getattr(t, over + '_name')}-partition-2/subscription/late", EARLIEST).status == 204
    status, reason = t.alike(http.put(f"{NS}/{t.rest_name}/subscription/late", EARLIEST), stub.CreateSubscription,
                             pb.SubscriptionRequest(topic=t.topic("grpc"), subscription="late"))
    assert status == 409 and "-partition-2" in reason
    assert {p: sorted(c) for p, c in t.state("rest")["cursors"].items()} == {"0": [], "1": [], "2": ["late"]}
    assert t.state("rest") == t.state("grpc")


def test_a_partitioned_topic_of_no_partitions_is_406_as_pulsar_answers(http, stub):
    answer = http.put(f"{NS}/{unique('none')}/partitions", 0)
    assert answer.status == 406 and "Number of partitions" in answer.reason
    assert http.put(f"{NS}/{unique('many')}/partitions", 5000).status == 406
    with pytest.raises(grpc.RpcError) as refused:
        stub.CreatePartitionedTopic(pb.CreatePartitionedTopicRequest(topic=unique("none"), partitions=0), timeout=30)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert dict(refused.value.trailing_metadata())["pulsarlike-error-code"] == "InvalidPartitionCount"


def test_internal_stats_carry_pulsars_cursor_and_ledger_fields(http, client):
    name = unique("internal")
    topic = f"persistent://public/default/{name}"
    http.put(f"{NS}/{name}")
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(b"m%d" % i) for i in range(6)]
    http.put(f"{NS}/{name}/subscription/s", EARLIEST)
    consumer = client.subscribe(topic, "s")
    received = [consumer.receive(timeout_millis=10_000) for _ in range(6)]
    for message in received[:2] + received[3:5]:  # 0, 1, 3, 4: mark-delete at 1, 3..4 apart
        consumer.acknowledge(message)
    internal = wait_until(lambda: (found := http.get(f"{NS}/{name}/internalStats").body)["cursors"]["s"][
        "totalNonContiguousDeletedMessagesRange"] == 1 and found)
    models = MODELS["models"]
    assert set(models["PersistentTopicInternalStats"]["fields"]) <= set(internal)
    cursor = internal["cursors"]["s"]
    assert set(models["ManagedLedgerInternalStats.CursorStats"]["fields"]) == set(cursor)
    ledger = ids[0].ledger_id()
    assert cursor["markDeletePosition"] == f"{ledger}:1"
    assert cursor["individuallyDeletedMessages"] == f"[({ledger}:2..{ledger}:4]]"
    assert cursor["readPosition"] == f"{ledger}:6"  # all six delivered
    assert cursor["messagesConsumedCounter"] == 4 and cursor["numberOfEntriesSinceFirstNotAckedMessage"] == 5
    assert cursor["state"] == "Open" and cursor["cursorLedger"] == -1 and cursor["waitingReadOp"] is True
    assert internal["entriesAddedCounter"] == 6 and internal["waitingCursorsCount"] == 1
    assert set(models["ManagedLedgerInternalStats.LedgerInfo"]["fields"]) <= set(internal["ledgers"][0])
    assert internal["lastConfirmedEntry"] == f"{ledger}:5"
    consumer.close()


def test_a_compacted_topic_shows_the_compaction_subscription_and_cursor(http, client):
    name = unique("compacted")
    topic = f"persistent://public/default/{name}"
    http.put(f"{NS}/{name}")
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(6):
        producer.send(b"v%d" % i, partition_key=f"k{i % 2}")
    assert "__compaction" not in http.get(f"{NS}/{name}/stats").body["subscriptions"]
    assert "__compaction" not in http.get(f"{NS}/{name}/internalStats").body["cursors"]
    assert http.put(f"{NS}/{name}/compaction").status == 204
    assert wait_until(lambda: http.get(f"{NS}/{name}/compaction").body == {"status": "SUCCESS", "lastError": ""})
    producer.send(b"later", partition_key="k0")  # after the horizon: the compaction's backlog
    subscription = http.get(f"{NS}/{name}/stats").body["subscriptions"]["__compaction"]
    assert subscription["msgBacklog"] == 1 and subscription["isDurable"] and subscription["consumers"] == []
    cursor = http.get(f"{NS}/{name}/internalStats").body["cursors"]["__compaction"]
    assert cursor["markDeletePosition"].endswith(":5") and cursor["readPosition"].endswith(":6")
    assert cursor["properties"] == {"CompactedTopicLedger": 6}
    assert "__compaction" not in http.get(f"{NS}/{name}/subscriptions").body  # not one to consume from
