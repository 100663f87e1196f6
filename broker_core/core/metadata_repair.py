"""What ``pulsarlike repair`` does to the broker's metadata: find the damage a start would refuse (or recover
from), say what a repair would drop or restore, and do it on request.

The metadata, in ``<data dir>/metadata/``: the partitioned topics and the policies (each a map of snapshots
and change files, :mod:`broker_core.core.metadata_files`) and ``namespaces.json`` (tenants and namespaces).
Schemas are not read here (a damaged schema version costs only its topic's schema calls).

:func:`plan` reads them as the broker would, changing nothing, and for each damaged one decides:

1. **Restore** -- a map whose newest snapshot is damaged but which the broker reads exactly from an older one
   plus the changes since: write that map as a new snapshot. Nothing is lost.
2. **Drop** -- a map the broker refuses: start from the newest snapshot that parses (its entries that fail
   their check are dropped, each named; with none, from the empty map, and every change file present is
   replayed: what only the unreadable snapshots held is lost, and said so), then replay the change files
   after it, dropping each damaged line (its file, byte, the key it still names and what that key is after
   the repair; a key set again by a later line is unaffected) and saying which change files are missing.
3. **Rebuild** ``namespaces.json`` -- keep every tenant and namespace that passes; a tenant whose info is
   damaged, or missing for a kept namespace, gets the defaults (no admin roles, this cluster); a damaged
   namespace entry is dropped. When the file does not parse at all, the namespaces are those the data dir
   shows (topic folders, policies, partitioned topics, as at a first start), each tenant with the defaults.

:meth:`RepairPlan.apply` then writes each repaired map as the snapshot of a new generation (the broker
reads that one alone) and ``namespaces.json`` atomically, and moves every file it replaced into
``metadata/repair-<UTC time>/``, kept for inspection, never read again. A crash midway leaves either the old
files (the repair can run again) or the new snapshot, which wins over them.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from broker_core.core.metadata import NAME as PARTITIONED, PartitionsCodec
from broker_core.core.metadata_files import (Damage, MapCodec, MapFiles, read_changes, read_map,
                                             read_snapshot)
from broker_core.core.metadata_log import write_fresh
from broker_core.core.namespaces import (DEFAULT_NAMESPACE, FILE as NAMESPACES, namespaces_document,
                                         read_namespaces)
from broker_core.core.policies import NAME as POLICIES, NAMESPACE, TOPIC, PoliciesCodec
from broker_core.core.topic_folders import namespace_folders
from broker_core.storage.atomic import atomic_write, fsync_directory
from broker_core.types import TopicName

SHOWN = 200
"""Characters of a value shown in a finding."""


@dataclass
class Finding:
    """One problem and what the repair does about it."""

    damage: Damage
    action: str
    """What the repair does (``drop this line``)."""
    effect: str = ""
    """What it means for the broker's state (a key's value after the repair)."""

    def lines(self, data_dir: Path) -> list[str]:
        d = self.damage
        where = d.path.relative_to(data_dir) if d.path.is_relative_to(data_dir) else d.path
        out = [f"{where} at byte {d.position}: {d.problem}"]
        if d.excerpt:
            out.append(f"    found: {d.excerpt.decode('utf-8', 'backslashreplace')[:SHOWN]!r}")
        out.append(f"    repair: {self.action}")
        if self.effect:
            out.append(f"    {self.effect}")
        return out


@dataclass
class MapRepair:
    """What repairing one map means: its entries afterwards and how to write them."""

    name: str
    entries: dict[str, Any]
    document: Callable[[dict[str, Any]], Any]
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def needed(self) -> bool:
        return bool(self.findings)


@dataclass
class RepairPlan:
    data_dir: Path
    maps: list[MapRepair]
    namespaces: "NamespacesRepair | None"

    @property
    def findings(self) -> list[Finding]:
        found = [f for m in self.maps for f in m.findings]
        return found + (self.namespaces.findings if self.namespaces else [])

    @property
    def notes(self) -> list[str]:
        return [n for m in self.maps for n in m.notes] + (self.namespaces.notes if self.namespaces else [])

    @property
    def needed(self) -> bool:
        return bool(self.findings)

    def apply(self) -> list[str]:
        """Do it; returns what was written and where the replaced files went, one line each."""
        metadata = self.data_dir / "metadata"
        stamp = time.strftime("repair-%Y%m%dT%H%M%SZ", time.gmtime())
        backup, n = metadata / stamp, 1
        while backup.exists():
            n += 1
            backup = metadata / f"{stamp}-{n}"
        backup.mkdir()
        fsync_directory(metadata)
        done = []
        for repair in self.maps:
            if repair.needed:
                legacy = metadata / f"{repair.name}.json"
                if legacy.exists():  # the old name: replaced by a second name of the new snapshot
                    os.link(legacy, backup / legacy.name)
                replaced = write_fresh(metadata, repair.name, repair.document(repair.entries))
                for path in replaced:
                    os.replace(path, backup / path.name)
                done.append(f"wrote {repair.name}: {len(repair.entries)} entries; {len(replaced)} files replaced")
        if self.namespaces is not None and self.namespaces.needed:
            path = metadata / NAMESPACES
            os.link(path, backup / path.name)
            doc = namespaces_document(self.namespaces.tenants, self.namespaces.namespaces)
            atomic_write(path, json.dumps(doc, sort_keys=True, indent=1).encode())
            done.append(f"wrote {NAMESPACES}: {len(doc['tenants'])} tenants, {len(doc['namespaces'])} namespaces")
        fsync_directory(backup)
        fsync_directory(metadata)
        done.append(f"the replaced files are kept in {backup}")
        return done


def plan(data_dir: Path, cluster: str = "standalone") -> RepairPlan:
    """Read the metadata under ``data_dir`` as the broker would and decide what a repair does (no writes)."""
    metadata = data_dir / "metadata"
    partitioned = plan_map(metadata, PARTITIONED, PartitionsCodec(), lambda entries: entries)
    policies = plan_map(metadata, POLICIES, PoliciesCodec(), _policies_document)
    found = namespace_folders(data_dir / "topics")
    found.update(TopicName.parse(t).namespace_name for t in partitioned.entries)
    for key in policies.entries:
        scope, name = key.split("\t", 1)
        found.add(name if scope == NAMESPACE else TopicName.parse(name).namespace_name)
    return RepairPlan(data_dir, [partitioned, policies], plan_namespaces(metadata / NAMESPACES, found, cluster))


def _policies_document(entries: dict[str, Any]) -> dict:
    doc: dict[str, dict[str, Any]] = {NAMESPACE: {}, TOPIC: {}}
    for key, entry in entries.items():
        scope, name = key.split("\t", 1)
        doc[scope][name] = entry
    return doc


# ---------------------------------------------------------------------------------------------- maps
def plan_map(metadata: Path, name: str, codec: MapCodec, document: Callable[[dict], Any]) -> MapRepair:
    reading = read_map(metadata, name, codec)
    if reading.entries is not None:
        repair = MapRepair(name, reading.entries, document)
        for damage in reading.damage:  # newer snapshots passed over: the start recovers, exactly
            repair.findings.append(Finding(
                damage, f"write the map again from {reading.recovered_from} and the changes since"
                        " (the broker reads it so at start already): nothing is lost"))
    else:
        repair = _salvage(reading.files, codec, document)
    if reading.torn is not None:
        path, at = reading.torn
        repair.notes.append(f"{path.name} ends with a torn append at byte {at} (a crash mid-write, never"
                            " acknowledged): the broker drops it at start")
    return repair


def _salvage(files: MapFiles, codec: MapCodec, document: Callable[[dict], Any]) -> MapRepair:
    """Step 2 of the module docstring."""
    repair = MapRepair(files.name, {}, document)
    base: int | None = None
    for generation, path, _ in files.bases():
        if path is None:
            break
        snapshot = read_snapshot(path, codec)
        if snapshot.entries is None:
            repair.findings.append(Finding(snapshot.damage[0], "do not read this snapshot: what only it held"
                                           " is lost (it cannot be listed); entries set again by the change"
                                           " files present are kept"))
            continue
        base, repair.entries = generation, snapshot.entries
        for damage in snapshot.damage:
            repair.findings.append(Finding(damage, f"drop the entry {_shown_key(damage.key)}"))
        break
    paths, missing = files.after(base, contiguous=base is not None and base >= 0)
    for damage in missing:
        repair.findings.append(Finding(damage, "nothing to read: any change it held is lost"))
    dropped: list[tuple[int, Finding]] = []
    last_set: dict[str, tuple[int, int, Path]] = {}
    for index, path in enumerate(paths):
        read = read_changes(path, codec, last=index == len(paths) - 1)
        for change in read.changes:
            if change.value is None:
                repair.entries.pop(change.key, None)
            else:
                repair.entries[change.key] = change.value
            last_set[change.key] = (index, change.position, path)
        for damage in read.damage:
            finding = Finding(damage, "drop this line")
            dropped.append((index, finding))
            repair.findings.append(finding)
    for index, finding in dropped:  # what each dropped line's key is after the repair
        key = finding.damage.key
        if key is None:
            finding.effect = "the key it changed cannot be told: the map keeps what the other lines say"
        elif key in last_set and last_set[key][:2] > (index, finding.damage.position):
            _, at, path = last_set[key]
            finding.effect = f"{_shown_key(key)}: unaffected, a later change ({path.name} at byte {at}) sets it"
        else:
            value = repair.entries.get(key)
            finding.effect = (f"{_shown_key(key)} stays as before this line: "
                              + ("no entry" if value is None else _shown(value)))
    return repair


# ---------------------------------------------------------------------------------------------- namespaces
@dataclass
class NamespacesRepair:
    tenants: dict[str, dict[str, list[str]]]
    namespaces: set[str]
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def needed(self) -> bool:
        return bool(self.findings)


def plan_namespaces(path: Path, found: set[str], cluster: str) -> NamespacesRepair | None:
    """Step 3 of the module docstring; ``found``: the namespaces the data dir shows. None without the file
    (the broker adopts what it finds at start, as for a folder from before namespaces were stored)."""
    if not path.exists():
        return None
    read = read_namespaces(path)
    repair = NamespacesRepair(read.tenants, read.namespaces)
    if not read.damage:
        return repair
    default = {"adminRoles": [], "allowedClusters": [cluster]}
    defaulted = set()
    if not read.readable:
        repair.namespaces = {DEFAULT_NAMESPACE, *found}
        repair.findings.append(Finding(read.damage[0], "rebuild the file from what the data dir shows",
                                       f"namespaces: {', '.join(sorted(repair.namespaces))}"))
        repair.notes.append("namespaces with no topics, partitioned topics or policies, and tenants with no"
                            " namespace, cannot be found: create them again (pulsarlike admin tenants|namespaces"
                            " create)")
    else:
        kept_tenants = {ns.split("/", 1)[0] for ns in repair.namespaces}
        for damage in read.damage:
            kind, _, name = (damage.key or "").partition("\t")
            if kind == "tenant" and name in kept_tenants:
                repair.tenants[name] = dict(default)
                defaulted.add(name)
                action = f"give the tenant {name} the defaults {_shown(default)} (its namespaces stay)"
            else:
                action = f"drop the {kind} {name}" if name else "drop this entry"
            repair.findings.append(Finding(damage, action))
    for namespace in sorted(repair.namespaces):
        tenant = namespace.split("/", 1)[0]
        if tenant not in repair.tenants:
            repair.tenants[tenant] = dict(default)
            defaulted.add(tenant)
    if defaulted:
        repair.notes.append(f"tenants given the defaults {_shown(default)}: {', '.join(sorted(defaulted))}; set"
                            " their admin roles again with `pulsarlike admin tenants update TENANT --admin-roles"
                            " ...` (only super-users administer them meanwhile)")
    return repair


def _shown_key(key: str | None) -> str:
    return "?" if key is None else key.replace("\t", " ")


def _shown(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= SHOWN else text[:SHOWN] + "..."

