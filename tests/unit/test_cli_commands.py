"""The ``pulsarlike`` command: ``--help`` lists every command without loading client code, and
pulsar-client's global form ``pulsarlike --url URL produce ...`` reaches the tool with its URL."""
from __future__ import annotations

import subprocess
import sys

import pytest

from broker_core import cli


def test_help_lists_every_command():
    done = subprocess.run([sys.executable, "-m", "broker_core.cli", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0
    listed = "\n" + done.stdout.split("COMMAND\n", 1)[1]
    for command in ("broker", "admin", "produce", "consume", "health", "job"):
        assert f"\n    {command} " in listed, command


def test_every_tool_command_is_listed_in_the_help():
    assert set(cli.TOOLS) | {"broker"} == set(cli.COMMANDS)


def test_help_loads_no_client_code():
    code = ("import sys\nfrom broker_core import cli\ntry:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('connector', 'jobs', 'pyspark'))\n"
            "print(loaded)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("argv", [["--url", "pulsar://h:1", "produce", "t", "-m", "x"],
                                  ["--url=pulsar://h:1", "produce", "t", "-m", "x"],
                                  ["--service-url", "pulsar://h:1", "produce", "t", "-m", "x"]])
def test_the_global_url_goes_to_the_tool_after_its_command(argv):
    assert cli._global_url(argv) == ["produce", "t", "-m", "x", argv[0].split("=")[0], "pulsar://h:1"]


def test_a_global_url_before_broker_is_refused(capsys):
    assert cli.main(["--url", "pulsar://h:1", "broker", "--data-dir", "x"]) == 2
    assert "client commands" in capsys.readouterr().err
