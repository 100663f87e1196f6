"""pulsar-client's binding configuration objects, ``_pulsar.ProducerConfiguration`` and
``_pulsar.ConsumerConfiguration``: what pulsar-client's Python API fills in from ``create_producer`` and
``subscribe``'s keyword arguments, and what programs and pulsar-client's own tests build directly.

Each option is one method, as in the binding: ``conf.send_timeout_millis()`` reads it,
``conf.send_timeout_millis(12)`` sets it (and answers the configuration, or None where the binding does).
Defaults are the binding's, which are not always the Python API's (``batching_enabled`` is True here,
``subscription_initial_position`` Latest). Wrong types raise ``TypeError`` and values the binding refuses
``ValueError`` with its message. Write-only options (``property``, ``encryption_key``, ``crypto_key_reader``,
``message_router``, ``message_listener``) are set only, as in the binding; ``properties()`` reads what
``property(key, value)`` set (pulsarlike's: the binding keeps them to itself).

Example::

    >>> conf = ProducerConfiguration().send_timeout_millis(12).compression_type(CompressionType.LZ4)
    >>> conf.send_timeout_millis(), conf.compression_type().name, conf.batching_enabled()
    (12, 'LZ4', True)
"""
from __future__ import annotations

from typing import Any, Callable

from connector.client.security.crypto_keys import CryptoKeyReader
from connector.client.enums import (BatchingType, CompressionType, ConsumerType, InitialPosition,
                                    PartitionsRoutingMode, ProducerAccessMode, RegexSubscriptionMode)
from connector.client.low_level import BatchReceivePolicy, DeadLetterPolicy, KeySharedPolicy
from connector.client.security.message_crypto import ConsumerCryptoFailureAction
from connector.client.schema.schemas import SchemaInfo

Check = Callable[[str, Any], Any]
"""``check(option, value) -> the value stored``: raises TypeError/ValueError as the binding does."""


def _type_error(option: str, value: Any, wanted: str) -> TypeError:
    return TypeError(f"{option}(): incompatible function arguments: expected {wanted}, got "
                     f"{type(value).__name__} {value!r}")


def _int(option: str, value: Any) -> int:
    if isinstance(value, str) or not hasattr(value, "__int__"):
        raise _type_error(option, value, "an int")
    return int(value)


def _unsigned(option: str, value: Any) -> int:
    number = _int(option, value)
    if number < 0:  # an unsigned C++ parameter: the binding finds no overload
        raise _type_error(option, value, "an int >= 0")
    return number


def _at_least(least: int, message: str) -> Check:
    def check(option: str, value: Any) -> int:
        number = _int(option, value)
        if number < least:
            raise ValueError(message)
        return number
    return check


def _bool(option: str, value: Any) -> bool:
    if not isinstance(value, int):  # bool is one
        raise _type_error(option, value, "a bool")
    return bool(value)


def _str(option: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _type_error(option, value, "a str")
    return value


def _instance(cls: type) -> Check:
    def check(option: str, value: Any) -> Any:
        if not isinstance(value, cls):
            raise _type_error(option, value, cls.__name__)
        return value
    return check


def _callable(option: str, value: Any) -> Any:
    if not callable(value):
        raise _type_error(option, value, "a callable")
    return value


def _unacked_timeout(option: str, value: Any) -> int:
    number = _unsigned(option, value)
    if 0 < number < 10000:
        raise ValueError("Consumer Config Exception: Unacknowledged message timeout should be greater than "
                         "10 seconds.")
    return number


def _checked_batch_size(option: str, value: Any) -> int:
    number = _unsigned(option, value)
    if number <= 1:
        raise ValueError("batchingMaxMessages needs to be greater than 1")
    return number


_NO_DEFAULT = object()
"""A write-only option: the binding has no getter for it."""


def _option(name: str, check: Check, default: Any = _NO_DEFAULT, returns_self: bool = True) -> Callable[..., Any]:
    """The binding's method for one option (see the module docstring); ``default`` may be a factory (a
    class or function), called once per configuration object."""

    def method(self: "_Configuration", *value: Any) -> Any:
        if not value:
            if default is _NO_DEFAULT:
                raise TypeError(f"{name}() takes a value: the binding has no getter for it")
            if name not in self._values:
                self._values[name] = default() if callable(default) else default
            return self._values[name]
        if len(value) > 1:
            raise TypeError(f"{name}() takes one value, got {len(value)}")
        self._values[name] = check(name, value[0])
        return self if returns_self else None
    method.__name__ = name
    method.__doc__ = f"``{name}()`` reads the option, ``{name}(value)`` sets it (the binding's)."
    return method


class _Configuration:
    def __init__(self) -> None:
        self._values: dict[str, Any] = {}
        self._properties: dict[str, str] = {}

    def property(self, key: str, value: str) -> "_Configuration":
        """Add a property (the binding's ``property(key, value)``)."""
        self._properties[_str("property", key)] = _str("property", value)
        return self

    def properties(self) -> dict[str, str]:
        """The properties set with :meth:`property` (pulsarlike's reader)."""
        return dict(self._properties)


def _bytes_schema() -> SchemaInfo:
    return SchemaInfo("None", "BYTES", "")


class ProducerConfiguration(_Configuration):
    """``_pulsar.ProducerConfiguration`` (see the module docstring)."""

    producer_name = _option("producer_name", _str, "")
    schema = _option("schema", _instance(SchemaInfo), _bytes_schema)
    send_timeout_millis = _option("send_timeout_millis", _int, 30000)
    initial_sequence_id = _option("initial_sequence_id", _int, -1)
    compression_type = _option("compression_type", _instance(CompressionType), CompressionType.NONE)
    max_pending_messages = _option("max_pending_messages",
                                   _at_least(0, "maxPendingMessages needs to be >= 0"), 1000)
    max_pending_messages_across_partitions = _option(
        "max_pending_messages_across_partitions", _at_least(0, "maxPendingMessages needs to be >=0"), 50000)
    block_if_queue_full = _option("block_if_queue_full", _bool, False)
    partitions_routing_mode = _option("partitions_routing_mode", _instance(PartitionsRoutingMode),
                                      PartitionsRoutingMode.RoundRobinDistribution)
    lazy_start_partitioned_producers = _option("lazy_start_partitioned_producers", _bool, False)
    batching_enabled = _option("batching_enabled", _bool, True)
    batching_max_messages = _option("batching_max_messages", _checked_batch_size, 1000)
    batching_max_allowed_size_in_bytes = _option("batching_max_allowed_size_in_bytes", _unsigned, 128 * 1024)
    batching_max_publish_delay_ms = _option("batching_max_publish_delay_ms", _unsigned, 10)
    chunking_enabled = _option("chunking_enabled", _bool, False)
    batching_type = _option("batching_type", _instance(BatchingType), BatchingType.Default)
    access_mode = _option("access_mode", _instance(ProducerAccessMode), ProducerAccessMode.Shared)
    encryption_key = _option("encryption_key", _str)
    crypto_key_reader = _option("crypto_key_reader", _instance(CryptoKeyReader))
    message_router = _option("message_router", _callable, returns_self=False)


class ConsumerConfiguration(_Configuration):
    """``_pulsar.ConsumerConfiguration`` (see the module docstring)."""

    consumer_type = _option("consumer_type", _instance(ConsumerType), ConsumerType.Exclusive)
    schema = _option("schema", _instance(SchemaInfo), _bytes_schema)
    message_listener = _option("message_listener", _callable)
    receiver_queue_size = _option("receiver_queue_size", _int, 1000, returns_self=False)
    max_total_receiver_queue_size_across_partitions = _option(
        "max_total_receiver_queue_size_across_partitions", _int, 50000, returns_self=False)
    consumer_name = _option("consumer_name", _str, "", returns_self=False)
    unacked_messages_timeout_ms = _option("unacked_messages_timeout_ms", _unacked_timeout, 0, returns_self=False)
    negative_ack_redelivery_delay_ms = _option("negative_ack_redelivery_delay_ms", _int, 60000,
                                               returns_self=False)
    broker_consumer_stats_cache_time_ms = _option("broker_consumer_stats_cache_time_ms", _int, 30000,
                                                  returns_self=False)
    pattern_auto_discovery_period = _option("pattern_auto_discovery_period", _int, 60, returns_self=False)
    read_compacted = _option("read_compacted", _bool, False, returns_self=False)
    subscription_initial_position = _option("subscription_initial_position", _instance(InitialPosition),
                                            InitialPosition.Latest, returns_self=False)
    regex_subscription_mode = _option("regex_subscription_mode", _instance(RegexSubscriptionMode),
                                      RegexSubscriptionMode.PersistentOnly)
    crypto_key_reader = _option("crypto_key_reader", _instance(CryptoKeyReader))
    crypto_failure_action = _option("crypto_failure_action", _instance(ConsumerCryptoFailureAction),
                                    ConsumerCryptoFailureAction.FAIL)
    replicate_subscription_state_enabled = _option("replicate_subscription_state_enabled", _bool, False,
                                                   returns_self=False)
    max_pending_chunked_message = _option("max_pending_chunked_message", _unsigned, 10)
    auto_ack_oldest_chunked_message_on_queue_full = _option("auto_ack_oldest_chunked_message_on_queue_full",
                                                            _bool, False)
    start_message_id_inclusive = _option("start_message_id_inclusive", _bool, False)
    batch_index_ack_enabled = _option("batch_index_ack_enabled", _bool, False)
    batch_receive_policy = _option("batch_receive_policy", _instance(BatchReceivePolicy),
                                   lambda: BatchReceivePolicy(-1, 10 * 1024 * 1024, 100), returns_self=False)
    key_shared_policy = _option("key_shared_policy", _instance(KeySharedPolicy), KeySharedPolicy)
    dead_letter_policy = _option("dead_letter_policy", _instance(DeadLetterPolicy), DeadLetterPolicy,
                                 returns_self=False)
