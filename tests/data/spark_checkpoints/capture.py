"""How the checkpoints in this folder were made: by the Spark source's two readers of 096d34d (before issue
32's one reader), so tests/spark/test_checkpoints_resumed.py can resume what they wrote.

- ``dense/``: ``PulsarLikeStreamReader`` on pulsarlike, offsets ``{"<topic>": {"-1": 7}}``;
- ``message_id/``: ``MessageIdStreamReader`` on pulsar-lite, offsets ``{"<topic>": {"-1": {"batch": -1,
  "entry": 6, "ledger": 0}}}``.

Each is a stream query (``maxMessagesPerTrigger=3``, ``subscriptionName=ck-sub``) over 7 unbatched messages
``m0..m6`` run with ``availableNow``: three batches planned and committed. Spark's ``.crc`` files are left out
(the test rewrites the topic and ledger in the files). Run from the checkout's root, with a commit of the
readers to capture: ``.venv/bin/python tests/data/spark_checkpoints/capture.py OUT_DIR``.
"""
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.getcwd())
os.environ.update({"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
                   "SPARK_LOCAL_IP": "127.0.0.1"})

from pyspark.sql import SparkSession  # noqa: E402

from broker_core import Broker  # noqa: E402
from connector import Client  # noqa: E402
from tests.pulsar_lite import start_pulsar_lite  # noqa: E402


def run(spark, url: str, topic: str, checkpoint: Path, client) -> None:
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(7):
        producer.send(f"m{i}".encode())
    producer.close()
    query = (spark.readStream.format("pulsarlike").option("service.url", url).option("topic", topic)
             .option("startingOffsets", "earliest").option("maxMessagesPerTrigger", "3")
             .option("subscriptionName", "ck-sub").load()
             .writeStream.format("noop").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    print(topic, [p["sources"][0]["endOffset"] for p in query.recentProgress])


def main(out: Path) -> None:
    import pulsar

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    work = Path(tempfile.mkdtemp())
    with Broker(data_dir=work / "data", port=0) as broker:
        client = Client(broker.service_url)
        run(spark, broker.service_url, "persistent://public/default/ck-dense", out / "dense", client)
        client.close()
    lite = start_pulsar_lite(work / "lite")
    try:
        client = pulsar.Client(lite.service_url)
        run(spark, lite.service_url, "persistent://public/default/ck-ids", out / "message_id", client)
        client.close()
    finally:
        lite.stop()
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
