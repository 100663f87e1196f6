"""What the wire fuzz test (test_fuzz_wire.py) found, each as the smallest request that shows it, against a
real broker process; the broker now gets them right and these keep it so.

1. A refusal that quotes a long client string (a subscription, a policy key or value, a cluster name) in
   its message and fields does not fit gRPC's 16 KiB limit on trailing metadata: the client gets
   ``RESOURCE_EXHAUSTED "Stream removed (received metadata size exceeds hard limit)"`` instead of the typed
   error. Names are cut in messages (``types._shown``); these strings are not.
2. A topic named ``<name>-partition-<i>`` with ``i`` beyond int32 is created and written to, but
   subscribing to it fails with an internal error: ``Subscribed.partition_index`` (int32) cannot hold
   ``i``, and the broker logs ``ValueError: Value out of range`` with a traceback.
"""
from __future__ import annotations

import grpc
import pytest

from broker_core.errors import UnknownError
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol import broker_pb2_grpc
from broker_core.protocol.status import error_from_proto, error_from_rpc
from tests.broker_watch import BrokerWatch

TOPIC = "persistent://public/default/findings"
LONG = "x" * 20_000
"""Longer than gRPC's 16 KiB hard limit on metadata, far below the broker's 1 MiB request limit."""


@pytest.fixture
def watched(broker_process, tmp_path):
    proc = broker_process("--log-level", "WARNING", data_dir=tmp_path / "data")
    watch = BrokerWatch(proc, tmp_path, rss_limit_mb=300)
    yield watch
    watch.close()


@pytest.fixture
def stub(watched):
    with grpc.insecure_channel(watched.proc.address) as channel:
        stub = broker_pb2_grpc.PulsarLikeStub(channel)
        stub.CreateTopic(pb.TopicRequest(topic=TOPIC), timeout=10)
        yield stub


LONG_STRING_REFUSALS = {
    "unknown subscription": ("DeleteSubscription", pb.UnsubscribeRequest(topic=TOPIC, subscription=LONG)),
    "unknown policy key": ("SetPolicy", pb.PolicyRequest(scope=pb.PolicyScope(topic=TOPIC), key=LONG,
                                                         value_json="1")),
    "bad policy value": ("SetPolicy", pb.PolicyRequest(scope=pb.PolicyScope(topic=TOPIC),
                                                       key="messageTTLInSeconds", value_json=f'"{LONG}"')),
    "policy value not JSON": ("SetPolicy", pb.PolicyRequest(scope=pb.PolicyScope(topic=TOPIC),
                                                            key="messageTTLInSeconds", value_json=LONG)),
    "empty cluster beside a long one": ("CreateTenant", pb.TenantInfo(tenant="findings",
                                                                      allowed_clusters=[LONG, "\x1f"])),
}


@pytest.mark.parametrize("method, request_", LONG_STRING_REFUSALS.values(), ids=LONG_STRING_REFUSALS.keys())
def test_a_refusal_quoting_a_long_client_string_still_reaches_the_client_as_a_typed_error(stub, method, request_):
    with pytest.raises(grpc.RpcError) as refused:
        getattr(stub, method)(request_, timeout=10)
    error = error_from_rpc(refused.value)
    assert not isinstance(error, UnknownError), f"{refused.value.code()}: {refused.value.details()}"


PARTITION_BEYOND_INT32 = "persistent://public/default/findings-partition-2147483648"


def test_subscribing_to_a_partition_index_beyond_int32_gets_a_typed_answer_and_logs_no_traceback(watched, stub):
    replies = list(stub.Consume(iter([pb.ConsumeRequest(subscribe=pb.Subscribe(
        topic=PARTITION_BEYOND_INT32, subscription="s"))]), timeout=10))
    first = replies[0]
    if first.WhichOneof("response") == "error":
        assert not isinstance(error_from_proto(first.error), UnknownError), first.error
    else:
        assert first.WhichOneof("response") == "subscribed"
    watched.stop()
    assert watched.log_problems() == []
