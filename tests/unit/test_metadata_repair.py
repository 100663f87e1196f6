"""Issue 29: ``pulsarlike repair --data-dir`` (broker_core.core.metadata_repair, broker_core.repair_cli) shows
what it would drop or restore, with the file, the byte and the key it concerns, changes nothing without
``--yes``, and with it writes metadata the broker starts from, keeping the replaced files."""
from __future__ import annotations

import pytest

from broker_core import repair_cli
from broker_core.core.metadata import PartitionedTopicsStore
from broker_core.core.metadata_repair import plan
from broker_core.core.namespaces import NamespacesStore
from broker_core.core.policies import NAMESPACE, TOPIC, PoliciesStore
from broker_core.errors import CorruptLog
from broker_core.storage.dir_lock import DataDirLock

NS = "acme/orders"
T = "persistent://acme/orders/t"


def data_dir(tmp_path):
    """A data dir's metadata: tenant acme (admin role root) with namespace acme/orders, two grants and a
    policy on it, a partitioned topic; every change still in the change files (no compaction yet)."""
    metadata = tmp_path / "metadata"
    namespaces = NamespacesStore(metadata)
    namespaces.create_tenant("acme", ["root"])
    namespaces.create_namespace(NS)
    policies = PoliciesStore(metadata)
    policies.grant(NAMESPACE, NS, "billing", ["consume"])
    policies.set(NAMESPACE, NS, "messageTTLInSeconds", 60)
    policies.grant(NAMESPACE, NS, "shop", ["produce"])
    policies.set(TOPIC, T, "deduplicationEnabled", True)
    policies.close()
    partitioned = PartitionedTopicsStore(metadata)
    partitioned.set(T + "-p", 3)
    partitioned.set(T + "-q", 2)
    partitioned.close()
    return tmp_path


def files(folder) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted((folder / "metadata").rglob("*")) if p.is_file()}


def damage_line(path, index: int, old: bytes, new: bytes) -> int:
    """Replace ``old`` in line ``index`` of ``path``; returns the byte where that line starts."""
    lines = path.read_bytes().split(b"\n")
    assert old in lines[index]
    lines[index] = lines[index].replace(old, new)
    path.write_bytes(b"\n".join(lines))
    return sum(len(line) + 1 for line in lines[:index])


def run(capsys, *args: str) -> tuple[int, str]:
    code = repair_cli.main(["repair", *args])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_a_clean_data_dir_has_nothing_to_repair(tmp_path, capsys):
    data_dir(tmp_path)
    assert run(capsys, "--data-dir", str(tmp_path)) == (0, f"pulsarlike repair: data dir {tmp_path} (dry run,"
                                                           " nothing is changed)\nmetadata: nothing to repair\n")


def test_a_dry_run_shows_the_damaged_line_its_key_and_what_it_becomes_and_changes_nothing(tmp_path, capsys):
    data_dir(tmp_path)
    changes = tmp_path / "metadata" / "policies.00000000.changes"
    at = damage_line(changes, 2, b'"shop":["produce"]', b'"shop":["produce"')  # the grant to shop
    before = files(tmp_path)
    code, out = run(capsys, "--data-dir", str(tmp_path))
    assert code == 1
    assert f"metadata/policies.00000000.changes at byte {at}: change line damaged" in out
    assert "repair: drop this line" in out
    # the key is still told, and what it holds after the repair: the grants before the line
    assert ('namespaces acme/orders stays as before this line: {"messageTTLInSeconds": 60, "permissions":'
            ' {"billing": ["consume"]}}') in out
    assert f"pulsarlike repair --data-dir {tmp_path} --yes" in out
    assert files(tmp_path) == before
    with pytest.raises(CorruptLog):
        PoliciesStore(tmp_path / "metadata")


def test_with_yes_the_line_is_dropped_the_rest_kept_and_the_replaced_files_set_aside(tmp_path, capsys):
    data_dir(tmp_path)
    changes = tmp_path / "metadata" / "policies.00000000.changes"
    damaged = damage_line(changes, 2, b'"shop":["produce"]', b'"shop":["produce"')
    original = changes.read_bytes()
    code, out = run(capsys, "--data-dir", str(tmp_path), "--yes")
    assert code == 0 and "metadata: repaired" in out
    policies = PoliciesStore(tmp_path / "metadata")
    assert policies.permissions(NAMESPACE, NS) == {"billing": ["consume"]}
    assert policies.get(NAMESPACE, NS) == {"messageTTLInSeconds": 60}
    assert policies.get(TOPIC, T) == {"deduplicationEnabled": True}
    (kept,) = (tmp_path / "metadata").glob("repair-*/policies.00000000.changes")
    assert kept.read_bytes() == original and damaged
    assert run(capsys, "--data-dir", str(tmp_path)) == (0, f"pulsarlike repair: data dir {tmp_path} (dry run,"
                                                           " nothing is changed)\nmetadata: nothing to repair\n")


def test_a_dropped_line_whose_key_is_set_again_later_is_said_to_change_nothing(tmp_path):
    data_dir(tmp_path)
    changes = tmp_path / "metadata" / "policies.00000000.changes"
    damage_line(changes, 0, b'"billing":["consume"]', b'"billing":["consume"]]')
    (finding,) = plan(tmp_path).findings
    assert finding.damage.key == "namespaces\tacme/orders"
    assert "unaffected, a later change (policies.00000000.changes at byte" in finding.effect


def test_a_snapshot_recovered_exactly_at_start_is_rewritten_with_nothing_lost(tmp_path, capsys):
    metadata = tmp_path / "metadata"
    store = PartitionedTopicsStore(metadata)
    store._log._compact_after = 2
    for i in range(9):
        store.set(f"{T}-{i % 2}", i + 1)
    store.close()
    expected = PartitionedTopicsStore(metadata).topics()
    newest = max(metadata.glob("partitioned-topics.0*.json"))
    newest.write_bytes(b"")
    code, out = run(capsys, "--data-dir", str(tmp_path))
    assert code == 1 and f"{newest.relative_to(tmp_path)} at byte 0: empty file" in out
    assert "and the changes since (the broker reads it so at start already): nothing is lost" in out
    assert run(capsys, "--data-dir", str(tmp_path), "--yes")[0] == 0
    assert PartitionedTopicsStore(metadata).topics() == expected
    assert run(capsys, "--data-dir", str(tmp_path))[0] == 0


def test_a_snapshot_entry_of_the_wrong_type_is_dropped_alone(tmp_path):
    metadata = data_dir(tmp_path) / "metadata"
    (metadata / "partitioned-topics.json").write_text(
        '{"persistent://acme/orders/a": 4, "persistent://acme/orders/b": "many"}')
    for path in metadata.glob("partitioned-topics.*.changes"):
        path.unlink()
    repair = plan(tmp_path)
    (finding,) = repair.findings
    assert finding.action == "drop the entry persistent://acme/orders/b" and finding.damage.excerpt == b'"many"'
    repair.apply()
    assert PartitionedTopicsStore(metadata).topics() == {"persistent://acme/orders/a": 4}


def test_an_unreadable_only_snapshot_keeps_what_the_change_files_say_and_says_the_rest_is_lost(tmp_path):
    metadata = tmp_path / "metadata"
    (metadata).mkdir()
    (metadata / "partitioned-topics.json").write_bytes(b'{"persistent://acme/orders/a": 4, "persis')
    (metadata / "partitioned-topics.00000007.changes").write_bytes(b'{"k":"persistent://acme/orders/b","v":2}\n')
    repair = plan(tmp_path)
    (finding,) = repair.findings
    assert "what only it held is lost" in finding.action
    repair.apply()
    assert PartitionedTopicsStore(metadata).topics() == {"persistent://acme/orders/b": 2}


def test_an_unreadable_namespaces_file_is_rebuilt_from_the_data_dir_with_tenants_at_their_defaults(tmp_path):
    metadata = data_dir(tmp_path) / "metadata"
    (tmp_path / "topics" / "persistent" / "other" / "ns" / "t").mkdir(parents=True)
    (metadata / "namespaces.json").write_bytes(b'{"namespaces": ["acme/ord')
    repair = plan(tmp_path, cluster="east")
    assert "rebuild the file" in repair.findings[0].action
    assert any("acme, other, public" in note and "--admin-roles" in note for note in repair.notes)
    repair.apply()
    namespaces = NamespacesStore(metadata)
    assert namespaces.all_namespaces() == [NS, "other/ns", "public/default"]
    assert namespaces.tenant_info("acme") == {"adminRoles": [], "allowedClusters": ["east"]}


def test_a_tenant_with_damaged_info_gets_the_defaults_and_keeps_its_namespaces(tmp_path):
    metadata = data_dir(tmp_path) / "metadata"
    path = metadata / "namespaces.json"
    path.write_bytes(path.read_bytes().replace(b'"root"', b"7"))
    repair = plan(tmp_path)
    (finding,) = repair.findings
    assert finding.damage.key == "tenant\tacme" and "give the tenant acme the defaults" in finding.action
    repair.apply()
    assert NamespacesStore(metadata).tenant_info("acme")["adminRoles"] == []
    assert NamespacesStore(metadata).all_namespaces() == [NS, "public/default"]


def test_repair_refuses_a_data_dir_a_broker_holds(tmp_path, capsys):
    data_dir(tmp_path)
    lock = DataDirLock(tmp_path)
    lock.acquire()
    try:
        code, out = run(capsys, "--data-dir", str(tmp_path), "--yes")
    finally:
        lock.release()
    assert code == 2 and "refused" in out and "in use by another broker" in out


def test_repair_of_no_data_dir_is_a_usage_error(tmp_path, capsys):
    assert run(capsys, "--data-dir", str(tmp_path / "nothing"))[0] == 2


def test_repair_help_says_nothing_changes_without_yes(capsys):
    with pytest.raises(SystemExit) as done:
        repair_cli.main(["repair", "--help"])
    assert done.value.code == 0
    assert "changes nothing without --yes" in " ".join(capsys.readouterr().out.split())
