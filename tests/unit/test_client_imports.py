"""Spark executors run the client only: importing ``connector`` (or ``connector.spark``, or the public
``pulsarlike`` package) loads none of the broker's storage, service or dispatch modules. Checked in a fresh
interpreter."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

SERVER_PACKAGES = ("broker_core.storage", "broker_core.core", "broker_core.frontends", "broker_core.net",
                   "broker_core.security", "broker_core.server", "dispatch")


@pytest.mark.parametrize("module", ["connector", "connector.exceptions", "connector.spark",
                                    "pulsarlike", "pulsarlike.schema"])
def test_importing_the_client_loads_no_broker_module(module):
    code = (f"import json, sys; import {module}; "
            f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('broker_core', 'dispatch'))))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                       check=True, timeout=120).stdout)
    assert [m for m in loaded if m == "dispatch" or m.startswith(tuple(p + "." for p in SERVER_PACKAGES))
            or m in SERVER_PACKAGES] == []
