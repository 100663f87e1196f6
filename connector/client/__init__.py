"""pulsarlike's Python client; the names mirror ``pulsar-client``."""
from broker_core.errors import (
    AlreadyClosed, AuthenticationError, AuthorizationError, BrokerPersistenceError, ChecksumError,
    ClusterNotFound, CompactionAlreadyRunning, ConnectError, ConsumerAssignError, ConsumerBusy,
    CorruptLog, CumulativeAcknowledgementNotAllowedError, DataDirLocked, DataLost, EncryptionRequired,
    IncompatibleSchema, InvalidConfiguration,
    InvalidMessage, InvalidPartitionCount, InvalidSchema, InvalidTopicName, MessageDecodeError, MessageNotFound,
    MessageTooBig, NamespaceAlreadyExists,
    NamespaceNotEmpty, NamespaceNotFound, NotAllowedError, NotConnected, NotSupported, PersistenceError, ProducerBusy,
    ProducerBlockedQuotaExceededError, ProducerBlockedQuotaExceededException, ProducerFenced,
    ProducerQueueIsFull, PulsarLikeError, ResourceGroupInUse, ResourceGroupNotFound, ServiceNotReady,
    SubscriptionAlreadyExists, SubscriptionNotFound,
    TenantAlreadyExists, TenantNotEmpty, TenantNotFound, Timeout, TooManyRequests, TopicAlreadyExists,
    TopicNotFound, TopicTerminated, UnknownError, UnsafePath)

from connector.client.admin import Admin, PeekedMessage
from connector.client.security.authentication import (Authentication, AuthenticationBasic, AuthenticationTLS,
                                            AuthenticationToken)
from connector.client.security.oauth2 import AuthenticationOauth2
from connector.client.client import Client
from connector.client.consumer import Consumer
from connector.client.enums import (
    BatchingType, CompressionType, ConsumerType, HashingScheme, InitialPosition, KeySharedMode,
    PartitionsRoutingMode, ProducerAccessMode, RegexSubscriptionMode, Result, SubscriptionMode)
from connector.client.exceptions import PulsarException
from connector.client.loggers import ConsoleLogger, FileLogger, LoggerLevel
from connector.client.message import Message
from connector.client.message_id import MessageId
from connector.client.policies import (
    ConsumerBatchReceivePolicy, ConsumerDeadLetterPolicy, ConsumerKeySharedPolicy, MultiplierRedeliveryBackoff)
from connector.client.producer import Producer
from connector.client.reader import Reader
from connector.client.low_level import (BatchReceivePolicy, DeadLetterPolicy, DeadLetterPolicyBuilder,
                                        KeySharedPolicy)
from connector.client.service_info import AutoClusterFailover, ServiceInfo, ServiceInfoProvider
from connector.client.table_view import TableView

__all__ = [
    "Admin", "Authentication", "AuthenticationBasic", "AuthenticationOauth2", "AuthenticationTLS", "AuthenticationToken", "Client", "Consumer", "Producer", "Reader", "TableView", "Message", "MessageId", "PeekedMessage",
    "ConsumerBatchReceivePolicy", "ConsumerDeadLetterPolicy", "ConsumerKeySharedPolicy",
    "MultiplierRedeliveryBackoff", "ConsoleLogger", "FileLogger", "LoggerLevel", "ServiceInfo",
    "AutoClusterFailover", "ServiceInfoProvider", "BatchReceivePolicy", "DeadLetterPolicy",
    "DeadLetterPolicyBuilder", "KeySharedPolicy",
    "BatchingType", "CompressionType", "ConsumerType", "HashingScheme", "InitialPosition",
    "KeySharedMode", "PartitionsRoutingMode", "ProducerAccessMode", "RegexSubscriptionMode", "Result",
    "SubscriptionMode",
    "PulsarException", "AlreadyClosed", "AuthenticationError", "AuthorizationError", "BrokerPersistenceError",
    "PersistenceError", "ChecksumError",
    "ClusterNotFound", "CompactionAlreadyRunning", "ConnectError", "ConsumerAssignError",
    "ConsumerBusy", "CorruptLog", "CumulativeAcknowledgementNotAllowedError", "DataDirLocked", "DataLost", "EncryptionRequired",
    "IncompatibleSchema", "InvalidSchema",
    "InvalidConfiguration", "InvalidMessage", "InvalidPartitionCount", "InvalidTopicName", "MessageDecodeError",
    "MessageNotFound", "MessageTooBig",
    "NamespaceAlreadyExists", "NamespaceNotEmpty", "NamespaceNotFound", "NotAllowedError", "NotConnected",
    "NotSupported", "ProducerBlockedQuotaExceededError", "ProducerBlockedQuotaExceededException", "ProducerBusy", "ProducerFenced", "ProducerQueueIsFull", "PulsarLikeError",
    "ResourceGroupInUse", "ResourceGroupNotFound", "ServiceNotReady",
    "SubscriptionAlreadyExists", "SubscriptionNotFound", "TenantAlreadyExists", "TenantNotEmpty", "TenantNotFound", "Timeout",
    "TooManyRequests", "TopicAlreadyExists", "TopicNotFound", "TopicTerminated", "UnknownError", "UnsafePath",
]
