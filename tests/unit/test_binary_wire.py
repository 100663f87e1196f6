"""The client's binary framing (connector.client.transport.binary.wire) and the typed errors of broker answers
(broker_core.protocol.server_errors.error_of)."""
from __future__ import annotations

import pytest

from broker_core import errors
from broker_core.errors import ChecksumError
from broker_core.protocol import pulsar_api_pb2 as api
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.codec.entries import decode_entry, encode_entry
from broker_core.protocol.server_errors import _CODES, server_error

from connector.client.transport.binary import wire

T = cmd.BaseCommand


def _entry(payload: bytes = b"hello") -> bytes:
    return encode_entry(api.MessageMetadata(producer_name="p", sequence_id=7, publish_time=1), payload)


def _send(sequence_id: int = 7) -> cmd.BaseCommand:
    return T(type=T.SEND, send=cmd.CommandSend(producer_id=1, sequence_id=sequence_id))


def _read(data: bytes, max_message_size: int = wire.DEFAULT_MAX_MESSAGE_SIZE, step: int | None = None):
    reader = wire.FrameReader(wire.max_frame(max_message_size))
    step = step or len(data)
    out = []
    for i in range(0, len(data), step):
        out.extend((c, bytes(p)) for c, p in reader.feed(data[i:i + step]))
    return out


def test_an_entry_is_framed_as_it_is_and_read_back_whole_however_the_bytes_are_split():
    entry = _entry(b"x" * 300)
    data = b"".join(wire.payload_frame(_send(), entry)) + wire.encode(T(type=T.PING, ping=cmd.CommandPing()))
    for step in (1, 3, 7, 64, len(data)):
        frames = _read(data, step=step)
        assert [c.type for c, _ in frames] == [T.SEND, T.PING]
        assert frames[0][0].send.sequence_id == 7
        assert frames[0][1] == entry
        assert frames[1][1] == b""


def test_bytes_starting_at_the_metadata_size_get_the_magic_and_a_checksum_the_codec_verifies():
    entry = _entry(b"payload")
    without_magic = entry[6:]  # [metadataSize][metadata][payload]
    (command, payload), = _read(b"".join(wire.payload_frame(_send(), without_magic)))
    assert payload == entry
    metadata, body = decode_entry(payload)
    assert (metadata.sequence_id, bytes(body)) == (7, b"payload")


def test_a_payload_whose_bytes_changed_on_the_way_fails_its_checksum():
    entry = bytearray(_entry(b"payload"))
    entry[-1] ^= 0xFF
    (command, payload), = _read(b"".join(wire.payload_frame(_send(), bytes(entry))))
    with pytest.raises(ChecksumError):
        decode_entry(payload)


def test_a_frame_over_the_brokers_max_message_size_plus_padding_is_refused_before_it_is_buffered():
    big = _entry(b"x" * 2000)
    data = b"".join(wire.payload_frame(_send(), big))
    reader = wire.FrameReader(1000)
    with pytest.raises(wire.FrameSizeError, match="frames hold 4 to"):
        list(reader.feed(data[:8]))


def test_a_command_that_does_not_parse_is_a_frame_error():
    body = b"\xff\xff\xff"
    data = len(body).to_bytes(4, "big")
    frame = (len(body) + 4).to_bytes(4, "big") + data + body
    with pytest.raises(wire.FrameError, match="does not parse"):
        _read(frame)


@pytest.mark.parametrize("code", sorted(set(_CODES.values())))
def test_every_code_the_broker_answers_comes_back_as_an_error_the_broker_answers_with_that_code(code):
    error = wire.error_of(code, "why")
    assert isinstance(error, errors.PulsarLikeError)
    assert server_error(error) == code
    assert error.message == "why"


def test_codes_without_an_error_of_their_own_are_named_in_an_unknown_error():
    error = wire.error_of(cmd.TransactionConflict, "conflict")
    assert type(error) is errors.UnknownError
    assert "TransactionConflict" in error.message and "conflict" in error.message
    assert isinstance(wire.error_of(cmd.UnsupportedVersionError, ""), errors.NotSupported)
    assert isinstance(wire.error_of(cmd.MetadataError, "m"), errors.PersistenceError)


def test_answers_carry_their_typed_errors_and_successful_answers_none():
    err = T(type=T.ERROR, error=cmd.CommandError(request_id=1, error=cmd.TopicNotFound, message="gone"))
    assert isinstance(wire.answer_error(err), errors.TopicNotFound)
    lookup = T(type=T.LOOKUP_RESPONSE, lookupTopicResponse=cmd.CommandLookupTopicResponse(
        request_id=1, response=cmd.CommandLookupTopicResponse.Failed, error=cmd.ServiceNotReady, message="busy"))
    assert isinstance(wire.answer_error(lookup), errors.ServiceNotReady)
    lookup.lookupTopicResponse.response = cmd.CommandLookupTopicResponse.Connect
    assert wire.answer_error(lookup) is None
    Meta = cmd.CommandPartitionedTopicMetadataResponse
    meta = T(type=T.PARTITIONED_METADATA_RESPONSE, partitionMetadataResponse=Meta(
        request_id=1, response=Meta.Failed, error=cmd.AuthorizationError))
    assert isinstance(wire.answer_error(meta), errors.AuthorizationError)
    schema = T(type=T.GET_SCHEMA_RESPONSE, getSchemaResponse=cmd.CommandGetSchemaResponse(
        request_id=1, error_code=cmd.TopicNotFound, error_message="no schema"))
    assert isinstance(wire.answer_error(schema), errors.TopicNotFound)
    created = T(type=T.GET_OR_CREATE_SCHEMA_RESPONSE, getOrCreateSchemaResponse=cmd.CommandGetOrCreateSchemaResponse(
        request_id=1, error_code=cmd.IncompatibleSchema, error_message="no"))
    assert isinstance(wire.answer_error(created), errors.IncompatibleSchema)
    ack = T(type=T.ACK_RESPONSE, ackResponse=cmd.CommandAckResponse(consumer_id=1, request_id=2))
    assert wire.answer_error(ack) is None
    assert wire.answer_error(T(type=T.SUCCESS, success=cmd.CommandSuccess(request_id=1))) is None


def test_a_missing_namespace_or_tenant_named_by_pulsarlike_reads_as_its_own_subclass_of_topic_not_found():
    namespace = wire.error_of(cmd.TopicNotFound, "namespace acme/orders does not exist: create it with ...")
    tenant = wire.error_of(cmd.TopicNotFound, "tenant acme does not exist; create it with ...")
    neither = wire.error_of(cmd.TopicNotFound, "namespace acme/orders does not exist, nor does its tenant acme")
    topic = wire.error_of(cmd.TopicNotFound, "Topic persistent://a/b/c not found")
    assert type(namespace) is errors.NamespaceNotFound and type(tenant) is errors.TenantNotFound
    assert type(neither) is errors.TenantNotFound and type(topic) is errors.TopicNotFound
