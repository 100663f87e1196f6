"""Pulsar's binary protocol against the gRPC path, in one run on one broker process (issue 14's benchmark).

Run it with ``python bench/pulsar_protocol.py [--messages N] [--size B] [--latency-messages N] [--json]``.

What it measures, in this order (``--messages`` of ``--size`` bytes, batches of 1,000 messages):

1. **Clients**: the official ``pulsar-client`` (C++ core, Python wrapper) over the binary protocol, then our
   gRPC ``connector.Client``, each with the workload of ``bench/throughput.py``: produce (``send_async`` with
   batching on, ``max_pending_messages=100,000``, ``block_if_queue_full``, then ``flush``), consume
   (``receive`` per message, ``acknowledge_cumulative`` every 1,000; receiver queue 10,000), end-to-end
   latency of sync sends at ``--latency-rate``. The CPU seconds the client and the broker process spent
   on produce and consume show which side bounds the figure.
2. **Front ends**: the same messages pre-built into batch entries of 1,000 and sent raw -- Pulsar ``SEND``
   frames on a socket, or gRPC ``SendBatch`` requests on a ``Produce`` stream, 64 entries in flight -- then
   read raw (``MESSAGE`` frames, or ``ConsumeResponse`` deliveries, with every permit granted at once). No
   client library runs per message, so these figures are the broker's front ends themselves.

Targets (this 2-core machine): the binary front end >= 0.9x the gRPC one, >= 1M msg/s produce, e2e p50 < 1 ms.
Nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import resource
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import pulsar  # noqa: E402

import throughput  # noqa: E402  (its broker start and the gRPC client workloads)
from broker_core.protocol import broker_pb2 as pb  # noqa: E402
from broker_core.protocol import broker_pb2_grpc, pulsar_api_pb2  # noqa: E402
from broker_core.protocol import pulsar_commands_pb2 as cmd  # noqa: E402
from broker_core.protocol.codec import encode_batch, encode_entry  # noqa: E402

BATCH = 1000
WINDOW = 64
T = cmd.BaseCommand
HEADER_SIZE = 8


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class CpuSplit:
    """CPU seconds of this process and of the broker process over a ``with`` block."""

    def __init__(self, broker_pid: int) -> None:
        self.pid = broker_pid

    def __enter__(self) -> "CpuSplit":
        self._client, self._broker = own_cpu(), cpu_seconds(self.pid)
        return self

    def __exit__(self, *exc) -> None:
        self.client, self.broker = own_cpu() - self._client, cpu_seconds(self.pid) - self._broker


# ------------------------------------------------------------------------------------------- official
def official_produce(client: pulsar.Client, topic: str, n: int, payload: bytes) -> float:
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=BATCH,
                                      batching_max_publish_delay_ms=10, max_pending_messages=100_000,
                                      block_if_queue_full=True, batching_max_allowed_size_in_bytes=1 << 20)
    start = time.perf_counter()
    for _ in range(n):
        producer.send_async(payload, None)
    producer.flush()
    elapsed = time.perf_counter() - start
    producer.close()
    return n / elapsed


def official_consume(client: pulsar.Client, topic: str, n: int) -> float:
    start = time.perf_counter()
    consumer = client.subscribe(topic, "bench-consume", initial_position=pulsar.InitialPosition.Earliest,
                                receiver_queue_size=BATCH * 10)
    msg = None
    for i in range(1, n + 1):
        msg = consumer.receive(30_000)
        if i % BATCH == 0:
            consumer.acknowledge_cumulative(msg)
    if msg is not None:
        consumer.acknowledge_cumulative(msg)
    elapsed = time.perf_counter() - start
    consumer.close()
    return n / elapsed


def official_latency(client: pulsar.Client, topic: str, n: int, size: int, rate: float) -> tuple[float, float]:
    consumer = client.subscribe(topic, "bench-latency")
    producer = client.create_producer(topic, batching_enabled=False)
    return throughput.measure_latency(producer, consumer, n, size, rate)


# ------------------------------------------------------------------------------------------- raw front ends
def batch_entry(size: int) -> bytes:
    metadata = pulsar_api_pb2.MessageMetadata(producer_name="raw-bench", sequence_id=0,
                                              publish_time=int(time.time() * 1000), num_messages_in_batch=BATCH)
    return encode_entry(metadata, encode_batch([b"x" * size] * BATCH))


def _frame(command: cmd.BaseCommand, payload: bytes = b"") -> bytes:
    body = command.SerializeToString()
    return (4 + len(body) + len(payload)).to_bytes(4, "big") + len(body).to_bytes(4, "big") + body + payload


class _Frames:
    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.buf = sock, bytearray()

    def next(self) -> tuple[cmd.BaseCommand, memoryview]:
        while True:
            if len(self.buf) >= HEADER_SIZE:
                total = int.from_bytes(self.buf[:4], "big")
                if len(self.buf) >= total + 4:
                    size = int.from_bytes(self.buf[4:8], "big")
                    frame = bytes(self.buf[:total + 4])
                    del self.buf[:total + 4]
                    command = cmd.BaseCommand()
                    command.ParseFromString(frame[8:8 + size])
                    return command, memoryview(frame)[8 + size:]
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("broker closed the connection")
            self.buf += chunk


def _raw_connect(address: str) -> tuple[socket.socket, _Frames]:
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    frames = _Frames(sock)
    sock.sendall(_frame(T(type=T.CONNECT, connect=cmd.CommandConnect(client_version="bench", protocol_version=20))))
    frames.next()
    return sock, frames


def raw_binary_produce(address: str, topic: str, entries: int, entry: bytes) -> float:
    sock, frames = _raw_connect(address)
    sock.sendall(_frame(T(type=T.PRODUCER, producer=cmd.CommandProducer(topic=topic, producer_id=1, request_id=1))))
    frames.next()
    send = [_frame(T(type=T.SEND, send=cmd.CommandSend(producer_id=1, sequence_id=i, num_messages=BATCH)), entry)
            for i in range(min(entries, 256))]
    start = time.perf_counter()
    sent = acked = 0
    while acked < entries:
        while sent < entries and sent - acked < WINDOW:
            sock.sendall(send[sent % len(send)])
            sent += 1
        command, _ = frames.next()
        if command.type == T.SEND_RECEIPT:
            acked += 1
        elif command.type == T.SEND_ERROR:
            raise RuntimeError(command.send_error.message)
    elapsed = time.perf_counter() - start
    sock.close()
    return entries * BATCH / elapsed


def raw_binary_consume(address: str, topic: str, messages: int) -> float:
    sock, frames = _raw_connect(address)
    start = time.perf_counter()
    sock.sendall(_frame(T(type=T.SUBSCRIBE, subscribe=cmd.CommandSubscribe(
        topic=topic, subscription="raw", subType=cmd.CommandSubscribe.Exclusive, consumer_id=1, request_id=1,
        initialPosition=cmd.CommandSubscribe.Earliest))))
    frames.next()
    sock.sendall(_frame(T(type=T.FLOW, flow=cmd.CommandFlow(consumer_id=1, messagePermits=messages))))
    got = entries = 0
    while got < messages:
        command, _payload = frames.next()
        if command.type != T.MESSAGE:
            continue
        got += BATCH  # every entry of this run is one batch of BATCH
        entries += 1
        if entries % 16 == 0 or got >= messages:
            sock.sendall(_frame(T(type=T.ACK, ack=cmd.CommandAck(
                consumer_id=1, ack_type=cmd.CommandAck.Cumulative, message_id=[command.message.message_id]))))
    elapsed = time.perf_counter() - start
    sock.close()
    return messages / elapsed


def raw_grpc_produce(address: str, topic: str, entries: int, entry: bytes) -> float:
    import grpc

    channel = grpc.insecure_channel(address, options=[("grpc.max_send_message_length", 64 << 20),
                                                      ("grpc.max_receive_message_length", 64 << 20)])
    stub = broker_pb2_grpc.PulsarLikeStub(channel)
    room = threading.Semaphore(WINDOW)
    requests: queue.Queue = queue.Queue()
    requests.put(pb.ProduceRequest(open=pb.ProducerOpen(topic=topic, initial_sequence_id=-1)))
    batch = pb.ProduceRequest(send=pb.SendBatch(entries=[pb.SendEntry(sequence_id=0, highest_sequence_id=BATCH - 1,
                                                                      num_messages=BATCH, data=entry)]))

    def feed():
        while (item := requests.get()) is not None:
            yield item

    responses = stub.Produce(feed())
    next(responses)  # opened
    start = time.perf_counter()

    def send_all() -> None:
        for _ in range(entries):
            room.acquire()
            requests.put(batch)
    threading.Thread(target=send_all, daemon=True).start()
    acked = 0
    for response in responses:
        if response.HasField("receipts"):
            acked += len(response.receipts.receipts)
            for _ in response.receipts.receipts:
                room.release()
        if acked >= entries:
            break
    elapsed = time.perf_counter() - start
    requests.put(None)
    channel.close()
    return entries * BATCH / elapsed


def raw_grpc_consume(address: str, topic: str, messages: int) -> float:
    import grpc

    channel = grpc.insecure_channel(address, options=[("grpc.max_receive_message_length", 256 << 20)])
    stub = broker_pb2_grpc.PulsarLikeStub(channel)
    requests: queue.Queue = queue.Queue()
    requests.put(pb.ConsumeRequest(subscribe=pb.Subscribe(topic=topic, subscription="raw", durable=True,
                                                          initial_position=pb.EARLIEST, initial_permits=messages)))

    def feed():
        while (item := requests.get()) is not None:
            yield item

    start = time.perf_counter()
    got = entries = 0
    for response in stub.Consume(feed()):
        for e in response.deliveries.entries:
            got += e.num_messages
            entries += 1
            if entries % 16 == 0 or got >= messages:
                requests.put(pb.ConsumeRequest(ack=pb.Ack(ack_type=pb.CUMULATIVE, offset=e.entry_id + e.num_messages - 1)))
        if got >= messages:
            break
    elapsed = time.perf_counter() - start
    requests.put(None)
    channel.close()
    return messages / elapsed


# ------------------------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--latency-messages", type=int, default=1000)
    parser.add_argument("--latency-rate", type=float, default=200.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    n, payload = args.messages // BATCH * BATCH, b"x" * args.size
    with tempfile.TemporaryDirectory(prefix="pulsarlike-bench-") as tmp:
        proc, url = throughput.start_broker(tmp, [])
        address = url[len("pulsar://"):]
        results: dict[str, float] = {}
        try:
            official = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
            with CpuSplit(proc.pid) as cpu:
                results["official_produce_msg_s"] = official_produce(official, "official", n, payload)
            results["official_produce_cpu_client_s"], results["official_produce_cpu_broker_s"] = cpu.client, cpu.broker
            with CpuSplit(proc.pid) as cpu:
                results["official_consume_msg_s"] = official_consume(official, "official", n)
            results["official_consume_cpu_client_s"], results["official_consume_cpu_broker_s"] = cpu.client, cpu.broker
            p50, p99 = official_latency(official, "official-latency", args.latency_messages, args.size,
                                        args.latency_rate)
            results["official_e2e_p50_ms"], results["official_e2e_p99_ms"] = p50, p99
            official.close()

            ours = throughput.Client(url)
            with CpuSplit(proc.pid) as cpu:
                results["grpc_produce_msg_s"] = throughput.bench_produce(ours, "ours", n, payload)
            results["grpc_produce_cpu_client_s"], results["grpc_produce_cpu_broker_s"] = cpu.client, cpu.broker
            with CpuSplit(proc.pid) as cpu:
                results["grpc_consume_msg_s"] = throughput.bench_consume(ours, "ours", n)
            results["grpc_consume_cpu_client_s"], results["grpc_consume_cpu_broker_s"] = cpu.client, cpu.broker
            p50, p99 = throughput.bench_latency(ours, "ours-latency", args.latency_messages, args.size,
                                                args.latency_rate)
            results["grpc_e2e_p50_ms"], results["grpc_e2e_p99_ms"] = p50, p99
            ours.close()

            entry = batch_entry(args.size)
            results["raw_binary_produce_msg_s"] = raw_binary_produce(address, "raw-binary", n // BATCH, entry)
            results["raw_binary_consume_msg_s"] = raw_binary_consume(address, "raw-binary", n)
            results["raw_grpc_produce_msg_s"] = raw_grpc_produce(address, "raw-grpc", n // BATCH, entry)
            results["raw_grpc_consume_msg_s"] = raw_grpc_consume(address, "raw-grpc", n)
        finally:
            throughput.stop(proc)
    report(results, n, args.size)
    if args.json:
        print(json.dumps(results, sort_keys=True))


def report(r: dict[str, float], n: int, size: int) -> None:
    print(f"{n:,} messages of {size} B, batches of {BATCH}")
    print("clients (each workload end to end, CPU seconds of client / broker process):")
    for who, label in (("official", "pulsar-client, binary"), ("grpc", "connector.Client, gRPC")):
        print(f"  {label:24} produce {r[f'{who}_produce_msg_s']:>11,.0f} msg/s "
              f"({r[f'{who}_produce_cpu_client_s']:.2f}/{r[f'{who}_produce_cpu_broker_s']:.2f} s)  "
              f"consume {r[f'{who}_consume_msg_s']:>11,.0f} msg/s "
              f"({r[f'{who}_consume_cpu_client_s']:.2f}/{r[f'{who}_consume_cpu_broker_s']:.2f} s)  "
              f"e2e p50 {r[f'{who}_e2e_p50_ms']:.3f} ms p99 {r[f'{who}_e2e_p99_ms']:.3f} ms")
    print("front ends (pre-built batch entries, no client library):")
    for who in ("binary", "grpc"):
        print(f"  {who:24} produce {r[f'raw_{who}_produce_msg_s']:>11,.0f} msg/s  "
              f"consume {r[f'raw_{who}_consume_msg_s']:>11,.0f} msg/s")
    ratio_p = r["raw_binary_produce_msg_s"] / r["raw_grpc_produce_msg_s"]
    ratio_c = r["raw_binary_consume_msg_s"] / r["raw_grpc_consume_msg_s"]
    print(f"binary / gRPC front end: produce {ratio_p:.2f}x, consume {ratio_c:.2f}x (target >= 0.9)")
    print(f"binary produce {r['raw_binary_produce_msg_s']:,.0f} msg/s (target >= 1,000,000); official e2e p50 "
          f"{r['official_e2e_p50_ms']:.3f} ms (target < 1 ms)")


if __name__ == "__main__":
    main()
