"""Issue 29: damage in the broker's metadata (partitioned topics, policies and permissions, tenants and
namespaces) never silently changes them. A damaged newest snapshot is read exactly from the one before (or
from every change file while none was removed), with one ERROR line; any other damage is refused naming the
file, the byte and ``pulsarlike repair`` (broker_core.core.metadata_files, steps 1 to 6)."""
from __future__ import annotations

import logging

import pytest

from broker_core.core.metadata import PartitionedTopicsStore
from broker_core.core.namespaces import NamespacesStore
from broker_core.core.policies import NAMESPACE, TOPIC, PoliciesStore
from broker_core.errors import CorruptLog

NS = "acme/orders"


def topic(i: int) -> str:
    return f"persistent://acme/orders/t-{i}"


def policies_compacted_twice(folder) -> dict:
    """Policies through two compactions (snapshots of generations 0 and 1, change files 1 and 2, a line
    in 2); returns what they hold, as a start must show it."""
    store = PoliciesStore(folder)
    store._log._compact_after = 3  # compacts once the lines since outnumber max(3, entries): 5 here
    store.grant(NAMESPACE, NS, "billing", ["consume"])
    for i in range(3):
        store.set(TOPIC, topic(i), "messageTTLInSeconds", 60 + i)
    store.grant(NAMESPACE, NS, "shop", ["produce"])  # the 5th line: snapshot 0
    store.revoke(NAMESPACE, NS, "billing")
    for i in range(3):
        store.set(TOPIC, topic(i), "messageTTLInSeconds", 70 + i)
    store.grant(TOPIC, topic(0), "audit", ["consume"])  # snapshot 1
    store.set(TOPIC, topic(1), "maxProducersPerTopic", 2)
    store.close()
    assert sorted(p.name for p in folder.glob("policies.*.json")) == ["policies.00000000.json",
                                                                     "policies.00000001.json"]
    assert sorted(p.name for p in folder.glob("policies.*.changes")) == ["policies.00000001.changes",
                                                                        "policies.00000002.changes"]
    return held(PoliciesStore(folder))


def held(store: PoliciesStore) -> dict:
    return {"ns": store.permissions(NAMESPACE, NS), "t0": store.permissions(TOPIC, topic(0)),
            "policies": [store.get(TOPIC, topic(i)) for i in range(3)]}


def refused(match_path, byte: int, make):
    with pytest.raises(CorruptLog) as caught:
        make()
    message = str(caught.value)
    assert str(match_path) in message and f"at byte {byte}" in message, message
    assert "run: pulsarlike repair --data-dir " in message
    assert caught.value.path == str(match_path) and caught.value.position == byte
    return message


def errors(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


# ------------------------------------------------------------------ snapshots
@pytest.mark.parametrize("damage", [b"", b"{\"namespaces\": {\"acme/or", b"\x00" * 64,
                                    b'{"namespaces": {"acme/orders": {"permissions": "billing"}}, "topics": {}}',
                                    b'{"namespaces": [], "topics": {}}'],
                         ids=["empty", "cut", "zeroed", "wrong-permissions-type", "wrong-shape"])
def test_a_damaged_newest_snapshot_is_read_exactly_from_the_one_before_with_one_error_line(tmp_path, caplog,
                                                                                          damage):
    expected = policies_compacted_twice(tmp_path)
    newest = tmp_path / "policies.00000001.json"
    newest.write_bytes(damage)
    with caplog.at_level(logging.ERROR):
        assert held(PoliciesStore(tmp_path)) == expected
    assert len(errors(caplog)) == 1
    assert "event=metadata_snapshot_damaged" in errors(caplog)[0] and str(newest) in errors(caplog)[0]
    assert "recovered_from='policies.00000000.json'" in errors(caplog)[0]


def test_a_damaged_only_snapshot_is_read_from_every_change_file_while_none_was_removed(tmp_path, caplog):
    store = PartitionedTopicsStore(tmp_path)
    store._log._compact_after = 3
    for i in range(5):
        store.set(topic(i), i + 1)
    store.remove(topic(0))
    store.close()
    assert [p.name for p in tmp_path.glob("partitioned-topics.*.json")] == ["partitioned-topics.00000000.json"]
    (tmp_path / "partitioned-topics.00000000.json").write_bytes(b"{}}")
    with caplog.at_level(logging.ERROR):
        assert PartitionedTopicsStore(tmp_path).topics() == {topic(i): i + 1 for i in range(1, 5)}
    assert "recovered_from='the empty map'" in errors(caplog)[0]


def test_both_snapshots_damaged_is_refused_naming_the_newest_its_byte_and_the_repair(tmp_path):
    policies_compacted_twice(tmp_path)
    (tmp_path / "policies.00000000.json").write_bytes(b"[")
    newest = tmp_path / "policies.00000001.json"
    newest.write_bytes(b'{"namespaces": {}, "topics": {}')
    message = refused(newest, 31, lambda: PoliciesStore(tmp_path))
    assert f"pulsarlike repair --data-dir {tmp_path.parent}" in message


def test_a_snapshot_with_a_wrong_type_names_the_entry(tmp_path):
    policies_compacted_twice(tmp_path)
    for snapshot in tmp_path.glob("policies.0*.json"):
        snapshot.write_bytes(snapshot.read_bytes().replace(b'["produce"]', b'["produce", "admin"]'))
    with pytest.raises(CorruptLog, match="namespaces acme/orders.*unknown action 'admin'"):
        PoliciesStore(tmp_path)


def test_after_a_recovery_the_next_compaction_leaves_the_damaged_snapshot_behind(tmp_path):
    expected = policies_compacted_twice(tmp_path)
    (tmp_path / "policies.00000001.json").write_bytes(b"")
    store = PoliciesStore(tmp_path)
    store._log._compact_after = 2
    for i in range(3):
        store.set(TOPIC, topic(i), "compactionThreshold", 1000 + i)
        expected["policies"][i]["compactionThreshold"] = 1000 + i
    store.close()
    assert (tmp_path / "policies.00000000.json").exists()  # the fallback it started from is kept
    assert not (tmp_path / "policies.00000001.json").exists()
    assert held(PoliciesStore(tmp_path)) == expected


def test_a_legacy_single_snapshot_that_is_damaged_is_refused(tmp_path):
    (tmp_path / "policies.json").write_text('{"namespaces": {"acme/orders": 1}, "topics": {}}')
    refused(tmp_path / "policies.json", 16, lambda: PoliciesStore(tmp_path))


# ------------------------------------------------------------------ change files
def partitioned_lines(tmp_path, count: int = 3):
    store = PartitionedTopicsStore(tmp_path)
    for i in range(count):
        store.set(topic(i), i + 1)
    store.close()
    return tmp_path / "partitioned-topics.00000000.changes"


def test_a_damaged_change_line_in_the_middle_is_refused_at_the_byte_where_it_starts(tmp_path):
    path = partitioned_lines(tmp_path)
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b'"v":2', b'"v":2x')
    path.write_bytes(b"\n".join(lines))
    refused(path, len(lines[0]) + 1, lambda: PartitionedTopicsStore(tmp_path))


@pytest.mark.parametrize("line", [b'{"k":"persistent://acme/orders/t-9","v":0}', b'{"k":"t-9","v":2}',
                                  b'{"k":"persistent://acme/orders/t-9"}', b'{"k":"persistent://acme/orders/t-9",'
                                  b'"v":true}'], ids=["zero", "bare-name", "no-value", "bool"])
def test_a_change_line_of_the_wrong_type_is_damage(tmp_path, line):
    path = partitioned_lines(tmp_path)
    size = path.stat().st_size
    with open(path, "ab") as f:
        f.write(line + b"\n")
    refused(path, size, lambda: PartitionedTopicsStore(tmp_path))


def test_garbage_at_the_end_of_the_newest_change_file_is_damage_not_a_torn_append(tmp_path):
    path = partitioned_lines(tmp_path)
    size = path.stat().st_size
    with open(path, "ab") as f:
        f.write(b"\xde\xad\xbe\xef garbage")
    refused(path, size, lambda: PartitionedTopicsStore(tmp_path))


@pytest.mark.parametrize("tail", [b'{"k":"persistent://acme/or', b'{"k', b"\x00" * 40,
                                  b'{"k":"persistent://acme/orders/t-7","v":7}', b'{"k":"persi' + b"\x00" * 20])
def test_a_torn_append_is_dropped_and_the_file_cut_back(tmp_path, tail):
    path = partitioned_lines(tmp_path)
    size = path.stat().st_size
    with open(path, "ab") as f:
        f.write(tail)
    assert PartitionedTopicsStore(tmp_path).topics() == {topic(i): i + 1 for i in range(3)}
    assert path.stat().st_size == size


def test_a_damaged_snapshot_whose_fallback_misses_a_change_file_is_refused(tmp_path):
    from broker_core.core.metadata_files import read_map
    from broker_core.core.policies import PoliciesCodec

    policies_compacted_twice(tmp_path)
    gone = tmp_path / "policies.00000001.changes"  # what snapshot 0 needs to make the map
    gone.unlink()
    newest = tmp_path / "policies.00000001.json"
    newest.write_bytes(b"{")
    refused(newest, 1, lambda: PoliciesStore(tmp_path))
    reading = read_map(tmp_path, "policies", PoliciesCodec())
    assert [(d.path, d.position) for d in reading.damage] == [(newest, 1), (gone, 0)]


def test_damage_in_a_change_file_the_newest_snapshot_holds_is_not_read(tmp_path):
    expected = policies_compacted_twice(tmp_path)
    covered = tmp_path / "policies.00000001.changes"  # kept for the snapshot before the newest only
    covered.write_bytes(b"garbage\n" + covered.read_bytes())
    assert held(PoliciesStore(tmp_path)) == expected


def test_a_damaged_snapshot_whose_fallback_needs_a_damaged_change_file_is_refused(tmp_path):
    policies_compacted_twice(tmp_path)
    covered = tmp_path / "policies.00000001.changes"
    covered.write_bytes(b"garbage\n" + covered.read_bytes())
    newest = tmp_path / "policies.00000001.json"
    newest.write_bytes(b"")
    message = refused(newest, 0, lambda: PoliciesStore(tmp_path))
    assert "empty file" in message


# ------------------------------------------------------------------ namespaces.json
@pytest.mark.parametrize("content, byte", [
    (b"", 0),
    (b'{"namespaces": ["acme/orders"], "tenants": {"acme": {"adminRoles": "root"}}}', 44),
    (b'{"namespaces": ["acme/orders", "ghost/ns"], "tenants": {"acme": {}}}', 31),
    (b'{"namespaces": ["acme/orders"], "tenants": {"acme": {"adminRoles": ["root"]}}', 77),
])
def test_a_damaged_namespaces_file_is_refused_with_its_byte(tmp_path, content, byte):
    NamespacesStore(tmp_path)
    (tmp_path / "namespaces.json").write_bytes(content)
    refused(tmp_path / "namespaces.json", byte, lambda: NamespacesStore(tmp_path))


def test_namespaces_and_tenant_info_survive_a_restart_unchanged(tmp_path):
    store = NamespacesStore(tmp_path)
    store.create_tenant("acme", ["root"], ["standalone"])
    store.create_namespace(NS)
    again = NamespacesStore(tmp_path)
    assert again.tenant_info("acme") == {"adminRoles": ["root"], "allowedClusters": ["standalone"]}
    assert again.all_namespaces() == [NS, "public/default"]
