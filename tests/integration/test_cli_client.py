"""``pulsarlike produce`` / ``consume`` / ``health`` as processes against a real broker process."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid

import pytest

from tests.brokers import BrokerProcess

BOUNDARY = "----- got message -----"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("cli-broker")).start()
    yield proc
    proc.stop()


@pytest.fixture
def topic():
    return f"cli-{uuid.uuid4().hex[:10]}"


def pulsarlike(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "broker_core.cli", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


def contents(stdout: str) -> list[str]:
    return [line.split("content:", 1)[1] for line in stdout.splitlines() if "content:" in line]


def test_produce_and_consume_round_trip_prints_messages_like_pulsar_client(broker, topic):
    produced = pulsarlike("produce", topic, "-m", "a,b,c", "-n", "2", "-k", "sensor-1", "-p", "unit=C,site=north",
                          "--url", broker.service_url)
    assert produced.returncode == 0, produced.stderr
    assert produced.stdout.strip().splitlines()[-1] == "6 messages successfully produced"

    consumed = pulsarlike("consume", topic, "-s", "sub", "-p", "Earliest", "-n", "6", "--url", broker.service_url)
    assert consumed.returncode == 0, consumed.stderr
    lines = consumed.stdout.splitlines()
    assert lines.count(BOUNDARY) == 6
    assert contents(consumed.stdout) == ["a", "b", "c", "a", "b", "c"]
    first = lines[lines.index(BOUNDARY) + 1]
    assert "key:[sensor-1]" in first and "properties:[unit=C, site=north]" in first
    assert first.startswith("publishTime:[") and "eventTime:[0]" in first
    assert lines[-1] == "6 messages successfully consumed"


def test_consume_acknowledges_what_it_prints(broker, topic):
    assert pulsarlike("produce", topic, "-m", "1,2,3,4", "-db", "--url", broker.service_url).returncode == 0
    first = pulsarlike("consume", topic, "-s", "acks", "-p", "Earliest", "-n", "2", "--url", broker.service_url)
    second = pulsarlike("consume", topic, "-s", "acks", "-n", "2", "--url", broker.service_url)
    assert contents(first.stdout) == ["1", "2"]
    assert contents(second.stdout) == ["3", "4"]


def test_latest_position_skips_stored_messages_and_idle_timeout_ends_the_wait(broker, topic):
    assert pulsarlike("produce", topic, "-m", "old", "--url", broker.service_url).returncode == 0
    consumed = pulsarlike("consume", topic, "-s", "late", "-t", "Shared", "-n", "0", "--idle-timeout", "1",
                          "--url", broker.service_url)
    assert consumed.returncode == 0, consumed.stderr
    assert BOUNDARY not in consumed.stdout
    assert consumed.stdout.strip() == "0 messages successfully consumed"


def test_files_are_one_message_each_and_an_empty_separator_keeps_commas(broker, topic, tmp_path):
    payload = tmp_path / "payload.json"
    payload.write_text('{"a": 1, "b": 2}')
    produced = pulsarlike("produce", topic, "-f", str(payload), "-m", "x,y", "-s", "", "--url", broker.service_url)
    assert produced.returncode == 0, produced.stderr
    assert "2 messages successfully produced" in produced.stdout
    consumed = pulsarlike("consume", topic, "-s", "s", "-p", "Earliest", "-n", "2", "--url", broker.service_url)
    assert sorted(contents(consumed.stdout)) == ['x,y', '{"a": 1, "b": 2}']


def test_hex_prints_a_dump_of_the_content(broker, topic):
    assert pulsarlike("produce", topic, "-m", "hello", "--url", broker.service_url).returncode == 0
    consumed = pulsarlike("consume", topic, "-s", "hex", "-p", "earliest", "--hex", "--url", broker.service_url)
    assert "00000000  68 65 6c 6c 6f" in consumed.stdout and "|hello|" in consumed.stdout


def test_consume_forever_stops_on_sigterm_with_the_summary(broker, topic):
    proc = subprocess.Popen([sys.executable, "-m", "broker_core.cli", "consume", topic, "-s", "forever", "-n", "0",
                             "-p", "Earliest", "--url", broker.service_url], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert pulsarlike("produce", topic, "-m", "m1,m2,m3", "--url", broker.service_url).returncode == 0
        seen = []
        while len(seen) < 3:
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            if "content:" in line:
                seen.append(line.rstrip("\n").split("content:", 1)[1])
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert seen == ["m1", "m2", "m3"]
    assert proc.returncode == 0
    assert rest.strip().splitlines()[-1] == "3 messages successfully consumed"


def test_service_url_comes_from_the_environment(broker, topic):
    produced = pulsarlike("produce", topic, "-m", "env", env={"PULSARLIKE_SERVICE_URL": broker.service_url})
    assert produced.returncode == 0, produced.stderr


def test_unknown_flag_shows_usage_with_the_closest_flag(broker, topic):
    result = pulsarlike("produce", topic, "-m", "x", "--sepratr", ";", "--url", broker.service_url)
    assert result.returncode == 2
    assert "usage: pulsarlike produce" in result.stderr
    assert "'--sepratr'" in result.stderr and "did you mean '--separator'" in result.stderr


def test_bad_subscription_type_lists_the_types(broker, topic):
    result = pulsarlike("consume", topic, "-s", "s", "-t", "Sharde", "--url", broker.service_url)
    assert result.returncode == 2
    assert "Exclusive, Shared, Failover, Key_Shared" in result.stderr


def test_produce_without_content_is_a_usage_error(broker, topic):
    result = pulsarlike("produce", topic, "--url", broker.service_url)
    assert result.returncode == 2 and "-m/--messages" in result.stderr


def test_a_malformed_service_url_is_a_usage_error(topic):
    result = pulsarlike("produce", topic, "-m", "x", "--url", "ftp://nowhere")  # http:// is a lookup URL now
    assert result.returncode == 2 and "service_url" in result.stderr


def test_broker_errors_print_their_code_and_exit_1(broker_process, topic):
    proc = broker_process("--set", "allowAutoTopicCreation=false")
    result = pulsarlike("produce", topic, "-m", "x", "--url", proc.service_url)
    assert result.returncode == 1
    assert result.stderr.startswith("pulsarlike produce: TopicNotFound: ")
    invalid = pulsarlike("consume", "persistent://bad name/x/y", "-s", "s", "--url", proc.service_url)
    assert invalid.returncode == 1 and "InvalidTopicName" in invalid.stderr


def test_health_reports_serving(broker):
    result = pulsarlike("health", "--url", broker.service_url)
    assert (result.returncode, result.stdout.strip()) == (0, "SERVING")


def test_health_of_an_unknown_service_or_a_closed_port_fails(broker, unused_port):
    unknown = pulsarlike("health", "--url", broker.service_url, "--service", "no.such.Service")
    assert (unknown.returncode, unknown.stdout.strip()) == (1, "SERVICE_UNKNOWN")
    closed = pulsarlike("health", "--url", f"pulsar://127.0.0.1:{unused_port}", "--timeout", "1")
    assert closed.returncode == 1 and "no answer" in closed.stderr


@pytest.fixture
def unused_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_pulsar_clients_global_url_form_is_accepted(broker, topic):
    produced = pulsarlike("--url", broker.service_url, "produce", topic, "-m", "hello")
    assert produced.returncode == 0, produced.stderr
    consumed = pulsarlike(f"--service-url={broker.service_url}", "consume", topic, "-s", "s", "-p", "Earliest")
    assert consumed.returncode == 0, consumed.stderr
    assert contents(consumed.stdout) == ["hello"]
