"""A topic's properties (``pulsar-admin topics get-properties|update-properties|remove-properties``, Pulsar's
``GET|PUT|DELETE .../{topic}/properties``), once for REST and gRPC, kept where Pulsar keeps them:

- a partitioned topic's in its ``PartitionedTopicMetadata`` (the broker's partitioned-topic metadata,
  :class:`~broker_core.core.metadata.PartitionedTopicsStore`), shown by ``GET .../partitions``;
- a non-partitioned persistent topic's (or one partition's) with its stored data, as Pulsar keeps them in the
  managed ledger: the file :data:`FILE` in the topic's folder, written atomically, gone with the topic.

Updating merges (``putAll``: the keys given are set, the others kept; nothing given changes nothing), removing
drops one key (a key not set, or none given, changes nothing), as Pulsar's. A topic that does not exist is
``TopicNotFound`` (404). A non-persistent topic that is not partitioned stores nothing, so it has no properties
(``NotAllowedError``, 412; Pulsar's cast to a persistent topic fails there).
"""
from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from broker_core.core.admin.values import string_map
from broker_core.core.topic_protocol import stored
from broker_core.errors import CorruptLog, TopicNotFound
from broker_core.storage.atomic import atomic_write
from broker_core.storage.paths import topic_dir
from broker_core.types import TopicName

if TYPE_CHECKING:
    from broker_core.core.registry import TopicRegistry

log = logging.getLogger(__name__)

FILE = "properties.json"
"""A topic partition's properties, in its folder: ``{"key": "value", ...}``."""


class TopicPropertiesAdmin:
    """The properties of ``registry``'s topics."""

    def __init__(self, registry: "TopicRegistry") -> None:
        self._registry = registry

    def _partitioned(self, name: TopicName) -> bool:
        return name.partition_index < 0 and self._registry.partitions_of(name) > 0

    def _file(self, name: TopicName):  # type: ignore[no-untyped-def]
        """The properties file of topic partition ``name``, loading the topic (``TopicNotFound``; a
        non-persistent one ``NotAllowedError``)."""
        stored(self._registry.get(name, create=False), "topic properties")
        return topic_dir(self._registry.topics_root, name) / FILE

    def properties(self, name: TopicName) -> dict[str, str]:
        """The topic's properties (``{}``: none)."""
        if self._partitioned(name):
            return self._registry.partitioned.properties(str(name))
        path = self._file(name)
        try:
            found = json.loads(path.read_bytes())
        except FileNotFoundError:
            return {}
        except ValueError as exc:
            log.error("event=topic_properties_corrupt topic=%s error=%r", name, exc)
            raise CorruptLog(f"the properties file of {name} is corrupt; the broker's log has the details",
                             path=FILE, position=0) from None
        return dict(found)

    def _replace(self, name: TopicName, properties: dict[str, str]) -> None:
        if self._partitioned(name):
            self._registry.partitioned.set_properties(str(name), properties)
            return
        path = self._file(name)
        if properties:
            atomic_write(path, json.dumps(properties, sort_keys=True).encode())
        else:
            path.unlink(missing_ok=True)

    def update(self, name: TopicName, properties: Any) -> None:
        """Set the keys of ``properties`` (a JSON object of strings; ``InvalidMessage`` otherwise), keeping
        the others."""
        given = string_map(properties if properties is not None else {}, "properties")
        if not given:
            self._exists(name)
            return
        self._replace(name, string_map({**self.properties(name), **given}, "properties"))

    def remove(self, name: TopicName, key: str | None) -> None:
        """Remove property ``key``."""
        found = self.properties(name)
        if key is not None and found.pop(key, None) is not None:
            self._replace(name, found)

    def _exists(self, name: TopicName) -> None:
        if not (self._partitioned(name) or self._registry.exists(name) or self._registry.partitions_of(
                name.partitioned_base) > name.partition_index >= 0):
            raise TopicNotFound(f"topic {name} does not exist", topic=str(name))
