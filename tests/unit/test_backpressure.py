"""Bounded reply queues (broker_core/core/backpressure.py): a stream whose client does not read stops its
source instead of buffering; nothing is lost or reordered."""
from __future__ import annotations

import asyncio

from broker_core.protocol import broker_pb2 as pb
from broker_core.core.backpressure import END, Outbox, PermitGate, ReplyBudget
from dispatch import SubType, Subscription
from dispatch.testing import MemoryEntrySource, RecordingConsumer, make_cursor


def reply(nbytes: int = 0) -> pb.ConsumeResponse:
    """A reply of about ``nbytes`` bytes."""
    return pb.ConsumeResponse(warning=pb.Error(code="x", message="m" * nbytes))


def outbox(max_messages: int = 4, max_bytes: int = 1 << 20, budget: ReplyBudget | None = None) -> Outbox:
    return Outbox(max_messages, max_bytes, budget or ReplyBudget(1 << 30))


def drain(out: Outbox, count: int) -> list:
    async def take() -> list:
        return [await out.get() for _ in range(count)]
    return asyncio.run(take())


def test_an_outbox_is_full_at_its_message_bound_and_has_room_once_half_is_read() -> None:
    out = outbox(max_messages=4)
    events: list[str] = []
    out.on_full, out.on_room = (lambda: events.append("full")), (lambda: events.append("room"))
    for _ in range(4):
        out.put(reply())
    assert out.full and events == ["full"]
    drain(out, 1)
    assert out.full  # 3 left: more than half
    drain(out, 1)
    assert not out.full and events == ["full", "room"]


def test_an_outbox_is_full_at_its_byte_bound() -> None:
    out = outbox(max_messages=1000, max_bytes=1000)
    out.put(reply(300))
    assert not out.full
    out.put(reply(800))
    assert out.full
    drain(out, 1)
    assert out.full  # 800 bytes left: more than half
    drain(out, 1)
    assert not out.full


def test_replies_come_out_in_order_then_the_end() -> None:
    out = outbox()
    messages = [reply(i) for i in range(3)]
    for message in messages:
        out.put(message)
    out.end()
    assert drain(out, 4) == [*messages, END]


def test_a_spent_broker_budget_fills_every_outbox_that_holds_replies_until_it_is_read_empty() -> None:
    budget = ReplyBudget(1000)
    hog, reader, idle = outbox(budget=budget), outbox(budget=budget), outbox(budget=budget)
    hog.put(reply(1200))
    assert budget.spent and hog.full
    assert not idle.full  # holds nothing: it may take one more reply
    reader.put(reply(10))
    reader.put(reply(10))
    assert reader.full
    drain(reader, 1)
    assert reader.full  # still holds a reply while the budget is spent
    drain(reader, 1)
    assert not reader.full


def test_a_closed_outbox_gives_its_bytes_back_to_the_budget() -> None:
    budget = ReplyBudget(1 << 20)
    out = outbox(budget=budget)
    out.put(reply(500))
    out.close()
    assert budget.queued_bytes == 0


def test_owed_replies_count_against_the_bound_until_released() -> None:
    out = outbox(max_messages=2)
    out.hold()
    out.hold()
    assert out.full
    out.release()
    assert not out.full


def test_a_full_outbox_makes_wait_room_wait_until_the_client_reads() -> None:
    async def scenario() -> list[str]:
        out = outbox(max_messages=2)
        seen: list[str] = []
        out.put(reply())
        out.put(reply())

        async def producer() -> None:
            await out.wait_room()
            seen.append("room")

        task = asyncio.get_running_loop().create_task(producer())
        await asyncio.sleep(0)  # let it reach wait_room (scheduling, not timing)
        seen.append("before read")
        await out.get()
        await task
        return seen
    assert asyncio.run(scenario()) == ["before read", "room"]


def test_held_back_replies_follow_the_first_reply_and_are_dropped_when_it_never_comes() -> None:
    out = outbox()
    out.hold_back()
    early = reply(1)
    out.put(early)
    first = reply(2)
    out.put_first(first)
    assert drain(out, 2) == [first, early]
    budget = ReplyBudget(1 << 20)
    failed = outbox(budget=budget)
    failed.hold_back()
    failed.put(reply(100))
    failed.discard_held()
    assert budget.queued_bytes == 0 and not failed.full


def test_a_shut_gate_withholds_permits_and_gives_them_back_with_those_granted_meanwhile() -> None:
    consumer = RecordingConsumer(1, permits=10)
    granted: list[int] = []
    gate = PermitGate(consumer)
    gate.attach(granted.append)
    gate.close()
    assert consumer.permits == 0
    gate.flow(5)
    assert granted == []
    consumer.permits -= 2  # a round that was under way when the gate shut
    gate.open()
    assert granted == [15] and consumer.permits == -2  # 13 left in all: none lost, none made up


def test_a_consumer_whose_stream_is_full_gets_nothing_until_it_drains_then_everything_in_order() -> None:
    source = MemoryEntrySource()
    sub = Subscription("sub", "persistent://public/default/t", -1, source, make_cursor(), max_read_entries=2)
    consumer = RecordingConsumer(1)
    gate = PermitGate(consumer)
    out = outbox(max_messages=2)
    out.on_full, out.on_room = gate.close, gate.open
    consumer.sink = lambda deliveries: (consumer.batches.append(deliveries), out.put(reply()))
    sub.add_consumer(consumer, SubType.EXCLUSIVE)
    gate.attach(lambda permits: sub.flow(consumer, permits))
    source.append_many(10)
    gate.flow(100)
    assert consumer.received() == [0, 1, 2, 3] and out.full  # two deliveries of two entries
    sub.on_new_entries()
    assert consumer.received() == [0, 1, 2, 3]
    drain(out, 1)  # room again: the withheld permits go back and the next delivery fills it
    assert consumer.received() == [0, 1, 2, 3, 4, 5] and out.full
    while out.full or consumer.received()[-1] != 9:
        drain(out, 1)
    assert consumer.received() == list(range(10)) and consumer.permits == 90


def test_a_reply_put_after_the_stream_ended_is_dropped_and_costs_the_budget_nothing() -> None:
    budget = ReplyBudget(1 << 20)
    out = outbox(budget=budget)
    out.close()
    out.put(reply(100))  # e.g. a receipt whose fsync completed after the producer went away
    assert budget.queued_bytes == 0


def test_ordered_replies_go_out_in_request_order_and_count_until_released() -> None:
    from broker_core.core.backpressure import OrderedReplies

    out = outbox(max_messages=2)
    replies = OrderedReplies(out)
    first, second = replies.reserve(), replies.reserve()
    assert out.full  # two receipts owed
    late, early = reply(1), reply(2)
    replies.fill(second, [late])
    assert out.full  # held back behind the first request's reply
    replies.fill(first, [early])
    assert drain(out, 2) == [early, late] and not out.full
