"""Issue 29, broker metadata: a broker process whose policies, namespaces or partitioned topics file is
damaged refuses to start with one message naming the file, the byte and ``pulsarlike repair --data-dir``;
the repair shows what it would drop and changes nothing, then with ``--yes`` repairs, and the broker starts
and serves. A damaged newest snapshot with a clean one before it starts without a repair, with one ERROR
line, its permissions and policies unchanged."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from broker_core.core.namespaces import NamespacesStore
from broker_core.core.policies import NAMESPACE, TOPIC, PoliciesStore
from connector import Admin, Client, MessageId
from tests.brokers import LISTENING

NS = "acme/orders"
PARTED, OTHER, PLAIN = (f"persistent://acme/orders/{name}" for name in ("parted", "other", "plain"))


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "broker_core.cli", *args], capture_output=True, text=True,
                          timeout=60)


def metadata_files(data_dir: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted((data_dir / "metadata").iterdir()) if p.is_file()}


def round_trip(url: str, payload: bytes) -> bytes:
    with Client(url) as client:
        client.create_producer(PLAIN).send(payload)
        return client.create_reader(PLAIN, MessageId.latest, start_message_id_inclusive=True) \
            .read_next(timeout_millis=10_000).data()


def populate(url: str) -> None:
    with Admin(url) as admin:
        admin.create_tenant("acme", admin_roles=["root"])
        admin.create_namespace(NS)
        admin.grant_namespace_permission(NS, "billing", ["consume"])
        admin.set_namespace_message_ttl(NS, 60)  # the policies' second line
        admin.grant_namespace_permission(NS, "shop", ["produce"])
        admin.create_partitioned_topic(PARTED, 2)  # the partitioned topics' first line
        admin.create_partitioned_topic(OTHER, 3)
    round_trip(url, b"before")


def damage_line(path: Path, index: int) -> int:
    """Break line ``index`` of a change file (a byte of its value made a control character, its key intact);
    returns where the line starts."""
    lines = path.read_bytes().split(b"\n")
    lines[index] = lines[index][:-3] + b"\x01" + lines[index][-2:]
    path.write_bytes(b"\n".join(lines))
    return sum(len(line) + 1 for line in lines[:index])


def damage(data_dir: Path, kind: str) -> tuple[Path, int]:
    metadata = data_dir / "metadata"
    if kind == "namespaces":
        path = metadata / "namespaces.json"
        text = path.read_text()
        path.write_text(text[:len(text) // 2])
        with pytest.raises(json.JSONDecodeError) as parse:
            json.loads(text[:len(text) // 2])
        return path, parse.value.pos
    path = metadata / f"{kind}.00000000.changes"
    return path, damage_line(path, 1 if kind == "policies" else 0)


@pytest.mark.parametrize("kind", ["policies", "namespaces", "partitioned-topics"])
def test_damaged_metadata_is_refused_then_shown_then_repaired_and_the_broker_serves(broker_process, tmp_path, kind):
    data_dir = tmp_path / "data"
    first = broker_process(data_dir=data_dir)
    populate(first.service_url)
    assert first.terminate() == 0
    path, byte = damage(data_dir, kind)

    start = cli("broker", "--data-dir", str(data_dir), "--port", "0")
    assert start.returncode == 2 and LISTENING not in start.stdout
    refusal = [line for line in start.stderr.splitlines() if line.startswith("pulsarlike: CorruptLog")]
    assert len(refusal) == 1, start.stderr
    assert f"{path} is damaged at byte {byte}" in refusal[0]
    assert f"run: pulsarlike repair --data-dir {data_dir}" in refusal[0]

    before = metadata_files(data_dir)
    dry = cli("repair", "--data-dir", str(data_dir))
    assert dry.returncode == 1, dry.stdout + dry.stderr
    assert f"{path.relative_to(data_dir)} at byte {byte}" in dry.stdout and "repair: " in dry.stdout
    assert metadata_files(data_dir) == before, "a dry run changes nothing"

    done = cli("repair", "--data-dir", str(data_dir), "--yes")
    assert done.returncode == 0 and "metadata: repaired" in done.stdout, done.stdout + done.stderr
    again = broker_process(data_dir=data_dir)
    with Admin(again.service_url) as admin:
        assert admin.list_namespaces("acme") == [NS]
        assert admin.get_namespace_permissions(NS) == {"billing": ["consume"], "shop": ["produce"]}
        assert admin.get_namespace_message_ttl(NS) == 60  # the policies' line dropped: a later one set it too
        assert admin.get_partitioned_topic_metadata(OTHER) == {"partitions": 3}
        assert admin.get_partitioned_topic_metadata(PARTED) == {"partitions": 0 if kind == "partitioned-topics"
                                                                else 2}
        assert admin.get_tenant("acme")["adminRoles"] == ([] if kind == "namespaces" else ["root"])
    assert round_trip(again.service_url, b"after") == b"after"
    if kind == "policies":
        assert "unaffected, a later change" in dry.stdout
    if kind == "partitioned-topics":
        assert f"{PARTED} stays as before this line: no entry" in dry.stdout
    if kind == "namespaces":
        assert "acme" in dry.stdout and "--admin-roles" in dry.stdout


def test_a_damaged_newest_snapshot_starts_with_one_error_line_and_access_unchanged(broker_process, tmp_path):
    metadata = tmp_path / "data" / "metadata"
    namespaces = NamespacesStore(metadata)
    namespaces.create_tenant("acme", ["root"])
    namespaces.create_namespace(NS)
    policies = PoliciesStore(metadata)
    policies._log._compact_after = 2  # a compaction every 3 changes: the newest snapshot and the one before
    for round_ in range(3):
        policies.grant(NAMESPACE, NS, "billing", ["consume"] if round_ < 2 else ["consume", "produce"])
        policies.set(NAMESPACE, NS, "messageTTLInSeconds", 60 + round_)
        policies.grant(TOPIC, PLAIN, "shop", ["produce"])
    policies.close()
    snapshots = sorted(metadata.glob("policies.0*.json"))
    assert len(snapshots) == 2
    newest = snapshots[-1]
    newest.write_bytes(newest.read_bytes()[:20])

    proc = broker_process("--log-level", "WARNING", data_dir=tmp_path / "data")
    refused = cli("repair", "--data-dir", str(tmp_path / "data"))
    assert refused.returncode == 2 and "in use by another broker" in refused.stderr
    with Admin(proc.service_url) as admin:
        assert admin.get_namespace_permissions(NS) == {"billing": ["consume", "produce"]}
        assert admin.get_namespace_message_ttl(NS) == 62
        assert admin.get_topic_permissions(PLAIN) == {"shop": ["produce"]}
        assert admin.get_tenant("acme")["adminRoles"] == ["root"]
    assert round_trip(proc.service_url, b"served") == b"served"
    assert proc.terminate() == 0
    damaged = [line for line in proc.proc.stderr.read().splitlines() if "event=metadata_snapshot_damaged" in line]
    assert len(damaged) == 1 and "level=ERROR" in damaged[0] and str(newest) in damaged[0]
