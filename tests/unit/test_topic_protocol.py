"""Both topic classes implement the declared ``Topic`` protocol, and no other module asks which class a
topic is: they call the protocol."""
from __future__ import annotations

import asyncio
import inspect
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from broker_core.clock import FakeClock
from broker_core.config import BrokerConfig
from broker_core.errors import NotAllowedError
from broker_core.core.nonpersistent.topic import NonPersistentTopic
from broker_core.core.persistent.topic import PersistentTopic
from broker_core.core.topic_protocol import StoredTopic, Topic, stored
from broker_core.types import TopicName

ROOT = Path(__file__).resolve().parents[2]
TOPIC_PARTS = sorted([*(ROOT / "broker_core/core/persistent").glob("*.py"),
                      ROOT / "broker_core/core/nonpersistent/topic.py", ROOT / "broker_core/core/producers.py"])
# "other.field = ..." or "other.field += ...": a helper writing another object's private state
FOREIGN_PRIVATE_WRITE = re.compile(r"\b(?!self\b)[a-z_][a-z_0-9]*(\.[a-z_][a-z_0-9]*)*\._[a-z_0-9]+\s*[-+|&]?=[^=]")
TOPIC_CLASSES = [PersistentTopic, NonPersistentTopic]
# the modules that define the topic classes (their helpers too) and the protocol: only they may know the classes
TOPIC_MODULES = re.compile(r"broker_core/core/(persistent|nonpersistent)/[a-z_]+\.py$")
BRANCH = re.compile(r"\b(isinstance|issubclass)\([^)]*\b(Persistent|NonPersistent)Topic\b"
                    r"|\b(hasattr|getattr)\((topic|found|t|session\.topic)\b")


def _protocol_methods(protocol: type = Topic) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(value) for name, value in vars(protocol).items()
            if inspect.isfunction(value) and not name.startswith("_")}


def _protocol_properties(protocol: type = Topic) -> list[str]:
    return [name for name, value in vars(protocol).items() if isinstance(value, property)]


def _protocol_attributes(protocol: type = Topic) -> list[str]:
    return [name for name in vars(protocol).get("__annotations__", {})]


def _compatible(declared: inspect.Signature, actual: inspect.Signature) -> list[str]:
    """What keeps ``actual`` from being called as ``declared`` says (empty: nothing)."""
    problems = []
    params = actual.parameters
    for name, param in declared.parameters.items():
        if name == "self":
            continue
        got = params.get(name)
        if got is None:
            if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
                problems.append(f"no parameter {name}")
            continue
        if got.kind is not param.kind:
            problems.append(f"{name} is {got.kind.description}, declared {param.kind.description}")
        if param.default is not param.empty and got.default is got.empty:
            problems.append(f"{name} has no default")
    for name, got in params.items():
        if (name not in declared.parameters and got.default is got.empty
                and got.kind not in (got.VAR_POSITIONAL, got.VAR_KEYWORD)):
            problems.append(f"extra required parameter {name}")
    return problems


@pytest.fixture
def topics(tmp_path):
    """One topic of each class, built as the registry builds them."""
    clock = FakeClock()
    config = BrokerConfig()
    with ThreadPoolExecutor(1) as executor:
        loop = asyncio.new_event_loop()

        async def build():
            return PersistentTopic(TopicName.parse("persistent://public/default/p"), tmp_path / "p", config,
                                   executor, clock)
        persistent = loop.run_until_complete(build())
        non_persistent = NonPersistentTopic(TopicName.parse("non-persistent://public/default/n"), config, clock)
        yield [persistent, non_persistent]
        loop.run_until_complete(persistent.close())
        loop.run_until_complete(non_persistent.close())
        loop.close()


def test_the_protocol_declares_what_every_topic_offers():
    assert {"publish", "add_producer", "remove_producer", "subscribe", "offset_for_timestamp",
            "last_message_id", "stats", "terminate", "delete", "close", "create_subscription",
            "drop_idle_reader"} <= set(_protocol_methods())
    assert {"start_offset", "confirmed_end_offset", "termination", "readers", "writes"} <= set(_protocol_properties())
    assert "persistent" in _protocol_attributes()


@pytest.mark.parametrize("protocol", [Topic, StoredTopic], ids=lambda p: p.__name__)
def test_every_member_documents_itself(protocol):
    undocumented = [name for name, value in vars(protocol).items()
                    if (inspect.isfunction(value) or isinstance(value, property)) and not name.startswith("_")
                    and not inspect.getdoc(value)]
    assert undocumented == []


def test_a_persistent_topic_has_every_stored_topic_member_with_a_compatible_signature(topics):
    persistent = topics[0]
    problems = {}
    for name, declared in _protocol_methods(StoredTopic).items():
        actual = getattr(PersistentTopic, name, None)
        if not callable(actual):
            problems[name] = ["missing"]
        elif inspect.iscoroutinefunction(getattr(StoredTopic, name)) != inspect.iscoroutinefunction(actual):
            problems[name] = ["async differs"]
        elif _compatible(declared, inspect.signature(actual)):
            problems[name] = _compatible(declared, inspect.signature(actual))
    problems.update({name: ["missing"] for name in [*_protocol_properties(StoredTopic),
                                                    *_protocol_attributes(StoredTopic)]
                     if not hasattr(persistent, name)})
    assert problems == {}
    assert isinstance(persistent, StoredTopic)


def test_stored_narrows_a_persistent_topic_and_refuses_a_non_persistent_one_naming_the_verb(topics):
    persistent, non_persistent = topics
    assert stored(persistent, "peek") is persistent
    with pytest.raises(NotAllowedError, match="peek: non-persistent://public/default/n is non-persistent"):
        stored(non_persistent, "peek")


@pytest.mark.parametrize("cls", TOPIC_CLASSES, ids=lambda cls: cls.__name__)
def test_each_topic_class_has_every_protocol_method_with_a_compatible_signature(cls):
    problems = {}
    for name, declared in _protocol_methods().items():
        actual = getattr(cls, name, None)
        if not callable(actual):
            problems[name] = ["missing"]
            continue
        if inspect.iscoroutinefunction(getattr(Topic, name)) != inspect.iscoroutinefunction(actual):
            problems[name] = ["async differs"]
            continue
        found = _compatible(declared, inspect.signature(actual))
        if found:
            problems[name] = found
    assert problems == {}


def test_each_topic_has_every_protocol_property_and_attribute(topics):
    missing = {type(topic).__name__: [name for name in [*_protocol_properties(), *_protocol_attributes()]
                                      if not hasattr(topic, name)] for topic in topics}
    assert missing == {"PersistentTopic": [], "NonPersistentTopic": []}
    assert all(isinstance(topic, Topic) for topic in topics)


def test_the_topics_answer_the_capability_questions_truthfully(topics):
    persistent, non_persistent = topics
    assert persistent.persistent and not non_persistent.persistent
    assert persistent.writes is not None and non_persistent.writes is None
    assert not non_persistent.termination.terminated and non_persistent.termination.end_offset is None
    assert dict(non_persistent.readers) == {}


@pytest.mark.parametrize("operation", [
    lambda topic: topic.create_subscription("s", 0),
    lambda topic: topic.durable_subscription("s"),
    lambda topic: topic.acknowledge_up_to("s", 0),
    lambda topic: topic.terminate(),
], ids=["create_subscription", "durable_subscription", "acknowledge_up_to", "terminate"])
def test_a_non_persistent_topic_refuses_what_needs_stored_data_itself(topics, operation):
    with pytest.raises(NotAllowedError, match="non-persistent"):
        operation(topics[1])


def _branches_on_topic_classes() -> list[str]:
    found = []
    for path in sorted((ROOT / "broker_core").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if TOPIC_MODULES.search(relative):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if BRANCH.search(line):
                found.append(f"{relative}:{number}: {line.strip()}")
    return found


def test_the_branch_finder_finds_a_branch_on_a_topic_class():
    assert BRANCH.search("if not isinstance(topic, PersistentTopic):")
    assert BRANCH.search('if hasattr(topic, "readers"):')
    assert BRANCH.search('ends = getattr(topic, "termination", None)')
    assert TOPIC_MODULES.search("broker_core/core/persistent/operations.py")
    assert not TOPIC_MODULES.search("broker_core/core/registry.py")


def test_no_module_outside_the_topic_modules_branches_on_a_topic_class():
    assert _branches_on_topic_classes() == []


@pytest.mark.parametrize("cls", TOPIC_CLASSES, ids=lambda cls: cls.__name__)
def test_each_topic_class_is_composed_of_helpers_not_mixins(cls):
    assert cls.__bases__ == (object,)


def test_no_topic_helper_chains_super_or_writes_another_objects_private_state():
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}" for path in TOPIC_PARTS
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if "super()" in line or FOREIGN_PRIVATE_WRITE.search(line)]
    assert found == []


def test_the_private_write_finder_finds_one():
    assert FOREIGN_PRIVATE_WRITE.search("        topic._dirty = set()")
    assert FOREIGN_PRIVATE_WRITE.search("        self.topic._removing = None")
    assert not FOREIGN_PRIVATE_WRITE.search("        self._dirty = set()")
    assert not FOREIGN_PRIVATE_WRITE.search("        if other._dirty == x:")
