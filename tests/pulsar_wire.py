"""A raw Pulsar binary protocol client for tests: builds frames byte by byte and reads the broker's answers,
so tests can send what no real client sends (bad sizes, bad CRCs, missing fields)."""
from __future__ import annotations

import socket
import struct
import time

from broker_core.protocol import pulsar_api_pb2 as wire
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.codec.entries import encode_entry

T = cmd.BaseCommand
HEADER = struct.Struct(">II")


def frame(command: cmd.BaseCommand, payload: bytes = b"") -> bytes:
    body = command.SerializeToString()
    return HEADER.pack(4 + len(body) + len(payload), len(body)) + body + payload


def raw_frame(body: bytes, payload: bytes = b"") -> bytes:
    """A frame around command bytes as given (they may not parse, or lack required fields)."""
    return HEADER.pack(4 + len(body) + len(payload), len(body)) + body + payload


def entry(payload: bytes = b"hello", *, producer_name: str = "raw", sequence_id: int = 0, **fields) -> bytes:
    metadata = wire.MessageMetadata(producer_name=producer_name, sequence_id=sequence_id,
                                    publish_time=int(time.time() * 1000), **fields)
    return encode_entry(metadata, payload)


class RawPulsar:
    """One connection; ``call`` sends a frame and returns the next command the broker sends."""

    def __init__(self, address: str, timeout: float = 5.0, source: str | None = None) -> None:
        """``source``: the local address to connect from (``127.0.0.2``: another client host on loopback)."""
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout,
                                             source_address=(source, 0) if source else None)
        self._buf = b""

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "RawPulsar":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _read(self, n: int) -> bytes:
        while len(self._buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            self._buf += chunk
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def read(self) -> tuple[cmd.BaseCommand, bytes]:
        """The next (command, payload) the broker sends."""
        total, size = HEADER.unpack(self._read(8))
        body = self._read(size)
        payload = self._read(total - 4 - size)
        command = cmd.BaseCommand()
        command.ParseFromString(body)
        return command, payload

    def expect(self, kind: int) -> cmd.BaseCommand:
        """The next command other than PING (answered), which must be of type ``kind``."""
        while True:
            command, _ = self.read()
            if command.type == T.PING:
                self.send(frame(T(type=T.PONG, pong=cmd.CommandPong())))
                continue
            assert command.type == kind, f"expected {T.Type.Name(kind)}, got {command}"
            return command

    def closed_by_broker(self, timeout: float = 5.0) -> bool:
        """True once the broker closes the connection (what it sends before is skipped)."""
        self.sock.settimeout(timeout)
        try:
            while self.sock.recv(1 << 16):
                pass
            return True
        except (ConnectionError, OSError):
            return True

    def connect(self, **fields) -> cmd.BaseCommand:
        self.send(frame(T(type=T.CONNECT, connect=cmd.CommandConnect(
            client_version="raw-test", protocol_version=fields.pop("protocol_version", 20), **fields))))
        return self.expect(T.CONNECTED)

    def producer(self, topic: str, producer_id: int = 1, request_id: int = 1, **fields) -> cmd.BaseCommand:
        self.send(frame(T(type=T.PRODUCER, producer=cmd.CommandProducer(
            topic=topic, producer_id=producer_id, request_id=request_id, **fields))))
        return self.read()[0]

    def subscribe(self, topic: str, subscription: str, consumer_id: int = 1, request_id: int = 1,
                  **fields) -> cmd.BaseCommand:
        self.send(frame(T(type=T.SUBSCRIBE, subscribe=cmd.CommandSubscribe(
            topic=topic, subscription=subscription, subType=fields.pop("subType", cmd.CommandSubscribe.Exclusive),
            consumer_id=consumer_id, request_id=request_id, **fields))))
        return self.read()[0]

    def send_entry(self, data: bytes, producer_id: int = 1, sequence_id: int = 0, **fields) -> cmd.BaseCommand:
        self.send(frame(T(type=T.SEND, send=cmd.CommandSend(producer_id=producer_id, sequence_id=sequence_id,
                                                            **fields)), data))
        return self.read()[0]
