"""PulsarConnection (connector.client.transport.binary.connection) against a scripted fake broker on a loopback socket,
and BinaryTransport's lookups (connector.client.transport.binary.transport) with fake connections."""
from __future__ import annotations

import socket
import threading
from typing import Callable

import pytest

from broker_core import errors
from broker_core.protocol import pulsar_commands_pb2 as cmd
from broker_core.protocol.frames import FrameReader, encode

from connector.client.security.authentication import AuthenticationBasic, AuthenticationToken
from connector.client.transport.binary import connection as connection_module
from connector.client.transport.binary.connection import HANDED_OVER_FROM, PulsarConnection
from connector.client.transport.binary.transport import BinaryTransport
from connector.client.transport.binary.wire import payload_frame
from connector.client.security import Security
from tests.waiting import wait_until

T = cmd.BaseCommand
Answer = Callable[["FakeBroker", cmd.BaseCommand], None]


class FakeBroker:
    """Accepts one connection; answers CONNECT with CONNECTED (or ``on_connect``), records every frame it
    gets and lets ``answer(broker, command)`` reply to the others."""

    def __init__(self, answer: Answer | None = None, on_connect: Answer | None = None,
                 server_version: str = "fake-broker") -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.answer = answer
        self.on_connect = on_connect
        self.server_version = server_version
        self.received: list[cmd.BaseCommand] = []
        self.sock: socket.socket | None = None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.sock, _ = self.listener.accept()
        reader = FrameReader(1 << 20)
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return
                for command, _ in reader.feed(data):
                    self.received.append(command)
                    if command.type == T.CONNECT:
                        (self.on_connect or FakeBroker.connected)(self, command)
                    elif self.answer is not None:
                        self.answer(self, command)
        except OSError:
            return

    def connected(self, command: cmd.BaseCommand) -> None:
        self.send(T(type=T.CONNECTED, connected=cmd.CommandConnected(
            server_version=self.server_version, protocol_version=20, max_message_size=1 << 20)))

    def send(self, command: cmd.BaseCommand, payload: bytes | None = None) -> None:
        assert self.sock is not None
        self.sock.sendall(encode(command) if payload is None else b"".join(payload_frame(command, payload)))

    def kinds(self) -> list[int]:
        return [c.type for c in self.received]

    def drop(self) -> None:
        """Close the connection (shut down first: a close alone does not end a recv in another thread)."""
        assert self.sock is not None
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.sock.close()
        self.listener.close()


class Handler:
    def __init__(self) -> None:
        self.frames: list[tuple[cmd.BaseCommand, bytes | None]] = []
        self.lost: list[errors.PulsarLikeError] = []

    def on_frame(self, command, payload):
        self.frames.append((command, None if payload is None else bytes(payload)))

    def on_connection_lost(self, error):
        self.lost.append(error)


@pytest.fixture
def brokers():
    made: list[FakeBroker] = []

    def make(**kwargs) -> FakeBroker:
        made.append(FakeBroker(**kwargs))
        return made[-1]
    yield make
    for b in made:
        b.close()


def _success(broker: FakeBroker, command: cmd.BaseCommand) -> None:
    if command.type == T.PARTITIONED_METADATA:
        broker.send(T(type=T.PARTITIONED_METADATA_RESPONSE,
                      partitionMetadataResponse=cmd.CommandPartitionedTopicMetadataResponse(
                          request_id=command.partitionMetadata.request_id, partitions=3)))
    elif command.type == T.LOOKUP:
        broker.send(T(type=T.ERROR, error=cmd.CommandError(request_id=command.lookupTopic.request_id,
                                                           error=cmd.TopicNotFound, message="no such topic")))


def test_connect_announces_the_client_and_its_token_and_reads_what_the_broker_is(brokers):
    broker = brokers()
    conn = PulsarConnection(broker.address, Security(AuthenticationToken("tok-1")), 5)
    try:
        connect = broker.received[0].connect
        assert (connect.client_version, connect.protocol_version) == ("pulsarlike-python", 21)
        assert (connect.auth_method_name, connect.auth_data) == ("token", b"tok-1")
        assert connect.feature_flags.supports_auth_refresh
        assert (conn.server_version, conn.protocol_version, conn.max_message_size) == ("fake-broker", 20, 1 << 20)
        assert not conn.is_pulsarlike
    finally:
        conn.close()


def test_basic_credentials_travel_as_user_colon_password(brokers):
    broker = brokers()
    conn = PulsarConnection(broker.address, Security(AuthenticationBasic("alice", "s3cret")), 5)
    conn.close()
    connect = broker.received[0].connect
    assert (connect.auth_method_name, connect.auth_data) == ("basic", b"alice:s3cret")


def test_a_connection_through_a_proxy_names_the_broker_in_connect(brokers):
    broker = brokers()
    PulsarConnection(broker.address, Security(), 5, proxy_to_broker_url="b1:6650").close()
    assert broker.received[0].connect.proxy_to_broker_url == "b1:6650"


def test_a_refused_connect_raises_the_brokers_typed_error(brokers):
    def refuse(broker, command):
        broker.send(T(type=T.ERROR, error=cmd.CommandError(request_id=0, error=cmd.AuthenticationError,
                                                           message="bad token")))
    broker = brokers(on_connect=refuse)
    with pytest.raises(errors.AuthenticationError, match="bad token"):
        PulsarConnection(broker.address, Security(AuthenticationToken("nope")), 5)


def test_nothing_listening_is_a_connect_error_naming_the_address():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    with pytest.raises(errors.ConnectError, match=address):
        PulsarConnection(address, Security(), 2)


def test_requests_get_the_answers_with_their_request_id_and_errors_typed(brokers):
    broker = brokers(answer=_success)
    conn = PulsarConnection(broker.address, Security(), 5)
    try:
        rid = conn.next_request_id()
        answer = conn.request(T(type=T.PARTITIONED_METADATA, partitionMetadata=cmd.CommandPartitionedTopicMetadata(
            topic="t", request_id=rid)), 5)
        assert answer.partitionMetadataResponse.partitions == 3
        with pytest.raises(errors.TopicNotFound, match="no such topic"):
            conn.request(T(type=T.LOOKUP, lookupTopic=cmd.CommandLookupTopic(
                topic="t", request_id=conn.next_request_id())), 5)
        with pytest.raises(errors.Timeout, match="did not answer GET_SCHEMA"):
            conn.request(T(type=T.GET_SCHEMA, getSchema=cmd.CommandGetSchema(
                topic="t", request_id=conn.next_request_id())), 0.05)
    finally:
        conn.close()


def test_producer_and_consumer_frames_reach_their_handlers_and_pings_are_answered(brokers):
    broker = brokers()
    conn = PulsarConnection(broker.address, Security(), 5)
    producer, consumer, other = Handler(), Handler(), Handler()
    conn.register_producer(1, producer)
    conn.register_consumer(1, consumer)
    conn.register_consumer(2, other)
    try:
        broker.send(T(type=T.SEND_RECEIPT, send_receipt=cmd.CommandSendReceipt(producer_id=1, sequence_id=4)))
        message = cmd.CommandMessage(consumer_id=1, message_id={"ledgerId": 1, "entryId": 2})
        broker.send(T(type=T.MESSAGE, message=message), b"\x00\x00\x00\x00body")
        broker.send(T(type=T.PING, ping=cmd.CommandPing()))
        assert wait_until(lambda: producer.frames and consumer.frames and T.PONG in broker.kinds())
        assert producer.frames[0][0].send_receipt.sequence_id == 4
        command, payload = consumer.frames[0]
        assert command.message.message_id.entryId == 2
        assert payload is not None and payload.startswith(b"\x0e\x01") and payload.endswith(b"body")
        assert other.frames == []
    finally:
        conn.close()


def test_a_handler_asking_synchronously_on_the_io_thread_is_told_to_ask_asynchronously(brokers):
    broker = brokers()
    conn = PulsarConnection(broker.address, Security(), 5)
    seen: list[Exception] = []

    class Asking(Handler):
        def on_frame(self, command, payload):
            try:
                conn.request(T(type=T.GET_SCHEMA, getSchema=cmd.CommandGetSchema(topic="t", request_id=1)), 5)
            except errors.PulsarLikeError as exc:
                seen.append(exc)
    conn.register_producer(1, Asking())
    try:
        broker.send(T(type=T.SEND_RECEIPT, send_receipt=cmd.CommandSendReceipt(producer_id=1, sequence_id=1)))
        assert wait_until(lambda: seen, timeout_s=3)
        assert "request_async" in str(seen[0])
    finally:
        conn.close()


def test_sends_arrive_in_order_even_when_the_socket_cannot_take_them_at_once(brokers):
    broker = brokers()
    conn = PulsarConnection(broker.address, Security(), 5)
    try:
        big = b"\x00\x00\x00\x00" + b"x" * 200_000
        frames = [(T(type=T.SEND, send=cmd.CommandSend(producer_id=1, sequence_id=i)), big) for i in range(20)]
        for command, payload in frames[:10]:
            conn.send(command, payload)
        conn.send_many(frames[10:])
        assert wait_until(lambda: len(broker.received) == 21, timeout_s=20)
        assert [c.send.sequence_id for c in broker.received[1:]] == list(range(20))
    finally:
        conn.close()


def test_a_large_frame_is_written_by_the_io_thread_and_a_small_one_by_the_caller(brokers):
    broker = brokers()
    conn = PulsarConnection(broker.address, Security(), 5)
    real, writers = conn._sock, []

    class Recording:  # the connection's socket, noting which thread sends how much
        def __getattr__(self, name):
            return getattr(real, name)

        def send(self, data):
            writers.append((threading.current_thread().name, len(data)))
            return real.send(data)

    conn._sock = Recording()
    try:
        conn.send(T(type=T.PING, ping=cmd.CommandPing()))
        conn.send(T(type=T.SEND, send=cmd.CommandSend(producer_id=1, sequence_id=1)),
                  b"\x00\x00\x00\x00" + b"x" * HANDED_OVER_FROM)
        assert wait_until(lambda: len(broker.received) == 3)
        me = threading.current_thread().name
        assert [name == me for name, size in writers if size < HANDED_OVER_FROM][:1] == [True]
        assert [name == me for name, size in writers if size >= HANDED_OVER_FROM] == [False]
    finally:
        conn.close()


def test_an_auth_challenge_is_answered_with_credentials_asked_afresh(brokers):
    tokens = iter(["first", "second"])
    broker = brokers()
    conn = PulsarConnection(broker.address, Security(AuthenticationToken(lambda: next(tokens))), 5)
    try:
        broker.send(T(type=T.AUTH_CHALLENGE, authChallenge=cmd.CommandAuthChallenge(
            challenge=cmd.AuthData(auth_method_name="token", auth_data=b"PulsarAuthRefresh"))))
        assert wait_until(lambda: T.AUTH_RESPONSE in broker.kinds())
        response = broker.received[-1].authResponse.response
        assert (response.auth_method_name, response.auth_data) == ("token", b"second")
    finally:
        conn.close()


def test_a_lost_connection_fails_waiting_requests_and_tells_every_handler_once(brokers):
    broker = brokers()
    conn = PulsarConnection(broker.address, Security(), 5)
    handler = Handler()
    conn.register_consumer(1, handler)
    failures: list[errors.PulsarLikeError | None] = []
    conn.request_async(T(type=T.GET_SCHEMA, getSchema=cmd.CommandGetSchema(topic="t", request_id=9)),
                       lambda answer, error: failures.append(error))
    assert wait_until(lambda: T.GET_SCHEMA in broker.kinds())
    broker.drop()
    assert wait_until(lambda: conn.closed and handler.lost and failures)
    assert isinstance(handler.lost[0], errors.ConnectError) and len(handler.lost) == 1
    assert isinstance(failures[0], errors.ConnectError)
    late = Handler()
    conn.register_producer(1, late)  # registered after the end: told at once
    assert len(late.lost) == 1
    conn.send(T(type=T.PING, ping=cmd.CommandPing()))  # dropped, not raised
    conn.close()
    assert len(handler.lost) == 1


def test_a_silent_broker_is_pinged_then_taken_for_dead(brokers):
    broker = brokers()  # answers nothing after CONNECTED, not even PING
    conn = PulsarConnection(broker.address, Security(), 5, keepalive_s=0.05)
    handler = Handler()
    conn.register_producer(1, handler)
    assert wait_until(lambda: handler.lost, timeout_s=5)
    assert T.PING in broker.kinds()
    assert "PING unanswered" in handler.lost[0].message


# ---------------------------------------------------------------- BinaryTransport lookups, with fakes
class FakeConnection:
    def __init__(self, address: str, proxy_to: str, answers: dict[str, list[cmd.CommandLookupTopicResponse]],
                 server_version: str = "pulsarlike") -> None:
        self.address, self.proxy_to = address, proxy_to
        self.answers = answers
        self.closed = False
        self.is_pulsarlike = server_version.startswith("pulsarlike")
        self.server_version = server_version
        self.asked: list[cmd.CommandLookupTopic] = []
        self.listeners: list = []
        self._ids = iter(range(1, 1000))

    def next_request_id(self) -> int:
        return next(self._ids)

    def request(self, command, timeout_s):
        self.asked.append(command.lookupTopic)
        answer = self.answers[self.address].pop(0)
        answer.request_id = command.lookupTopic.request_id
        return T(type=T.LOOKUP_RESPONSE, lookupTopicResponse=answer)

    def add_lost_listener(self, listener):
        self.listeners.append(listener)

    def lose(self):
        self.closed = True
        for listener in self.listeners:
            listener(errors.ConnectError("lost"))

    def close(self):
        self.closed = True


class FakeTransport(BinaryTransport):
    def __init__(self, service_url, answers, tls=False):
        from connector.client.security import TlsOptions
        super().__init__(service_url, 5, 5, Security(tls=TlsOptions()) if tls else Security())
        self.answers = answers
        self.opened: list[FakeConnection] = []

    def _open(self, address, proxy_to):
        self.opened.append(FakeConnection(address, proxy_to, self.answers))
        return self.opened[-1]


L = cmd.CommandLookupTopicResponse


def test_a_redirect_is_looked_up_again_on_the_broker_it_names_with_its_authoritative_flag():
    answers = {"svc:6650": [L(response=L.Redirect, brokerServiceUrl="pulsar://b1:6650", authoritative=True)],
               "b1:6650": [L(response=L.Connect, brokerServiceUrl="pulsar://b2:6650", authoritative=True)]}
    transport = FakeTransport("pulsar://svc:6650", answers)
    conn = transport.connection_for("persistent://t/n/x")
    assert conn.address == "b2:6650"
    svc, b1, b2 = transport.opened
    assert [a.authoritative for a in svc.asked + b1.asked] == [False, True]
    assert transport.connection_for("persistent://t/n/x") is conn  # cached
    assert len(svc.asked) == 1


def test_a_cached_lookup_is_dropped_with_its_connection_and_when_forgotten():
    answers = {"svc:6650": [L(response=L.Connect, brokerServiceUrl="pulsar://b1:6650")] * 3,
               "b1:6650": []}
    transport = FakeTransport("pulsar://svc:6650", answers)
    first = transport.connection_for("t")
    first.lose()
    second = transport.connection_for("t")
    assert second is not first and not second.closed
    transport.forget("t")
    transport.connection_for("t")
    assert len(transport.opened[0].asked) == 3


def test_tls_follows_the_tls_url_and_a_proxied_broker_is_reached_through_the_service_url():
    answers = {"svc:6651": [L(response=L.Connect, brokerServiceUrl="pulsar://b1:6650",
                              brokerServiceUrlTls="pulsar+ssl://b1:6651", proxy_through_service_url=True)]}
    transport = FakeTransport("pulsar+ssl://svc:6651", answers, tls=True)
    conn = transport.connection_for("t")
    assert (conn.address, conn.proxy_to) == ("svc:6651", "b1:6651")


def test_a_lookup_without_the_url_the_connection_needs_is_service_not_ready():
    answers = {"svc:6651": [L(response=L.Connect, brokerServiceUrl="pulsar://b1:6650")]}
    transport = FakeTransport("pulsar+ssl://svc:6651", answers, tls=True)
    with pytest.raises(errors.ServiceNotReady, match="no broker TLS URL"):
        transport.connection_for("t")


def test_endless_redirects_end_with_service_not_ready():
    answers = {"svc:6650": [L(response=L.Redirect, brokerServiceUrl="pulsar://svc:6650")] * 30}
    transport = FakeTransport("pulsar://svc:6650", answers)
    with pytest.raises(errors.ServiceNotReady, match="redirected"):
        transport.connection_for("t")


def test_positions_are_dense_on_pulsarlike():
    transport = FakeTransport("pulsar://svc:6650", {})
    transport.ensure_ready()
    assert transport.positions.dense


def test_the_keepalive_default_is_pulsars():
    assert connection_module.KEEPALIVE_S == 30.0


def test_concurrent_requests_each_get_their_own_answer(brokers):
    def answer(broker, command):
        request = command.partitionMetadata
        broker.send(T(type=T.PARTITIONED_METADATA_RESPONSE,
                      partitionMetadataResponse=cmd.CommandPartitionedTopicMetadataResponse(
                          request_id=request.request_id, partitions=int(request.topic))))
    broker = brokers(answer=answer)
    conn = PulsarConnection(broker.address, Security(), 5)
    results: dict[int, int] = {}

    def ask(n: int) -> None:
        for i in range(50):
            topic = n * 1000 + i
            got = conn.request(T(type=T.PARTITIONED_METADATA, partitionMetadata=cmd.CommandPartitionedTopicMetadata(
                topic=str(topic), request_id=conn.next_request_id())), 5)
            results[topic] = got.partitionMetadataResponse.partitions
    threads = [threading.Thread(target=ask, args=(n,)) for n in range(8)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert len(results) == 400 and all(k == v for k, v in results.items())
    finally:
        conn.close()


# ---------------------------------------------------------------- TLS options, last message ids
def test_tls_options_say_what_is_verified():
    from connector.client.transport.binary.handshake import tls_context
    from connector.client.security import TlsOptions
    import ssl

    assert tls_context(TlsOptions()).verify_mode == ssl.CERT_REQUIRED
    assert not tls_context(TlsOptions()).check_hostname  # pulsar-client's default: the chain, not the name
    assert tls_context(TlsOptions(validate_hostname=True)).check_hostname
    insecure = tls_context(TlsOptions(allow_insecure=True, validate_hostname=True))
    assert insecure.verify_mode == ssl.CERT_NONE and not insecure.check_hostname


def test_a_last_message_id_becomes_the_last_message_with_its_position():
    from connector.client.transport.binary.unary import last_message_of
    from connector.client.transport.events import LastMessage
    from connector.client.transport import DENSE

    Reply = cmd.CommandGetLastMessageIdResponse
    empty = Reply(request_id=1, last_message_id={"ledgerId": (1 << 64) - 1, "entryId": (1 << 64) - 1})
    assert last_message_of(empty, -1, DENSE) == LastMessage()
    batch = Reply(request_id=1, last_message_id={"ledgerId": 0, "entryId": 10, "batch_index": 2},
                  consumer_mark_delete_position={"ledgerId": 0, "entryId": 4})
    assert last_message_of(batch, -1, DENSE) == LastMessage(0, 10, 2, last_offset=12, start_offset=5)


class RefusingFirst(FakeTransport):
    """The broker refuses ``refusals`` connections (it is restarting), then accepts."""

    def __init__(self, refusals, connection_timeout_s=5.0):
        super().__init__("pulsar://svc:6650", {})
        self.connection_timeout_s = connection_timeout_s
        self.refusals = refusals

    def _open(self, address, proxy_to):
        if self.refusals > 0:
            self.refusals -= 1
            raise errors.ConnectError(f"cannot connect to the broker at {address}: Connection refused")
        return super()._open(address, proxy_to)


def test_ensure_ready_waits_for_a_broker_that_is_restarting_as_a_grpc_channel_does():
    transport = RefusingFirst(refusals=2)
    transport.ensure_ready()
    assert transport.refusals == 0 and len(transport.opened) == 1


def test_ensure_ready_gives_up_after_the_connection_timeout_naming_the_broker():
    transport = RefusingFirst(refusals=10**6, connection_timeout_s=0.3)
    with pytest.raises(errors.ConnectError, match="cannot connect to the broker at svc:6650 within 0.3s"):
        transport.ensure_ready()
    assert transport.refusals < 10**6 - 1  # it tried more than once


class BrokenPipe:
    """A socket whose writes fail (the broker went away); everything else is the real socket's."""

    def __init__(self, sock):
        self._sock = sock

    def send(self, data):
        raise BrokenPipeError(32, "Broken pipe")

    def __getattr__(self, name):
        return getattr(self._sock, name)


def test_a_write_failing_on_a_callers_thread_is_reported_from_the_io_thread_not_under_the_callers_locks():
    broker = FakeBroker()
    conn = PulsarConnection(broker.address, Security(), 5)
    producer_lock = threading.Lock()  # as a producer's: held while it sends, taken when its stream ends
    heard: list = []

    class Producer:
        def on_frame(self, command, payload):
            pass

        def on_connection_lost(self, error):
            heard.append((producer_lock.acquire(timeout=2), error))  # same thread as the sender: a deadlock
            if heard[-1][0]:
                producer_lock.release()

    conn.register_producer(1, Producer())
    conn._sock = BrokenPipe(conn._sock)
    with producer_lock:
        conn.send(T(type=T.PING, ping=cmd.CommandPing()))
    assert wait_until(lambda: heard, 5)
    acquired, error = heard[0]
    assert acquired and isinstance(error, errors.ConnectError) and "writing to the broker" in error.message
    assert conn.closed
