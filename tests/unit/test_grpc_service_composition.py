"""The gRPC service is assembled from components (issue 19): every RPC of the proto's ``PulsarLike`` service is
served by exactly one of them, with the shape the proto declares, and has an admission rule; a unary call's
errors become gRPC statuses in one place (``handlers.answer``)."""
from __future__ import annotations

import asyncio
import inspect
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from broker_core.clock import SYSTEM_CLOCK
from broker_core.config import BrokerConfig
from broker_core.core.producers import ProducerNames
from broker_core.core.registry import TopicRegistry
from broker_core.errors import InvalidMessage, TopicNotFound
from broker_core.frontends.grpc import handlers, rpc_access
from broker_core.frontends.grpc.admin_rpcs import AdminRpcs
from broker_core.frontends.grpc.servicer import BrokerServicer
from broker_core.frontends.grpc.subscription_rpcs import SubscriptionRpcs
from broker_core.frontends.grpc.topic_rpcs import TopicRpcs
from broker_core.protocol import broker_pb2 as pb

RPCS = {method.name for method in handlers.SERVICE.methods}
STREAMS = {"Produce", "Consume"}


@pytest.fixture
def servicer(tmp_path):
    with ThreadPoolExecutor(1) as executor:
        registry = TopicRegistry(tmp_path, BrokerConfig(journalSyncMode="never"), executor, SYSTEM_CLOCK)
        yield BrokerServicer(registry, ProducerNames("test"))
        asyncio.run(registry.close())


def test_every_rpc_of_the_proto_is_served_by_exactly_one_component(servicer):
    for name in sorted(RPCS):
        serving = [type(c).__name__ for c in servicer.components if callable(getattr(c, name, None))]
        assert len(serving) == 1, f"{name} is served by {serving or 'nothing'}"
    assert set(handlers.served_by(servicer.components)) == RPCS


def test_the_handlers_have_the_shapes_and_messages_the_proto_declares(servicer):
    table = handlers.method_handlers(servicer.components)
    assert set(table) == RPCS
    for name in STREAMS:
        assert table[name].request_streaming and table[name].response_streaming
    for name in RPCS - STREAMS:
        handler = table[name]
        assert not handler.request_streaming and not handler.response_streaming
        assert inspect.iscoroutinefunction(handler.unary_unary)
    assert table["CreateTopic"].request_deserializer(b"\n\x01t") == pb.TopicRequest(topic="t")
    assert table["LookupTopic"].response_serializer(pb.LookupResult(broker_url="u")) == \
        pb.LookupResult(broker_url="u").SerializeToString()


def test_unary_components_know_nothing_of_grpc_they_take_a_request_and_return_a_reply():
    for component in (TopicRpcs, SubscriptionRpcs, AdminRpcs):
        for name in RPCS & set(vars(component)):
            assert list(inspect.signature(getattr(component, name)).parameters) == ["self", "request"], name


def test_a_service_with_an_rpc_left_unserved_is_refused_naming_it(servicer):
    without_admin = [c for c in servicer.components if not isinstance(c, AdminRpcs)]
    with pytest.raises(TypeError, match=r"CreateTenant \(none\)"):
        handlers.method_handlers(without_admin)


def test_a_service_with_an_rpc_served_twice_is_refused_naming_both(servicer):
    with pytest.raises(TypeError, match=r"CreateTopic \(TopicRpcs, TopicRpcs\)"):
        handlers.method_handlers([*servicer.components, TopicRpcs(servicer._registry)])


def test_every_rpc_has_an_admission_rule_so_none_is_left_to_super_users_by_accident():
    assert set(rpc_access.RULES) == RPCS


def test_lookup_answers_what_the_server_advertised_after_the_servicer_was_built(servicer):
    servicer.advertised = pb.LookupResult(broker_url="pulsar://h:1", http_url="http://h:2")
    topics = next(c for c in servicer.components if isinstance(c, TopicRpcs))
    assert topics.advertised.broker_url == "pulsar://h:1"


class Aborted(Exception):
    pass


class RecordingContext:
    def __init__(self) -> None:
        self.aborted: tuple | None = None

    async def abort(self, code, details, trailing_metadata=()):
        self.aborted = (code, details, dict(trailing_metadata))
        raise Aborted()


def test_a_unary_call_answers_its_reply_whether_computed_at_once_or_awaited():
    async def later(request):
        return pb.NameList(names=[request.topic])

    context = RecordingContext()
    now = asyncio.run(handlers.answer(context, lambda r: pb.NameList(names=[r.topic]), pb.TopicRequest(topic="a")))
    awaited = asyncio.run(handlers.answer(context, later, pb.TopicRequest(topic="b")))
    assert (list(now.names), list(awaited.names), context.aborted) == (["a"], ["b"], None)


def test_a_broker_error_becomes_its_status_with_its_code_in_the_trailing_metadata():
    def missing(request):
        raise TopicNotFound("topic t does not exist", topic="t")

    context = RecordingContext()
    with pytest.raises(Aborted):
        asyncio.run(handlers.answer(context, missing, pb.TopicRequest()))
    code, details, trailers = context.aborted
    assert code == grpc.StatusCode.NOT_FOUND
    assert details == "topic t does not exist"
    assert "TopicNotFound" in trailers.values()


def test_an_unexpected_error_becomes_a_generic_error_with_an_id_and_no_server_details():
    async def broken(request):
        raise OSError("/srv/secret/path: disk on fire")

    context = RecordingContext()
    with pytest.raises(Aborted):
        asyncio.run(handlers.answer(context, broken, pb.TopicRequest()))
    code, details, trailers = context.aborted
    assert "internal broker error" in details and "/srv" not in details
    assert "UnknownError" in trailers.values()


def test_a_policy_value_nested_deeper_than_the_json_parser_goes_is_a_typed_refusal(servicer):
    admin = next(c for c in servicer.components if isinstance(c, AdminRpcs))
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(InvalidMessage, match="nested too deeply"):
        admin.SetPolicy(pb.PolicyRequest(scope=pb.PolicyScope(namespace="public/default"), key="messageTTL",
                                         value_json=deep))
