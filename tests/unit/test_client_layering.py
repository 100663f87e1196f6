"""The seam of the client (ARCHITECTURE §2, issue 32): the client core speaks its own events
(:mod:`connector.client.transport.events`) and only the transports speak a wire.

- No module above the seam -- everything in ``connector/client`` but the gRPC transport's modules
  (:data:`GRPC_TRANSPORT`), the binary transport (``connector/client/transport/binary``) and the admin client
  (``connector/client/admin``, its own REST and gRPC translators) -- imports ``broker_pb2``, the gRPC stubs or
  ``grpc``.
- The binary transport translates Pulsar's commands into the client's events: it imports neither
  ``broker_pb2`` nor the stubs, and builds no gRPC error protos (``error_to_proto``).
- ``connector/spark``, ``connector/cli`` and ``jobs`` never import a transport package (the binary transport or
  the gRPC transport's modules): they go through the client's public API. What still does is listed in
  :data:`EXPECTED_TODAY`, which only shrinks (an entry that no longer holds must be removed from it).

Every module is parsed, not imported: imports inside functions and under ``if TYPE_CHECKING:`` count too.
"""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLIENT = "connector/client"
GRPC_TRANSPORT = ("connector/client/transport/grpc/connection.py", "connector/client/transport/grpc/streams.py",
                  "connector/client/transport/grpc/tls.py")
"""The gRPC transport: its channel and unary calls, its streams' translation, its TLS channel."""
BELOW_THE_SEAM = ("connector/client/transport/binary/", "connector/client/admin/")
TRANSPORT_MODULES = ("connector.client.transport.binary", "connector.client.transport.grpc.connection",
                     "connector.client.transport.grpc.streams", "connector.client.transport.grpc.tls")
DRIVERS = ("connector/spark", "connector/cli", "jobs")

EXPECTED_TODAY: set[tuple[str, str]] = set()
"""``(path, module)``: driver modules that still import a transport module: none (issue 32 emptied it; nothing
may be added to it)."""


def imported_modules(path: Path, root: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every import of ``path`` (``from a import b`` gives ``a`` and ``a.b``; relative
    imports resolved against the module's package), wherever it stands in the module."""
    package = list(path.relative_to(root).with_suffix("").parts[:-1])
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package[:len(package) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found.append((node.lineno, base))
            found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
    return found


def _is_grpc_wire(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "grpc" or "broker_pb2" in parts or "broker_pb2_grpc" in parts


def _is_transport(module: str) -> bool:
    return any(module == t or module.startswith(t + ".") for t in TRANSPORT_MODULES)


def _modules(root: Path, folder: str) -> list[Path]:
    return sorted((root / folder).rglob("*.py"))


def above_the_seam(root: Path) -> list[Path]:
    out = []
    for path in _modules(root, CLIENT):
        rel = path.relative_to(root).as_posix()
        if rel not in GRPC_TRANSPORT and not rel.startswith(BELOW_THE_SEAM):
            out.append(path)
    return out


def grpc_wire_imports(root: Path, paths: list[Path]) -> list[str]:
    return [f"{path.relative_to(root).as_posix()}:{line}: {module}" for path in paths
            for line, module in imported_modules(path, root) if _is_grpc_wire(module)]


def transport_imports(root: Path) -> set[tuple[str, str]]:
    """``(path, module)`` of every import of a transport module by a driver (Spark, CLI, jobs)."""
    found = set()
    for folder in DRIVERS:
        for path in _modules(root, folder):
            for _, module in imported_modules(path, root):
                if _is_transport(module):
                    top = next(t for t in TRANSPORT_MODULES if module == t or module.startswith(t + "."))
                    found.add((path.relative_to(root).as_posix(), top))
    return found


def test_nothing_above_the_seam_imports_broker_pb2_the_stubs_or_grpc():
    assert grpc_wire_imports(REPO, above_the_seam(REPO)) == []


def test_the_binary_transport_builds_no_grpc_message_or_error_proto():
    binary = _modules(REPO, "connector/client/transport/binary")
    assert binary, "the binary transport moved: point this test at it"
    assert grpc_wire_imports(REPO, binary) == []
    built = [f"{path.relative_to(REPO)}:{line}" for path in binary for line, module in imported_modules(path, REPO)
             if module.endswith(".error_to_proto")]
    assert built == []


def test_the_grpc_transport_modules_are_the_ones_that_speak_grpc():
    for rel in GRPC_TRANSPORT:
        assert (REPO / rel).is_file(), f"{rel} is listed as a gRPC transport module but does not exist"
    assert grpc_wire_imports(REPO, [REPO / "connector/client/transport/grpc/streams.py"])  # the walk sees them


def test_spark_cli_and_jobs_import_no_transport_module_beyond_what_is_expected_today():
    found = transport_imports(REPO)
    assert found - EXPECTED_TODAY == set(), "a driver imports a transport module: use the client's public API"
    assert EXPECTED_TODAY - found == set(), "no longer imported: remove these from EXPECTED_TODAY"


def test_the_walk_sees_function_level_type_checking_and_relative_imports(tmp_path):
    (tmp_path / "connector" / "client" / "transport" / "binary").mkdir(parents=True)
    (tmp_path / "connector" / "spark").mkdir(parents=True)
    sneaky = tmp_path / "connector" / "client" / "sneaky.py"
    sneaky.write_text(
        "from typing import TYPE_CHECKING\n"
        "from broker_core import errors\n"
        "if TYPE_CHECKING:\n"
        "    from broker_core.protocol import broker_pb2\n"
        "def f():\n"
        "    import grpc\n"
        "    from broker_core.protocol.broker_pb2_grpc import PulsarLikeStub\n"
        "    from .transport.binary import transport\n")
    (tmp_path / "connector" / "spark" / "reader.py").write_text(
        "def g():\n    from connector.client.transport.binary.transport import BinaryTransport\n"
        "    from ..client.transport.grpc import connection\n")
    assert [hit.split(":")[1] for hit in grpc_wire_imports(tmp_path, [sneaky])] == ["4", "6", "7", "7"]
    assert transport_imports(tmp_path) == {("connector/spark/reader.py", "connector.client.transport.binary"),
                                           ("connector/spark/reader.py", "connector.client.transport.grpc.connection")}
