"""The admin's wires answer the admin's own values (issue 32): the gRPC wire translates the broker's replies
(:mod:`connector.client.admin.grpc_wire`), the REST wire translates Pulsar's JSON and headers
(:mod:`connector.client.admin.rest_wire`) -- neither hands a gRPC reply to the admin's parts, and the REST
modules build no gRPC message out of JSON."""
from __future__ import annotations

import ast
from email.message import Message
from pathlib import Path
from typing import Any

import pytest

from broker_core.protocol import broker_pb2 as pb
from connector.client.admin.grpc_wire import GrpcWire, answer
from connector.client.admin.rest_wire import RestWire
from connector.client.admin.wire import CompactionState, LookupAnswer
from connector.client.transport.events import Entry, LastMessage

ADMIN = Path(__file__).resolve().parents[2] / "connector" / "client" / "admin"


def _built_grpc_messages(path: Path) -> list[str]:
    """``broker_pb2.X(...)`` calls of a module (reading a request's fields is not building one)."""
    return [f"{path.name}:{node.lineno}: {node.func.attr}" for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id in ("broker_pb2", "pb")]


def test_the_rest_modules_build_no_grpc_message_out_of_json():
    rest = sorted(ADMIN.glob("rest*.py"))
    assert [p.name for p in rest] == ["rest.py", "rest_messages.py", "rest_namespaces.py", "rest_topics.py",
                                      "rest_wire.py"]
    assert [hit for path in rest for hit in _built_grpc_messages(path)] == []


@pytest.mark.parametrize("method, reply, expected", [
    ("CreateTopic", pb.Empty(), None),
    ("ListTenants", pb.NameList(names=["a", "b"]), ["a", "b"]),
    ("ListTopics", pb.TopicList(topics=["persistent://t/n/x"]), ["persistent://t/n/x"]),
    ("TopicStats", pb.JsonResponse(json='{"msgInCounter": 4}'), {"msgInCounter": 4}),
    ("GetPolicy", pb.JsonResponse(json="0"), 0),
    ("GetPolicy", pb.JsonResponse(json=""), None),
    ("GetSchemaAdmin", pb.SchemaAdminReply(answer='{"version": 2}'), {"version": 2}),
    ("GetPartitionedTopicMetadata", pb.PartitionedTopicMetadata(partitions=3), 3),
    ("GetLastMessageId", pb.LastMessageId(ledger_id=5, entry_id=9, batch_index=-1, last_offset=9, start_offset=2),
     LastMessage(5, 9, -1, 9, 2)),
    ("LookupTopic", pb.LookupResult(broker_url="pulsar://h:1", http_url="http://h:2"),
     LookupAnswer("pulsar://h:1", "http://h:2")),
    ("CompactionStatus", pb.CompactionStatusReply(status="ERROR", last_error="disk"), CompactionState("ERROR", "disk")),
    ("GetTenant", pb.TenantInfo(tenant="t", admin_roles=["r"], allowed_clusters=["c"]),
     {"adminRoles": ["r"], "allowedClusters": ["c"]}),
    ("SkipMessages", pb.SubscriptionPosition(acknowledged=7, next_offset=40), 7),
    ("ClearNamespaceBacklog", pb.SubscriptionPosition(acknowledged=3), 3),
    ("AcknowledgeUpTo", pb.SubscriptionPosition(next_offset=40), 40),
    ("OffsetForTimestamp", pb.SubscriptionPosition(next_offset=12), 12),
    ("CreateSubscription", pb.SubscriptionPosition(), None),
    ("ResetCursor", pb.SubscriptionPosition(), None),
])
def test_each_grpc_reply_becomes_the_calls_answer(method, reply, expected):
    assert answer(method, reply) == expected


def test_peeked_entries_become_stored_entries():
    reply = pb.PeekedEntries(entries=[pb.DeliveredEntry(data=b"e", ledger_id=1, entry_id=4, num_messages=2,
                                                        ack_set=[1])], count=2)
    [entry] = answer("PeekMessages", reply)
    assert isinstance(entry, Entry)
    assert (entry.data, entry.ledger_id, entry.entry_id, entry.num_messages, tuple(entry.ack_set)) == (
        b"e", 1, 4, 2, (1,))


def test_a_reply_with_no_answer_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="SchemaReply of GetSchema"):
        answer("GetSchema", pb.SchemaReply())


class _Connection:
    def __init__(self, reply: Any) -> None:
        self.reply = reply
        self.calls: list[tuple[str, bool]] = []

    def unary(self, method: str, request: Any, timeout_s: float | None = None, retry: bool = False) -> Any:
        self.calls.append((method, retry))
        return self.reply


@pytest.mark.parametrize("retry", [False, True])
def test_the_grpc_wire_retries_every_call_when_told_to(retry):
    connection = _Connection(pb.NameList(names=["x"]))
    assert GrpcWire(connection, retry).unary("ListTenants", pb.Empty()) == ["x"]
    assert connection.calls == [("ListTenants", retry)]


class _Transport:
    """Pulsar's REST answers by path (JSON), and for fetches a body with headers."""

    def __init__(self, answers: dict[str, Any], fetched: tuple[bytes, Message] | None = None) -> None:
        self.answers = answers
        self.fetched = fetched

    def call(self, method: str, where: str, *body: Any, **options: Any) -> Any:
        return self.answers[where]

    def fetch(self, method: str, where: str, *body: Any, **options: Any) -> Any:
        assert self.fetched is not None
        return self.fetched


def test_the_rest_wire_answers_plain_values_from_json():
    wire = RestWire(_Transport({
        "/admin/v2/tenants": ["public", "t"],
        "/admin/v2/tenants/t": {"adminRoles": ["r"], "allowedClusters": ["c"]},
        "/admin/v2/persistent/t/n/x/partitions": {"partitions": 4},
        "/admin/v2/persistent/t/n/x/lastMessageId": {"ledgerId": 3, "entryId": 8, "batchIndex": 1},
        "/admin/v2/persistent/t/n/x/compaction": {"status": "SUCCESS"},
        "/lookup/v2/topic/persistent/t/n/x": {"brokerUrl": "pulsar://h:6650", "httpUrl": "http://h:8080"},
        "/admin/v2/persistent/t/n/x/stats": {"msgInCounter": 1},
    }))
    topic = pb.TopicRequest(topic="persistent://t/n/x")
    assert wire.unary("ListTenants", pb.Empty()) == ["public", "t"]
    assert wire.unary("GetTenant", pb.TenantRequest(tenant="t")) == {"adminRoles": ["r"], "allowedClusters": ["c"]}
    assert wire.unary("GetPartitionedTopicMetadata", topic) == 4
    assert wire.unary("GetLastMessageId", topic) == LastMessage(3, 8, 1, 9, 0)
    assert wire.unary("CompactionStatus", topic) == CompactionState("SUCCESS", "")
    assert wire.unary("LookupTopic", topic) == LookupAnswer("pulsar://h:6650", "http://h:8080")
    assert wire.unary("TopicStats", topic) == {"msgInCounter": 1}


def test_the_rest_wire_answers_an_examined_message_as_a_stored_entry():
    headers = Message()
    headers["X-Pulsar-Message-ID"] = "7:12"
    headers["X-Pulsar-publish-time"] = "1000"
    wire = RestWire(_Transport({}, (b"payload", headers)))
    [entry] = wire.unary("ExamineMessage", pb.ExamineMessageRequest(topic="persistent://t/n/x", position=1))
    assert isinstance(entry, Entry)
    assert (entry.ledger_id, entry.entry_id, entry.num_messages) == (7, 12, 1)
