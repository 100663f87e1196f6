"""``advertisedListeners``: the addresses LOOKUP answers to a client that names a listener.

Pulsar's format (broker.conf): comma-separated ``<listener name>:<url>`` entries, where a listener has at
most one ``pulsar://host:port`` and one ``pulsar+ssl://host:port`` URL (``http://``/``https://`` ones are
accepted and not used: this broker has no separate web service lookups by listener)::

    advertisedListeners=internal:pulsar://10.0.0.5:6650,external:pulsar://broker.example.com:6650,\
external:pulsar+ssl://broker.example.com:6651

A client naming a listener (``listener_name=`` in pulsar-client; ``advertised_listener_name`` in
``CommandLookupTopic``) is answered that listener's URLs; one naming a listener the broker does not have is
refused with ``ServiceNotReady`` ("the broker does not have listener ..."), as Pulsar does.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from broker_core.errors import InvalidConfiguration

KEY = "advertisedListeners"
_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_URL = re.compile(r"(pulsar|pulsar\+ssl|http|https)://([^/:\s]+|\[[0-9A-Fa-f:.]+\]):(\d{1,5})/?")


@dataclass(frozen=True)
class Listener:
    name: str
    broker_url: str = ""
    """``pulsar://host:port`` (empty when the listener has none)."""
    broker_url_tls: str = ""
    """``pulsar+ssl://host:port`` (empty when the listener has none)."""


def parse_listeners(text: str) -> dict[str, Listener]:
    """The listeners of an ``advertisedListeners`` value, by name; ``InvalidConfiguration`` naming the key
    and the bad entry otherwise."""
    urls: dict[str, dict[str, str]] = {}
    for raw in text.split(","):
        entry = raw.strip()
        if not entry:
            continue
        name, sep, url = entry.partition(":")
        if not sep or not _NAME.fullmatch(name):
            raise _bad(entry, "<listener name>:<scheme>://<host>:<port>")
        match = _URL.fullmatch(url.strip())
        if match is None or not 0 < int(match.group(3)) < 65536:
            raise _bad(entry, "a pulsar://, pulsar+ssl://, http:// or https:// URL with a host and a port")
        scheme = match.group(1)
        schemes = urls.setdefault(name, {})
        if scheme in schemes:
            raise _bad(entry, f"one {scheme}:// URL per listener ({name} has {schemes[scheme]} already)")
        schemes[scheme] = url.strip().rstrip("/")
    listeners = {}
    for name, schemes in urls.items():
        if "pulsar" not in schemes and "pulsar+ssl" not in schemes:
            raise _bad(name, f"a pulsar:// or pulsar+ssl:// URL for listener {name}")
        listeners[name] = Listener(name, schemes.get("pulsar", ""), schemes.get("pulsar+ssl", ""))
    return listeners


def _bad(entry: str, accepted: str) -> InvalidConfiguration:
    return InvalidConfiguration(f"invalid entry {entry[:200]!r} in {KEY}: expected {accepted}", key=KEY)
