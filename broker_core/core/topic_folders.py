"""The topic folders under the data dir's ``topics/``: which topics and namespaces they hold.

Topic folder names are the local name percent-encoded, so any valid name maps to one folder; a folder no
valid name maps to (made by hand, or by a version with laxer rules) is no topic: it is skipped, so it is
never opened or deleted.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Iterable, Iterator
from urllib.parse import unquote

from broker_core.storage.paths import namespace_dir
from broker_core.types import NON_PERSISTENT, PERSISTENT, TopicName, entity_name_problem, folder_name, local_name_problem

log = logging.getLogger("broker_core.core.registry")  # the registry's events keep their logger name


def topic_folders(folder: Path) -> list[str]:
    """The local names of the topic folders in a namespace folder (folders no valid name maps to are
    skipped, with a warning)."""
    locals_ = []
    for path in folder.iterdir():
        local = unquote(path.name)
        if path.is_dir() and folder_name(local) == path.name and not local_name_problem(local):
            locals_.append(local)
        elif path.is_dir():
            log.warning("event=topic_folder_skipped namespace_folder=%s folder=%s", folder.name, path.name)
    return locals_


def namespace_folders(root: Path) -> set[str]:
    """``tenant/namespace`` of every namespace folder under ``root`` (``topics/``) with valid names."""
    return {f"{t.name}/{ns.name}" for domain in (PERSISTENT, NON_PERSISTENT) if (root / domain).is_dir()
            for t in (root / domain).iterdir() if t.is_dir() for ns in t.iterdir() if ns.is_dir()
            if not (entity_name_problem("tenant", t.name) or entity_name_problem("namespace", ns.name))}


def stored_topics(root: Path, namespaces: Iterable[str], domain: str) -> Iterator[TopicName]:
    """The topic partitions of ``domain`` stored under ``root``, namespace by namespace (lazily)."""
    for namespace in namespaces:
        tenant, ns = namespace.split("/", 1)
        folder = namespace_dir(root, domain, tenant, ns)
        try:  # the namespace may go between two turns of a caller
            locals_ = sorted(topic_folders(folder)) if folder.is_dir() else []
        except OSError:
            continue
        for local in locals_:
            yield TopicName(domain, tenant, ns, local)
