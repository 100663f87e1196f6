"""Raw bytes for the broker's port, below gRPC: HTTP/2 frames built by hand, and Hypothesis strategies that
send garbage instead of the connection preface, frames whose header lies about their length, and gRPC
messages whose 5-byte prefix lies about theirs or wraps a truncated protobuf.

HTTP/2 frame (RFC 9113 section 4.1)::

    u24 length | u8 type | u8 flags | u1 reserved + u31 stream id | payload (length bytes)

gRPC message inside DATA frames (gRPC over HTTP/2, "Length-Prefixed-Message")::

    u8 compressed flag | u32 message length | message
"""
from __future__ import annotations

import socket
import struct
import time
from typing import Callable

from hypothesis import strategies as st

from tests.wire_fuzz import SERVICE, messages, wire_bytes

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
FRAME_HEADER = struct.Struct(">BHBBI")
"""length as u8 (high) + u16 (low) | type | flags | stream id (the top bit reserved)."""
GRPC_PREFIX = struct.Struct(">BI")
"""compressed flag | message length."""

DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 3, 4, 6, 7, 8, 9
END_STREAM, END_HEADERS = 0x1, 0x4


def frame(kind: int, flags: int, stream_id: int, payload: bytes, length: int | None = None) -> bytes:
    """One frame; ``length`` lies about the payload's size when given."""
    size = len(payload) if length is None else length
    return FRAME_HEADER.pack(size >> 16 & 0xFF, size & 0xFFFF, kind, flags, stream_id & 0xFFFFFFFF) + payload


def _literal(name: str, value: str) -> bytes:
    """An HPACK "literal header field without indexing, new name" with short strings (RFC 7541 6.2.2)."""
    name_bytes, value_bytes = name.encode(), value.encode()
    assert len(name_bytes) < 127 and len(value_bytes) < 127
    return b"\x00" + bytes([len(name_bytes)]) + name_bytes + bytes([len(value_bytes)]) + value_bytes


def grpc_headers(path: str) -> bytes:
    """The HPACK block of a gRPC call to ``path``."""
    return b"".join(_literal(n, v) for n, v in ((":method", "POST"), (":scheme", "http"), (":path", path),
                                                (":authority", "localhost"), ("content-type", "application/grpc"),
                                                ("te", "trailers")))


def grpc_message(body: bytes, length: int | None = None, compressed: int = 0) -> bytes:
    return GRPC_PREFIX.pack(compressed, len(body) if length is None else length) + body


def call_frames(path: str, body: bytes, *, length: int | None = None, compressed: int = 0,
                end_stream: bool = True, stream_id: int = 1) -> bytes:
    """Preface, SETTINGS, then one call to ``path`` whose gRPC message is ``body`` (its prefix stating
    ``length`` when given)."""
    return (PREFACE + frame(SETTINGS, 0, 0, b"")
            + frame(HEADERS, END_HEADERS, stream_id, grpc_headers(path))
            + frame(DATA, END_STREAM if end_stream else 0, stream_id, grpc_message(body, length, compressed)))


_PATHS = st.one_of(st.sampled_from([f"/{SERVICE.full_name}/{m.name}" for m in SERVICE.methods]),
                   st.sampled_from(("/grpc.health.v1.Health/Check", "/", "/nope/Nope", "/" + "x" * 120)))


@st.composite
def lying_calls(draw: Callable) -> bytes:
    """A well-formed connection carrying a gRPC call whose message lies: its prefix claims more (or far
    more) bytes than follow, says compressed with no encoding negotiated, or wraps a truncated protobuf."""
    method = draw(st.sampled_from(tuple(SERVICE.methods)))
    path = f"/{SERVICE.full_name}/{method.name}"
    body = draw(wire_bytes(draw(messages(method.input_type))))
    length = draw(st.one_of(st.none(), st.sampled_from((len(body) + 1, 2**24, 2**31 - 1, 2**32 - 1)),
                            st.integers(0, 2**32 - 1)))
    return call_frames(path if draw(st.integers(0, 4)) else draw(_PATHS), body, length=length,
                       compressed=draw(st.sampled_from((0, 0, 0, 1, 2, 255))), end_stream=draw(st.booleans()))


@st.composite
def random_frames(draw: Callable) -> bytes:
    """The preface (or not), then frames of any type, flags and stream id, whose length may lie."""
    out = [PREFACE] if draw(st.integers(0, 4)) else []
    for _ in range(draw(st.integers(1, 6))):
        payload = draw(st.binary(max_size=64))
        length = draw(st.one_of(st.none(), st.sampled_from((0, 1, 2**14 + 1, 2**24 - 1)), st.integers(0, 2**24 - 1)))
        out.append(frame(draw(st.integers(0, 12)), draw(st.integers(0, 255)),
                         draw(st.one_of(st.sampled_from((0, 1, 2, 3, 2**31 - 1)), st.integers(0, 2**32 - 1))),
                         payload, length))
    return b"".join(out)


raw_connections = st.one_of(
    st.binary(min_size=1, max_size=256),
    st.sampled_from((b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", PREFACE[:10], b"\x00" * 64, b"\x16\x03\x01\x02\x00")),
    random_frames(), lying_calls(), lying_calls(),
)
"""What one raw connection sends."""


def send_raw(address: str, data: bytes, linger_s: float = 0.3) -> bytes:
    """Connect to ``address`` (``host:port``), send ``data``, read what the broker answers for up to
    ``linger_s`` seconds (a lying length makes it wait for bytes that never come), then close."""
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        try:
            sock.sendall(data)
        except OSError:  # the broker may close a connection before reading all of its garbage
            return b""
        received = []
        deadline = time.monotonic() + linger_s
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            try:
                chunk = sock.recv(65536)
            except (socket.timeout, OSError):
                break
            if not chunk:
                break
            received.append(chunk)
        return b"".join(received)
