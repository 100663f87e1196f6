"""``AutoClusterFailover`` / ``ServiceInfoProvider`` without a broker (issue 33): pulsar-client 3.13's argument
errors, the provider protocol (initial service, update callback, close) and the failover state machine of
pulsar-client-cpp (:class:`connector.client.failover.FailoverProbe`) driven round by round with an injected
probe. The switch of a live client between two brokers is tests/integration/test_cluster_failover.py."""
from __future__ import annotations

import socket

import pytest

import pulsarlike
from pulsarlike import AuthenticationToken, AutoClusterFailover, Client, ServiceInfo, ServiceInfoProvider
from connector.client.failover import FailoverProbe, SwitchingTransport, service_hosts, tcp_probe

PRIMARY = "pulsar://127.0.0.1:9"
SECONDARY = "pulsar://192.0.2.1:6650"


class StaticProvider(ServiceInfoProvider):
    def __init__(self, initial):
        self.initial = initial
        self.callback = None
        self.closed = False

    def initial_service_info(self):
        return self.initial

    def initialize(self, on_service_info_update):
        self.callback = on_service_info_update

    def close(self):
        self.closed = True


class InvalidProvider(ServiceInfoProvider):
    def initial_service_info(self):
        return "invalid"

    def initialize(self, on_service_info_update):
        pass


def test_service_info_argument_errors():
    for make in (lambda: ServiceInfo(None), lambda: ServiceInfo(PRIMARY, authentication="test"),
                 lambda: ServiceInfo(PRIMARY, tls_trust_certs_file_path=5)):
        with pytest.raises(ValueError):
            make()
    info = ServiceInfo("pulsar+ssl://h:6651", tls_trust_certs_file_path="/ca.pem")
    assert (info.use_tls, info.tls_trust_certs_file_path) == (True, "/ca.pem")


def test_auto_cluster_failover_argument_errors():
    primary, secondary = ServiceInfo(PRIMARY), [ServiceInfo(SECONDARY)]
    cases = {
        "primary": lambda: AutoClusterFailover("test", secondary),
        "secondary is expected to be of type 'list'": lambda: AutoClusterFailover(primary, "test"),
        "at least one ServiceInfo": lambda: AutoClusterFailover(primary, []),
        r"secondary\[0\]": lambda: AutoClusterFailover(primary, ["test"]),
        "check_interval_ms is expected to be greater than 0":
            lambda: AutoClusterFailover(primary, secondary, check_interval_ms=0),
        "failover_threshold is expected to be greater than 0":
            lambda: AutoClusterFailover(primary, secondary, failover_threshold=0),
        "switch_back_threshold is expected to be greater than 0":
            lambda: AutoClusterFailover(primary, secondary, switch_back_threshold=0),
        "authentication is not supported when service_url is an AutoClusterFailover":
            lambda: Client(AutoClusterFailover(primary, secondary), authentication=AuthenticationToken("t")),
        "tls_trust_certs_file_path is not supported":
            lambda: Client(AutoClusterFailover(primary, secondary), tls_trust_certs_file_path="/ca.pem"),
        "authentication is not supported when service_url":
            lambda: Client(StaticProvider(primary), authentication=AuthenticationToken("t")),
        "set tls_trust_certs_file_path on each ServiceInfo":
            lambda: Client(StaticProvider(primary), tls_trust_certs_file_path="/ca.pem"),
        "Expected a pulsar.ServiceInfo or _pulsar.ServiceInfo instance": lambda: Client(InvalidProvider()),
    }
    for words, make in cases.items():
        with pytest.raises(ValueError, match=words):
            make()
    config = AutoClusterFailover(primary, secondary)
    assert (config.check_interval_ms, config.failover_threshold, config.switch_back_threshold) == (5000, 1, 1)
    assert "AutoClusterFailover(primary=ServiceInfo(" in repr(config)


def test_a_provider_client_starts_on_the_first_service_and_follows_the_callback():
    primary, secondary = ServiceInfo(PRIMARY), ServiceInfo(SECONDARY)
    provider = StaticProvider(primary)
    client = Client(provider)
    assert client.get_service_info().service_url == PRIMARY
    provider.callback(secondary)  # no I/O: the new service is connected to at first use
    assert client.get_service_info().service_url == SECONDARY
    assert client._connection.target == "192.0.2.1:6650"
    with pytest.raises(ValueError, match="Expected a pulsar.ServiceInfo"):
        provider.callback("pulsar://elsewhere:6650")
    client.close()
    assert provider.closed
    provider.callback(primary)  # after close: ignored
    assert client.get_service_info().service_url == SECONDARY


def test_an_auto_cluster_failover_client_names_the_primary_and_stops_probing_on_close():
    client = Client(AutoClusterFailover(ServiceInfo(PRIMARY), [ServiceInfo(SECONDARY)], check_interval_ms=100))
    assert client.get_service_info().service_url == PRIMARY
    probe = client._provider
    assert isinstance(probe, FailoverProbe) and probe._thread.is_alive()
    client.close()
    assert not probe._thread.is_alive()


def test_a_provider_client_refuses_the_grpc_transport():
    with pytest.raises(pulsarlike.NotSupported, match="binary protocol"):
        Client(StaticProvider(ServiceInfo(PRIMARY)), transport="grpc")


class Probes:
    """Which services answer, changed by the test between rounds."""

    def __init__(self, up):
        self.up = set(up)
        self.asked = []

    def __call__(self, url):
        self.asked.append(url)
        return url in self.up


def _machine(up, failover_threshold=1, switch_back_threshold=1, secondaries=("pulsar://b:1",)):
    config = AutoClusterFailover(ServiceInfo("pulsar://a:1"), [ServiceInfo(u) for u in secondaries],
                                 check_interval_ms=10, failover_threshold=failover_threshold,
                                 switch_back_threshold=switch_back_threshold)
    probes = Probes(up)
    machine = FailoverProbe(config, probe=probes)
    switches = []
    machine.initialize(lambda info: switches.append(info.service_url), start=False)
    return machine, probes, switches


def test_the_primary_failing_its_threshold_switches_to_the_first_secondary_that_answers():
    machine, probes, switches = _machine({"pulsar://b:1", "pulsar://c:1"}, failover_threshold=2,
                                         secondaries=("pulsar://x:1", "pulsar://b:1", "pulsar://c:1"))
    machine.check()
    assert switches == []  # one failure of two
    machine.check()
    assert switches == ["pulsar://b:1"]  # x does not answer, b does
    assert probes.asked[-2:] == ["pulsar://x:1", "pulsar://b:1"]


def test_a_primary_that_answers_again_resets_the_failure_count():
    machine, probes, switches = _machine(set(), failover_threshold=2)
    machine.check()
    probes.up = {"pulsar://a:1"}
    machine.check()
    probes.up = {"pulsar://b:1"}
    machine.check()
    assert switches == []


def test_switch_back_after_the_threshold_of_primary_successes():
    machine, probes, switches = _machine({"pulsar://b:1"}, switch_back_threshold=3)
    machine.check()
    assert switches == ["pulsar://b:1"]
    probes.up = {"pulsar://a:1", "pulsar://b:1"}
    machine.check()
    machine.check()
    assert switches == ["pulsar://b:1"]
    machine.check()
    assert switches == ["pulsar://b:1", "pulsar://a:1"]
    assert machine.on_primary


def test_a_failing_secondary_goes_back_to_the_primary_at_once_or_to_another_secondary():
    machine, probes, switches = _machine({"pulsar://b:1"}, switch_back_threshold=5,
                                         secondaries=("pulsar://b:1", "pulsar://c:1"))
    machine.check()
    probes.up = {"pulsar://a:1"}  # b down, a back: regardless of switch_back_threshold
    machine.check()
    assert switches == ["pulsar://b:1", "pulsar://a:1"]
    probes.up = {"pulsar://b:1"}
    machine.check()
    probes.up = {"pulsar://c:1"}  # b down, a down: c
    machine.check()
    assert switches[-2:] == ["pulsar://b:1", "pulsar://c:1"]
    probes.up = set()  # everything down: stays
    machine.check()
    assert machine.current.service_url == "pulsar://c:1"


def test_service_hosts_and_the_tcp_probe():
    assert service_hosts("pulsar://h1:6650,h2:6651") == [("h1", 6650), ("h2", 6651)]
    assert service_hosts("pulsar+ssl://[::1]:6651") == [("::1", 6651)]
    assert service_hosts("http://web") == [("web", 80)]
    assert service_hosts("nonsense") == []
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        assert tcp_probe(f"pulsar://127.0.0.1:{port}", 1.0)
    assert not tcp_probe(f"pulsar://127.0.0.1:{port}", 1.0)


def test_switching_transport_retires_the_old_one():
    opened = []

    class Fake:
        operation_timeout_s, connection_timeout_s = 1.0, 1.0

        def __init__(self, info):
            self.target, self.retired, self.closed_ = info.service_url, False, False
            opened.append(self)

        def retire(self):
            self.retired = True

        def close(self):
            self.closed_ = True

    switching = SwitchingTransport(ServiceInfo(PRIMARY), Fake)
    switching.switch(ServiceInfo(SECONDARY))
    assert switching.target == SECONDARY and opened[0].retired and not opened[1].retired
    switching.close()
    assert all(t.closed_ for t in opened)
    with pytest.raises(pulsarlike.AlreadyClosed):
        switching.partitions("t")
