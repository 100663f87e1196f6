"""The schema registry (broker_core.core.schemas) and its per-topic files (broker_core.storage.schema_files):
versions, restarts, the migration of the old single file, atomic writes, the limits, and writes off the
event loop."""
from __future__ import annotations

import asyncio
import base64
import json
import os
import threading

import pytest

from broker_core.clock import FakeClock
from broker_core.errors import CorruptLog, IncompatibleSchema, InvalidSchema, NamespaceNotFound, PersistenceError
from broker_core.core import schemas as schemas_module
from broker_core.core.schemas import MAX_SCHEMA_BYTES, SchemaRegistry, version_number
from broker_core.storage import schema_files
from broker_core.types import TopicName

TOPIC = TopicName.parse("persistent://public/default/users")
OTHER = TopicName.parse("persistent://public/default/orders")


def record(*fields: dict) -> bytes:
    return json.dumps({"type": "record", "name": "User", "fields": list(fields)}).encode()


NAME = {"name": "name", "type": "string"}
AGE = {"name": "age", "type": "int", "default": 0}


def run(coroutine):
    return asyncio.run(coroutine)


def register(registry: SchemaRegistry, topic: TopicName, schema_type: str, data: bytes, **kwargs):
    return run(registry.get_or_create(topic, schema_type, data, **kwargs))


def folder(tmp_path, topic: TopicName = TOPIC):
    return tmp_path / "schemas" / topic.domain / topic.tenant / topic.namespace / topic.local_name


def test_the_first_schema_is_version_zero_and_an_identical_one_finds_it(tmp_path):
    registry = SchemaRegistry(tmp_path, FakeClock())
    first = register(registry, TOPIC, "Json", record(NAME))
    assert (first.version, version_number(first.version_bytes)) == (0, 0)
    assert register(registry, TOPIC, "Json", record(NAME)).version == 0
    assert registry.find(TOPIC, "Json", record(NAME)) == first


def test_a_compatible_schema_is_the_next_version_and_survives_a_restart(tmp_path):
    registry = SchemaRegistry(tmp_path, FakeClock())
    register(registry, TOPIC, "Avro", record(NAME), properties={"origin": "test"})
    added = register(registry, TOPIC, "Avro", record(NAME, AGE))
    assert added.version == 1
    reopened = SchemaRegistry(tmp_path, FakeClock())
    assert reopened.latest(TOPIC) == added
    first = reopened.get(TOPIC.partition(2), 0)  # partitions share the base topic's
    assert (first.data, first.properties) == (record(NAME), {"origin": "test"})
    assert reopened.find(TOPIC, "Avro", record(NAME)).version == 0  # an earlier version is found again


def test_an_incompatible_schema_or_another_type_is_refused(tmp_path):
    registry = SchemaRegistry(tmp_path, FakeClock())
    register(registry, TOPIC, "Json", record(NAME))
    with pytest.raises(IncompatibleSchema, match=r"\(FULL\): backward: reader_field_missing_default_value"):
        register(registry, TOPIC, "Json", record(NAME, {"name": "age", "type": "int"}))
    with pytest.raises(IncompatibleSchema, match="is Json, not String"):
        register(registry, TOPIC, "String", b"")
    assert registry.latest(TOPIC).version == 0
    assert len(os.listdir(folder(tmp_path))) == 1  # nothing written for the refused ones


def test_each_topic_has_its_own_folder_and_a_version_is_one_file_written_once(tmp_path):
    registry = SchemaRegistry(tmp_path, FakeClock())
    register(registry, TOPIC, "Avro", record(NAME))
    register(registry, OTHER, "String", b"")
    [first] = os.listdir(folder(tmp_path))
    before = os.stat(folder(tmp_path) / first)
    register(registry, TOPIC, "Avro", record(NAME, AGE))
    files = sorted(os.listdir(folder(tmp_path)))
    assert [f[:20] for f in files] == [f"{0:020d}", f"{1:020d}"]
    after = os.stat(folder(tmp_path) / first)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # never rewritten
    assert os.listdir(folder(tmp_path, OTHER))[0].startswith(f"{0:020d}-")
    assert not (tmp_path / "schemas.json").exists()


def legacy_file(tmp_path, topics: dict[str, list[tuple[str, bytes]]]) -> None:
    (tmp_path / "schemas.json").write_text(json.dumps({
        topic: [{"version": i, "type": kind, "name": "", "properties": {"p": str(i)},
                 "data": base64.b64encode(data).decode(), "timestamp": 1000 + i}
                for i, (kind, data) in enumerate(versions)]
        for topic, versions in topics.items()}))


def test_an_old_single_schemas_file_is_migrated_once_losing_nothing(tmp_path):
    legacy_file(tmp_path, {str(TOPIC): [("Avro", record(NAME)), ("Avro", record(NAME, AGE))],
                           str(OTHER): [("String", b"")]})
    registry = SchemaRegistry(tmp_path, FakeClock())
    assert not (tmp_path / "schemas.json").exists()
    backup = tmp_path / "schemas.json.migrated"
    assert backup.exists()
    latest = registry.latest(TOPIC)
    assert (latest.version, latest.data, latest.properties, latest.timestamp_ms) == (1, record(NAME, AGE),
                                                                                     {"p": "1"}, 1001)
    assert registry.get(TOPIC, 0).data == record(NAME)
    assert registry.latest(OTHER).schema_type == "String"
    backup.write_text("{not json")  # never read again
    reopened = SchemaRegistry(tmp_path, FakeClock())
    assert register(reopened, TOPIC, "Avro", record(NAME, AGE, {"name": "x", "type": "long", "default": 1})).version == 2


def test_a_migration_cut_short_by_a_crash_is_completed_at_the_next_start(tmp_path):
    legacy_file(tmp_path, {str(TOPIC): [("Avro", record(NAME)), ("Avro", record(NAME, AGE))]})
    files = schema_files.SchemaFiles(tmp_path / "schemas")
    first = schema_files.SchemaInfo(0, "Avro", record(NAME), "", {"p": "0"}, 1000)
    files.write(TOPIC, first, schema_files.digest_of("Avro", record(NAME)))  # written before the crash
    registry = SchemaRegistry(tmp_path, FakeClock())
    assert [registry.get(TOPIC, v).data for v in (0, 1)] == [record(NAME), record(NAME, AGE)]
    assert len(os.listdir(folder(tmp_path))) == 2


def test_a_corrupt_old_schemas_file_is_reported_without_its_path(tmp_path):
    (tmp_path / "schemas.json").write_text("{not json")
    with pytest.raises(CorruptLog) as raised:
        SchemaRegistry(tmp_path, FakeClock())
    assert str(tmp_path) not in raised.value.message
    assert (tmp_path / "schemas.json").exists()  # kept for the operator


def test_a_failed_write_leaves_no_version_and_a_crash_leftover_is_ignored(tmp_path, monkeypatch):
    registry = SchemaRegistry(tmp_path, FakeClock())
    register(registry, TOPIC, "Avro", record(NAME))

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(PersistenceError) as refused:  # typed and retriable: the client sees PersistenceError
        register(registry, TOPIC, "Avro", record(NAME, AGE))
    assert refused.value.retriable and "No space left" in refused.value.message
    monkeypatch.undo()
    assert os.listdir(folder(tmp_path)) == [os.listdir(folder(tmp_path))[0]]  # the temp file is gone too
    (folder(tmp_path) / ".leftover.tmp").write_bytes(b"half a version")  # what a crash mid-write leaves
    (folder(tmp_path) / "notes.txt").write_text("not the broker's")
    reopened = SchemaRegistry(tmp_path, FakeClock())
    assert reopened.latest(TOPIC).version == 0
    assert register(reopened, TOPIC, "Avro", record(NAME, AGE)).version == 1


def test_a_damaged_version_file_fails_that_topic_only(tmp_path):
    registry = SchemaRegistry(tmp_path, FakeClock())
    register(registry, TOPIC, "Avro", record(NAME))
    register(registry, OTHER, "String", b"")
    [stored] = os.listdir(folder(tmp_path))
    (folder(tmp_path) / stored).write_bytes(b"\0" * 64)
    reopened = SchemaRegistry(tmp_path, FakeClock())
    with pytest.raises(CorruptLog) as raised:
        reopened.latest(TOPIC)
    assert str(tmp_path) not in raised.value.message
    assert reopened.latest(OTHER).schema_type == "String"


def test_a_definition_over_the_limit_is_refused_naming_the_limit(tmp_path):
    registry = SchemaRegistry(tmp_path, FakeClock())
    with pytest.raises(InvalidSchema, match=f"exceeds the {MAX_SCHEMA_BYTES} bytes") as raised:
        register(registry, TOPIC, "Bytes", b"x" * (MAX_SCHEMA_BYTES + 1))
    assert (raised.value.limit, raised.value.size) == (MAX_SCHEMA_BYTES, MAX_SCHEMA_BYTES + 1)
    assert isinstance(raised.value, IncompatibleSchema)  # what Pulsar's clients are told
    assert not folder(tmp_path).exists()


def test_a_topic_at_the_version_limit_refuses_another_version(tmp_path, monkeypatch):
    monkeypatch.setattr(schemas_module, "MAX_SCHEMA_VERSIONS", 2)
    registry = SchemaRegistry(tmp_path, FakeClock())
    register(registry, TOPIC, "Avro", record(NAME))
    register(registry, TOPIC, "Avro", record(NAME, AGE))
    with pytest.raises(InvalidSchema, match="already has 2 versions") as raised:
        register(registry, TOPIC, "Avro", record(NAME, AGE, {"name": "x", "type": "long", "default": 1}))
    assert raised.value.limit == 2
    assert register(registry, TOPIC, "Avro", record(NAME)).version == 0  # known versions are still found


def test_a_schema_for_a_namespace_that_does_not_exist_is_refused(tmp_path):
    def check(name: TopicName) -> None:
        raise NamespaceNotFound(f"namespace {name.namespace_name} does not exist", namespace=name.namespace_name)
    registry = SchemaRegistry(tmp_path, FakeClock(), check_namespace=check)
    with pytest.raises(NamespaceNotFound):
        register(registry, TopicName.parse("persistent://nosuch/ns/t"), "String", b"")
    assert not (tmp_path / "schemas" / "persistent" / "nosuch").exists()


def test_deleting_a_topic_removes_its_schema_files(tmp_path):
    registry = SchemaRegistry(tmp_path, FakeClock())
    register(registry, TOPIC, "Avro", record(NAME))
    run(registry.delete(TOPIC.partition(0)))  # any partition names the base topic's schema
    assert registry.latest(TOPIC) is None
    assert not folder(tmp_path).exists()
    assert register(registry, TOPIC, "String", b"").version == 0


def test_the_event_loop_keeps_answering_while_a_new_version_is_checked_and_written(tmp_path, monkeypatch):
    registry = SchemaRegistry(tmp_path, FakeClock())
    entered, release = threading.Event(), threading.Event()
    writer_threads = []
    real_write = schema_files.atomic_write

    def slow_write(path, data):  # a large schema on a slow disk
        writer_threads.append(threading.get_ident())
        entered.set()
        assert release.wait(10)
        real_write(path, data)
    monkeypatch.setattr(schema_files, "atomic_write", slow_write)
    big = record(NAME, *({"name": f"f{i}", "type": "string", "default": "x" * 900} for i in range(1000)))

    async def scenario():
        registration = asyncio.ensure_future(registry.get_or_create(TOPIC, "Avro", big))
        while not entered.is_set():
            await asyncio.sleep(0.001)
        answered = 0
        for _ in range(20):  # the loop goes on serving while the write waits
            await asyncio.sleep(0)
            answered += 1
        assert not registration.done()
        release.set()
        return answered, await registration
    answered, info = run(scenario())
    assert (answered, info.version, len(info.data) > 900_000) == (20, 0, True)
    assert writer_threads and threading.get_ident() not in writer_threads


def test_asking_about_topics_without_a_schema_keeps_nothing_in_memory(tmp_path):
    registry = SchemaRegistry(tmp_path, FakeClock())
    for i in range(1000):
        name = TopicName.parse(f"persistent://public/default/none-{i}")
        assert registry.latest(name) is None and registry.find(name, "String", b"") is None
    assert registry._topics == {}
    register(registry, TOPIC, "String", b"")
    assert list(registry._topics) == [str(TOPIC)]
