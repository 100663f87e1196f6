"""Installing pulsarlike as README's Install section says: a wheel built from the checkout
(``pip wheel --no-deps -w dist .``) installs into a fresh virtualenv and works there, away from the
checkout -- the ``pulsarlike`` command, every package, the protocol's ``.proto`` and a broker round trip.

Offline and quick: the wheel is built without build isolation (this venv's setuptools) from a copy of
the sources, so the checkout gets no ``build/`` folder; the new virtualenv has no pip of its own (this
venv's pip installs into it with ``--python``) and finds the dependencies through a ``.pth`` line naming
this venv's site-packages, so nothing is downloaded.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("broker_core", "dispatch", "connector", "jobs", "pyspark_pulsarlike", "pulsarlike")
SKIPPED = shutil.ignore_patterns(".venv", ".git", "tests", "bench", "build", "dist", "*.egg-info", "__pycache__",
                                 ".pytest_cache", "data", ".bench")


def clean_env() -> dict[str, str]:
    """This environment without PYTHONPATH, which could put a checkout before the installed wheel."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


def run(*argv: str, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    done = subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env=clean_env())
    assert done.returncode == 0, f"{' '.join(argv)} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("install")
    shutil.copytree(ROOT, base / "src", ignore=SKIPPED)
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(base / "dist"),
        ".", cwd=base / "src")
    (built,) = (base / "dist").glob("pulsarlike-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel) -> Path:
    """A fresh virtualenv with the wheel installed, dependencies from this venv."""
    target = wheel.parent.parent / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", str(target), cwd=target.parent)
    python = target / "bin" / "python"
    site = run(str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=target).stdout.strip()
    # added after the venv's own site-packages: the wheel's packages win over anything found there
    (Path(site) / "deps-from-test-venv.pth").write_text(sysconfig.get_path("purelib") + "\n")
    run(sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel),
        cwd=target.parent)
    return target


def test_the_wheel_holds_every_package_the_command_and_the_proto(wheel):
    names = zipfile.ZipFile(wheel).namelist()

    assert {name.split("/", 1)[0] for name in names} >= set(PACKAGES)
    assert "broker_core/protocol/broker.proto" in names
    assert any(name.endswith("entry_points.txt") for name in names)


def test_the_installed_wheel_imports_from_its_virtualenv_not_the_checkout(venv, tmp_path):
    shown = run(str(venv / "bin" / "python"), "-c",
                f"import {', '.join(PACKAGES)}; print(*({', '.join(p + '.__file__' for p in PACKAGES)}))",
                cwd=tmp_path).stdout.split()

    assert len(shown) == len(PACKAGES) and all(path.startswith(str(venv)) for path in shown)


def test_the_installed_pulsarlike_command_runs_a_broker_and_a_round_trip(venv, tmp_path):
    command = str(venv / "bin" / "pulsarlike")
    assert "produce" in run(command, "--help", cwd=tmp_path).stdout
    broker = subprocess.Popen([command, "broker", "--data-dir", str(tmp_path / "data"), "--port", "0"],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              env=clean_env())
    try:
        first = broker.stdout.readline()
        assert first.startswith("pulsarlike broker listening on "), first
        url = "pulsar://" + first.rsplit(" ", 1)[1].strip()

        run(command, "produce", "t", "-m", "from the wheel", "--url", url, cwd=tmp_path)
        consumed = run(command, "consume", "t", "-s", "s", "-p", "Earliest", "-n", "1", "--url", url, cwd=tmp_path)

        assert "from the wheel" in consumed.stdout
    finally:
        broker.kill()
        broker.wait(30)
        broker.stdout.close()
