"""``pulsarlike produce`` / ``consume`` / ``admin`` as processes against a Pulsar broker that is not ours
(pulsar-lite): the client commands speak Pulsar's binary protocol there; the admin, given a ``pulsar://`` URL
it cannot reach over gRPC, says the broker's admin REST URL is needed."""
from __future__ import annotations

import os
import subprocess
import sys
import uuid

from tests.pulsar_lite import pulsar_lite_broker  # noqa: F401


def pulsarlike(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "broker_core.cli", *args], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))


def test_produce_and_consume_round_trip_on_pulsar_lite(pulsar_lite_broker):
    topic, url = f"cli-any-{uuid.uuid4().hex[:10]}", pulsar_lite_broker.service_url
    produced = pulsarlike("produce", topic, "-m", "a,b,c", "-n", "2", "-k", "sensor-1", "-p", "unit=C", "--url", url)
    assert produced.returncode == 0, produced.stderr
    assert "6 messages successfully produced" in produced.stdout

    consumed = pulsarlike("consume", topic, "-s", "cli-sub", "-p", "Earliest", "-n", "6", "--transport", "binary",
                          "--url", url)
    assert consumed.returncode == 0, consumed.stderr
    lines = [line for line in consumed.stdout.splitlines() if "content:" in line]
    assert [line.split("content:", 1)[1] for line in lines] == ["a", "b", "c"] * 2
    assert all("key:[sensor-1]" in line and "properties:[unit=C]" in line for line in lines)


def test_admin_over_a_service_url_of_another_broker_names_the_admin_url_it_needs(pulsar_lite_broker):
    done = pulsarlike("admin", "topics", "list", "public/default", "--admin-url", pulsar_lite_broker.service_url)
    assert done.returncode == 1
    assert "NotSupported" in done.stderr and "is a Pulsar broker other than pulsarlike" in done.stderr
    assert "--admin-url http://" in done.stderr
