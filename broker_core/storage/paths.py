"""Where names live on disk: the one place a tenant, namespace or topic becomes a path, and the one way a
folder tree is removed.

Names reach here validated (:mod:`broker_core.types`); the functions still check that what they return lies
strictly inside the root they were given, after resolving symbolic links, so that a bug or a tampered data
dir can never make the broker write or delete outside it::

    topics/<domain>/<tenant>/<namespace>/<percent-encoded local name>/
    metadata/schemas/<domain>/<tenant>/<namespace>/<percent-encoded local name of the base topic>/

Every folder removal in the broker goes through :func:`remove_tree`, which refuses anything not strictly
inside its root and any symbolic link, and logs what it removes.
"""
from __future__ import annotations

import logging
import shutil
from pathlib import Path

from broker_core.errors import UnsafePath
from broker_core.types import TopicName, entity_name_problem, folder_name

log = logging.getLogger(__name__)


def _inside(root: Path, path: Path) -> Path:
    """``path`` when it resolves strictly inside ``root`` (both resolved), else ``UnsafePath``."""
    real_root, real = root.resolve(), path.resolve()
    if real == real_root or not real.is_relative_to(real_root):
        log.error("event=path_outside_root path=%s resolved=%s root=%s", path, real, real_root)
        raise UnsafePath("refused a folder outside the broker's data dir (the broker's log says which)")
    return path


def _entity(label: str, value: str) -> str:
    problem = entity_name_problem(label, value)
    if problem:  # parse and the admin calls check first: reaching here is a bug
        log.error("event=unsafe_name %s=%r problem=%s", label, value, problem)
        raise UnsafePath(f"refused a folder for an invalid {label} name: {problem}")
    return value


def tenant_dir(root: Path, domain: str, tenant: str) -> Path:
    """The folder of ``tenant``'s topics of ``domain`` under the topics root ``root``."""
    if domain not in ("persistent", "non-persistent"):
        raise UnsafePath(f"refused a folder for domain {domain[:40]!r}")
    return _inside(root, root / domain / _entity("tenant", tenant))


def namespace_dir(root: Path, domain: str, tenant: str, namespace: str) -> Path:
    """The folder of the topics of ``tenant/namespace`` (``namespace``: its own name) of ``domain``."""
    return _inside(root, tenant_dir(root, domain, tenant) / _entity("namespace", namespace))


def topic_dir(root: Path, name: TopicName) -> Path:
    """The folder of the topic partition ``name``: its local name percent-encoded, so one plain component."""
    folder = folder_name(name.local_name)
    # TopicName.parse checked the local name; partition() and _replace() can still lengthen or change it
    TopicName.parse(str(name))
    return _inside(root, namespace_dir(root, name.domain, name.tenant, name.namespace) / folder)


def schema_dir(root: Path, name: TopicName) -> Path:
    """The folder of the schema versions of topic ``name`` under the schemas root ``root``
    (``metadata/schemas``), laid out as topic folders are; a partitioned topic's partitions share the folder
    of their base topic."""
    return topic_dir(root, name.partitioned_base)


def remove_tree(root: Path, path: Path) -> bool:
    """Remove the folder ``path`` and all it holds; False when it did not exist.

    Refuses (``UnsafePath``) a ``path`` that is a symbolic link or does not resolve strictly inside
    ``root``. Links inside the tree are removed, never followed (``shutil.rmtree``'s fd-based walk).
    """
    if path.is_symlink():
        log.error("event=remove_refused reason=symlink path=%s", path)
        raise UnsafePath("refused to remove a symbolic link in the broker's data dir (the broker's log says"
                         " which)")
    _inside(root, path)
    if not path.exists():
        return False
    failures: list[str] = []

    def failed(function, failed_path, exc_info) -> None:
        failures.append(f"{failed_path}: {exc_info[1]!r}")

    shutil.rmtree(path, onerror=failed)
    log.info("event=tree_removed path=%s", path)
    for failure in failures:  # a partial removal does not fail the deletion (as ignore_errors did): logged
        log.warning("event=tree_remove_failed %s", failure)
    return True
