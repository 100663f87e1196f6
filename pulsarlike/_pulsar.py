"""The names of pulsar-client's C++ binding (``_pulsar``) that its Python API hands to users: programs and
pulsar-client's own tests import ``MessageId``, ``Result``, ``SchemaType`` and ``RegexSubscriptionMode`` from ``_pulsar``, the
low-level policies (``BatchReceivePolicy``, ``KeySharedPolicy``, ``DeadLetterPolicyBuilder``), and
the binding's configuration objects ``ProducerConfiguration`` and ``ConsumerConfiguration``
(:mod:`connector.client.binding_config`: each option a getter/setter method with the binding's defaults and
checks). An alias module ``_pulsar`` resolving here (``scripts/upstream_client_tests.py`` writes one) keeps
such imports working."""
from connector.client.binding_config import ConsumerConfiguration, ProducerConfiguration
from connector.client.enums import KeySharedMode, RegexSubscriptionMode, Result, SchemaType
from connector.client.low_level import (BatchReceivePolicy, DeadLetterPolicy, DeadLetterPolicyBuilder,
                                        KeySharedPolicy)
from connector.client.message_id import MessageId

__all__ = ["BatchReceivePolicy", "ConsumerConfiguration", "DeadLetterPolicy", "DeadLetterPolicyBuilder",
           "KeySharedMode", "KeySharedPolicy", "MessageId", "ProducerConfiguration", "RegexSubscriptionMode",
           "Result", "SchemaType"]
