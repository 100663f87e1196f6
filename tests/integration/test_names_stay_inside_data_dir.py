"""Issue 10, finding 1: names never reach outside the data dir. A real broker gets the attacker's requests
as raw gRPC calls (the client checks names first, so the broker's own checks are what is tested): each is
refused with a typed error that shows no server path, and no file appears, changes or disappears anywhere
under the data dir's parent."""
from __future__ import annotations

import hashlib
from pathlib import Path

import grpc
import pytest

from broker_core import Broker
from broker_core.errors import InvalidConfiguration, InvalidTopicName, PulsarLikeError
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol import broker_pb2_grpc
from broker_core.protocol.status import error_from_proto, error_from_rpc

KEPT = "persistent://public/default/kept"
ESCAPING_TOPICS = [
    "persistent://public/default/..",
    "persistent://public/default/.",
    "persistent://public/default/%2e%2e",
    "persistent://public/default/%2E%2E",
    "persistent://public/default/:::",
    "persistent://public/default/..%2F..%2F..%2Fneighbour",
    "persistent://../default/t",
    "persistent://public/../t",
    "persistent://../../t",
    "..",
    "persistent://public/default/" + "x" * 300,
]


@pytest.fixture(scope="module")
def parent(tmp_path_factory) -> Path:
    """The data dir's parent, with a neighbour folder an escape would reach."""
    parent = tmp_path_factory.mktemp("parent")
    (parent / "neighbour").mkdir()
    (parent / "neighbour" / "precious.txt").write_text("keep me")
    return parent


@pytest.fixture(scope="module")
def broker(parent):
    """This module's broker (the ``client`` and ``admin`` fixtures use it): its data dir is ``parent/data``."""
    from connector import Client

    with Broker(data_dir=parent / "data", port=0) as broker:
        client = Client(broker.service_url)
        producer = client.create_producer(KEPT)
        producer.send(b"kept")
        producer.close()
        client.close()
        yield broker


@pytest.fixture(scope="module")
def stub(broker):
    channel = grpc.insecure_channel(broker.address)
    yield broker_pb2_grpc.PulsarLikeStub(channel)
    channel.close()


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): ("dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest())
            for p in root.rglob("*")}


@pytest.fixture
def nothing_changes(parent, broker):
    before = _tree(parent)
    yield
    assert _tree(parent) == before


def _refused(call, request) -> PulsarLikeError:
    with pytest.raises(grpc.RpcError) as info:
        call(request, timeout=10)
    return error_from_rpc(info.value)


def _produce_refused(stub, topic: str) -> PulsarLikeError:
    responses = stub.Produce(iter([pb.ProduceRequest(open=pb.ProducerOpen(topic=topic))]), timeout=10)
    first = next(iter(responses))
    assert first.WhichOneof("response") == "error"
    return error_from_proto(first.error)


def _shows_no_path(error: PulsarLikeError, parent: Path) -> bool:
    return str(parent) not in error.message and str(parent) not in str(error.fields)


@pytest.mark.usefixtures("nothing_changes")
@pytest.mark.parametrize("topic", ESCAPING_TOPICS)
def test_producing_to_an_escaping_topic_name_is_refused_and_writes_nothing(stub, parent, topic):
    error = _produce_refused(stub, topic)
    assert isinstance(error, InvalidTopicName), error
    assert _shows_no_path(error, parent)


@pytest.mark.usefixtures("nothing_changes")
@pytest.mark.parametrize("topic", ESCAPING_TOPICS)
def test_deleting_an_escaping_topic_name_is_refused_and_deletes_nothing(stub, admin, topic):
    error = _refused(stub.DeleteTopic, pb.DeleteTopicRequest(topic=topic, force=True))
    assert isinstance(error, InvalidTopicName), error
    assert KEPT in admin.list_topics("public/default")


@pytest.mark.usefixtures("nothing_changes")
@pytest.mark.parametrize("tenant", ["..", ".", ":::", "t" * 300])
def test_creating_an_escaping_tenant_is_refused(stub, tenant):
    error = _refused(stub.CreateTenant, pb.TenantInfo(tenant=tenant))
    assert isinstance(error, InvalidConfiguration), error


@pytest.mark.usefixtures("nothing_changes")
@pytest.mark.parametrize("namespace", ["public/..", "public/.", "../default", "public/%2e%2e"])
def test_creating_an_escaping_namespace_is_refused(stub, namespace):
    error = _refused(stub.CreateNamespace, pb.NamespaceRequest(namespace=namespace))
    assert isinstance(error, InvalidConfiguration), error


@pytest.mark.usefixtures("nothing_changes")
@pytest.mark.parametrize("namespace", ["public/..", "../default", "public/."])
def test_deleting_an_escaping_namespace_with_force_is_refused_and_deletes_nothing(stub, admin, namespace):
    error = _refused(stub.DeleteNamespace, pb.DeleteNamespaceRequest(namespace=namespace, force=True))
    assert isinstance(error, InvalidConfiguration), error
    assert KEPT in admin.list_topics("public/default")


@pytest.mark.usefixtures("nothing_changes")
@pytest.mark.parametrize("tenant", ["..", "."])
def test_deleting_an_escaping_tenant_with_force_is_refused_and_deletes_nothing(stub, admin, tenant):
    error = _refused(stub.DeleteTenant, pb.DeleteTenantRequest(tenant=tenant, force=True))
    assert isinstance(error, InvalidConfiguration), error
    assert KEPT in admin.list_topics("public/default")


@pytest.mark.usefixtures("nothing_changes")
def test_a_300_byte_topic_name_is_an_invalid_name_not_an_unknown_error_with_a_path(stub, parent):
    error = _refused(stub.CreateTopic, pb.TopicRequest(topic="persistent://public/default/" + "y" * 300))
    assert isinstance(error, InvalidTopicName), error
    assert "the limit is 255" in error.message
    assert _shows_no_path(error, parent)


@pytest.mark.usefixtures("nothing_changes")
def test_a_partitioned_topic_whose_partition_folders_would_be_too_long_is_refused(admin):
    with pytest.raises(InvalidTopicName, match="partition folder names"):
        admin.create_partitioned_topic("persistent://public/default/" + "p" * 250, 10)


@pytest.mark.usefixtures("nothing_changes")
def test_the_public_client_refuses_an_escaping_topic_before_sending_it(client):
    with pytest.raises(InvalidTopicName):
        client.create_producer("persistent://public/default/..")


@pytest.mark.usefixtures("nothing_changes")
def test_the_admin_api_gets_the_typed_error_for_an_escaping_tenant_and_namespace(admin):
    with pytest.raises(InvalidConfiguration, match="must contain a letter or a digit"):
        admin.create_tenant("..")
    with pytest.raises(InvalidConfiguration, match="must contain a letter or a digit"):
        admin.create_namespace("public/..")


def test_the_kept_topic_still_holds_its_message_after_the_attacks(client):
    from connector import MessageId

    reader = client.create_reader(KEPT, MessageId.earliest)
    assert reader.read_next(timeout_millis=5000).data() == b"kept"
    reader.close()
