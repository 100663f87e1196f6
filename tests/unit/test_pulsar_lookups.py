"""GET_TOPICS_OF_NAMESPACE's hash, the peer map, and the ServerError table (its patterns:
test_topics_pattern.py)."""
from __future__ import annotations

from broker_core import errors
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.server_errors import server_error
from broker_core.net.peers import ClientIdentity, PeerMap, peer_name
from broker_core.frontends.pulsar.lookups import topics_hash


def test_the_topics_hash_changes_with_the_list():
    assert topics_hash(["a", "b"]) == topics_hash(["a", "b"]) != topics_hash(["a"])


def test_the_peer_map_names_the_client_behind_a_relayed_connection():
    peers = PeerMap()
    relay = peer_name("127.0.0.1", 40312)
    peers.add(relay, ClientIdentity(peer_name("10.0.0.5", 51234)))
    assert peers.identity("ipv4:127.0.0.1:40312").address == "ipv4:10.0.0.5:51234"
    peers.remove(relay)
    assert peers.identity(relay) is None
    assert peer_name("::1", 5) == "ipv6:[::1]:5"


def test_errors_map_to_the_server_error_codes_clients_act_on():
    assert server_error(errors.ServiceNotReady("x")) == cmd.ServiceNotReady
    assert server_error(errors.ChecksumError("x")) == cmd.ChecksumError
    assert server_error(errors.NamespaceNotFound("x")) == cmd.TopicNotFound
    assert server_error(errors.CumulativeAcknowledgementNotAllowedError("x")) == cmd.NotAllowedError
    assert server_error(errors.TopicTerminated("x")) == cmd.TopicTerminatedError
    assert server_error(errors.MessageDecodeError("x")) == cmd.NotAllowedError


class _Context:
    def __init__(self, peer: str) -> None:
        self._peer = peer

    def peer(self) -> str:
        return self._peer


def test_admission_counts_the_client_behind_the_relay_and_refuses_unrelayed_callers():
    import pytest

    from broker_core.frontends.grpc.admission import Admission
    from broker_core.net.client_limits import ClientLimits, Limits

    peers = PeerMap()
    peers.add("ipv4:127.0.0.1:40312", ClientIdentity("ipv4:10.0.0.5:51234"))
    admission = Admission(ClientLimits(Limits()), peers)
    assert admission._peer(_Context("ipv4:127.0.0.1:40312")) == "ipv4:10.0.0.5:51234"
    with pytest.raises(errors.NotAllowedError, match="connect to the broker's port"):
        admission._peer(_Context("ipv4:127.0.0.1:40999"))
