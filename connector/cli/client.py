"""``pulsarlike produce`` and ``pulsarlike consume`` (like ``pulsar-client``), and ``pulsarlike health``.

    pulsarlike produce TOPIC -m MSG [-m MSG ...] [-f FILE ...] [-n N] [-r RATE] [-k KEY] [-p k=v ...]
                             [-s SEPARATOR] [-db] [-c] [--transport auto|grpc|binary] [--url URL]
    pulsarlike consume TOPIC -s SUB [-t Exclusive|Shared|Failover|Key_Shared] [-n N] [-p Earliest|Latest]
                             [-m Durable|NonDurable] [-q SIZE] [-r RATE] [--regex] [--hex] [--hide-content]
                             [--consumer-name NAME] [--idle-timeout SECONDS] [--transport auto|grpc|binary]
                             [--url URL]
    pulsarlike health [--url URL] [--service NAME] [--timeout SECONDS]

``--url`` (or ``--service-url``) defaults to ``$PULSARLIKE_SERVICE_URL``, else ``pulsar://127.0.0.1:6650``.
Every command takes ``--auth-plugin``, ``--auth-params``, ``--tls-trust-cert-path``, ``--tls-allow-insecure``
and ``--tls-enable-hostname-verification`` (:mod:`connector.cli.security_flags`) for a broker with
authentication or TLS (``pulsar+ssl://``).

produce: every ``-m`` value is split on the separator (``,`` by default; ``-s ''`` keeps it whole), every
``-f`` file is one message, and the whole list is sent ``-n`` times. Prints
``N messages successfully produced``.

consume: prints each message as ``pulsar-client`` does, a ``----- got message -----`` line and then
``publishTime:[..], eventTime:[..], key:[..], properties:[k=v, ..], content:..`` (``--hex``: a hex dump),
acknowledges it, and stops after ``-n`` messages (default 1; 0: until SIGINT/SIGTERM, or until
``--idle-timeout`` seconds pass with no message). Prints ``N messages successfully consumed``.

Any Pulsar broker: produce and consume speak to pulsarlike or to any other Pulsar broker (Apache Pulsar,
pulsar-lite): ``--transport`` is the client's (``auto``, the default: one binary CONNECT tells them apart,
and another broker is spoken to over Pulsar's binary protocol; ``grpc``: pulsarlike's gRPC service;
``binary``: Pulsar's binary protocol). ``--regex`` needs a broker that lists a namespace's topics.

health: asks the broker's standard gRPC health service (pulsarlike's; for an Apache Pulsar broker use
``pulsarlike admin --admin-url http://HOST:8080 brokers healthcheck``); prints the status and exits 0 when
``SERVING`` (the docker image's HEALTHCHECK).

Exit codes: 0 done; 1 the broker refused or could not be reached (``Code: message`` on stderr); 2 bad usage
(an unknown flag names the closest one).
"""
from __future__ import annotations

import argparse
import difflib
import os
import re
import signal
import sys
import time
from typing import Any, Callable, Sequence

from connector.cli import security_flags
from connector.cli.args import SuggestingParser

DEFAULT_URL = "pulsar://127.0.0.1:6650"
URL_ENV = "PULSARLIKE_SERVICE_URL"
MESSAGE_BOUNDARY = "----- got message -----"
SUBSCRIPTION_TYPES = {"exclusive": "Exclusive", "shared": "Shared", "failover": "Failover",
                      "key_shared": "KeyShared", "keyshared": "KeyShared"}
POSITIONS = {"earliest": "Earliest", "latest": "Latest"}
MODES = {"durable": "Durable", "nondurable": "NonDurable"}
COMMANDS = ("produce", "consume", "health")


_Parser = SuggestingParser


def _choice(table: dict[str, str], what: str) -> Callable[[str], str]:
    def convert(text: str) -> str:
        try:
            return table[text.lower()]
        except KeyError:
            names = ", ".join(dict.fromkeys(v if v != "KeyShared" else "Key_Shared" for v in table.values()))
            raise argparse.ArgumentTypeError(f"invalid {what} {text!r} (choose from {names})") from None
    return convert


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _transport_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--transport", choices=("auto", "grpc", "binary"), default="auto",
                        help="the client's transport: auto (default: pulsarlike's faster one, Pulsar's binary "
                             "protocol for any other broker), grpc (pulsarlike only) or binary")


def _url_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", "--service-url", dest="url", default=os.environ.get(URL_ENV) or DEFAULT_URL,
                        help=f"broker service URL (default: ${URL_ENV} or {DEFAULT_URL})")


def _parser(command: str) -> argparse.ArgumentParser:
    parser = _Parser(prog=f"pulsarlike {command}", allow_abbrev=False)
    if command == "produce":
        parser.description = "Produce messages to a topic (like pulsar-client produce)."
        parser.add_argument("topic")
        parser.add_argument("-m", "--messages", action="append", default=[],
                            help="message(s) to send, split on the separator (repeatable)")
        parser.add_argument("-f", "--files", action="append", default=[], help="a file sent as one message "
                            "(repeatable)")
        parser.add_argument("-n", "--num-produce", type=_count, default=1, help="times to send the messages")
        parser.add_argument("-r", "--rate", type=float, default=0.0, help="messages per second (0: no limit)")
        parser.add_argument("-k", "--key", default=None, help="partitioning key of every message")
        parser.add_argument("-p", "--properties", action="append", default=[],
                            help="message properties, key=value (comma separated, repeatable)")
        parser.add_argument("-s", "--separator", default=",", help="splits -m values (default ','; '' keeps "
                            "them whole)")
        parser.add_argument("-db", "--disable-batching", action="store_true", help="send unbatched")
        parser.add_argument("-c", "--chunking", action="store_true", help="split big messages into chunks "
                            "(turns batching off)")
        _transport_option(parser)
    elif command == "consume":
        parser.description = "Consume messages from a topic (like pulsar-client consume)."
        parser.add_argument("topic")
        parser.add_argument("-s", "--subscription-name", required=True)
        parser.add_argument("-t", "--subscription-type", type=_choice(SUBSCRIPTION_TYPES, "subscription type"),
                            default="Exclusive", help="Exclusive (default), Shared, Failover or Key_Shared")
        parser.add_argument("-n", "--num-messages", type=_count, default=1,
                            help="messages to consume (default 1; 0: forever)")
        parser.add_argument("-p", "--subscription-position", type=_choice(POSITIONS, "position"),
                            default="Latest", help="where a new subscription starts: Latest (default) or "
                            "Earliest")
        parser.add_argument("-m", "--subscription-mode", type=_choice(MODES, "subscription mode"),
                            default="Durable", help="Durable (default) or NonDurable")
        parser.add_argument("-q", "--queue-size", type=_count, default=1000, help="receiver queue size")
        parser.add_argument("-r", "--rate", type=float, default=0.0, help="messages per second (0: no limit)")
        parser.add_argument("--regex", action="store_true", help="TOPIC is a regular expression over a "
                            "namespace's topics")
        parser.add_argument("--hex", action="store_true", help="print the content as a hex dump")
        parser.add_argument("--hide-content", action="store_true", help="print no message content")
        parser.add_argument("--consumer-name", default=None)
        parser.add_argument("--idle-timeout", type=float, default=None,
                            help="pulsarlike extension: stop after this many seconds without a message")
        _transport_option(parser)
    else:
        parser.description = "Check a broker with the standard gRPC health service."
        parser.add_argument("--service", default="", help="service name (default '': the whole broker)")
        parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for an answer")
    _url_option(parser)
    security_flags.add(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        given = argv[0] if argv else ""
        close = difflib.get_close_matches(given, COMMANDS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        print(f"usage: pulsarlike {{{','.join(COMMANDS)}}} ...\npulsarlike: unknown command {given!r}{hint}",
              file=sys.stderr)
        return 2
    command = argv[0]
    args = _parser(command).parse_args(argv[1:])
    from broker_core.errors import PulsarLikeError

    try:
        if command == "health":
            return _health(args)
        return _produce(args) if command == "produce" else _consume(args)
    except ValueError as exc:  # a malformed service URL, a bad option value caught by the client
        print(f"pulsarlike {command}: error: {exc}", file=sys.stderr)
        return 2
    except PulsarLikeError as exc:
        print(f"pulsarlike {command}: {exc.code}: {exc.message}", file=sys.stderr)
        return 1


class _UsageError(ValueError):
    pass


def _payloads(args: argparse.Namespace) -> list[bytes]:
    payloads: list[bytes] = []
    for value in args.messages:
        parts = value.split(args.separator) if args.separator else [value]
        payloads.extend(p.encode() for p in parts)
    for path in args.files:
        try:
            with open(path, "rb") as f:
                payloads.append(f.read())
        except OSError as exc:
            raise _UsageError(f"cannot read {path}: {exc.strerror}") from None
    if not payloads:
        raise _UsageError("give the message content with -m/--messages or -f/--files")
    return payloads


def _properties(items: list[str]) -> dict[str, str]:
    properties: dict[str, str] = {}
    for item in items:
        for pair in item.split(","):
            key, sep, value = pair.partition("=")
            if not sep or not key.strip():
                raise _UsageError(f"-p/--properties expects key=value, got {pair!r}")
            properties[key.strip()] = value
    return properties


class _Pace:
    """At most ``rate`` calls of ``wait()`` per second (0: no limit)."""

    def __init__(self, rate: float) -> None:
        self._interval = 1.0 / rate if rate > 0 else 0.0
        self._next = time.monotonic()

    def wait(self) -> None:
        if self._interval:
            delay = self._next - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            self._next = max(self._next, time.monotonic() - self._interval) + self._interval


def _produce(args: argparse.Namespace) -> int:
    from connector import Client, Result

    payloads = _payloads(args)
    properties = _properties(args.properties)
    if args.num_produce < 1:
        raise _UsageError("-n/--num-produce must be >= 1")
    ok: list[int] = [0]
    failures: list[Any] = []

    def sent(result: Any, _msg_id: Any) -> None:
        if result == Result.Ok:
            ok[0] += 1
        else:
            failures.append(result)

    client = Client(args.url, transport=args.transport, **security_flags.client_kwargs(args, args.url))
    try:
        producer = client.create_producer(args.topic, block_if_queue_full=True,
                                          batching_enabled=not (args.disable_batching or args.chunking),
                                          chunking_enabled=args.chunking)
        pace = _Pace(args.rate)
        for _ in range(args.num_produce):
            for payload in payloads:
                pace.wait()
                producer.send_async(payload, sent, partition_key=args.key, properties=properties or None)
        producer.flush()
        producer.close()
    finally:
        client.close()
    print(f"{ok[0]} messages successfully produced", flush=True)
    if failures:
        from broker_core.errors import PulsarLikeError

        first = failures[0]
        code, message = ((first.code, first.message) if isinstance(first, PulsarLikeError)
                         else (getattr(first, "name", str(first)), "a send failed"))
        print(f"pulsarlike produce: {code}: {message} ({len(failures)} messages not produced)",
              file=sys.stderr)
        return 1
    return 0


def _consume(args: argparse.Namespace) -> int:
    from broker_core.errors import Timeout
    from connector import Client, ConsumerType, InitialPosition, SubscriptionMode
    from connector.client.interrupts import Interrupted

    topic: Any = re.compile(args.topic) if args.regex else args.topic
    client = Client(args.url, transport=args.transport, **security_flags.client_kwargs(args, args.url))
    count = 0
    stopping: list[int] = []  # SIGTERM ends the loop between messages: one printed is one counted
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(signum))
    try:
        consumer = client.subscribe(
            topic, args.subscription_name, consumer_type=ConsumerType[args.subscription_type],
            initial_position=InitialPosition[args.subscription_position],
            subscription_mode=SubscriptionMode[args.subscription_mode],
            receiver_queue_size=args.queue_size, consumer_name=args.consumer_name)
        pace = _Pace(args.rate)
        idle_since = time.monotonic()
        while (args.num_messages == 0 or count < args.num_messages) and not stopping:
            try:
                msg = consumer.receive(timeout_millis=500)
            except Timeout:
                if args.idle_timeout is not None and time.monotonic() - idle_since >= args.idle_timeout:
                    break
                continue
            pace.wait()
            sys.stdout.write(format_message(msg, hex_dump=args.hex, hide_content=args.hide_content))
            sys.stdout.flush()
            consumer.acknowledge(msg)
            count += 1
            idle_since = time.monotonic()
        consumer.close()
    except (KeyboardInterrupt, Interrupted):  # Ctrl-C: the way to end `-n 0` (a blocking receive turns the
        pass                                   # signal into pulsar-client's Interrupted)
    finally:
        signal.signal(signal.SIGTERM, previous)
        client.close()
    print(f"{count} messages successfully consumed", flush=True)
    return 0



def format_message(msg: Any, hex_dump: bool = False, hide_content: bool = False) -> str:
    """One message as ``pulsar-client consume`` prints it (with a trailing newline)."""
    parts = [f"publishTime:[{msg.publish_timestamp()}]", f"eventTime:[{msg.event_timestamp()}]",
             f"key:[{msg.partition_key() or 'null'}]"]
    properties = msg.properties()
    if properties:
        parts.append("properties:[" + ", ".join(f"{k}={v}" for k, v in properties.items()) + "]")
    data = msg.data()
    if hide_content:
        content = ""
    elif hex_dump:
        content = "\n" + hexdump(data)
    else:
        content = data.decode("utf-8", errors="replace")
    return f"{MESSAGE_BOUNDARY}\n{', '.join(parts)}, content:{content}\n"


def hexdump(data: bytes) -> str:
    """``hexdump -C`` style: offset, 16 bytes in hex, the printable ones as text."""
    lines = []
    for offset in range(0, len(data), 16):
        chunk = data[offset:offset + 16]
        hex_part = " ".join(f"{b:02x}" for b in chunk[:8]) + "  " + " ".join(f"{b:02x}" for b in chunk[8:])
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{offset:08x}  {hex_part:<48}  |{text}|")
    return "\n".join(lines) if lines else "(empty)"


def _health(args: argparse.Namespace) -> int:
    from broker_core.errors import ConnectError

    from connector.client.broker_kind import health_status
    from connector.client.security import Security

    kwargs = security_flags.client_kwargs(args, args.url)
    kwargs.pop("authentication")  # the health service answers everyone, as Pulsar's /status.html
    try:
        status = health_status(args.url, args.service, args.timeout, Security.of(args.url, **kwargs))
    except ConnectError as exc:
        print(f"pulsarlike health: {exc.message}", file=sys.stderr)
        return 1
    print(status, flush=True)
    return 0 if status == "SERVING" else 1


if __name__ == "__main__":
    sys.exit(main())
