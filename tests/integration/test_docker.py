"""The broker image's command run here as a plain process: its ENTRYPOINT + CMD from docker/broker.Dockerfile
(container paths mapped to the files the image copies, a free port), and its HEALTHCHECK command."""
from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

from tests.unit.test_docker import REPO, copy_sources, instructions

LISTENING = "pulsarlike broker listening on "
METRICS = "pulsarlike metrics on "


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def localize(argv: list[str], paths: dict[str, str], port: int) -> list[str]:
    """The container's argv for this machine: ``pulsarlike`` is the venv's console script, container paths
    (whole arguments) become local ones, and port 6650 a free port."""
    script = Path(sys.executable).parent / "pulsarlike"
    head = [str(script)] if script.exists() else [sys.executable, "-m", "broker_core.cli"]
    out = list(head) if argv[0] == "pulsarlike" else [argv[0]]
    for arg in argv[1:]:
        out.append(paths.get(arg, arg.replace("6650", str(port))))
    return out


def test_the_broker_images_command_serves_and_its_healthcheck_reports_serving(tmp_path):
    dockerfile = REPO / "docker" / "broker.Dockerfile"
    steps = dict(instructions(dockerfile))
    command = json.loads(steps["ENTRYPOINT"]) + json.loads(steps["CMD"])
    health = steps["HEALTHCHECK"]
    health_cmd = json.loads(health[health.index("CMD") + 3:].strip())

    port = free_port()
    paths = {dest: str(REPO / src) for src, dest in copy_sources(dockerfile)  # files placed at container paths
             if not src.endswith("/") and dest.startswith("/")}
    paths["/data"] = str(tmp_path / "data")
    # the compose file's keys service makes /keys; here the same generator fills a folder the conf points to
    keys = tmp_path / "keys"
    keys.mkdir()
    subprocess.run([sys.executable, str(REPO / "docker" / "gen_keys.py"), str(keys)], check=True,
                   capture_output=True)
    conf = tmp_path / "broker.conf"
    conf.write_text((REPO / "docker" / "broker.conf").read_text().replace("/keys/", f"{keys}/"))
    paths["/etc/pulsarlike/broker.conf"] = str(conf)
    # the example broker.conf asks for ports 8080 and 6651: take free ones here (--set wins over --config)
    argv = localize(command, paths, port) + ["--set", "webServicePort=0", "--set", "brokerServicePortTls=0"]
    assert argv[-6:-4] == ["--config", str(conf)]

    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        assert first == f"{LISTENING}0.0.0.0:{port}\n", proc.stderr.read() if not first else first
        assert proc.stdout.readline().startswith("pulsarlike broker TLS on pulsar+ssl://0.0.0.0:")
        assert proc.stdout.readline().startswith(METRICS + "http://0.0.0.0:")

        check = subprocess.run(localize(health_cmd, {}, port), capture_output=True, text=True,
                               timeout=60)
        assert (check.returncode, check.stdout.strip()) == (0, "SERVING"), check.stderr

        proc.send_signal(signal.SIGTERM)  # docker stop
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert (tmp_path / "data" / "topics").is_dir()
