"""End-to-end encryption as Pulsar does it (issue 33), against the official pulsar-client on one broker process:
what the official client encrypts ours decrypts and the other way round (RSA keys; batched, unbatched,
compressed, chunked), EC keys between our clients (pulsar-client's C++ core wraps data keys with RSA only),
a user's key reader, and a wrong key with each ``crypto_failure_action`` (FAIL: not delivered, left
unacknowledged; DISCARD: acknowledged and skipped; CONSUME: delivered as sent with its encryption context)."""
from __future__ import annotations

import pytest

import pulsarlike
from connector import Client, CompressionType
from connector.client.security.crypto_keys import CryptoError
from tests.brokers import BrokerProcess

pulsar = pytest.importorskip("pulsar")

MAX_MESSAGE_SIZE = 64 * 1024


def _write_keys(folder, name, key):
    from cryptography.hazmat.primitives import serialization

    private, public = folder / f"{name}.key.pem", folder / f"{name}.pub.pem"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return str(public), str(private)


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """PEM files: two RSA pairs (``rsa``, ``other``) and an EC P-256 pair (``ec``)."""
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    folder = tmp_path_factory.mktemp("keys")
    return {"rsa": _write_keys(folder, "rsa", rsa.generate_private_key(public_exponent=65537, key_size=2048)),
            "other": _write_keys(folder, "other", rsa.generate_private_key(public_exponent=65537, key_size=2048)),
            "ec": _write_keys(folder, "ec", ec.generate_private_key(ec.SECP256R1()))}


@pytest.fixture(scope="module")
def broker_proc(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("e2e-encryption"), "--set",
                         f"maxMessageSize={MAX_MESSAGE_SIZE}").start()
    yield proc
    proc.stop()


@pytest.fixture
def ours(broker_proc, transport):
    with Client(broker_proc.service_url, transport=transport) as client:
        yield client


def official_reader(keys, name="rsa"):
    return pulsar.CryptoKeyReader(*keys[name])


def our_reader(keys, name="rsa"):
    return pulsarlike.CryptoKeyReader(*keys[name])


def received(consumer, count, timeout_millis=10000):
    out = []
    for _ in range(count):
        msg = consumer.receive(timeout_millis=timeout_millis)
        consumer.acknowledge(msg)
        out.append(msg)
    return out


# ------------------------------------------------------------------ official -> ours
@pytest.mark.transports
@pytest.mark.parametrize("batching, compression", [(False, "NONE"), (True, "NONE"), (True, "LZ4"), (False, "ZSTD")])
def test_ours_decrypts_what_the_official_client_encrypts(ours, official, topic, keys, batching, compression):
    consumer = ours.subscribe(topic, "s", crypto_key_reader=our_reader(keys))
    producer = official.create_producer(topic, encryption_key="app-key", crypto_key_reader=official_reader(keys),
                                        batching_enabled=batching, batching_max_publish_delay_ms=50,
                                        compression_type=getattr(pulsar.CompressionType, compression))
    for i in range(10):
        producer.send_async(b"secret-%d" % i, None, properties={"i": str(i)})
    producer.flush()
    got = received(consumer, 10)
    assert [m.data() for m in got] == [b"secret-%d" % i for i in range(10)]
    assert [m.properties()["i"] for m in got] == [str(i) for i in range(10)]
    context = got[0].encryption_context()
    assert not context.is_decryption_failed()
    assert [k.key for k in context.keys()] == ["app-key"] and len(context.param()) == 12
    assert context.batch_size() == (-1 if not batching else context.batch_size())


def test_ours_decrypts_the_official_clients_chunked_encrypted_message(broker_proc, official, topic, keys):
    payload = bytes(range(256)) * (3 * MAX_MESSAGE_SIZE // 256)
    with Client(broker_proc.service_url, transport="binary") as ours:
        consumer = ours.subscribe(topic, "s", crypto_key_reader=our_reader(keys))
        producer = official.create_producer(topic, encryption_key="k", crypto_key_reader=official_reader(keys),
                                            batching_enabled=False, chunking_enabled=True)
        producer.send(payload)
        assert received(consumer, 1)[0].data() == payload


# ------------------------------------------------------------------ ours -> official
@pytest.mark.transports
@pytest.mark.parametrize("batching, compression", [(False, CompressionType.NONE), (True, CompressionType.NONE),
                                                   (True, CompressionType.ZLib), (False, CompressionType.LZ4)])
def test_the_official_client_decrypts_what_ours_encrypts(ours, official, topic, keys, batching, compression):
    consumer = official.subscribe(topic, "s", crypto_key_reader=official_reader(keys))
    producer = ours.create_producer(topic, encryption_key="app-key", crypto_key_reader=our_reader(keys),
                                    batching_enabled=batching, compression_type=compression)
    for i in range(10):
        producer.send_async(b"secret-%d" % i, None, partition_key=f"k{i}")
    producer.flush()
    got = received(consumer, 10)
    assert [m.data() for m in got] == [b"secret-%d" % i for i in range(10)]
    assert [m.partition_key() for m in got] == [f"k{i}" for i in range(10)]


def test_the_official_client_decrypts_our_chunked_encrypted_message(broker_proc, official, topic, keys):
    payload = bytes(range(256)) * (3 * MAX_MESSAGE_SIZE // 256)
    consumer = official.subscribe(topic, "s", crypto_key_reader=official_reader(keys))
    with Client(broker_proc.service_url, transport="binary") as ours:
        producer = ours.create_producer(topic, encryption_key="k", crypto_key_reader=our_reader(keys),
                                        chunking_enabled=True)
        producer.send(payload)
        producer.send(b"after")
    got = received(consumer, 2)
    assert [m.data() for m in got] == [payload, b"after"]


def test_ours_wraps_the_data_key_for_each_key_and_the_official_client_opens_its_own(ours, official, topic, keys):
    class Both(pulsarlike.CryptoKeyReader):  # a user's key reader: one public key per key name
        def __init__(self):
            pass

        def get_public_key(self, key_name, metadata):
            return pulsarlike.EncryptionKeyInfo(open(keys[key_name][0], "rb").read(), {"owner": key_name})

    consumer = official.subscribe(topic, "s", crypto_key_reader=official_reader(keys, "other"))
    producer = ours.create_producer(topic, encryption_keys=["rsa", "other"], crypto_key_reader=Both())
    producer.send(b"for both")
    msg = received(consumer, 1)[0]
    assert msg.data() == b"for both"
    assert sorted(k.key for k in msg.encryption_context().keys()) == ["other", "rsa"]


# ------------------------------------------------------------------ EC keys, our key reader
@pytest.mark.transports
def test_ec_keys_wrap_the_data_key_with_ecies_batched_and_chunked(ours, broker_proc, topic, keys):
    consumer = ours.subscribe(topic, "s", crypto_key_reader=our_reader(keys, "ec"))
    producer = ours.create_producer(topic, encryption_key="ec", crypto_key_reader=our_reader(keys, "ec"),
                                    batching_enabled=True, compression_type=CompressionType.ZSTD)
    for i in range(5):
        producer.send_async(b"ec-%d" % i, None)
    producer.flush()
    got = received(consumer, 5)
    assert [m.data() for m in got] == [b"ec-%d" % i for i in range(5)]
    wrapped = got[0].encryption_context().keys()[0].value
    assert len(wrapped) == 65 + 32 + 20  # V (P-256 point) | C | HMAC-SHA1 tag


def test_the_official_client_cannot_encrypt_with_an_ec_key_its_core_wraps_with_rsa_only(official, topic, keys):
    producer = official.create_producer(topic, encryption_key="ec", crypto_key_reader=official_reader(keys, "ec"))
    with pytest.raises(pulsar.CryptoError):
        producer.send(b"x")


def test_a_public_key_that_does_not_load_fails_the_send_with_crypto_error(ours, topic, tmp_path):
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    producer = ours.create_producer(topic, encryption_key="k",
                                    crypto_key_reader=pulsarlike.CryptoKeyReader(str(bad), str(bad)))
    with pytest.raises(CryptoError, match="cannot load the public key 'k'"):
        producer.send(b"x")
    assert isinstance(CryptoError("x"), pulsarlike.PulsarException)


def test_encryption_options_are_checked_as_pulsar_client_checks_them(ours, topic, keys):
    with pytest.raises(ValueError, match="crypto_key_reader"):
        ours.create_producer(topic, encryption_key="k", crypto_key_reader=object())
    with pytest.raises(pulsarlike.InvalidConfiguration, match="needs crypto_key_reader"):
        ours.create_producer(topic, encryption_key="k")
    with pytest.raises(ValueError, match="crypto_failure_action"):
        ours.subscribe(topic, "s", crypto_failure_action="CONSUME")
    with pytest.raises(ValueError, match="public_key_path"):
        pulsarlike.CryptoKeyReader(1, "x")


# ------------------------------------------------------------------ a wrong key, each failure action
def _send_encrypted(official, topic, keys, batching):
    producer = official.create_producer(topic, encryption_key="k", crypto_key_reader=official_reader(keys),
                                        batching_enabled=batching, batching_max_publish_delay_ms=50)
    for i in range(3):
        producer.send_async(b"m%d" % i, None)
    producer.flush()
    producer.close()


@pytest.mark.transports
@pytest.mark.parametrize("batching", [False, True])
def test_fail_keeps_a_message_it_cannot_decrypt_unacknowledged(ours, official, topic, keys, batching):
    wrong = ours.subscribe(topic, "s", crypto_key_reader=our_reader(keys, "other"))
    _send_encrypted(official, topic, keys, batching)
    with pytest.raises(pulsarlike.Timeout):
        wrong.receive(timeout_millis=500)
    wrong.close()
    right = ours.subscribe(topic, "s", crypto_key_reader=our_reader(keys))
    assert [m.data() for m in received(right, 3)] == [b"m0", b"m1", b"m2"]


@pytest.mark.transports
def test_fail_redelivers_after_the_ack_timeout_as_pulsar_client(ours, official, topic, keys):
    wrong = ours.subscribe(topic, "s", consumer_type=pulsarlike.ConsumerType.Shared,
                           crypto_key_reader=our_reader(keys, "other"), unacked_messages_timeout_ms=1000)
    _send_encrypted(official, topic, keys, False)
    with pytest.raises(pulsarlike.Timeout):
        wrong.receive(timeout_millis=300)
    right = ours.subscribe(topic, "s", consumer_type=pulsarlike.ConsumerType.Shared,
                           crypto_key_reader=our_reader(keys))
    # the wrong consumer's messages come back after its ack timeout: the right one gets all three
    assert sorted(m.data() for m in received(right, 3, timeout_millis=10000)) == [b"m0", b"m1", b"m2"]


@pytest.mark.transports
@pytest.mark.parametrize("batching", [False, True])
def test_discard_acknowledges_and_skips_what_it_cannot_decrypt(ours, official, topic, keys, batching):
    wrong = ours.subscribe(topic, "s", crypto_key_reader=our_reader(keys, "other"),
                           crypto_failure_action=pulsarlike.ConsumerCryptoFailureAction.DISCARD)
    _send_encrypted(official, topic, keys, batching)
    plain = official.create_producer(topic)
    plain.send(b"plain")
    assert [m.data() for m in received(wrong, 1)] == [b"plain"]
    wrong.close()
    again = ours.subscribe(topic, "s", crypto_key_reader=our_reader(keys))
    with pytest.raises(pulsarlike.Timeout):  # acknowledged: nothing comes back
        again.receive(timeout_millis=500)


@pytest.mark.transports
@pytest.mark.parametrize("batching", [False, True])
def test_consume_delivers_what_it_cannot_decrypt_as_sent_with_its_context(ours, official, topic, keys, batching):
    consumer = ours.subscribe(topic, "s", crypto_key_reader=our_reader(keys, "other"),
                              crypto_failure_action=pulsarlike.ConsumerCryptoFailureAction.CONSUME)
    _send_encrypted(official, topic, keys, batching)
    got = []
    while sum(max(1, m.encryption_context().batch_size()) for m in got) < 3:
        got.append(received(consumer, 1)[0])
    for msg in got:
        context = msg.encryption_context()
        assert context.is_decryption_failed() and msg.data() not in (b"m0", b"m1", b"m2")
        assert [k.key for k in context.keys()] == ["k"] and len(context.param()) == 12
    # the application decrypts it itself with what the context gives
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    private = serialization.load_pem_private_key(open(keys["rsa"][1], "rb").read(), None)
    context = got[0].encryption_context()
    data_key = private.decrypt(context.keys()[0].value, padding.OAEP(padding.MGF1(hashes.SHA1()), hashes.SHA1(), None))
    plain = AESGCM(data_key).decrypt(context.param(), got[0].data(), None)
    assert plain == b"m0" if not batching else b"m0" in plain
    consumer.close()
    again = ours.subscribe(topic, "s", crypto_key_reader=our_reader(keys))
    with pytest.raises(pulsarlike.Timeout):  # acknowledged above, a batch as a whole
        again.receive(timeout_millis=500)


def test_without_a_key_reader_an_encrypted_message_is_not_delivered(ours, official, topic, keys):
    consumer = ours.subscribe(topic, "s")
    _send_encrypted(official, topic, keys, False)
    with pytest.raises(pulsarlike.Timeout):
        consumer.receive(timeout_millis=500)


def test_a_reader_decrypts_too(ours, official, topic, keys):
    _send_encrypted(official, topic, keys, True)
    reader = ours.create_reader(topic, pulsarlike.MessageId.earliest, crypto_key_reader=our_reader(keys))
    assert [reader.read_next(timeout_millis=10000).data() for _ in range(3)] == [b"m0", b"m1", b"m2"]
