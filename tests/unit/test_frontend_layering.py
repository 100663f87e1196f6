"""The front ends only translate their wire (ARCHITECTURE §2): no module of ``broker_core/frontends/`` imports a
topic class (``broker_core.core.persistent``, ``broker_core.core.nonpersistent``), storage, dispatch or another
front end. They reach topics through the ``Topic`` protocol, the sessions and the admin core
(``broker_core.core.admin``).

Every module is parsed, not imported, so imports inside functions and under ``TYPE_CHECKING`` count too."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FRONTENDS = REPO / "broker_core" / "frontends"
BANNED = {  # module prefix -> why
    "broker_core.core.persistent": "a topic class (hold a Topic)",
    "broker_core.core.nonpersistent": "a topic class (hold a Topic)",
    "broker_core.storage": "storage (reach data through the core)",
    "dispatch": "dispatch (call the sessions)",
}
FRONT_ENDS = ("grpc", "http", "pulsar")


def imported_modules(path: Path, repo: Path = REPO) -> list[tuple[int, str]]:
    """``(line, module)`` of every import of ``path`` (``from a import b`` gives ``a`` and ``a.b``; relative
    imports resolved against the module's package under ``repo``)."""
    package = ".".join(path.relative_to(repo).with_suffix("").parts[:-1])
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(p for p in [*parts[:len(parts) - node.level + 1], base] if p)
            found.append((node.lineno, base))
            found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
    return found


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def offending_imports(repo: Path = REPO) -> list[str]:
    """``path:line: module (why)`` for every import a front-end module of ``repo`` may not make."""
    out: list[str] = []
    for path in sorted((repo / "broker_core" / "frontends").rglob("*.py")):
        relative = path.relative_to(repo).as_posix()
        own = relative.split("/")[2] if relative.count("/") > 2 else ""
        banned = dict(BANNED)
        banned.update({f"broker_core.frontends.{other}": f"the {other} front end (share the core, not each other)"
                       for other in FRONT_ENDS if other != own})
        for line, module in imported_modules(path, repo):
            for prefix, why in banned.items():
                if _under(module, prefix):
                    out.append(f"{relative}:{line}: {module} ({why})")
    return sorted(set(out))


def test_no_front_end_imports_a_topic_class_storage_dispatch_or_another_front_end():
    assert offending_imports() == []


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_every_front_end_is_walked(front_end):
    assert list((FRONTENDS / front_end).rglob("*.py")), f"{front_end} holds no module: the walk would prove nothing"


def test_the_walk_finds_every_banned_import_and_form(tmp_path):
    fake = tmp_path / "broker_core" / "frontends" / "grpc"
    fake.mkdir(parents=True)
    (fake / "m.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "import dispatch.consumer\n"
        "from broker_core.core.persistent.topic import PersistentTopic\n"
        "from broker_core.core.admin import TopicAdmin\n"  # allowed: the admin core
        "from ..http.admin import answers\n"  # relative: another front end
        "if TYPE_CHECKING:\n"
        "    from broker_core.storage.log import StoredEntry\n"
        "def f():\n"
        "    from broker_core.frontends.pulsar import frames\n"
        "    from broker_core.frontends.grpc import streams\n")  # allowed: its own front end
    found = {line.split(": ", 1)[1].split(" (")[0] for line in offending_imports(tmp_path)}
    assert found == {
        "dispatch.consumer", "broker_core.core.persistent.topic", "broker_core.core.persistent.topic.PersistentTopic",
        "broker_core.frontends.http.admin", "broker_core.frontends.http.admin.answers",
        "broker_core.storage.log", "broker_core.storage.log.StoredEntry", "broker_core.frontends.pulsar",
        "broker_core.frontends.pulsar.frames"}
