"""What the broker's start path leaves for later (issue 19: process start to the first CONNECTED answer): the
modules of the commands after the handshake, token authentication, the ``advertisedListeners`` parser and the
unknown-key hint are imported when first needed, not by every start."""
from __future__ import annotations

import subprocess
import sys

LATER = ["broker_core.frontends.pulsar.consuming", "broker_core.frontends.pulsar.producing",
         "broker_core.frontends.pulsar.lookups", "broker_core.frontends.pulsar.schema_commands",
         "broker_core.security.tokens", "broker_core.net.advertised_listeners", "difflib"]

SCRIPT = f"""
import sys
from broker_core.clock import SYSTEM_CLOCK
from broker_core.config import BrokerConfig
from broker_core.frontends.pulsar.connection import PulsarConnection
from broker_core.security import Security


class Front:  # what a new connection reads of the broker's front end
    config = BrokerConfig()
    clock = SYSTEM_CLOCK
    security = Security(config)


connection = PulsarConnection(Front())
print(sorted(m for m in {LATER!r} if m in sys.modules))
"""


def loaded_later_modules(script: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return eval(done.stdout.strip().splitlines()[-1])  # noqa: S307 - our own script's printed list


def test_a_new_connection_and_the_default_configuration_import_none_of_what_comes_after_the_handshake():
    assert loaded_later_modules(SCRIPT) == []


def test_the_check_sees_a_later_module_once_something_imports_it():
    # the check above can fail: a connection that imported its command modules in __init__ (as before issue 19)
    script = SCRIPT.replace("\nprint(", "\nimport broker_core.frontends.pulsar.lookups\nprint(")
    assert loaded_later_modules(script) == ["broker_core.frontends.pulsar.lookups"]
