"""The streaming demo: an embedded broker, a producer and a consumer, and what happened.

    python -m jobs.stream_demo [--messages N] [--data-dir DIR]

Starts a real broker in this process (port 0), produces N sensor readings with keys and properties in
batches, consumes them on a durable Exclusive subscription acknowledging cumulatively, reads the first
few back with a Reader, and prints the topic's stats. (When the Spark connector lands, the demo becomes a
Spark Structured Streaming pipeline.)
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from typing import Sequence


def run(messages: int, data_dir: str) -> dict:
    from broker_core import Broker
    from connector import Admin, Client, ConsumerType, InitialPosition, MessageId

    topic = "persistent://public/default/sensor-readings"
    with Broker(data_dir=data_dir, port=0) as broker:
        print(f"broker: {broker.service_url} (data in {data_dir})")
        client = Client(broker.service_url)
        admin = Admin(broker.service_url)
        try:
            consumer = client.subscribe(topic, "demo-subscription", consumer_type=ConsumerType.Exclusive,
                                        initial_position=InitialPosition.Earliest)
            producer = client.create_producer(topic, producer_name="demo-producer", block_if_queue_full=True)
            outcomes: dict[str, int] = {}

            def sent(result, _msg_id) -> None:
                name = getattr(result, "name", str(result))
                outcomes[name] = outcomes.get(name, 0) + 1

            started = time.perf_counter()
            for i in range(messages):
                reading = {"sensor": f"s{i % 4}", "seq": i, "celsius": round(18 + (i % 70) / 10, 1)}
                producer.send_async(json.dumps(reading).encode(), sent, partition_key=reading["sensor"],
                                    properties={"unit": "celsius"})
            producer.flush()
            produced_s = time.perf_counter() - started
            print(f"produced {messages} messages in {produced_s * 1000:.1f} ms; send results {outcomes}")

            total = 0.0
            last = None
            per_sensor: dict[str, int] = {}
            started = time.perf_counter()
            for _ in range(messages):
                msg = consumer.receive(timeout_millis=10_000)
                reading = json.loads(msg.data())
                total += reading["celsius"]
                per_sensor[msg.partition_key()] = per_sensor.get(msg.partition_key(), 0) + 1
                last = msg
            consumer.acknowledge_cumulative(last)
            consumed_s = time.perf_counter() - started
            print(f"consumed {messages} messages in {consumed_s * 1000:.1f} ms;"
                  f" mean {total / messages:.2f} C; per sensor {dict(sorted(per_sensor.items()))}")
            print(f"last message id {last.message_id()} published at {last.publish_timestamp()}")

            reader = client.create_reader(topic, MessageId.earliest)
            first = [json.loads(reader.read_next(timeout_millis=5000).data())["seq"] for _ in range(3)]
            reader.close()
            print(f"a reader from the earliest message sees seq {first}")
            producer.close()
            consumer.close()
            stats = admin.topic_stats(topic)
            sub = stats["subscriptions"]["demo-subscription"]
            print(f"topic stats: msgInCounter={stats['msgInCounter']} storageSize={stats['storageSize']}"
                  f" backlog of demo-subscription={sub['msgBacklog']}")
            return {"produced": messages, "consumed": messages, "backlog": sub["msgBacklog"],
                    "first_read": first}
        finally:
            admin.close()
            client.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="stream_demo", description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--data-dir", default=None, help="default: a new temporary folder")
    args = parser.parse_args(argv)
    if args.messages < 1:
        parser.error("--messages must be at least 1")
    data_dir = args.data_dir or tempfile.mkdtemp(prefix="pulsarlike-demo-")
    run(args.messages, data_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
