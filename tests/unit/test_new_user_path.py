"""What a new user hit following README.md literally on a fresh clone (issue 34), each pinned here."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "README.md"]


def test_the_checkout_imported_by_a_python_without_its_packages_says_which_python_to_use():
    # -S: no site-packages, as the system python3 run inside the clone (it imports the folders, not the deps)
    ran = subprocess.run([sys.executable, "-S", "-c", "import pulsarlike"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)

    assert ran.returncode != 0
    last = ran.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: pulsarlike's dependencies")
    assert f"not installed for this Python ({sys.executable})" in last and ".venv/bin/python" in last


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs the git checkout")
def test_every_data_dir_the_docs_start_a_broker_in_is_ignored_by_git():
    data_dirs = {m[1] for doc in DOCS for m in re.finditer(r"pulsarlike broker --data-dir (\./[\w.-]+)",
                                                             doc.read_text())}
    assert "./pulsarlike-data" in data_dirs

    for folder in sorted(data_dirs):
        ignored = subprocess.run(["git", "check-ignore", "-q", f"{folder}/topics/x.log"], cwd=ROOT)
        assert ignored.returncode == 0, f"{folder} (a broker's data dir in the docs) is not in .gitignore"


def test_the_docs_link_only_to_files_of_the_repository():
    missing = []
    for doc in DOCS:
        text = doc.read_text()
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if not target.startswith(("http://", "https://", "mailto:")) and not (doc.parent / target).exists():
                missing.append(f"{doc.relative_to(ROOT)} -> {target}")
        if "ARCHITECTURE" in text and not (ROOT / "ARCHITECTURE.md").exists():
            missing.append(f"{doc.relative_to(ROOT)} -> ARCHITECTURE.md (not in the repository)")

    assert not missing, "\n".join(missing)


def test_the_docker_section_of_operations_says_what_compose_yaml_runs():
    compose = (ROOT / "docker" / "compose.yaml").read_text()
    text = (ROOT / "docs" / "operations.md").read_text()
    section = text[text.index("## Docker"):]
    section = section[:section.find("\n## ", 4)] if "\n## " in section[4:] else section

    demo_url = re.search(r"PULSARLIKE_SERVICE_URL: (\S+)", compose)[1]
    assert demo_url in section
    for published in re.findall(r'- "((?:127\.0\.0\.1:)?\d+):\d+"', compose):
        port = published.rsplit(":", 1)[-1]
        assert port in section, f"port {port} (published as {published}) is not in the Docker section"
        if published.startswith("127.0.0.1:"):
            assert re.search(rf"{port}[^.]*(loopback|this machine)", section.replace("\n", " ")), port
    volumes = re.findall(r"^  ([\w-]+):\s*$", compose.split("\nvolumes:\n", 1)[1], re.M)
    down = next(line for line in section.split("\n\n") if "down -v" in line and "deletes" in line)
    assert all(f"`{volume}`" in down for volume in volumes), (volumes, down)
    assert "authenticationEnabled=false" in section and "token" in section
