"""The gRPC consumer's Ack and Redeliver ranges are joined before they reach the subscription."""
from __future__ import annotations

from broker_core.protocol import broker_pb2 as pb
from broker_core.frontends.grpc.consuming import joined_ranges


def ranges(*pairs: tuple[int, int]) -> list[pb.OffsetRange]:
    return [pb.OffsetRange(start=s, end=e) for s, e in pairs]


def test_overlapping_touching_and_repeated_ranges_are_joined_in_order():
    assert joined_ranges(ranges((5, 8), (0, 2), (2, 3), (6, 10), (0, 1))) == [(0, 3), (5, 10)]
    assert joined_ranges(ranges(*[(0, 1000)] * 10_000)) == [(0, 1000)]


def test_ranges_with_an_empty_one_are_only_sorted_so_the_subscription_refuses_them_whole():
    assert joined_ranges(ranges((4, 9), (3, 3), (0, 5))) == [(0, 5), (3, 3), (4, 9)]
