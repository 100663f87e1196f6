"""pulsar-client 3.13's low-level policy classes -- the ones its ``pulsar`` module re-exports from the C++
binding (``_pulsar``) and wraps in ``ConsumerBatchReceivePolicy``, ``ConsumerKeySharedPolicy`` and
``ConsumerDeadLetterPolicy``: :class:`BatchReceivePolicy`, :class:`KeySharedPolicy`,
:class:`DeadLetterPolicyBuilder` (which builds a :class:`DeadLetterPolicy`). Same method names (the C++
ones, camelCase where the binding keeps it), same checks and the same error words; each wrapper's
``policy()`` returns one of these.

They are values only: ``subscribe`` takes the wrappers, as pulsar-client's does.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from connector.client.enums import KeySharedMode

HASH_RANGE_SIZE = 65536
_INT32_MAX = 2**31 - 1
DEFAULT_MAX_NUM_BYTES = 10 * 1024 * 1024


def _int(value: object, what: str) -> int:
    """An int argument of a binding method (pybind11 refuses anything else with a TypeError)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what}: incompatible argument {value!r}; an int is expected")
    return value


class BatchReceivePolicy:
    """``BatchReceivePolicy(max_num_messages, max_num_bytes, timeout_ms)`` (three ints, positional, as the
    binding takes them). A value <= 0 means no limit of that kind. All three <= 0 is a ``ValueError``; when
    neither a count nor a size limit is given, they become pulsar-client's defaults (no count, 10 MiB)."""

    __slots__ = ("_max_num_messages", "_max_num_bytes", "_timeout_ms")

    def __init__(self, max_num_messages: int, max_num_bytes: int, timeout_ms: int, /) -> None:
        count = _int(max_num_messages, "BatchReceivePolicy")
        size = _int(max_num_bytes, "BatchReceivePolicy")
        timeout = _int(timeout_ms, "BatchReceivePolicy")
        if count <= 0 and size <= 0 and timeout <= 0:
            raise ValueError("At least one of maxNumMessages, maxNumBytes and timeoutMs must be specified.")
        if count <= 0 and size <= 0:
            count, size = -1, DEFAULT_MAX_NUM_BYTES
        self._max_num_messages = count
        self._max_num_bytes = size
        self._timeout_ms = timeout

    def getMaxNumMessages(self) -> int:  # noqa: N802 (the binding's name)
        return self._max_num_messages

    def getMaxNumBytes(self) -> int:  # noqa: N802
        return self._max_num_bytes

    def getTimeoutMs(self) -> int:  # noqa: N802
        return self._timeout_ms

    def __repr__(self) -> str:
        return (f"BatchReceivePolicy({self._max_num_messages}, {self._max_num_bytes}, {self._timeout_ms})")


class KeySharedPolicy:
    """``KeySharedPolicy()`` then its setters (each returns the policy): ``set_key_shared_mode(KeySharedMode)``,
    ``set_allow_out_of_order_delivery(bool)``, ``set_sticky_ranges([(start, end), ...])``. Sticky ranges are
    inclusive pairs within ``0..65535``; an empty list, a value outside it or two ranges of the same call
    overlapping is a ``ValueError`` (the binding's words). As the binding does, each call adds its ranges to
    those already set."""

    __slots__ = ("_mode", "_out_of_order", "_ranges")

    def __init__(self) -> None:
        self._mode = KeySharedMode.AutoSplit
        self._out_of_order = False
        self._ranges: list[tuple[int, int]] = []

    def set_key_shared_mode(self, mode: KeySharedMode) -> "KeySharedPolicy":
        if not isinstance(mode, KeySharedMode):
            raise TypeError(f"set_key_shared_mode(): incompatible argument {mode!r}; a KeySharedMode is expected")
        self._mode = mode
        return self

    def get_key_shared_mode(self) -> KeySharedMode:
        return self._mode

    def set_allow_out_of_order_delivery(self, allow: bool) -> "KeySharedPolicy":
        if not isinstance(allow, bool):
            raise TypeError(f"set_allow_out_of_order_delivery(): incompatible argument {allow!r}; a bool is "
                            "expected")
        self._out_of_order = allow
        return self

    def is_allow_out_of_order_delivery(self) -> bool:
        return self._out_of_order

    def set_sticky_ranges(self, ranges: Iterable[Sequence[int]]) -> "KeySharedPolicy":
        try:
            pairs = [tuple(pair) for pair in ranges]
        except TypeError:
            raise TypeError(f"set_sticky_ranges(): incompatible argument {ranges!r}; a list of (int, int) is "
                            "expected") from None
        checked: list[tuple[int, int]] = []
        for pair in pairs:
            if len(pair) != 2:
                raise TypeError(f"set_sticky_ranges(): {pair!r} is not an (int, int) pair")
            start, end = (_int(v, "set_sticky_ranges()") for v in pair)
            if not (-_INT32_MAX - 1 <= start <= _INT32_MAX and -_INT32_MAX - 1 <= end <= _INT32_MAX):
                raise TypeError(f"set_sticky_ranges(): {pair!r} does not fit 32-bit ints")
            checked.append((start, end))
        if not checked:
            raise ValueError("Ranges for KeyShared policy must not be empty.")
        for start, end in checked:
            if start < 0 or end >= HASH_RANGE_SIZE:
                raise ValueError("KeySharedPolicy Exception: Ranges must be [0, 65535].")
            for other in checked:
                if other != (start, end) and min(end, other[1]) >= max(start, other[0]):
                    raise ValueError("Ranges for KeyShared policy with overlap.")
        self._ranges.extend(checked)
        return self

    def get_sticky_ranges(self) -> list[tuple[int, int]]:
        return list(self._ranges)

    def __repr__(self) -> str:
        return (f"KeySharedPolicy(mode={self._mode!r}, allow_out_of_order_delivery={self._out_of_order}, "
                f"sticky_ranges={self._ranges})")


class DeadLetterPolicy:
    """What :meth:`DeadLetterPolicyBuilder.build` returns: ``getDeadLetterTopic()`` and
    ``getInitialSubscriptionName()`` (``''`` when unset), ``getMaxRedeliverCount()`` (2**31 - 1 when unset)."""

    __slots__ = ("_topic", "_max", "_initial")

    def __init__(self, dead_letter_topic: str = "", max_redeliver_count: int = _INT32_MAX,
                 initial_subscription_name: str = "") -> None:
        self._topic = dead_letter_topic
        self._max = max_redeliver_count
        self._initial = initial_subscription_name

    def getDeadLetterTopic(self) -> str:  # noqa: N802
        return self._topic

    def getMaxRedeliverCount(self) -> int:  # noqa: N802
        return self._max

    def getInitialSubscriptionName(self) -> str:  # noqa: N802
        return self._initial

    def __repr__(self) -> str:
        return (f"DeadLetterPolicy(dead_letter_topic={self._topic!r}, max_redeliver_count={self._max}, "
                f"initial_subscription_name={self._initial!r})")


class DeadLetterPolicyBuilder:
    """``DeadLetterPolicyBuilder().maxRedeliverCount(n).deadLetterTopic(t).initialSubscriptionName(s).build()``
    (each setter returns the builder). ``maxRedeliverCount`` must be > 0 (``ValueError``, at the call)."""

    __slots__ = ("_topic", "_max", "_initial")

    def __init__(self) -> None:
        self._topic = ""
        self._max = _INT32_MAX
        self._initial = ""

    def deadLetterTopic(self, topic: str) -> "DeadLetterPolicyBuilder":  # noqa: N802
        if not isinstance(topic, str):
            raise TypeError(f"deadLetterTopic(): incompatible argument {topic!r}; a str is expected")
        self._topic = topic
        return self

    def maxRedeliverCount(self, count: int) -> "DeadLetterPolicyBuilder":  # noqa: N802
        count = _int(count, "maxRedeliverCount()")
        if count <= 0:
            raise ValueError("maxRedeliverCount must be > 0.")
        self._max = count
        return self

    def initialSubscriptionName(self, name: str) -> "DeadLetterPolicyBuilder":  # noqa: N802
        if not isinstance(name, str):
            raise TypeError(f"initialSubscriptionName(): incompatible argument {name!r}; a str is expected")
        self._initial = name
        return self

    def build(self) -> DeadLetterPolicy:
        return DeadLetterPolicy(self._topic, self._max, self._initial)
