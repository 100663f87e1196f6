"""pulsar-client-python's own test suite with pulsarlike's client in place of the official one (issue 33).

Run it with ``python scripts/upstream_client_tests.py [--source DIR] [--client pulsarlike|official]
[--files a_test.py,...] [--timeout S] [--failures] [--json OUT]``. Prints passed/failed per test file and in
total; asserts nothing (it is not part of the pytest suite: it needs root for a network namespace and takes
minutes).

1. **Their tests, outside the repository.** ``--source`` is a git checkout (or a bare mirror, the ``fetch``
   tool's ``/work/.mirror/apache+pulsar-client-python/repo``) of apache/pulsar-client-python; its
   ``tests/`` and ``build-support/`` are exported with ``git archive`` into a temporary folder. Nothing of
   theirs is copied into this repository.
2. **A broker configured as their CI configures Pulsar standalone** (``build-support/
   start-test-service-inside-container.sh`` with ``tests/test-conf/standalone-ssl.conf``): the keys of
   ``standalone-ssl.conf`` pulsarlike knows (ports 6650/6651/8080/8443, TLS with their certificates, the
   TLS, token and Basic providers, authorization, ``anonymousUserRole=anonymous``,
   ``superUserRoles=localhost,superUser,admin``; the keys of BookKeeper, ZooKeeper and the load balancer are
   dropped and listed), a new HS256 secret key, Basic users from their ``.htpasswd`` (Pulsar's provider has
   no failed-login limit: ``basicAuthMaxFailuresPerAddress=0``), then the same REST calls as their script:
   tenants ``public`` (admin role ``anonymous``; the PUT creates it on Pulsar standalone, which makes its own
   ``public`` only after its web port answers, so on ours, where it exists already, the same body is POSTed
   as an update) and ``private``, namespaces ``public/default``,
   ``public/default-2`` (``anonymous`` may produce and consume) and ``private/auth`` (``token-principal``
   may), and ``tests/.test-token.txt`` holding a ``token-principal`` token.
3. **The ports their tests hardcode** (localhost 6650, 6651, 8080, 8443): the script runs itself again in a
   private network namespace (``unshare -n``, loopback brought up), so those ports are free whatever runs on
   the machine. Without root or ``unshare``, ``--no-netns`` uses the machine's own ports, which must be free.
4. **``import pulsar`` resolving to pulsarlike**: an alias folder first on the test run's ``PYTHONPATH``
   holds a ``pulsar`` package that makes ``pulsar`` and every ``pulsar.X`` the very module ``pulsarlike`` /
   ``pulsarlike.X`` (one module, not a copy: classes compare equal), and ``_pulsar`` (the official client's
   C++ binding, which some tests import) resolving to ``pulsarlike._pulsar`` (an ImportError naming it while
   that module does not exist: the official binding is never picked up by accident). ``--client official``
   runs the same tests with pulsar-client, against the same broker, for comparison.
5. **The run**: each file of their ``run-unit-tests.sh`` (``oauth2_test.py`` needs an OAuth2 server their CI
   starts in docker and is left out unless named with ``--files``) under pytest, one process per file, a
   ``--timeout`` per test; their own Python dependencies missing from this interpreter (``requests``) are
   installed with pip into the temporary folder. Per file: passed, failed (errors included), skipped, and
   with ``--failures`` each failed test with its exception's last line.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = Path("/work/.mirror/apache+pulsar-client-python/repo")
FILES = ["custom_logger_test.py", "debug_logger_test.py", "interrupted_test.py", "auto_cluster_failover_test.py",
         "pulsar_test.py", "schema_test.py", "table_view_test.py", "reader_test.py", "asyncio_test.py"]
"""Their run-unit-tests.sh's order."""
THEIR_DEPENDENCIES = {"requests": "requests", "fastavro": "fastavro", "google.protobuf": "protobuf"}
"""Modules their tests import beside pulsar (import name -> pip name)."""
PORTS = {"brokerServicePort": 6650, "brokerServicePortTls": 6651, "webServicePort": 8080, "webServicePortTls": 8443}
WEB = "http://localhost:8080/admin/v2/"

ALIAS_PULSAR = '''"""``pulsar`` as ``pulsarlike``: this module and every ``pulsar.X`` are pulsarlike's own modules."""
import importlib
import importlib.abc
import importlib.util
import sys


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name.startswith("pulsar."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("pulsarlike" + spec.name[len("pulsar"):])

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Alias())
sys.modules["pulsar"] = importlib.import_module("pulsarlike")
'''
ALIAS_BINDING = '''"""``_pulsar`` (the official client's C++ binding) as ``pulsarlike._pulsar``."""
import importlib
import sys

try:
    sys.modules["_pulsar"] = importlib.import_module("pulsarlike._pulsar")
except ModuleNotFoundError as err:
    if err.name != "pulsarlike._pulsar":
        raise
    raise ImportError("_pulsar: pulsarlike has no pulsarlike._pulsar (the official client's binding names)") from None
'''


def export_tests(source: Path, into: Path) -> Path:
    """Their tests/ and build-support/ at the checkout's HEAD, under ``into``."""
    git_dir = source / ".git" if (source / ".git").exists() else source
    archive = subprocess.run(["git", f"--git-dir={git_dir}", "archive", "HEAD", "tests", "build-support"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    commit = subprocess.run(["git", f"--git-dir={git_dir}", "rev-parse", "--short", "HEAD"], check=True,
                            capture_output=True, text=True).stdout.strip()
    print(f"apache/pulsar-client-python at {commit}, exported to {into}")
    return into / "tests"


def write_aliases(folder: Path) -> None:
    (folder / "pulsar").mkdir(parents=True)
    (folder / "pulsar" / "__init__.py").write_text(ALIAS_PULSAR)
    (folder / "_pulsar.py").write_text(ALIAS_BINDING)


def install_their_dependencies(folder: Path) -> list[str]:
    """pip-install into ``folder`` what their tests import and this interpreter lacks; returns the names."""
    import importlib.util

    missing = [pip for module, pip in THEIR_DEPENDENCIES.items() if importlib.util.find_spec(module) is None]
    if missing:
        pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(folder), *missing],
                             capture_output=True, text=True)
        if pip.returncode:
            raise SystemExit(f"pip could not install {missing} for their tests:\n{pip.stderr[-2000:]}")
    return missing


def broker_conf(tests: Path, work: Path) -> tuple[Path, list[str]]:
    """pulsarlike's broker.conf from their standalone-ssl.conf; returns it and the keys dropped."""
    from broker_core import config

    conf_dir = tests / "test-conf"
    secret = work / "secret.key"
    subprocess.run([sys.executable, "-m", "broker_core.cli", "tokens", "create-secret-key", "--output",
                    str(secret)], check=True, cwd=REPO)
    lines, dropped = [], []
    for raw in (conf_dir / "standalone-ssl.conf").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        if key not in config._DEFAULTS:
            dropped.append(key)
            continue
        if value.startswith("test-conf/"):
            value = str(tests / value)
        if key == "tokenSecretKey":
            value = f"file://{secret}"
        if key == "bindAddress":
            continue  # --host says where to bind
        lines.append(f"{key}={value}")
    lines += [f"basicAuthConf=file://{conf_dir / '.htpasswd'}", "basicAuthMaxFailuresPerAddress=0"]
    conf = work / "broker.conf"
    conf.write_text("\n".join(lines) + "\n")
    return conf, dropped


def token(secret_key: Path, subject: str) -> str:
    return subprocess.run([sys.executable, "-m", "broker_core.cli", "tokens", "create", "--secret-key",
                           f"file://{secret_key}", "--subject", subject], check=True, capture_output=True,
                          text=True, cwd=REPO).stdout.strip()


def start_broker(conf: Path, work: Path, host: str) -> subprocess.Popen:
    log = open(work / "broker.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "broker_core.cli", "broker", "--data-dir", str(work / "data"),
                             "--port", str(PORTS["brokerServicePort"]), "--host", host, "--config", str(conf),
                             "--log-level", "WARNING"],
                            stdout=subprocess.PIPE, stderr=log, text=True, cwd=REPO)
    line = proc.stdout.readline()
    if not line.startswith("pulsarlike broker listening on "):
        proc.kill()
        raise SystemExit(f"the broker did not start: {line!r}; see {work / 'broker.log'}")
    return proc


def put(path: str, body: dict, auth: str, method: str = "PUT") -> int:
    """Their script's ``curl -X PUT`` (which goes on whatever the answer); returns the status."""
    request = urllib.request.Request(WEB + path, json.dumps(body).encode(), method=method,
                                     headers={"Content-Type": "application/json", "Authorization": auth})
    try:
        urllib.request.urlopen(request, timeout=30).close()
        return 204
    except urllib.error.HTTPError as err:
        if err.code != 409:
            print(f"  {method} {path}: {err.code} {err.read()[:120].decode(errors='replace')}...")
        return err.code


def grant(namespace: str, role: str, auth: str) -> None:
    request = urllib.request.Request(f"{WEB}namespaces/{namespace}/permissions/{role}",
                                     json.dumps(["produce", "consume"]).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "Authorization": auth})
    urllib.request.urlopen(request, timeout=30).close()


def configure(secret_key: Path, tests: Path) -> None:
    """Their start-test-service-inside-container.sh's REST calls, as superUser."""
    auth = "Bearer " + token(secret_key, "superUser")
    put("clusters/standalone", {"serviceUrl": "http://localhost:8080/", "serviceUrlTls": "https://localhost:8443/",
                                "brokerServiceUrl": "pulsar://localhost:6650/",
                                "brokerServiceUrlTls": "pulsar+ssl://localhost:6651/"}, auth)
    public = {"adminRoles": ["anonymous"], "allowedClusters": ["standalone"]}
    if put("tenants/public", public, auth) == 409:
        # Pulsar standalone creates tenant public (admins: superUserRoles) only after its web port answers, so
        # their script's PUT, sent as soon as /metrics answers, creates it first and makes anonymous its admin
        # (the anonymous REST calls of their tests need that); ours exists before the port answers: update it
        put("tenants/public", public, auth, method="POST")
    put("tenants/private", {"adminRoles": [], "allowedClusters": ["standalone"]}, auth)
    for namespace, role in (("public/default", "anonymous"), ("public/default-2", "anonymous"),
                            ("private/auth", "token-principal")):
        put(f"namespaces/{namespace}", {"auth_policies": {"namespace_auth": {role: ["produce", "consume"]}},
                                        "replication_clusters": ["standalone"]}, auth)
        grant(namespace, role, auth)  # whether or not the PUT's body carried the policies
    (tests / ".test-token.txt").write_text(token(secret_key, "token-principal") + "\n")


def problem(case: ET.Element) -> ET.Element | None:
    return case.find("failure") if case.find("failure") is not None else case.find("error")


def last_line(case: ET.Element) -> str:
    """The exception's last line (pytest's message, else the last line of the traceback that names an error)."""
    found = problem(case)
    if found is None:
        return ""
    lines = [line for line in (found.text or "").splitlines() if line.startswith("E ")]
    text = lines[-1][1:].strip() if lines else (found.get("message") or "").strip().splitlines()[-1:] or [""]
    return (text if isinstance(text, str) else text[0])[:200]


def run_file(tests: Path, name: str, env: dict[str, str], timeout: float, results: Path) -> dict:
    report = results / (name + ".xml")
    started = time.monotonic()
    try:
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--timeout={timeout}",
                        f"--junitxml={report}", "-o", "junit_family=xunit2", name],
                       cwd=tests, env=env, stdout=open(results / (name + ".log"), "w"), stderr=subprocess.STDOUT,
                       timeout=timeout * 200)
    except subprocess.TimeoutExpired:
        pass
    seconds = time.monotonic() - started
    outcome = {"file": name, "passed": 0, "failed": 0, "skipped": 0, "seconds": round(seconds, 1), "failures": []}
    cases = list(ET.parse(report).getroot().iter("testcase")) if report.exists() else []
    if not cases or (len(cases) == 1 and not cases[0].get("classname")):
        # not collected (an import failed) or killed: every test of the file counts as failed
        why = "no report: the run was killed" if not cases else last_line(cases[0])
        count = sum(1 for line in (tests / name).read_text().splitlines() if line.strip().startswith(("def test", "async def test")))
        outcome["failed"] = count
        outcome["failures"].append((f"{name} (all {count} tests)", why))
        return outcome
    for case in cases:
        if problem(case) is not None:
            outcome["failed"] += 1
            outcome["failures"].append((case.get("name") or "", last_line(case)))
        elif case.find("skipped") is not None:
            outcome["skipped"] += 1
        else:
            outcome["passed"] += 1
    return outcome


def prepare(args: argparse.Namespace) -> Path:
    """The temporary folder: their tests, the aliases, their dependencies (before a network namespace, which has
    no network)."""
    work = Path(tempfile.mkdtemp(prefix="upstream-client-tests-"))
    export_tests(args.source, work)
    if args.client == "pulsarlike":
        write_aliases(work / "aliases")
    installed = install_their_dependencies(work / "deps")
    if installed:
        print(f"installed for their tests into {work / 'deps'}: {', '.join(installed)}")
    return work


def run_inside(args: argparse.Namespace, work: Path) -> int:
    if args.netns:
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    tests, aliases, deps = work / "tests", work / "aliases", work / "deps"
    conf, dropped = broker_conf(tests, work)
    print(f"broker configured from their standalone-ssl.conf; keys pulsarlike has not, dropped: {len(dropped)}")
    broker = start_broker(conf, work, "0.0.0.0" if args.netns else "127.0.0.1")
    try:
        configure(work / "secret.key", tests)
        path = [str(aliases)] if args.client == "pulsarlike" else []
        path += [str(REPO), str(deps)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(path + [os.environ.get("PYTHONPATH", "")]).rstrip(":")}
        results = work / "results"
        results.mkdir()
        outcomes = []
        print(f"client: {args.client}; per test file (passed / failed / skipped, seconds):")
        for name in args.files:
            outcome = run_file(tests, name, env, args.timeout, results)
            outcomes.append(outcome)
            print(f"  {name:32} {outcome['passed']:4} {outcome['failed']:4} {outcome['skipped']:4} "
                  f"{outcome['seconds']:7.1f}", flush=True)
            if args.failures:
                for test, why in outcome["failures"]:
                    print(f"      FAILED {test}: {why}")
        passed = sum(o["passed"] for o in outcomes)
        failed = sum(o["failed"] for o in outcomes)
        skipped = sum(o["skipped"] for o in outcomes)
        print(f"total: {passed} of {passed + failed + skipped} passed ({failed} failed, {skipped} skipped); "
              f"logs in {results}")
        print(f"upstream: {passed} passed, {failed} failed")
        if args.json:
            Path(args.json).write_text(json.dumps({"client": args.client, "files": outcomes}, indent=1))
    finally:
        broker.terminate()
        broker.wait(30)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE,
                        help="a checkout or mirror of apache/pulsar-client-python (default: %(default)s)")
    parser.add_argument("--client", choices=["pulsarlike", "official"], default="pulsarlike")
    parser.add_argument("--files", default=",".join(FILES), help="comma-separated test files of their tests/")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per test (default: %(default)s)")
    parser.add_argument("--failures", action="store_true", help="list each failed test")
    parser.add_argument("--json", help="write the outcome per file to this file")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, their tests)")
    parser.add_argument("--no-netns", dest="netns", action="store_false",
                        help="use the machine's ports 6650, 6651, 8080 and 8443 (they must be free)")
    parser.add_argument("--inside", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.files = [f for f in args.files.split(",") if f]
    if not (args.source / ".git").exists() and not (args.source / "HEAD").exists():
        parser.error(f"--source {args.source}: no git checkout or mirror there")
    if args.inside:
        return run_inside(args, args.inside)
    if args.netns and shutil.which("unshare") is None:
        parser.error("unshare not found: run with --no-netns on a machine whose ports 6650/6651/8080/8443 are free")
    work = prepare(args)
    try:
        if not args.netns:
            return run_inside(args, work)
        argv = list(argv if argv is not None else sys.argv[1:])
        return subprocess.run(["unshare", "-n", sys.executable, __file__, "--inside", str(work), *argv]).returncode
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())
