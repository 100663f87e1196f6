"""``pulsarlike job NAME ...``: dispatch to the job modules, unknown names and flags (no SparkSession)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from broker_core import cli


def test_unknown_job_names_the_jobs_and_exits_2(capsys):
    assert cli.main(["job", "nosuch"]) == 2

    err = capsys.readouterr().err
    assert "unknown job 'nosuch'" in err and "backfill, export, redrive" in err


def test_misspelt_job_names_the_closest_one(capsys):
    assert cli.main(["job", "redrve"]) == 2

    assert "did you mean 'redrive'?" in capsys.readouterr().err


def test_job_without_a_name_prints_the_usage_and_exits_2(capsys):
    assert cli.main(["job"]) == 2

    assert "pulsarlike job backfill" in capsys.readouterr().err


def test_unknown_flag_of_a_job_names_the_closest_flag(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["job", "backfill", "in.json", "--topic", "t", "--value-colum", "v"])

    assert exit_.value.code == 2
    assert "did you mean '--value-column'?" in capsys.readouterr().err


def test_pulsarlike_job_help_runs_as_a_command():
    done = subprocess.run([sys.executable, "-m", "broker_core.cli", "job", "export", "--help"],
                          capture_output=True, text=True, timeout=60)

    assert done.returncode == 0
    assert "--starting-offsets" in done.stdout and "--output" in done.stdout
