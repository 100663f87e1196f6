"""The ``pulsarlike`` command.

    pulsarlike broker --data-dir DIR [--port PORT] [--host HOST] [--config FILE] [--set key=value ...]

prints ``pulsarlike broker listening on HOST:PORT`` as its first line (the real port with ``--port 0``),
then ``pulsarlike broker TLS on pulsar+ssl://HOST:PORT`` with a TLS port (``brokerServicePortTls``), then
``pulsarlike metrics on http://HOST:PORT/metrics`` (unless ``metricsEnabled=false``; with ``--port 0``
the metrics port is also any free one unless ``webServicePort`` is set), serves until SIGTERM or SIGINT,
then stops accepting, flushes, syncs and exits 0.

The other commands are tools (most of them client-side), loaded by module name only when called (the broker
never imports client code): ``pulsarlike admin ...`` (like ``pulsar-admin``), ``pulsarlike produce|consume
...`` (like ``pulsar-client``), ``pulsarlike health`` (the gRPC health check), ``pulsarlike tokens ...`` (like
``pulsar tokens``), ``pulsarlike repair --data-dir DIR [--yes]`` (check and repair a stopped broker's
metadata) and ``pulsarlike job NAME ...`` (the Spark jobs). Each module has ``main(argv) -> int``.
``pulsarlike --help`` lists them all from :data:`COMMANDS` (no tool module is imported for it).

``pulsarlike --version`` prints the installed package's version. Output cut short by its reader (``pulsarlike
admin topics list public/default | head -1``) ends the command quietly with status 141 (128 + SIGPIPE, as a
shell reports a program killed by it), not with a traceback.

pulsar-client's global form works too: ``pulsarlike --url URL produce ...`` (``--url``/``--service-url``
before the command) is the command with ``--url URL`` after it.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import signal
import sys
from typing import Sequence

from broker_core.config import BrokerConfig, parse_assignments, parse_conf_file
from broker_core.errors import PulsarLikeError


COMMANDS = {
    "broker": "run a broker in the foreground",
    "admin": "manage a broker like pulsar-admin: tenants, namespaces, topics, subscriptions, policies",
    "produce": "send messages to a topic (like pulsar-client produce)",
    "consume": "receive and acknowledge messages of a topic (like pulsar-client consume)",
    "health": "ask a broker's gRPC health service (exit 0 when SERVING)",
    "tokens": "create and check token authentication keys and tokens (like pulsar tokens)",
    "job": "run a Spark batch job: backfill, export, redrive, stream-demo",
    "repair": "check a stopped broker's metadata and repair what a start refuses (changes nothing without --yes)",
}
"""Every command with its one-line help, as ``pulsarlike --help`` lists them."""
URL_FLAGS = ("--url", "--service-url")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pulsarlike", description="pulsarlike: an embedded Pulsar-compatible broker and its tools",
        epilog="`pulsarlike COMMAND --help` shows a command's options. The global form of pulsar-client, "
               "`pulsarlike --url pulsar://HOST:PORT produce ...`, is accepted too.")
    parser.add_argument("--url", "--service-url", dest="url", metavar="URL",
                        help="broker service URL for the client commands (pulsar-client's global form)")
    parser.add_argument("--version", "-V", action=_Version, help="print the version of pulsarlike and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    broker = commands.add_parser("broker", help=COMMANDS["broker"])
    for name, what in COMMANDS.items():
        if name != "broker":  # served by their own modules (see TOOLS); listed here for --help only
            commands.add_parser(name, help=what, add_help=False)
    broker.add_argument("--data-dir", required=True, help="folder for topic logs, cursors and metadata")
    broker.add_argument("--port", type=int, default=None, help="gRPC port (0: any free port); default 6650")
    broker.add_argument("--host", default=None, help="address to bind; default 127.0.0.1")
    broker.add_argument("--config", default=None, help="broker.conf-style file of key=value lines")
    broker.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a configuration value (repeatable); wins over --config")
    broker.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser


class _Version(argparse.Action):
    """``--version``: the version is looked up when asked for, not at every start (``importlib.metadata``
    and the search of the installed distributions cost a broker's start ~50 ms)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_args: object) -> None:
        parser.exit(message=f"pulsarlike {version()}\n")


def _config(args: argparse.Namespace) -> BrokerConfig:
    values: dict[str, str | int] = {}
    if args.config:
        values.update(parse_conf_file(args.config))
    values.update(parse_assignments(args.set))
    if args.port is not None:
        values["brokerServicePort"] = args.port
    if args.host is not None:
        values["bindAddress"] = args.host
    if str(values.get("brokerServicePort")) == "0":  # any free port: the metrics port too, unless set
        values.setdefault("webServicePort", 0)
    return BrokerConfig.from_mapping(values)


async def _serve(args: argparse.Namespace, config: BrokerConfig) -> None:
    from broker_core.server import BrokerService

    service = BrokerService(args.data_dir, config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        port = await service.start()
        print(f"pulsarlike broker listening on {config.bindAddress}:{port}", flush=True)
        host = f"[{config.bindAddress}]" if ":" in config.bindAddress else config.bindAddress
        if service.tls_port:
            print(f"pulsarlike broker TLS on pulsar+ssl://{host}:{service.tls_port}", flush=True)
        if service.metrics_port:
            print(f"pulsarlike metrics on http://{host}:{service.metrics_port}/metrics", flush=True)
        if service.metrics_tls_port:
            print(f"pulsarlike metrics on https://{host}:{service.metrics_tls_port}/metrics", flush=True)
        # what the start made (modules, classes: ~40k objects) lives as long as the process: out of the
        # collector's sight, a full collection no longer walks it (~10 ms each, a latency spike)
        gc.freeze()
        gc.enable()
        await stop.wait()
        logging.getLogger("pulsarlike").info("event=shutdown_requested")
    finally:
        await service.stop(grace=1.0)


TOOLS = {"admin": "connector.cli.admin", "produce": "connector.cli.client", "consume": "connector.cli.client",
         "health": "connector.cli.client", "job": "jobs.cli",
         "tokens": "broker_core.security.tokens_cli", "repair": "broker_core.repair_cli"}
"""Commands served by other modules: ``main(argv)`` of the module, with the command name first."""


def _global_url(argv: list[str]) -> list[str]:
    """``--url URL COMMAND ARGS`` (or ``--url=URL``) as ``COMMAND ARGS --url URL``; other argv unchanged."""
    if not argv or argv[0].split("=", 1)[0] not in URL_FLAGS:
        return argv
    flag, _, value = argv[0].partition("=")
    rest = argv[1:]
    if not value:
        if not rest:
            return argv  # the parser says what is missing
        value, rest = rest[0], rest[1:]
    if rest and rest[0] in TOOLS:
        return [rest[0], *rest[1:], flag, value]
    return argv


BROKEN_PIPE_STATUS = 141
"""The exit status when stdout's reader went away (128 + SIGPIPE, what a shell shows for ``cat`` killed by it)."""


def version() -> str:
    """The installed ``pulsarlike`` distribution's version (from its metadata: no client module is loaded)."""
    from importlib import metadata

    try:
        return metadata.version("pulsarlike")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv in (["--version"], ["-V"]):
        print(f"pulsarlike {version()}")
        return 0
    try:
        try:
            return _main(argv)
        finally:  # what is still buffered goes out now, while a closed pipe can be told from other errors
            sys.stdout.flush()
    except BrokenPipeError:
        # the reader (``| head -1``) has what it wanted; what is still buffered for stdout would raise again
        # when the interpreter flushes it at exit, so stdout now goes nowhere
        import os

        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE_STATUS


def _main(argv: list[str]) -> int:
    argv = _global_url(argv)
    if argv and argv[0] in TOOLS:
        import importlib

        return int(importlib.import_module(TOOLS[argv[0]]).main(argv) or 0)
    if argv and not argv[0].startswith("-") and argv[0] != "broker":
        import difflib

        close = difflib.get_close_matches(argv[0], ["broker", *TOOLS], n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        print(f"pulsarlike: unknown command {argv[0]!r}{hint} (commands: broker, {', '.join(TOOLS)})",
              file=sys.stderr)
        return 2
    args = _parser().parse_args(argv)
    if args.url is not None:
        print(f"pulsarlike: --url applies to the client commands ({', '.join(TOOLS)}), not to "
              f"{args.command}", file=sys.stderr)
        return 2
    from broker_core.logs import configure

    configure(args.log_level)
    try:
        if args.command == "broker":
            gc.disable()  # until served (see _serve): collecting while the start imports is ~10% of it
            try:
                config = _config(args)
                from broker_core.event_loops import loop_factory, run

                loop_factory(config)  # uvloop asked for and missing: refused before anything starts
                run(_serve(args, config), config)
            finally:
                gc.enable()
    except PulsarLikeError as exc:
        print(f"pulsarlike: {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
