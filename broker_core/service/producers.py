"""Default producer names, unique across broker restarts (deduplication keys on producer names)."""
from __future__ import annotations

import itertools
import secrets


class ProducerNames:
    """``<cluster>-<run id>-<n>``, as Pulsar's ``<cluster>-<broker>-<n>``; the random run id keeps names
    of different broker runs apart."""

    def __init__(self, cluster: str) -> None:
        self._prefix = f"{cluster}-{secrets.token_hex(3)}-"
        self._counter = itertools.count()

    def next(self) -> str:
        return f"{self._prefix}{next(self._counter)}"
