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


def test_version_prints_the_package_version(capsys):
    from importlib import metadata

    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"pulsarlike {metadata.version('pulsarlike')}\n"


def test_version_is_in_the_help():
    done = subprocess.run([sys.executable, "-m", "broker_core.cli", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert "--version" in done.stdout


def _closed_pipe() -> int:
    """The write end of a pipe whose reader has gone (as ``| head -1``'s, once it has its line)."""
    import os

    read, write = os.pipe()
    os.close(read)
    return write


def test_output_into_a_closed_pipe_ends_quietly_with_the_sigpipe_status():
    import os

    write = _closed_pipe()
    try:  # a command that prints its result (a key) and needs no broker
        done = subprocess.run([sys.executable, "-m", "broker_core.cli", "tokens", "create-secret-key", "--base64"],
                              stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write)
    assert done.returncode == cli.BROKEN_PIPE_STATUS
    assert done.stderr == ""  # no traceback, no "Exception ignored" at exit


def test_a_closed_pipe_in_process_returns_the_sigpipe_status(monkeypatch):
    import os

    with os.fdopen(_closed_pipe(), "w") as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)
        assert cli.main(["admin", "--help"]) == cli.BROKEN_PIPE_STATUS
