"""The names of pulsar-client's C++ binding (``_pulsar``) that its Python API hands to users: programs and
pulsar-client's own tests import ``MessageId``, ``Result``, ``SchemaType`` and ``RegexSubscriptionMode`` from ``_pulsar``, the
low-level policies (``BatchReceivePolicy``, ``KeySharedPolicy``, ``DeadLetterPolicyBuilder``), and
the binding's configuration objects ``ProducerConfiguration`` and ``ConsumerConfiguration``, which pulsarlike
does not have (refused when constructed, see :mod:`pulsarlike._unsupported`). An alias module ``_pulsar``
resolving here (``scripts/upstream_client_tests.py`` writes one) keeps such imports working."""
from connector.client.enums import KeySharedMode, RegexSubscriptionMode, Result, SchemaType
from connector.client.low_level import (BatchReceivePolicy, DeadLetterPolicy, DeadLetterPolicyBuilder,
                                        KeySharedPolicy)
from connector.client.message_id import MessageId
from pulsarlike._unsupported import unsupported_class

_CONFIGURATION = "the C++ binding's configuration object; pass the options to Client.create_producer, " \
                 "Client.subscribe or Client.create_reader"
ProducerConfiguration = unsupported_class("ProducerConfiguration", _CONFIGURATION, "pulsarlike._pulsar")
ConsumerConfiguration = unsupported_class("ConsumerConfiguration", _CONFIGURATION, "pulsarlike._pulsar")

__all__ = ["BatchReceivePolicy", "ConsumerConfiguration", "DeadLetterPolicy", "DeadLetterPolicyBuilder",
           "KeySharedMode", "KeySharedPolicy", "MessageId", "ProducerConfiguration", "RegexSubscriptionMode",
           "Result", "SchemaType"]
