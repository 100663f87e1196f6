"""Delayed delivery tracker benchmark: memory per held message, add throughput, lateness (issue 4, item 7).

Run it with ``python bench/delayed_tracker.py [--messages N] [--tick-ms T] [--strict] [--max-delay-ms D]
[--json]``. Pure Python, no broker; nothing is asserted.

Workload: offsets ``0..N-1`` read in log order, each with ``deliver_at = t0 + uniform(0, D]`` (D = 60 s by
default), added at ``t0``. Messages due within the add cutoff (one tick when not strict) are not held:
the dispatcher delivers them at once; they count in the lateness figures, not in memory per message.

What it measures:

1. **Memory**: ``tracemalloc`` traced bytes after ``add`` of every message minus before, divided by the
   number held (inputs are allocated before the baseline). Also the tracker's own ``memory_bytes()`` estimate.
2. **Throughput** (without tracemalloc): ``add`` one message at a time (the read path), ``add_many`` (the
   rebuild after a restart) and draining everything with ``pop_ready``.
3. **Lateness** = delivery time - ``deliver_at`` (negative = early), p50 / p99 / max and the earliest, with
   a **fake clock** (simulated time, no sleeping), for three ways of driving the tracker:
   ``timer``: one timer armed with ``next_timer_delay_ms(last_tick_ms)`` (the first bucket, at most one
   fire per tick: Pulsar's ``updateTimer``), firing exactly on time; ``timer/nospc``: the same timer without
   the one-tick spacing (fires at every bucket); ``tick loop``: ``pop_ready`` every ``tick_ms`` from ``t0``,
   a stand-in for a coarse timer wheel. Real timers add their own jitter on top, and the dispatcher's read
   of the replayed entries is not modelled.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
import tracemalloc
from array import array
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from broker_core.clock import FakeClock  # noqa: E402
from dispatch.delayed import DelayedDeliveryTracker  # noqa: E402

T0 = 1_700_000_000_000


def make_inputs(n: int, max_delay_ms: int, seed: int) -> array:
    rng = random.Random(seed)
    return array("q", (T0 + rng.randint(1, max_delay_ms) for _ in range(n)))


def new_tracker(args: argparse.Namespace) -> tuple[FakeClock, DelayedDeliveryTracker]:
    clock = FakeClock(start_ms=T0)
    return clock, DelayedDeliveryTracker(clock, tick_ms=args.tick_ms, strict=args.strict)


def measure_memory(args: argparse.Namespace, deliver_at: array) -> tuple[float, float, int]:
    """(traced bytes per held message, memory_bytes() per held message, held)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        _, tracker = new_tracker(args)
        add = tracker.add
        for offset in range(len(deliver_at)):
            add(offset, deliver_at[offset])
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    held = len(tracker)
    return used / held, tracker.memory_bytes() / held, held


def measure_throughput(args: argparse.Namespace, deliver_at: array) -> dict[str, float]:
    n = len(deliver_at)
    _, tracker = new_tracker(args)
    add = tracker.add
    start = time.perf_counter()
    for offset in range(n):
        add(offset, deliver_at[offset])
    add_s = time.perf_counter() - start

    _, bulk = new_tracker(args)
    start = time.perf_counter()
    bulk.add_many(zip(range(n), deliver_at))
    add_many_s = time.perf_counter() - start

    held = len(bulk)
    start = time.perf_counter()
    popped = len(bulk.pop_ready(now=T0 + args.max_delay_ms + args.tick_ms))
    pop_s = time.perf_counter() - start
    assert popped == held
    return {"add_msg_s": n / add_s, "add_many_msg_s": n / add_many_s, "pop_ready_msg_s": held / pop_s}


def lateness(args: argparse.Namespace, deliver_at: array, mode: str) -> dict[str, float]:
    """Drive a filled tracker with a fake clock; return lateness percentiles in ms."""
    clock, tracker = new_tracker(args)
    late = array("q")
    for offset in range(len(deliver_at)):
        if not tracker.add(offset, deliver_at[offset]):
            late.append(T0 - deliver_at[offset])  # delivered at once
    last_tick = T0
    while len(tracker):
        if mode == "timer":
            clock.advance(tracker.next_timer_delay_ms(last_tick_ms=last_tick))
        elif mode == "timer/nospc":
            clock.advance(tracker.next_timer_delay_ms())
        else:
            clock.advance(args.tick_ms)
        now = last_tick = clock.now_ms()
        late.extend(now - deliver_at[offset] for offset in tracker.pop_ready())
    ordered = sorted(late)
    n = len(ordered)
    return {"p50": ordered[n // 2], "p99": ordered[min(n - 1, (n * 99) // 100)], "max": ordered[-1],
            "earliest": ordered[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--tick-ms", type=int, default=1000, help="delayedDeliveryTickTimeMillis")
    parser.add_argument("--strict", action="store_true", help="isDelayedDeliveryDeliverAtTimeStrict=true")
    parser.add_argument("--max-delay-ms", type=int, default=60_000, help="delays are uniform in (0, this]")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="also print a JSON summary")
    args = parser.parse_args()

    deliver_at = make_inputs(args.messages, args.max_delay_ms, args.seed)
    tracker = new_tracker(args)[1]
    print(f"{args.messages:,} messages, delays uniform in (0, {args.max_delay_ms}] ms, tick {args.tick_ms} ms "
          f"(buckets of {tracker.precision_ms} ms), strict={args.strict}; Python {sys.version.split()[0]}")

    per_msg, estimate, held = measure_memory(args, deliver_at)
    print(f"memory      {per_msg:8.2f} B/msg  tracemalloc, {held:,} held "
          f"({args.messages - held:,} due at once); memory_bytes() says {estimate:.2f}")
    results: dict[str, float] = {"bytes_per_msg": per_msg, "held": held}

    rates = measure_throughput(args, deliver_at)
    results.update(rates)
    print(f"add         {rates['add_msg_s']:12,.0f} msg/s  one add() per message, in offset order")
    print(f"add_many    {rates['add_many_msg_s']:12,.0f} msg/s  bulk rebuild")
    print(f"pop_ready   {rates['pop_ready_msg_s']:12,.0f} msg/s  everything at once, offset-ordered")

    modes = {"timer": "timer", "timer/nospc": "timer_no_spacing", "tick loop": "tick_loop"}
    for mode, key in modes.items():
        figures = lateness(args, deliver_at, mode)
        results.update({f"{key}_{k}_ms": v for k, v in figures.items()})
        print(f"lateness    {mode:<11}  p50 {figures['p50']:6d} ms  p99 {figures['p99']:6d} ms  "
              f"max {figures['max']:6d} ms  earliest {figures['earliest']:6d} ms  (fake clock)")

    targets = {
        "bytes_per_msg <= 64": per_msg <= 64,
        f"timer p99 lateness <= tick ({args.tick_ms} ms)": results["timer_p99_ms"] <= args.tick_ms,
        f"never earlier than {'deliver_at' if args.strict else 'deliver_at - tick'}":
            -min(results[f"{key}_earliest_ms"] for key in modes.values()) <= (0 if args.strict else args.tick_ms),
    }
    print("\ntargets")
    for name, met in targets.items():
        print(f"  {name:<40} {'MET' if met else 'MISSED'}")
    if args.json:
        print(json.dumps({"messages": args.messages, "tick_ms": args.tick_ms, "strict": args.strict,
                          "max_delay_ms": args.max_delay_ms, **results,
                          "targets_met": targets}, sort_keys=True))


if __name__ == "__main__":
    main()
