"""The Spark connector, the CLI and the jobs use the client's public API: none of their modules imports the
broker's wire layer (``broker_core.protocol``: codecs, the gRPC stubs ``broker_pb2``/``broker_pb2_grpc``).
Value types and errors (``broker_core.types``, ``broker_core.errors``) they may import.

Every module is parsed, not imported, so imports inside functions count too."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LAYERED = ("connector/spark", "connector/cli", "jobs")
STUBS = ("broker_pb2", "broker_pb2_grpc")


def _forbidden(module: str) -> bool:
    parts = module.split(".")
    return module == "broker_core.protocol" or module.startswith("broker_core.protocol.") or parts[-1] in STUBS


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, module)`` of every import in ``tree`` (``from a import b`` gives ``a`` and ``a.b``), and of
    every ``importlib.import_module("...")``/``__import__("...")`` of a literal name."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
            found.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__")):
            found.append((node.lineno, node.args[0].value))
    return found


def offending_imports(root: Path) -> list[str]:
    """``path:line: module`` for every import of the wire layer by a layered module under ``root``."""
    out: list[str] = []
    for folder in LAYERED:
        for path in sorted((root / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            out.extend(f"{path.relative_to(root)}:{line}: {module}" for line, module in imported_modules(tree)
                       if _forbidden(module))
    return out


def test_no_spark_cli_or_jobs_module_imports_the_wire_layer():
    assert offending_imports(REPO) == []


def test_every_layered_folder_is_walked():
    for folder in LAYERED:
        assert list((REPO / folder).rglob("*.py")), f"{folder} holds no module: the walk would prove nothing"


def test_the_walk_finds_imports_of_every_form_inside_functions_too(tmp_path):
    module = tmp_path / "connector" / "spark" / "sneaky.py"
    module.parent.mkdir(parents=True)
    (tmp_path / "connector" / "cli").mkdir()
    (tmp_path / "jobs").mkdir()
    module.write_text(
        "from broker_core import errors, types\n"
        "import broker_core.types\n"
        "def f():\n"
        "    from broker_core.protocol import entry\n"
        "    from broker_core import protocol\n"
        "    import broker_core.protocol.broker_pb2_grpc as stubs\n"
        "    from broker_core.protocol.broker_pb2 import TopicRequest\n"
        "    import importlib\n"
        "    return importlib.import_module('broker_core.protocol.codec')\n")
    found = offending_imports(tmp_path)
    assert [hit.split(":")[1] for hit in found] == ["4", "4", "5", "6", "7", "7", "9"]
    assert not any(hit.endswith((": broker_core.errors", ": broker_core.types")) for hit in found)


def test_importing_the_connector_loads_no_broker_storage_service_or_dispatch():
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, connector, connector.client.entries, connector.client.entry_stream; "
         "print(sorted(m for m in sys.modules if m.startswith(('broker_core.storage', 'broker_core.core', 'broker_core.frontends', 'broker_core.net', 'broker_core.security', 'broker_core.server', "
         "'dispatch'))))"], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"
