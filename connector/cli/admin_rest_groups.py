"""``pulsarlike admin clusters|brokers|schemas``, as pulsar-admin's, over the admin REST API
(``--admin-url http://HOST:8080``; with a ``pulsar://`` URL clusters and brokers say so and exit 1, schemas
go over the broker's gRPC schema admin calls, with the same output):

    pulsarlike admin --admin-url http://localhost:8080 clusters list
    pulsarlike admin --admin-url http://localhost:8080 clusters get standalone
    pulsarlike admin --admin-url http://localhost:8080 brokers list [standalone]
    pulsarlike admin --admin-url http://localhost:8080 brokers healthcheck|version|leader-broker
    pulsarlike admin --admin-url http://localhost:8080 schemas upload persistent://public/default/t -f schema.json
    pulsarlike admin --admin-url http://localhost:8080 schemas get persistent://public/default/t [--version N]
    pulsarlike admin --admin-url http://localhost:8080 schemas compatibility persistent://public/default/t -f s.json
    pulsarlike admin --admin-url http://localhost:8080 schemas delete persistent://public/default/t

A schema file is pulsar-admin's: ``{"type": "AVRO", "schema": "<definition as text>", "properties": {}}``.
"""
from __future__ import annotations

import argparse
import json
from typing import Any, Callable

from connector.cli import output


def clusters(verb: Callable[..., argparse.ArgumentParser]) -> None:
    verb("list", lambda a, o: output.lines(a.list_clusters()), "List the clusters").add_argument(
        "-c", "--current", action="store_true", help="only the current cluster (a pulsarlike broker knows only its "
                                                     "own: the same list)")
    verb("get", lambda a, o: output.pulsar_json(a.get_cluster(o.cluster)), "A cluster's URLs (ClusterData)",
         "cluster")


def brokers(verb: Callable[..., argparse.ArgumentParser]) -> None:
    verb("list", lambda a, o: output.lines(a.list_brokers(o.cluster)), "List the active brokers of a cluster",
         ).add_argument("cluster", nargs="?", default=None, help="cluster name (default: the admin URL's own)")
    verb("healthcheck", lambda a, o: a.broker_healthcheck(), "Check that the broker is healthy (prints ok)")
    verb("version", lambda a, o: a.get_broker_version(), "The broker's version")
    verb("leader-broker", lambda a, o: output.pulsar_json(a.get_leader_broker()), "The cluster's leader broker")


def _schema_file(path: str) -> dict[str, Any]:
    """A pulsar-admin schema file, checked before anything is sent."""
    try:
        with open(path, encoding="utf-8") as f:
            found = json.load(f)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{path} is not JSON: {exc}") from None
    if not isinstance(found, dict) or not isinstance(found.get("type"), str):
        raise argparse.ArgumentTypeError(f'{path}: expected {{"type": ..., "schema": ..., "properties": {{}}}}')
    return found


def _get(admin: Any, o: argparse.Namespace) -> str:
    if o.all_versions:
        return output.pulsar_json(admin.get_all_schemas(o.topic))
    return output.pulsar_json(admin.get_schema(o.topic, o.version))


def _upload(admin: Any, o: argparse.Namespace) -> None:
    s = o.filename
    admin.upload_schema(o.topic, s["type"], s.get("schema", ""), s.get("properties") or {})


def _compatibility(admin: Any, o: argparse.Namespace) -> str:
    s = o.filename
    return output.pulsar_json(admin.test_schema_compatibility(o.topic, s["type"], s.get("schema", ""),
                                                              s.get("properties") or {}))


def _version(admin: Any, o: argparse.Namespace) -> str:
    s = o.filename
    return str(admin.get_schema_version(o.topic, s["type"], s.get("schema", ""), s.get("properties") or {}))


def schemas(verb: Callable[..., argparse.ArgumentParser]) -> None:
    p = verb("get", _get, "A topic's schema: the latest, one version or all of them", "topic")
    which = p.add_mutually_exclusive_group()
    which.add_argument("-v", "--version", type=int, default=None, help="this version (default: the latest)")
    which.add_argument("-a", "--all-version", dest="all_versions", action="store_true", help="every version")
    for name, run, what in (("upload", _upload, "Register a schema for a topic (a new version when it is "
                             "compatible)"), ("compatibility", _compatibility, "Whether a topic would accept "
                                              "a schema (nothing registered)"),
                            ("get-version", _version, "The version a schema was registered as, -1 when it was"
                             " not (pulsarlike's verb for Pulsar's getVersionBySchema)")):
        verb(name, run, what, "topic").add_argument(
            "-f", "--filename", type=_schema_file, required=True,
            help='schema file: {"type": "AVRO", "schema": "<definition>", "properties": {}}')
    verb("delete", lambda a, o: a.delete_schema(o.topic) and None, "Delete every version of a topic's schema",
         "topic").add_argument("-f", "--force", action="store_true",
                               help="delete it completely (pulsarlike always does: it keeps no deleted versions)")
