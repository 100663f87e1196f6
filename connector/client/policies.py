"""Consumer policies, named as in ``pulsar-client`` (``ConsumerKeySharedPolicy``, ``ConsumerDeadLetterPolicy``)
plus the Java client's ``MultiplierRedeliveryBackoff``, which the Python client lacks.

Each is validated once, when built: a bad value raises ``ValueError`` naming the option.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Protocol, Sequence

from connector.client.enums import KeySharedMode, check_enum
from connector.client.low_level import (BatchReceivePolicy, DeadLetterPolicy, DeadLetterPolicyBuilder,
                                        KeySharedPolicy)

HASH_RANGE_SIZE = 65536
"""Key_Shared hashes fall in ``0..65535``; sticky ranges are inclusive pairs in that space."""
_INT32_MAX = 2**31 - 1


class RedeliveryBackoff(Protocol):
    """What ``negative_ack_redelivery_backoff`` and ``ack_timeout_redelivery_backoff`` accept (the Java
    client's ``RedeliveryBackoff``): ``next(redelivery_count)`` is the delay in ms before a message that was
    delivered ``redelivery_count`` times before is delivered again."""

    def next(self, redelivery_count: int) -> int: ...


class MultiplierRedeliveryBackoff:
    """Exponential backoff: ``min_delay_ms * multiplier ** redelivery_count``, capped at ``max_delay_ms``.

    The defaults are the Java client's builder defaults (10 s, 10 min, 2). The seed's table, with
    ``MultiplierRedeliveryBackoff(1000, 60_000, 2)``: a message first delivered (count 0) and then
    negatively acknowledged comes again after 1 s; then 2 s, 4 s, 8 s, 16 s, 32 s, and 60 s from the
    seventh redelivery on::

        >>> backoff = MultiplierRedeliveryBackoff(1000, 60_000, 2)
        >>> [backoff.next(count) for count in range(8)]
        [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000]
    """

    __slots__ = ("min_delay_ms", "max_delay_ms", "multiplier", "_max_power")

    def __init__(self, min_delay_ms: int = 10_000, max_delay_ms: int = 600_000,
                 multiplier: float = 2.0) -> None:
        for name, value in (("min_delay_ms", min_delay_ms), ("max_delay_ms", max_delay_ms)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name}={value!r} is not valid; use an int >= 0 (milliseconds)")
        if max_delay_ms < min_delay_ms:
            raise ValueError(f"max_delay_ms={max_delay_ms} is below min_delay_ms={min_delay_ms}; use "
                             "max_delay_ms >= min_delay_ms")
        if isinstance(multiplier, bool) or not isinstance(multiplier, (int, float)) or not multiplier > 1:
            raise ValueError(f"multiplier={multiplier!r} is not valid; use a number > 1")
        self.min_delay_ms = min_delay_ms
        self.max_delay_ms = max_delay_ms
        self.multiplier = float(multiplier)
        # past this power the delay is max_delay_ms anyway (and the float power could overflow)
        self._max_power = (int(math.log(max_delay_ms / min_delay_ms, self.multiplier)) + 1
                           if min_delay_ms > 0 else 0)

    def next(self, redelivery_count: int) -> int:
        """The delay in ms before the next delivery of a message delivered ``redelivery_count`` times
        before."""
        if redelivery_count <= 0 or self.min_delay_ms <= 0:
            return self.min_delay_ms
        if redelivery_count > self._max_power:
            return self.max_delay_ms
        return min(int(self.min_delay_ms * self.multiplier ** redelivery_count), self.max_delay_ms)

    def __repr__(self) -> str:
        return (f"MultiplierRedeliveryBackoff(min_delay_ms={self.min_delay_ms}, "
                f"max_delay_ms={self.max_delay_ms}, multiplier={self.multiplier:g})")


def check_backoff(option: str, backoff: object) -> RedeliveryBackoff | None:
    """``backoff`` if it is None or has a callable ``next``; else ValueError naming ``option``."""
    if backoff is not None and not callable(getattr(backoff, "next", None)):
        raise ValueError(f"{option}={backoff!r} is not valid; use MultiplierRedeliveryBackoff(...) or an "
                         "object with next(redelivery_count) -> delay in ms")
    return backoff  # type: ignore[return-value]


class ConsumerKeySharedPolicy:
    """How a ``ConsumerType.KeyShared`` consumer takes its keys (``pulsar-client``'s class and arguments).

    ``key_shared_mode``: ``KeySharedMode.AutoSplit`` (the broker splits the hash space among the consumers)
    or ``KeySharedMode.Sticky`` (this consumer takes exactly ``sticky_ranges``, inclusive ``(start, end)``
    pairs within ``0..65535``; required with Sticky). ``allow_out_of_order_delivery`` lets a new consumer
    get keys at once instead of waiting for the previous owner's unacknowledged messages.

    Ranges reversed, outside ``0..65535`` or overlapping each other fail ``subscribe`` before anything is sent
    (as pulsar-client: a ``ValueError``, which is also a ``ConsumerAssignError``); ranges overlapping another
    consumer's are refused by the broker with ``ConsumerAssignError`` and the consumer is not added (as in
    Pulsar).
    """

    __slots__ = ("_mode", "_out_of_order", "_ranges")

    def __init__(self, key_shared_mode: KeySharedMode = KeySharedMode.AutoSplit,
                 allow_out_of_order_delivery: bool = False,
                 sticky_ranges: Sequence[tuple[int, int]] | None = None) -> None:
        mode = check_enum("key_shared_mode", key_shared_mode, KeySharedMode)
        if mode == KeySharedMode.Sticky and sticky_ranges is None:
            raise ValueError("key_shared_mode=KeySharedMode.Sticky needs sticky_ranges, e.g. "
                             "sticky_ranges=[(0, 32767)]")
        self._mode = KeySharedMode(mode)
        self._out_of_order = bool(allow_out_of_order_delivery)
        self._ranges = _checked_ranges(sticky_ranges) if sticky_ranges is not None else []

    @property
    def key_shared_mode(self) -> KeySharedMode:
        return self._mode

    @property
    def allow_out_of_order_delivery(self) -> bool:
        return self._out_of_order

    @property
    def sticky_ranges(self) -> list[tuple[int, int]]:
        return list(self._ranges)

    def policy(self) -> KeySharedPolicy:
        """The low-level :class:`~connector.client.low_level.KeySharedPolicy` (pulsar-client's ``policy()``)."""
        policy = KeySharedPolicy().set_key_shared_mode(self._mode).set_allow_out_of_order_delivery(
            self._out_of_order)
        return policy.set_sticky_ranges(self._ranges) if self._ranges else policy

    def __repr__(self) -> str:
        return (f"ConsumerKeySharedPolicy(key_shared_mode={self._mode!r}, allow_out_of_order_delivery="
                f"{self._out_of_order}, sticky_ranges={self._ranges})")


def _checked_ranges(ranges: Iterable[Sequence[int]]) -> list[tuple[int, int]]:
    """``ranges`` as a list of int pairs; their placement in the hash space is the broker's to check."""
    out: list[tuple[int, int]] = []
    try:
        pairs = [tuple(pair) for pair in ranges]
    except TypeError:
        raise ValueError(f"sticky_ranges={ranges!r} is not valid; use a list of (start, end) pairs") from None
    for pair in pairs:
        if len(pair) != 2 or not all(isinstance(v, int) and not isinstance(v, bool)
                                     and -_INT32_MAX <= v <= _INT32_MAX for v in pair):
            raise ValueError(f"sticky range {pair!r} is not valid; use (start, end) ints, inclusive, within "
                             f"0..{HASH_RANGE_SIZE - 1}")
        out.append((int(pair[0]), int(pair[1])))
    return out


class ConsumerDeadLetterPolicy:
    """Dead letter (and retry letter) topics of a consumer (``pulsar-client``'s class; ``retry_letter_topic``
    comes from the Java client).

    ``max_redeliver_count`` (>= 1): a message delivered this many times more than once -- its
    ``redelivery_count()`` reached it -- goes to ``dead_letter_topic`` when it is negatively acknowledged or
    its ack timeout expires, instead of coming back; with ``retry_enable=True``, ``reconsume_later`` sends a
    message there once it was reconsumed more than this many times. The topics default to
    ``<topic>-<subscription>-DLQ`` and ``<topic>-<subscription>-RETRY`` (full names, of the partitioned
    topic rather than one of its partitions). ``initial_subscription_name`` is created on the dead letter
    topic before the first message is written there, so nothing sent there is lost.
    """

    __slots__ = ("_max", "_dead", "_initial", "_retry")

    def __init__(self, max_redeliver_count: int, dead_letter_topic: str | None = None,
                 initial_subscription_name: str | None = None,
                 retry_letter_topic: str | None = None) -> None:
        if isinstance(max_redeliver_count, bool) or not isinstance(max_redeliver_count, int) \
                or max_redeliver_count < 1:
            raise ValueError(f"max_redeliver_count={max_redeliver_count!r} is not valid; it must be greater "
                             "than 0")
        for name, value in (("dead_letter_topic", dead_letter_topic),
                            ("initial_subscription_name", initial_subscription_name),
                            ("retry_letter_topic", retry_letter_topic)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ValueError(f"{name}={value!r} is not valid; use a non-empty str or None")
        self._max = max_redeliver_count
        self._dead = dead_letter_topic
        self._initial = initial_subscription_name
        self._retry = retry_letter_topic

    @property
    def max_redeliver_count(self) -> int:
        return self._max

    @property
    def dead_letter_topic(self) -> str:
        """The topic named, ``""`` when none (pulsar-client's: the default ``<topic>-<subscription>-DLQ``)."""
        return self._dead or ""

    @property
    def initial_subscription_name(self) -> str:
        """``""`` when none, as pulsar-client."""
        return self._initial or ""

    @property
    def retry_letter_topic(self) -> str | None:
        return self._retry

    def policy(self) -> DeadLetterPolicy:
        """The low-level :class:`~connector.client.low_level.DeadLetterPolicy` (pulsar-client's ``policy()``)."""
        builder = DeadLetterPolicyBuilder().maxRedeliverCount(self._max)
        if self._dead is not None:
            builder.deadLetterTopic(self._dead)
        if self._initial is not None:
            builder.initialSubscriptionName(self._initial)
        return builder.build()

    def __repr__(self) -> str:
        return (f"ConsumerDeadLetterPolicy(max_redeliver_count={self._max}, dead_letter_topic={self._dead!r}, "
                f"initial_subscription_name={self._initial!r}, retry_letter_topic={self._retry!r})")


class ConsumerBatchReceivePolicy:
    """What one ``Consumer.batch_receive()`` returns (pulsar-client's class): up to ``max_num_message``
    messages and ``max_num_bytes`` bytes, waiting at most ``timeout_ms`` for them; a value <= 0 means no
    limit of that kind (no timeout: wait for a count or size limit). pulsar-client's defaults: no count
    limit, 10 MiB, 100 ms. As its :class:`~connector.client.low_level.BatchReceivePolicy`: all three <= 0
    is a ``ValueError``, and without a count or size limit the 10 MiB default applies."""

    __slots__ = ("max_num_messages", "max_num_bytes", "timeout_ms", "_policy")

    def __init__(self, max_num_message: int = -1, max_num_bytes: int = 10 * 1024 * 1024,
                 timeout_ms: int = 100) -> None:
        for name, value in (("max_num_message", max_num_message), ("max_num_bytes", max_num_bytes),
                            ("timeout_ms", timeout_ms)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name}={value!r} is not valid; use an int (<= 0: no limit)")
        self._policy = BatchReceivePolicy(max_num_message, max_num_bytes, timeout_ms)
        self.max_num_messages = self._policy.getMaxNumMessages()
        self.max_num_bytes = self._policy.getMaxNumBytes()
        self.timeout_ms = self._policy.getTimeoutMs()

    def policy(self) -> BatchReceivePolicy:
        """The low-level :class:`~connector.client.low_level.BatchReceivePolicy` (pulsar-client's ``policy()``)."""
        return self._policy

    def __repr__(self) -> str:
        return (f"ConsumerBatchReceivePolicy(max_num_message={self.max_num_messages}, "
                f"max_num_bytes={self.max_num_bytes}, timeout_ms={self.timeout_ms})")


@dataclass(frozen=True)
class RedeliveryOptions:
    """subscribe's redelivery options, parsed once (see :mod:`connector.client.consumer.redelivery`)."""

    negative_ack_redelivery_delay_ms: int = 60000
    negative_ack_redelivery_backoff: RedeliveryBackoff | None = None
    unacked_messages_timeout_ms: int = 0
    """0: no ack timeout."""
    ack_timeout_tick_time_ms: int = 1000
    ack_timeout_redelivery_backoff: RedeliveryBackoff | None = None
