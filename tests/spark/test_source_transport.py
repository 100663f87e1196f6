"""The source's option ``transport``: a range of pulsarlike read over gRPC or Pulsar's binary protocol gives the
same rows; the option is validated as the sink's is."""
from __future__ import annotations

import pytest

from broker_core import Broker
from connector import Client
from connector.client.admin import Admin
from connector.spark import partition_reader
from connector.spark.data_loss import DataLossError
from connector.spark.options import parse_source_options
from connector.spark.partition_reader import RangePartition, RangeReader, read_transport
from connector.spark.sink_options import parse_sink_options
from tests.waiting import wait_until

URL = "pulsar://127.0.0.1:6650"


# --- the option ------------------------------------------------------------------------------------------
def test_the_transport_option_is_auto_unless_given_and_any_case_of_a_valid_name_is_taken():
    assert parse_source_options({"service.url": URL, "topic": "t"}, streaming=False).transport == "auto"
    assert parse_source_options({"service.url": URL, "topic": "t", "TRANSPORT": " Binary "},
                                streaming=True).transport == "binary"
    assert parse_source_options({"service.url": URL, "topic": "t", "transport": "grpc"},
                                streaming=False).transport == "grpc"


def test_a_wrong_transport_is_refused_naming_the_valid_ones_by_the_source_and_the_sink_alike():
    with pytest.raises(ValueError) as source_error:
        parse_source_options({"service.url": URL, "topic": "t", "transport": "http"}, streaming=False)
    with pytest.raises(ValueError) as sink_error:
        parse_sink_options({"service.url": URL, "topic": "t", "transport": "http"}, streaming=False)
    assert str(source_error.value) == str(sink_error.value)
    assert "transport='http'" in str(source_error.value)
    assert all(name in str(source_error.value) for name in ("auto", "grpc", "binary"))


def test_auto_reads_pulsarlike_over_the_transport_measured_faster():
    assert read_transport("auto") == partition_reader.FASTER_READ_ON_PULSARLIKE
    assert read_transport("grpc") == "grpc" and read_transport("binary") == "binary"


# --- reads on our broker ---------------------------------------------------------------------------------
def test_a_range_read_with_transport_binary_takes_its_bounds_and_entries_over_one_binary_connection(
        broker, produce, topic, monkeypatch):
    from connector.client.transport import choice as transport_choice
    from connector.client.transport.binary import transport as binary

    opened, grpc_opened = [], []

    class Counted(binary.BinaryTransport):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            opened.append(self)

    class CountedGrpc(transport_choice.Connection):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            grpc_opened.append(self)

    produce(topic, 30)
    monkeypatch.setattr(binary, "BinaryTransport", Counted)
    monkeypatch.setattr(transport_choice, "Connection", CountedGrpc)
    part = RangePartition(topic, -1, 5, 30)
    over_binary = [b for b in RangeReader(broker.service_url, part, 10_000, True, transport="binary").batches()]
    assert len(opened) == 1 and opened[0].closed.is_set()  # one connection, closed with the range
    assert grpc_opened == []  # the bounds came over it too
    over_grpc = [b for b in RangeReader(broker.service_url, part, 10_000, True, transport="grpc").batches()]
    assert len(opened) == 1 and len(grpc_opened) == 1
    assert [b.to_pydict() for b in over_binary] == [b.to_pydict() for b in over_grpc]
    assert over_binary[0].column("__offset").to_pylist() == list(range(5, 30))


@pytest.mark.spark
def test_batch_and_stream_reads_over_binary_give_the_rows_read_over_grpc(spark, source, produce, topic, admin,
                                                                        tmp_path):
    admin.create_partitioned_topic(topic, 2)
    produce(topic, 120, partition_key="a")
    produce(topic, 80, start=120, partition_key="b")

    def batch(transport):
        return sorted(source(stream=False, topic=topic, transport=transport).load().collect())

    def stream(transport):
        name = f"over_{transport}"
        query = (source(topic=topic, startingOffsets="earliest", transport=transport).load()
                 .writeStream.format("memory").queryName(name)
                 .option("checkpointLocation", str(tmp_path / name)).trigger(availableNow=True).start())
        query.awaitTermination(120)
        assert query.exception() is None
        return sorted(spark.sql(f"SELECT * FROM {name}").collect())

    over_grpc = batch("grpc")
    assert len(over_grpc) == 200
    assert batch("binary") == over_grpc
    assert stream("grpc") == stream("binary") == over_grpc


def test_a_range_read_over_binary_loses_what_retention_deleted_as_over_grpc(tmp_path):
    """The first stored offset comes over the binary protocol too (the reader's mark-delete position before it)."""
    with Broker(data_dir=str(tmp_path), port=0, managedLedgerMaxEntriesPerLedger=10,
                retentionCheckIntervalInSeconds=1) as broker:
        with Client(broker.service_url) as client:
            producer = client.create_producer("retained")
            for i in range(35):
                producer.send(b"m%d" % i)
        with Admin(broker.service_url) as admin:
            assert wait_until(lambda: admin.get_offset_bounds("retained")[0] > 0, timeout_s=20)
            first, end = admin.get_offset_bounds("retained")
        part = RangePartition("persistent://public/default/retained", -1, 0, end)
        for transport in ("binary", "grpc"):
            reader = RangeReader(broker.service_url, part, 10_000, False, transport=transport)
            rows = [o for b in reader.batches() for o in b.column("__offset").to_pylist()]
            assert (rows, reader.lost) == (list(range(first, end)), first), transport
            with pytest.raises(DataLossError, match=f"first stored offset is {first}"):
                list(RangeReader(broker.service_url, part, 10_000, True, transport=transport).batches())
