"""Tenants and namespaces: which exist, persisted across restarts.

Pulsar's two levels above a topic. A topic ``persistent://acme/orders/t`` lives in namespace
``acme/orders`` of tenant ``acme``; both must exist before the topic can be used (Pulsar refuses the lookup
with "Namespace does not exist"). A fresh broker has tenant ``public`` and namespace ``public/default``, the
home of bare topic names, as ``pulsar standalone`` does.

A tenant carries what ``pulsar-admin tenants get`` shows: ``adminRoles`` (the roles that administer it, with
authorization on: :mod:`broker_core.security.authorization`) and ``allowedClusters`` (``[clusterName]`` by default). Namespace policies live in
:mod:`broker_core.core.policies`. Stored as one JSON file written atomically::

    {"tenants": {"public": {"adminRoles": [], "allowedClusters": ["standalone"]}},
     "namespaces": ["public/default"]}

The file is read whole at start (:func:`read_namespaces`): one that is not JSON, is empty, or holds a wrong
type, an invalid name or a namespace of no tenant is refused with the byte and ``pulsarlike repair``
(:mod:`broker_core.core.metadata_repair`); with no change log and no earlier copy, nothing exact could
replace it, and tenants' ``adminRoles`` decide who administers them.

A data folder from before namespaces were stored (no ``namespaces.json``) is adopted as is: every namespace
that has topics, partitioned topics or policies is registered at first start, so no topic becomes
unreachable.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from broker_core.core.metadata_files import Damage, read_snapshot
from broker_core.core.metadata_log import refusal
from broker_core.errors import (InvalidConfiguration, NamespaceAlreadyExists, NamespaceNotFound,
                                TenantAlreadyExists, TenantNotFound)
from broker_core.storage.atomic import atomic_write
from broker_core.types import check_namespace_name, check_tenant_name

DEFAULT_TENANT, DEFAULT_NAMESPACE = "public", "public/default"
FILE = "namespaces.json"
_TENANT, _NAMESPACE = "tenant\t", "namespace\t"
_INFO = ("adminRoles", "allowedClusters")
# check_tenant_name / check_namespace_name come from broker_core.types, the one home of the name rules;
# callers keep importing them from here.


def how_to_create(namespace: str) -> str:
    return (f"create it with `pulsarlike admin namespaces create {namespace}` (or"
            f" Admin(url).create_namespace({namespace!r}))")


class NamespacesStore:
    """Tenants (with their info) and namespaces; every change is persisted before it returns."""

    def __init__(self, directory: Path, cluster: str = "standalone",
                 adopt: Iterable[str] = ()) -> None:
        """``adopt``: namespaces found in the data folder, registered (with their tenants) when no
        ``namespaces.json`` exists yet."""
        directory.mkdir(parents=True, exist_ok=True)
        self._path = directory / FILE
        self._cluster = cluster
        self._tenants: dict[str, dict[str, list[str]]] = {}
        self._namespaces: set[str] = set()
        self.deleting: set[str] = set()
        """Namespaces whose topics are being deleted: they take no new topics meanwhile (not stored)."""
        if self._path.exists():
            read = read_namespaces(self._path)
            if read.damage:
                raise refusal(read.damage[0], "the tenants and namespaces")
            self._tenants, self._namespaces = read.tenants, read.namespaces
            return
        for namespace in {DEFAULT_NAMESPACE, *adopt}:
            tenant, _ = namespace.split("/", 1)
            self._tenants.setdefault(tenant, self._info(None, None))
            self._namespaces.add(namespace)
        self._save()

    # ------------------------------------------------------------------ tenants
    def tenants(self) -> list[str]:
        return sorted(self._tenants)

    def tenant_info(self, tenant: str) -> dict[str, list[str]]:
        """``{"adminRoles": [...], "allowedClusters": [...]}``, as ``pulsar-admin tenants get`` prints it."""
        info = self._tenants.get(check_tenant_name(tenant))
        if info is None:
            raise TenantNotFound(f"tenant {tenant} does not exist; create it with"
                                 f" `pulsarlike admin tenants create {tenant}`", tenant=tenant)
        return {key: list(value) for key, value in info.items()}

    def create_tenant(self, tenant: str, admin_roles: Iterable[str] | None = None,
                      allowed_clusters: Iterable[str] | None = None) -> None:
        if check_tenant_name(tenant) in self._tenants:
            raise TenantAlreadyExists(f"tenant {tenant} already exists", tenant=tenant)
        self._tenants[tenant] = self._info(admin_roles, allowed_clusters)
        self._save()

    def update_tenant(self, tenant: str, admin_roles: Iterable[str] | None = None,
                      allowed_clusters: Iterable[str] | None = None) -> None:
        """Replace what is given (None keeps the current value)."""
        current = self.tenant_info(tenant)
        self._tenants[tenant] = {
            "adminRoles": current["adminRoles"] if admin_roles is None else self._names(admin_roles),
            "allowedClusters": (current["allowedClusters"] if allowed_clusters is None
                                else self._names(allowed_clusters) or [self._cluster])}
        self._save()

    def delete_tenant(self, tenant: str) -> None:
        """Remove an empty tenant (the caller deletes its namespaces first)."""
        self.tenant_info(tenant)
        del self._tenants[tenant]
        self._save()

    def _info(self, admin_roles: Iterable[str] | None, allowed_clusters: Iterable[str] | None) -> dict:
        return {"adminRoles": self._names(admin_roles or ()),
                "allowedClusters": self._names(allowed_clusters or ()) or [self._cluster]}

    @staticmethod
    def _names(values: Iterable[str]) -> list[str]:
        names = [str(v).strip() for v in values]
        if any(not n for n in names):
            raise InvalidConfiguration(f"empty name in {names!r}")
        return list(dict.fromkeys(names))

    # ------------------------------------------------------------------ namespaces
    def namespaces(self, tenant: str) -> list[str]:
        self.tenant_info(tenant)
        return sorted(ns for ns in self._namespaces if ns.split("/", 1)[0] == tenant)

    def all_namespaces(self) -> list[str]:
        """Every ``tenant/namespace``, sorted."""
        return sorted(self._namespaces)

    def exists(self, namespace: str) -> bool:
        return namespace in self._namespaces

    def check_exists(self, namespace: str) -> None:
        """Raise ``NamespaceNotFound`` (``TenantNotFound`` when its tenant is missing too)."""
        if namespace in self._namespaces and namespace not in self.deleting:
            return
        if namespace in self.deleting:
            raise NamespaceNotFound(f"namespace {namespace} is being deleted", namespace=namespace)
        tenant, _ = check_namespace_name(namespace)
        if tenant not in self._tenants:
            raise TenantNotFound(f"namespace {namespace} does not exist, nor does its tenant {tenant}: create"
                                 f" the tenant with `pulsarlike admin tenants create {tenant}`, then"
                                 f" {how_to_create(namespace)}", tenant=tenant, namespace=namespace)
        raise NamespaceNotFound(f"namespace {namespace} does not exist: {how_to_create(namespace)}",
                                namespace=namespace)

    def create_namespace(self, namespace: str) -> None:
        tenant, _ = check_namespace_name(namespace)
        if tenant not in self._tenants:
            raise TenantNotFound(f"tenant {tenant} does not exist; create it with"
                                 f" `pulsarlike admin tenants create {tenant}`", tenant=tenant)
        if namespace in self._namespaces:
            raise NamespaceAlreadyExists(f"namespace {namespace} already exists", namespace=namespace)
        self._namespaces.add(namespace)
        self._save()

    def delete_namespace(self, namespace: str) -> None:
        """Remove the namespace (the caller deletes its topics and policies first)."""
        self.check_exists(namespace)
        self._namespaces.discard(namespace)
        self._save()

    def _save(self) -> None:
        doc = namespaces_document(self._tenants, self._namespaces)
        atomic_write(self._path, json.dumps(doc, sort_keys=True, indent=1).encode())


class NamespacesCodec:
    """``namespaces.json`` as entries, for :func:`~broker_core.core.metadata_files.read_snapshot`: one per
    tenant (``tenant<TAB>name`` -> its info) and one per namespace (``namespace<TAB>name`` -> True)."""

    def entries(self, document: Any) -> Iterable[tuple[str, Any]]:
        if not isinstance(document, dict) or set(document) != {"tenants", "namespaces"} or not isinstance(
                document["tenants"], dict) or not isinstance(document["namespaces"], list):
            raise ValueError('{"tenants": {...}, "namespaces": [...]} expected')
        self._tenants = set(document["tenants"])
        return [*((_TENANT + str(t), info) for t, info in document["tenants"].items()),
                *((_NAMESPACE + ns if isinstance(ns, str) else repr(ns), True) for ns in document["namespaces"])]

    def check(self, key: str, value: Any) -> Any:
        if key.startswith(_TENANT):
            check_tenant_name(key[len(_TENANT):])
            if not isinstance(value, dict) or not set(value) <= set(_INFO):
                raise ValueError(f"a tenant's info is {{{', '.join(_INFO)}}}")
            info = {field: value.get(field, []) for field in _INFO}
            if not all(isinstance(names, list) and all(isinstance(n, str) and n.strip() for n in names)
                       for names in info.values()):
                raise ValueError("adminRoles and allowedClusters are lists of names")
            return info
        if not key.startswith(_NAMESPACE):
            raise ValueError(f"a namespace name expected, not {key!r}"[:200])
        tenant, _ = check_namespace_name(key[len(_NAMESPACE):])
        if tenant not in self._tenants:
            raise ValueError(f"its tenant {tenant} is not in the file")
        return True


@dataclass
class NamespacesRead:
    tenants: dict[str, dict[str, list[str]]]
    namespaces: set[str]
    """The tenants and namespaces that passed (empty when the file is not JSON of its shape)."""
    damage: list[Damage]
    readable: bool
    """Whether the file is JSON of its shape (only some entries may be damaged)."""


def read_namespaces(path: Path) -> NamespacesRead:
    """``namespaces.json``: every tenant and namespace that passes, and what does not."""
    read = read_snapshot(path, NamespacesCodec())
    entries = read.entries or {}
    tenants = {k[len(_TENANT):]: v for k, v in entries.items() if k.startswith(_TENANT)}
    return NamespacesRead(tenants, {k[len(_NAMESPACE):] for k in entries if k.startswith(_NAMESPACE)},
                          read.damage, read.entries is not None)


def namespaces_document(tenants: dict[str, Any], namespaces: Iterable[str]) -> dict:
    """The file's document."""
    return {"tenants": tenants, "namespaces": sorted(namespaces)}
