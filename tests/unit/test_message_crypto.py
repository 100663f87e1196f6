"""Pulsar's message encryption without a broker (issue 33): the format of an encrypted entry, the data key's
renewal every 4 hours on an injected clock, RSA-OAEP and ECIES wrapping, the consumer's data key cache, and
key readers (pulsar-client's file reader, a user's subclass, the camelCase spelling)."""
from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from broker_core.protocol import pulsar_api_pb2
from connector.client.security.crypto_keys import (
    CryptoError, CryptoKeyReader, EncryptionContext, EncryptionKeyInfo, unwrap_data_key, wrap_data_key)
from connector.client.security.message_crypto import (
    DATA_KEY_ROTATION_S, ConsumerCrypto, ConsumerCryptoFailureAction, ProducerCrypto, failure_action)

RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())


def pems(key):
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return public, private


class Keys(CryptoKeyReader):
    """A user's reader: PEMs in memory, by key name."""

    def __init__(self, **keys):
        self.keys = {name: pems(key) for name, key in keys.items()}

    def get_public_key(self, key_name, metadata):
        return EncryptionKeyInfo(self.keys[key_name][0], {"version": "1"})

    def get_private_key(self, key_name, metadata):
        assert metadata == {"version": "1"}  # the producer's metadata comes back with the wrapped key
        return self.keys[key_name][1]


def metadata():
    return pulsar_api_pb2.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1)


def test_an_entry_is_aes_256_gcm_with_a_12_byte_iv_and_the_data_key_rsa_oaep_sha1_wrapped():
    meta = metadata()
    encrypted = ProducerCrypto(["k"], Keys(k=RSA_KEY)).encrypt(meta, b"hello")
    (keys,) = meta.encryption_keys
    assert keys.key == "k" and [(kv.key, kv.value) for kv in keys.metadata] == [("version", "1")]
    assert len(meta.encryption_param) == 12 and not meta.encryption_algo
    oaep = padding.OAEP(padding.MGF1(hashes.SHA1()), hashes.SHA1(), None)
    data_key = RSA_KEY.decrypt(keys.value, oaep)
    assert len(data_key) == 32
    assert AESGCM(data_key).decrypt(meta.encryption_param, encrypted, None) == b"hello"
    assert len(encrypted) == len(b"hello") + 16  # ciphertext || GCM tag


def test_each_entry_gets_a_fresh_iv_under_the_same_data_key():
    crypto = ProducerCrypto(["k"], Keys(k=RSA_KEY))
    first, second = metadata(), metadata()
    crypto.encrypt(first, b"a")
    crypto.encrypt(second, b"a")
    assert first.encryption_param != second.encryption_param
    assert first.encryption_keys[0].value == second.encryption_keys[0].value


def test_the_data_key_is_renewed_every_four_hours_as_pulsar():
    now = [0.0]
    crypto = ProducerCrypto(["k"], Keys(k=RSA_KEY), clock=lambda: now[0])
    wrapped = []
    for at in (0, DATA_KEY_ROTATION_S - 1, DATA_KEY_ROTATION_S, DATA_KEY_ROTATION_S + 5):
        now[0] = at
        meta = metadata()
        crypto.encrypt(meta, b"x")
        wrapped.append(meta.encryption_keys[0].value)
    assert wrapped[0] == wrapped[1] != wrapped[2] == wrapped[3]


def test_ecies_wraps_and_unwraps_a_data_key_and_another_ec_key_cannot_open_it():
    wrapped = wrap_data_key(EC_KEY.public_key(), b"k" * 32, "ec")
    assert len(wrapped) == 65 + 32 + 20 and wrapped[0] == 4
    assert unwrap_data_key(EC_KEY, wrapped, "ec") == b"k" * 32
    with pytest.raises(CryptoError, match="cannot decrypt the data key"):
        unwrap_data_key(ec.generate_private_key(ec.SECP256R1()), wrapped, "ec")


@pytest.mark.parametrize("key", [RSA_KEY, EC_KEY], ids=["rsa", "ec"])
def test_a_consumer_decrypts_with_the_private_key_and_caches_the_data_key(key):
    reader = Keys(k=key)
    meta = metadata()
    payload = ProducerCrypto(["k"], reader).encrypt(meta, b"secret")
    asked = []
    real = reader.get_private_key
    reader.get_private_key = lambda name, m: asked.append(name) or real(name, m)
    consumer = ConsumerCrypto(reader, ConsumerCryptoFailureAction.FAIL)
    assert consumer.decrypt(meta, payload) == b"secret"
    assert consumer.decrypt(meta, payload) == b"secret"
    assert asked == ["k"]  # the second time from the cache


def test_a_wrong_key_a_tampered_payload_or_no_reader_decrypts_nothing():
    meta = metadata()
    payload = ProducerCrypto(["k"], Keys(k=RSA_KEY)).encrypt(meta, b"secret")
    other = Keys(k=rsa.generate_private_key(public_exponent=65537, key_size=2048))
    assert ConsumerCrypto(other, ConsumerCryptoFailureAction.FAIL).decrypt(meta, payload) is None
    right = ConsumerCrypto(Keys(k=RSA_KEY), ConsumerCryptoFailureAction.FAIL)
    assert right.decrypt(meta, payload[:-1] + bytes([payload[-1] ^ 1])) is None
    assert ConsumerCrypto(None, ConsumerCryptoFailureAction.CONSUME).decrypt(meta, payload) is None


def test_the_file_reader_reads_its_files_whatever_the_key_name(tmp_path):
    public, private = pems(RSA_KEY)
    (tmp_path / "pub.pem").write_bytes(public)
    (tmp_path / "key.pem").write_bytes(private)
    reader = CryptoKeyReader(str(tmp_path / "pub.pem"), str(tmp_path / "key.pem"))
    meta = metadata()
    payload = ProducerCrypto(["any-name"], reader).encrypt(meta, b"x")
    assert ConsumerCrypto(reader, ConsumerCryptoFailureAction.FAIL).decrypt(meta, payload) == b"x"
    missing = CryptoKeyReader(str(tmp_path / "none.pem"), str(tmp_path / "none.pem"))
    with pytest.raises(CryptoError, match="cannot read the public key"):
        ProducerCrypto(["k"], missing).encrypt(metadata(), b"x")


def test_a_reader_in_the_java_spelling_is_asked_too():
    class Camel(CryptoKeyReader):
        def __init__(self):
            pass

        def getPublicKey(self, key_name, metadata):  # noqa: N802  (Pulsar's Java/C++ name)
            return pems(EC_KEY)[0]

        def getPrivateKey(self, key_name, metadata):  # noqa: N802
            return EncryptionKeyInfo(pems(EC_KEY)[1])

    meta = metadata()
    payload = ProducerCrypto(["k"], Camel()).encrypt(meta, b"x")
    assert ConsumerCrypto(Camel(), ConsumerCryptoFailureAction.FAIL).decrypt(meta, payload) == b"x"


def test_the_encryption_context_says_what_pulsar_clients_does():
    meta = metadata()
    meta.num_messages_in_batch = 3
    meta.compression = pulsar_api_pb2.LZ4
    meta.uncompressed_size = 30
    ProducerCrypto(["k"], Keys(k=RSA_KEY)).encrypt(meta, b"x")
    context = EncryptionContext.of(meta, True)
    assert (context.batch_size(), context.uncompressed_message_size(), context.compression_type().name,
            context.is_decryption_failed(), context.algorithm()) == (3, 30, "LZ4", True, "")
    assert "EncryptionKey(key=k, value_len=256, metadata={'version': '1'})" in str(context)


def test_failure_actions_are_pulsar_clients():
    assert [(a.name, a.value) for a in ConsumerCryptoFailureAction] == [("FAIL", 0), ("DISCARD", 1), ("CONSUME", 2)]
    assert failure_action(None) is ConsumerCryptoFailureAction.FAIL
    with pytest.raises(ValueError, match="crypto_failure_action"):
        failure_action(7)
