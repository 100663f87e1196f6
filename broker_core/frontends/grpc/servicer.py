"""The gRPC servicer: translates between protobuf and the core (topics, dispatch), nothing more.

Streams follow one pattern: a reader task consumes the client's requests and puts responses on a bounded
:class:`~broker_core.core.backpressure.Outbox`; the handler yields from it. A full outbox stops its
stream: it reads no more requests, and a consumer's permits are withheld. Broker errors become
in-band ``Error`` messages on streams and gRPC statuses (with the error code in trailing metadata) on unary
calls, through :mod:`broker_core.protocol.status`. Requests arrive decoded and within the client's limits
(:mod:`broker_core.frontends.grpc.admission`); a stream ended by a malformed request logs one WARNING line.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import logging
import uuid
from typing import Any, AsyncIterator, Awaitable, Callable, Coroutine, Iterator, TypeVar

import grpc

from broker_core.errors import InvalidMessage, ProducerFenced, PulsarLikeError, UnknownError
from broker_core.protocol import broker_pb2 as pb
from broker_core.protocol import broker_pb2_grpc
from broker_core.protocol.status import error_to_proto, grpc_status, trailing_metadata, wire_message
from broker_core.core.access import AccessMode
from broker_core.frontends.grpc.admin_rpcs import AdminRpcs
from broker_core.frontends.grpc.topic_rpcs import TopicRpcs, position_offset
from broker_core.core.backpressure import END, OrderedReplies, Outbox, PermitGate, ReplyBudget
from broker_core.core.policies import NAMESPACE, TOPIC
from broker_core.core.producers import ProducerInfo, ProducerNames
from broker_core.core.nonpersistent.topic import not_stored
from broker_core.core.persistent.topic import Accepted
from broker_core.core.topic_protocol import Topic
from broker_core.core.registry import TopicRegistry
from broker_core.types import TopicName
from dispatch.consumer import Consumer, Delivery
from dispatch.key_shared import AUTO_SPLIT, STICKY, KeySharedPolicy
from dispatch.selectors.sticky import MAX_STICKY_RANGES
from dispatch.types import SubType

log = logging.getLogger(__name__)

PUBLISH_SLICE = 2048
"""Entries of one SendBatch verified and appended at a time (~17 us each): a 5 MB batch of 160,000 tiny
entries held the event loop 2.7 s in one go; between slices, the loop serves everyone else."""
T = TypeVar("T")

_SUB_TYPES = {pb.EXCLUSIVE_SUB: SubType.EXCLUSIVE, pb.FAILOVER_SUB: SubType.FAILOVER,
              pb.SHARED_SUB: SubType.SHARED, pb.KEY_SHARED_SUB: SubType.KEY_SHARED}
_ACCESS_MODES = {pb.SHARED: AccessMode.SHARED, pb.EXCLUSIVE: AccessMode.EXCLUSIVE,
                 pb.EXCLUSIVE_WITH_FENCING: AccessMode.EXCLUSIVE_WITH_FENCING,
                 pb.WAIT_FOR_EXCLUSIVE: AccessMode.WAIT_FOR_EXCLUSIVE}


def _unexpected(exc: BaseException) -> PulsarLikeError:
    # the exception's text may hold server paths (an OSError's file name): it goes to the log, never the client
    error_id = uuid.uuid4().hex[:12]
    log.error("event=unexpected_error error_id=%s error_type=%s error=%s", error_id, type(exc).__name__, exc,
              exc_info=exc)
    return UnknownError(f"internal broker error (error id {error_id}); the broker's log has the details",
                        error_id=error_id)


def _replies(results: list[Accepted], error: BaseException | None) -> list[pb.ProduceResponse]:
    out: list[pb.ProduceResponse] = []
    receipts: list[pb.SendReceipt] = []
    for result in results:
        if result.duplicate:
            receipts.append(pb.SendReceipt(sequence_id=result.sequence_id,
                                           highest_sequence_id=result.highest_sequence_id, duplicate=True))
            continue
        failure = result.error or (error if result.entry is not None else None)
        if failure is None:
            entry = result.entry
            receipts.append(pb.SendReceipt(sequence_id=result.sequence_id,
                                           highest_sequence_id=result.highest_sequence_id,
                                           ledger_id=entry.ledger_id, entry_id=entry.offset))
            continue
        if receipts:
            out.append(pb.ProduceResponse(receipts=pb.Receipts(receipts=receipts)))
            receipts = []
        if not isinstance(failure, PulsarLikeError):
            failure = _unexpected(failure)
        out.append(pb.ProduceResponse(failure=pb.SendFailure(sequence_id=result.sequence_id,
                                                             error=error_to_proto(failure))))
    if receipts:
        out.append(pb.ProduceResponse(receipts=pb.Receipts(receipts=receipts)))
    return out


_END_OF_TOPIC = pb.ConsumeResponse(end_of_topic=pb.ReachedEndOfTopic())


def _delivered(deliveries: list[Delivery]) -> pb.ConsumeResponse:
    response = pb.ConsumeResponse()
    add = response.deliveries.entries.add  # built in place: each entry's bytes are copied once
    for d in deliveries:
        e = d.entry
        add(data=e.data, ledger_id=e.ledger_id, entry_id=e.offset, num_messages=e.num_messages,
            redelivery_count=d.redelivery_count, ack_set=d.ack_set or ())
    return response


class BrokerServicer(AdminRpcs, TopicRpcs, broker_pb2_grpc.PulsarLikeServicer):
    def __init__(self, registry: TopicRegistry, producer_names: ProducerNames,
                 consumer_ids: Iterator[int] | None = None) -> None:
        """``consumer_ids``: broker-wide consumer ids, shared with the Pulsar binary front end."""
        self._registry = registry
        self.advertised = pb.LookupResult()
        """The broker's URLs, as ``LookupTopic`` answers them (set once the broker is bound)."""
        self._names = producer_names
        self._consumer_ids = consumer_ids or itertools.count(1)
        self._budget = ReplyBudget(registry.config.brokerReplyQueueMaxBytes)

    def _outbox(self) -> Outbox:
        config = self._registry.config
        return Outbox(config.streamReplyQueueMaxMessages, config.streamReplyQueueMaxBytes, self._budget)

    # ================================================================== produce
    async def Produce(self, request_iterator, context) -> AsyncIterator[pb.ProduceResponse]:
        out = self._outbox()
        async for response in _serve(self._produce_session(request_iterator, out, context.peer()), out):
            yield response

    async def _produce_session(self, requests, out: Outbox, peer: str) -> None:
        topic: Topic | None = None
        info: ProducerInfo | None = None
        try:
            first = await _first_request(requests, "open", "produce")
            if first is None:
                return
            name = TopicName.parse(first.open.topic)
            if first.open.access_mode not in _ACCESS_MODES:
                raise InvalidMessage(f"unknown producer access mode {first.open.access_mode}")
            topic = self._registry.get(name, create=True)
            producer_name = first.open.producer_name or self._names.next()
            granted = asyncio.get_running_loop().create_future()

            def fence(error: PulsarLikeError) -> None:
                # The session ends now (fenced, topic terminated or unloaded): the client fails later sends.
                fenced.append(error)
                out.put(pb.ProduceResponse(error=error_to_proto(error)))
                out.end()
                log.info("event=producer_%s topic=%s producer=%s", "fenced" if isinstance(error, ProducerFenced)
                         else "disconnected", name, producer_name)

            fenced: list[PulsarLikeError] = []
            info, admitted = topic.add_producer(
                producer_name, dict(first.open.properties), _ACCESS_MODES[first.open.access_mode],
                fence=fence, granted=lambda: granted.done() or granted.set_result(None))
            if not admitted:
                log.info("event=producer_waiting topic=%s producer=%s", topic.topic, producer_name)
                await granted  # WaitForExclusive: no timeout; a client that gives up cancels the session
                if fenced:
                    return
            out.put(pb.ProduceResponse(opened=pb.ProducerOpened(
                producer_name=producer_name, last_sequence_id=topic.last_sequence_id(producer_name),
                max_message_size=self._registry.config.maxMessageSize, topic=topic.topic)))
            log.info("event=producer_opened topic=%s producer=%s access_mode=%s", topic.topic, producer_name,
                     info.access_mode.name)
            replies = OrderedReplies(out)
            async for request in _while_read(requests, out):
                kind = request.WhichOneof("request")
                if fenced:
                    break
                if kind == "send":
                    entries = request.send.entries
                    for first_entry in range(0, len(entries), PUBLISH_SLICE):
                        if first_entry:
                            await asyncio.sleep(0)  # other clients are served between the slices
                            if fenced:
                                break
                        slot = replies.reserve()
                        topic.publish(info, entries[first_entry:first_entry + PUBLISH_SLICE],
                                      lambda results, error, slot=slot: replies.fill(slot, _replies(results, error)))
                elif kind == "close":
                    break
                else:
                    raise InvalidMessage(f"unexpected {kind!r} request on an open producer")
            await replies.drained()  # a closing producer still gets every receipt it is owed
        except PulsarLikeError as exc:
            _bad_request(exc, "produce", peer)
            out.put(pb.ProduceResponse(error=error_to_proto(exc)))
        except (asyncio.CancelledError, grpc.RpcError):
            pass
        except Exception as exc:  # never let one bad stream take the broker down
            out.put(pb.ProduceResponse(error=error_to_proto(_unexpected(exc))))
        finally:
            if topic is not None and info is not None:
                topic.remove_producer(info)
            out.end()

    # ================================================================== consume
    async def Consume(self, request_iterator, context) -> AsyncIterator[pb.ConsumeResponse]:
        out = self._outbox()
        async for response in _serve(self._consume_session(request_iterator, out, context.peer()), out):
            yield response

    async def _consume_session(self, requests, out: Outbox, peer: str) -> None:
        topic = sub = consumer = None
        try:
            first = await _first_request(requests, "subscribe", "consume")
            if first is None:
                return
            req = first.subscribe
            if not req.subscription:
                raise InvalidMessage("subscription name must not be empty")
            if req.sub_type not in _SUB_TYPES:
                raise InvalidMessage(f"unknown subscription type {req.sub_type}")
            name = TopicName.parse(req.topic)
            topic = self._registry.get(name, create=True)
            out.hold_back()  # what subscribing dispatches goes after the Subscribed reply
            ends = topic.termination

            def sink(deliveries: list[Delivery]) -> None:
                out.put(_delivered(deliveries))
                if ends.end_offset is not None:  # a terminated topic only
                    topic.check_end_of_topic()

            consumer = Consumer(
                next(self._consumer_ids), req.consumer_name or f"consumer-{id(out):x}", sink,
                priority_level=req.priority_level, multi_topic=req.multi_topic,
                key_shared=_key_shared_policy(req) if req.sub_type == pb.KEY_SHARED_SUB else None,
                on_active_change=lambda active: out.put(pb.ConsumeResponse(
                    active_change=pb.ActiveConsumerChange(is_active=active))),
                on_error=lambda exc: (out.put(pb.ConsumeResponse(error=error_to_proto(exc))), out.end()))
            consumer.permits = req.initial_permits
            ends.watch(consumer, lambda: out.put(_END_OF_TOPIC))
            gate = PermitGate(consumer)
            out.on_full, out.on_room = gate.close, gate.open
            sub = topic.subscribe(req.subscription, _SUB_TYPES[req.sub_type], consumer,
                                  durable=req.durable, start_offset=self._start_offset(topic, req))
            gate.attach(lambda permits: sub.flow(consumer, permits))
            out.put_first(pb.ConsumeResponse(subscribed=pb.Subscribed(
                topic=topic.topic, consumer_name=consumer.consumer_name, partition_index=topic.partition_index)))
            log.info("event=consumer_subscribed topic=%s subscription=%s consumer=%s type=%s",
                     topic.topic, req.subscription, consumer.consumer_name, _SUB_TYPES[req.sub_type])
            if ends.end_offset is not None:
                topic.check_end_of_topic()
            async for request in _while_read(requests, out):
                if not self._consume_request(request, topic, sub, consumer, gate, out):
                    break
        except PulsarLikeError as exc:
            _bad_request(exc, "consume", peer)
            out.discard_held()  # subscribing failed: nothing it dispatched goes out
            out.put(pb.ConsumeResponse(error=error_to_proto(exc)))
        except (asyncio.CancelledError, grpc.RpcError):
            pass
        except Exception as exc:
            out.discard_held()
            out.put(pb.ConsumeResponse(error=error_to_proto(_unexpected(exc))))
        finally:
            if topic is not None and sub is not None and consumer is not None:
                topic.consumer_left(sub, consumer)
            out.end()

    @staticmethod
    def _start_offset(topic: Topic, req: pb.Subscribe) -> int:
        if req.durable or not req.HasField("start"):
            if req.initial_position == pb.EARLIEST:
                return topic.start_offset
            return topic.confirmed_end_offset
        if req.start_inclusive and req.start.WhichOneof("position") == "latest":
            # as a Pulsar reader at latest with start_message_id_inclusive: the last message comes first
            return max(topic.start_offset, topic.confirmed_end_offset - 1)
        return position_offset(topic, req.start)

    def _consume_request(self, request: pb.ConsumeRequest, topic: Topic, sub, consumer: Consumer,
                         gate: PermitGate, out: Outbox) -> bool:
        """Handle one request; False ends the session."""
        kind = request.WhichOneof("request")
        try:
            if kind == "flow":
                gate.flow(request.flow.permits)
            elif kind == "ack":
                ack = request.ack
                if ack.ack_type == pb.CUMULATIVE:
                    sub.acknowledge_cumulative(consumer, ack.offset)
                else:
                    sub.acknowledge(consumer, joined_ranges(ack.ranges))
            elif kind == "seek":
                seek = request.seek
                try:
                    if seek.WhichOneof("target") == "publish_time_ms":
                        offset = topic.offset_for_timestamp(seek.publish_time_ms)
                    else:
                        offset = position_offset(topic, seek.position)
                    consumer.permits = 0  # the client re-sends its permits after seek_done
                    gate.reset()
                    sub.seek(offset)
                    out.put(pb.ConsumeResponse(seek_done=pb.SeekDone(seek_id=seek.seek_id)))
                    if topic.termination.terminated:
                        topic.termination.rewound(sub)
                        topic.check_end_of_topic()
                except PulsarLikeError as exc:
                    out.put(pb.ConsumeResponse(seek_done=pb.SeekDone(seek_id=seek.seek_id,
                                                                            error=error_to_proto(exc))))
            elif kind == "redeliver":
                ranges = request.redeliver.ranges
                if ranges:
                    sub.redeliver(consumer, joined_ranges(ranges))
                else:
                    sub.redeliver_unacknowledged(consumer)
            elif kind == "unsubscribe":
                rid = request.unsubscribe.request_id
                try:
                    topic.unsubscribe(sub.name, requester=consumer, durable=sub.durable)
                except PulsarLikeError as exc:
                    out.put(pb.ConsumeResponse(unsubscribed=pb.UnsubscribeDone(
                        request_id=rid, error=error_to_proto(exc))))
                    return True
                out.put(pb.ConsumeResponse(unsubscribed=pb.UnsubscribeDone(request_id=rid)))
                return False
            elif kind == "close":
                return False
            else:
                raise InvalidMessage(f"unexpected {kind!r} request on a subscribed consumer")
        except PulsarLikeError as exc:
            out.put(pb.ConsumeResponse(warning=error_to_proto(exc)))
        return True

    # ================================================================== unary
    async def _unary(self, context, fn: Callable[[], Awaitable[T] | T]) -> T:
        try:
            result = fn()
            if asyncio.iscoroutine(result):
                result = await result
            return result  # type: ignore[return-value]
        except PulsarLikeError as exc:
            await context.abort(grpc_status(exc), wire_message(exc), trailing_metadata=trailing_metadata(exc))
        except Exception as exc:
            err = _unexpected(exc)
            await context.abort(grpc_status(err), wire_message(err), trailing_metadata=trailing_metadata(err))
        raise AssertionError("unreachable")

    async def GetPartitionedTopicMetadata(self, request, context):
        return await self._unary(context, lambda: pb.PartitionedTopicMetadata(
            partitions=self._registry.lookup_partitions(TopicName.parse(request.topic))))

    async def CreatePartitionedTopic(self, request, context):
        def create():
            self._registry.create_partitioned(TopicName.parse(request.topic), request.partitions)
            return pb.Empty()
        return await self._unary(context, create)

    async def CreateTopic(self, request, context):
        def create():
            self._registry.create(TopicName.parse(request.topic))
            return pb.Empty()
        return await self._unary(context, create)

    async def ListTopics(self, request, context):
        return await self._unary(context, lambda: pb.TopicList(topics=self._registry.list(request.namespace)))

    async def DeleteTopic(self, request, context):
        async def delete():
            await self._registry.delete(TopicName.parse(request.topic), force=request.force)
            return pb.Empty()
        return await self._unary(context, delete)

    async def TopicStats(self, request, context):
        return await self._unary(context, lambda: pb.JsonResponse(
            json=json.dumps(self._registry.stats(TopicName.parse(request.topic)))))

    async def OffsetForTimestamp(self, request, context):
        def offset():
            topic = self._registry.get(TopicName.parse(request.topic), create=False)
            return pb.SubscriptionPosition(next_offset=topic.offset_for_timestamp(request.publish_time_ms))
        return await self._unary(context, offset)

    async def DeleteSubscription(self, request, context):
        def delete():
            topic = self._registry.get(TopicName.parse(request.topic), create=False)
            topic.unsubscribe(request.subscription, force=request.force)
            return pb.Empty()
        return await self._unary(context, delete)

    def _persistent(self, topic: str) -> Topic:
        """An existing persistent topic: the calls on stored subscriptions (create, reset, acknowledge up to,
        skip, clear-backlog, peek) need one."""
        found = self._registry.get(TopicName.parse(topic), create=False)
        if not found.persistent:
            raise not_stored(found.topic, "non-persistent topics have no stored subscriptions")
        return found

    async def CreateSubscription(self, request, context):
        def create():
            topic = self._persistent(request.topic)
            start = (position_offset(topic, request.position) if request.HasField("position")
                     else topic.confirmed_end_offset)
            topic.create_subscription(request.subscription, start)
            return pb.SubscriptionPosition(next_offset=topic.durable_subscription(request.subscription)
                                           .cursor.mark_delete_offset + 1)
        return await self._unary(context, create)

    async def ResetCursor(self, request, context):
        def reset():
            topic = self._persistent(request.topic)
            sub = topic.durable_subscription(request.subscription)
            offset = (position_offset(topic, request.position) if request.HasField("position")
                      else topic.offset_for_timestamp(request.publish_time_ms))
            sub.seek(offset)
            topic.touch_subscription(request.subscription)
            return pb.SubscriptionPosition(next_offset=sub.cursor.mark_delete_offset + 1)
        return await self._unary(context, reset)

    async def AcknowledgeUpTo(self, request, context):
        def ack():
            topic = self._persistent(request.topic)
            return pb.SubscriptionPosition(
                next_offset=topic.acknowledge_up_to(request.subscription, request.end_offset))
        return await self._unary(context, ack)

    async def SetPolicy(self, request, context):
        def set_policy():
            scope, name = _policy_scope(request.scope)
            try:
                value = json.loads(request.value_json) if request.value_json else None
            except ValueError:
                raise InvalidMessage(f"policy {request.key}: value {request.value_json!r} is not JSON") from None
            self._registry.set_policy(scope, name, request.key, value)
            return pb.Empty()
        return await self._unary(context, set_policy)

    async def GetPolicies(self, request, context):
        def get():
            scope, name = _policy_scope(request)
            return pb.JsonResponse(json=json.dumps(self._registry.get_policies(scope, name), sort_keys=True))
        return await self._unary(context, get)


def joined_ranges(ranges) -> list[tuple[int, int]]:
    """A request's ``OffsetRange`` list sorted, overlapping and touching ranges joined: each range costs a
    walk over the pending entries it covers, so 10,000 copies of one wide range were 10,000 walks (2.2 s
    with 1,000 entries pending). With an empty or reversed range among them they are only sorted: the
    subscription refuses the request whole."""
    pairs = sorted((r.start, r.end) for r in ranges)
    if any(start >= end for start, end in pairs):
        return pairs
    joined: list[tuple[int, int]] = []
    for start, end in pairs:
        if joined and start <= joined[-1][1]:
            if end > joined[-1][1]:
                joined[-1] = (joined[-1][0], end)
        else:
            joined.append((start, end))
    return joined


def _key_shared_policy(req: pb.Subscribe) -> KeySharedPolicy:
    meta = req.key_shared
    return KeySharedPolicy(STICKY if meta.mode == pb.STICKY else AUTO_SPLIT, meta.allow_out_of_order_delivery,
                           tuple((r.start, r.end) for r in meta.ranges[:MAX_STICKY_RANGES + 1]))


def _policy_scope(scope: pb.PolicyScope) -> tuple[str, str]:
    if bool(scope.namespace) == bool(scope.topic):
        raise InvalidMessage("a policy applies to a namespace or to a topic: set exactly one of them")
    return (NAMESPACE, scope.namespace) if scope.namespace else (TOPIC, scope.topic)


async def _serve(session: Coroutine[Any, Any, None], out: Outbox) -> AsyncIterator:
    """Run ``session`` (which reads its requests and puts responses on ``out``, then ends it) and yield
    its responses; the session is cancelled when the client goes away."""
    task = asyncio.get_running_loop().create_task(session)
    try:
        while (item := await out.get()) is not END:
            yield item
    finally:
        task.cancel()
        out.close()


async def _while_read(requests, out: Outbox) -> AsyncIterator:
    """``requests``, each taken only while ``out`` has room: replies the client leaves unread stop its
    requests (and whatever replies they would add) until it reads them."""
    while True:
        await out.wait_room()
        request = await anext(requests, None)
        if request is None:
            return
        yield request


def _bad_request(exc: PulsarLikeError, stream: str, peer: str) -> None:
    """A stream ended by a request that makes no sense (garbage, a wrong first request): one line, no
    traceback -- a client bug or an attack, not a broker bug."""
    if isinstance(exc, InvalidMessage):
        log.warning("event=bad_request stream=%s peer=%s error=%s", stream, peer, exc.message)


async def _first_request(requests, kind: str, stream: str):
    """The stream's opening request, which must be ``kind``; None when the client sent nothing."""
    try:
        first = await requests.__anext__()
    except StopAsyncIteration:
        return None
    if first.WhichOneof("request") != kind:
        raise InvalidMessage(f"the first request on a {stream} stream must be {kind!r}")
    return first
