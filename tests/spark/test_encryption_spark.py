"""End-to-end encrypted topics from Spark (issue 33): the source decrypts what the official pulsar-client
encrypted (batched and unbatched, batch and stream reads, on pulsarlike and on pulsar-lite), applies
``cryptoFailureAction`` to what it cannot decrypt, and the sink encrypts what the official client then
decrypts. The options' mistakes are refused when the read or write is set up."""
from __future__ import annotations

import base64
import uuid

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from connector.client.security.crypto_keys import CryptoError, CryptoKeyReader
from connector.spark.crypto_options import split_sink_crypto, split_source_crypto
from connector.spark.options import parse_source_options
from connector.spark.partition_reader import RangePartition, RangeReader
from connector.spark.sink_options import parse_sink_options
from tests.pulsar_lite import pulsar_lite_broker  # noqa: F401

pytestmark = pytest.mark.spark
pulsar = pytest.importorskip("pulsar")


MAX_MESSAGE_SIZE = 64 * 1024
"""The module's broker takes messages up to this size: larger ones are chunked."""


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    from broker_core import Broker

    with Broker(data_dir=tmp_path_factory.mktemp("broker"), port=0, maxMessageSize=MAX_MESSAGE_SIZE) as running:
        yield running


class _Keys:
    def __init__(self, folder, name: str) -> None:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.private_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption())
        self.public_pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                                        serialization.PublicFormat.SubjectPublicKeyInfo)
        self.private = str(folder / f"{name}.key.pem")
        self.public = str(folder / f"{name}.pub.pem")
        with open(self.private, "wb") as f:
            f.write(self.private_pem)
        with open(self.public, "wb") as f:
            f.write(self.public_pem)

    def official_reader(self):
        return pulsar.CryptoKeyReader(self.public, self.private)


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    folder = tmp_path_factory.mktemp("keys")
    return _Keys(folder, "app"), _Keys(folder, "other")


@pytest.fixture(scope="module")
def encrypted(broker, keys):
    """A topic holding, in order: 3 unbatched encrypted messages, a batch of 5 encrypted ones (compressed), 2
    plain ones (all sent by the official client), 10 messages at offsets 0..9."""
    topic = f"persistent://public/default/enc-{uuid.uuid4().hex[:10]}"
    client = pulsar.Client(broker.service_url)
    try:
        single = client.create_producer(topic, encryption_key="app", crypto_key_reader=keys[0].official_reader(),
                                        batching_enabled=False)
        for i in range(3):
            single.send(f"secret-{i}".encode(), partition_key=f"k{i}", properties={"n": str(i)})
        batched = client.create_producer(topic, encryption_key="app", crypto_key_reader=keys[0].official_reader(),
                                         batching_enabled=True, batching_max_messages=5,
                                         batching_max_publish_delay_ms=60_000,
                                         compression_type=pulsar.CompressionType.LZ4)
        for i in range(3, 8):
            batched.send_async(f"secret-{i}".encode(), None)
        batched.flush()
        plain = client.create_producer(topic, batching_enabled=False)
        for i in range(8, 10):
            plain.send(f"plain-{i}".encode())
    finally:
        client.close()
    return topic


EXPECTED = [f"secret-{i}".encode() for i in range(8)] + [b"plain-8", b"plain-9"]


def test_a_batch_read_decrypts_what_the_official_client_encrypted(source, encrypted, keys):
    rows = sorted(source(stream=False, topic=encrypted, cryptoPrivateKey=keys[0].private).load().collect(),
                  key=lambda r: r["__offset"])
    assert [r["value"] for r in rows] == EXPECTED
    assert [r["__offset"] for r in rows] == list(range(10))
    assert rows[1]["__key"] == b"k1" and rows[1]["__messageProperties"] == {"n": "1"}


def test_a_streaming_read_decrypts_with_a_file_url_and_pulsar_spark_spelling(spark, source, encrypted, keys,
                                                                             tmp_path):
    name = f"enc_{uuid.uuid4().hex[:8]}"
    query = (source(topic=encrypted, startingOffsets="earliest", cryptoPrivateKey="file://" + keys[0].private,
                    **{"pulsar.reader.cryptoFailureAction": "FAIL"}).load()
             .select("value", "__offset").writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    query.awaitTermination(60)
    assert query.exception() is None
    rows = sorted(spark.sql(f"SELECT * FROM {name}").collect(), key=lambda r: r["__offset"])
    assert [r["value"] for r in rows] == EXPECTED


def test_without_the_key_the_read_fails_naming_the_topic_and_the_keys(source, encrypted):
    with pytest.raises(Exception, match="cannot decrypt the end-to-end encrypted message at offset 0") as info:
        source(stream=False, topic=encrypted).load().collect()
    assert encrypted in str(info.value) and "encryption keys: app" in str(info.value)


def _range(broker, topic: str, options: dict[str, str], end: int = 10) -> list[dict]:
    """The rows of offsets ``0..end-1`` read by one range reader (an executor's work, without a Spark job)."""
    opts = parse_source_options({"service.url": broker.service_url, "topic": topic, **options}, streaming=False)
    reader = RangeReader(broker.service_url, RangePartition(topic, -1, 0, end), 5000, True, crypto=opts.crypto)
    return [row for batch in reader.batches() for row in batch.to_pylist()]


def test_a_chunked_encrypted_message_is_decrypted_chunk_by_chunk_then_joined(broker, keys):
    topic = f"persistent://public/default/enc-chunked-{uuid.uuid4().hex[:10]}"
    payload = bytes(range(256)) * (3 * MAX_MESSAGE_SIZE // 256)
    client = pulsar.Client(broker.service_url)
    try:
        producer = client.create_producer(topic, encryption_key="app", crypto_key_reader=keys[0].official_reader(),
                                          batching_enabled=False, chunking_enabled=True)
        producer.send(payload)
    finally:
        client.close()
    rows = _range(broker, topic, {"cryptoPrivateKey": keys[0].private}, end=1)
    assert [(r["__offset"], r["value"]) for r in rows] == [(0, payload)]


def test_a_wrong_key_fails_the_range_with_crypto_error_saying_what_to_set(broker, encrypted, keys):
    with pytest.raises(CryptoError, match="no private key of the key reader decrypts it") as info:
        _range(broker, encrypted, {"cryptoPrivateKey": keys[1].private})
    assert info.value.offset == 0 and "cryptoFailureAction=discard" in info.value.message


def test_an_unreadable_key_file_is_named_in_the_error(broker, encrypted, tmp_path):
    with pytest.raises(CryptoError, match="cannot read .*missing.pem on this executor"):
        _range(broker, encrypted, {"cryptoPrivateKey": str(tmp_path / "missing.pem")})


def test_discard_leaves_the_messages_it_cannot_decrypt_out(broker, encrypted, keys):
    rows = _range(broker, encrypted, {"cryptoPrivateKey": keys[1].private, "cryptoFailureAction": "discard"})
    assert [(r["__offset"], r["value"]) for r in rows] == [(8, b"plain-8"), (9, b"plain-9")]


def test_consume_delivers_an_entry_encrypted_with_its_encryption_context(broker, encrypted, keys):
    rows = _range(broker, encrypted, {"cryptoFailureAction": "consume"})
    # 3 unbatched messages, the batch as one row at its first offset, the plain ones
    assert [r["__offset"] for r in rows] == [0, 1, 2, 3, 8, 9]
    failed = rows[:4]
    assert all(r["__encryptionContext"]["isDecryptionFailed"] for r in failed)
    assert all(b"secret" not in r["value"] for r in failed)
    assert [k["key"] for k in failed[0]["__encryptionContext"]["keys"]] == ["app"]
    assert [r["__encryptionContext"]["batchSize"] for r in failed] == [-1, -1, -1, 5]
    assert len(failed[0]["__encryptionContext"]["param"]) == 12
    assert rows[4]["__encryptionContext"] is None and rows[4]["value"] == b"plain-8"


def test_consume_with_the_key_marks_decrypted_rows_as_not_failed(source, encrypted, keys):
    df = source(stream=False, topic=encrypted, cryptoPrivateKey=keys[0].private, cryptoFailureAction="consume").load()
    assert df.schema["__encryptionContext"].dataType.simpleString().startswith("struct<keys:array<struct<key:string")
    rows = sorted(df.collect(), key=lambda r: r["__offset"])
    assert [r["value"] for r in rows] == EXPECTED
    assert [r["__encryptionContext"] is None for r in rows] == [False] * 8 + [True] * 2
    assert not any(r["__encryptionContext"]["isDecryptionFailed"] for r in rows[:8])


def test_the_sink_encrypts_what_the_official_client_decrypts(spark, broker, keys):
    topic = f"persistent://public/default/enc-sink-{uuid.uuid4().hex[:10]}"
    rows = [(f"k{i}", f"row-{i}") for i in range(50)]
    (spark.createDataFrame(rows, "__key string, value string").coalesce(1).write.format("pulsarlike").mode("append")
     .option("service.url", broker.service_url).option("topic", topic)
     .option("pulsar.producer.encryptionKeys", "app").option("cryptoPublicKey", keys[0].public).save())
    client = pulsar.Client(broker.service_url)
    try:
        with_key = client.create_reader(topic, pulsar.MessageId.earliest, crypto_key_reader=keys[0].official_reader())
        assert sorted(with_key.read_next(5000).data() for _ in rows) == sorted(v.encode() for _, v in rows)
        without = client.create_reader(topic, pulsar.MessageId.earliest,
                                       crypto_failure_action=pulsar.ConsumerCryptoFailureAction.CONSUME)
        stored = without.read_next(5000)
        assert stored.encryption_context().is_decryption_failed()
        assert [k.key for k in stored.encryption_context().keys()] == ["app"]
    finally:
        client.close()


def test_the_sink_and_the_source_encrypt_and_decrypt_on_pulsar_lite(spark, pulsar_lite_broker, keys):
    url = pulsar_lite_broker.service_url
    topic = f"persistent://public/default/enc-lite-{uuid.uuid4().hex[:10]}"
    values = [f"lite-{i}" for i in range(30)]
    (spark.createDataFrame([(v,) for v in values], "value string").coalesce(1).write.format("pulsarlike").mode("append")
     .option("service.url", url).option("topic", topic).option("encryptionKeys", "app")
     .option("cryptoPublicKey", keys[0].public).save())
    client = pulsar.Client(url)
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest, crypto_key_reader=keys[0].official_reader())
        assert sorted(reader.read_next(5000).data() for _ in values) == sorted(v.encode() for v in values)
    finally:
        client.close()
    read = (spark.read.format("pulsarlike").option("service.url", url).option("topic", topic)
            .option("cryptoPrivateKey", keys[0].private).load())
    assert sorted(r["value"] for r in read.collect()) == sorted(v.encode() for v in values)
    failed = (spark.read.format("pulsarlike").option("service.url", url).option("topic", topic)
              .option("cryptoFailureAction", "consume").load().collect())
    assert failed and all(r["__encryptionContext"]["isDecryptionFailed"] for r in failed)
    with pytest.raises(Exception, match="cannot decrypt the end-to-end encrypted message at message id"):
        spark.read.format("pulsarlike").option("service.url", url).option("topic", topic).load().collect()


# --- options, refused at load() / save() ----------------------------------------------------------------
def test_a_bad_failure_action_is_refused_at_load(source, encrypted):
    with pytest.raises(Exception, match="option cryptoFailureAction='skip' is not valid; use fail"):
        source(stream=False, topic=encrypted, cryptoFailureAction="skip").load()


def test_a_sink_with_key_names_but_no_public_key_is_refused_at_save(spark, broker):
    df = spark.createDataFrame([("a",)], "value string")
    with pytest.raises(Exception, match="option encryptionKeys needs the public key"):
        (df.write.format("pulsarlike").mode("append").option("service.url", broker.service_url).option("topic", "t")
         .option("encryptionKeys", "app").save())


class _AppKeys(CryptoKeyReader):
    def __init__(self, folder: str, suffix: str = ".key.pem") -> None:
        self.folder, self.suffix = folder, suffix

    def get_private_key(self, key_name, metadata):
        with open(f"{self.folder}/{key_name}{self.suffix}", "rb") as f:
            return f.read()


@pytest.mark.parametrize("options, message", [
    ({"cryptoPublicKey": "/k.pem"}, "option cryptoPublicKey is the sink's"),
    ({"encryptionKeys": "a"}, "option encryptionKeys is the sink's"),
    ({"cryptoPrivateKey": "http://host/k.pem"}, "use a path, file:///absolute/path or a data: URL"),
    ({"cryptoPrivateKey": "data:application/x-pem-file;base64,bm90IGEga2V5"}, "cannot load the private key"),
    ({"cryptoPrivateKey": "/k.pem", "cryptoKeyReaderClassName": f"{__name__}._AppKeys"}, "conflict"),
    ({"cryptoKeyReaderClassName": "no_such_module.Keys"}, "does not import"),
    ({"cryptoKeyReaderClassName": "json.JSONDecoder"}, "is not a key reader"),
    ({"cryptoKeyReaderClassName": f"{__name__}._AppKeys", "cryptoKeyReaderConfig": "[1]"}, "must be a JSON object"),
    ({"cryptoKeyReaderClassName": f"{__name__}._AppKeys", "cryptoKeyReaderConfig": '{"dir": "/k"}'},
     "does not fit .*_AppKeys's arguments"),
    ({"cryptoKeyReaderConfig": "{}"}, "needs cryptoKeyReaderClassName"),
    ({"cryptoFailureAction": "fail", "pulsar.reader.cryptoFailureAction": "discard"}, "name the same option"),
])
def test_source_crypto_mistakes_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        split_source_crypto(options)


@pytest.mark.parametrize("options, message", [
    ({"cryptoPublicKey": "/k.pub"}, "encryptionKeys is not"),
    ({"encryptionKeys": " , ", "cryptoPublicKey": "/k.pub"}, "use comma-separated key names"),
    ({"cryptoPrivateKey": "/k.pem"}, "option cryptoPrivateKey is the source's"),
    ({"pulsar.producer.cryptoFailureAction": "SEND", "encryptionKeys": "a", "cryptoPublicKey": "/k"},
     "only fail is"),
])
def test_sink_crypto_mistakes_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        split_sink_crypto(options)


def test_a_key_reader_class_and_a_data_url_make_working_key_readers(keys, tmp_path):
    opts = parse_source_options({"service.url": "pulsar://127.0.0.1:6650", "topic": "t",
                                 "cryptoKeyReaderClassName": f"{__name__}:_AppKeys",
                                 "cryptoKeyReaderConfig": f'{{"folder": "{tmp_path}"}}'}, streaming=False)
    (tmp_path / "app.key.pem").write_bytes(keys[0].private_pem)
    assert opts.crypto.key_reader().get_private_key("app", {}) == keys[0].private_pem
    url = "data:application/x-pem-file;base64," + base64.b64encode(keys[0].public_pem).decode()
    sink = parse_sink_options({"service.url": "pulsar://127.0.0.1:6650", "topic": "t", "encryptionKeys": "a,b",
                               "cryptoPublicKey": url}, streaming=False)
    kwargs = sink.crypto.producer_kwargs()
    assert kwargs["encryption_keys"] == ["a", "b"]
    assert kwargs["crypto_key_reader"].get_public_key("a", {}).key == keys[0].public_pem
    assert "BEGIN" not in repr(sink) and "BEGIN" not in repr(kwargs["crypto_key_reader"])


def test_an_unknown_crypto_like_option_names_the_closest():
    with pytest.raises(ValueError, match="did you mean 'cryptoPrivateKey'"):
        parse_source_options({"service.url": "pulsar://127.0.0.1:6650", "topic": "t", "cryptoPrivatKey": "x"},
                             streaming=False)
