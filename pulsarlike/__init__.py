"""pulsarlike's public client package, laid out as pulsar-client's ``pulsar`` module: a pulsar-client program
runs against pulsarlike by changing one import, ``import pulsarlike as pulsar``.

The client itself lives in :mod:`connector.client`; this package re-exports it under pulsar-client's names:
``Client``, the enums, ``MessageId``, the authentication classes, the ``ConsoleLogger``/``FileLogger`` loggers,
``exceptions`` (whose names are also here at the top level, as in pulsar-client), ``schema`` and ``tableview``.
pulsar-client names pulsarlike does not serve (Athenz, Pulsar Functions ...) are
defined too and raise :class:`NotSupported` naming themselves when used (``_unsupported.REFUSED`` lists them).
Importing it loads no broker module.
"""
from broker_core.errors import NotSupported
from connector.client import *  # noqa: F401,F403
from connector.client import __all__ as _client_names
from connector.client.exceptions import *  # noqa: F401,F403
from connector.client.exceptions import __all__ as _exception_names
from connector.client.loggers import ConsoleLogger, FileLogger, LoggerLevel
from connector.client.service_info import ServiceInfo
from pulsarlike import exceptions, functions, schema, tableview
from pulsarlike._unsupported import (
    AuthenticationAthenz, Context, Function, IdentitySerDe, PickleSerDe, SerDe)
from connector.client.security.crypto_keys import CryptoKeyReader, EncryptionContext, EncryptionKey, EncryptionKeyInfo
from pulsarlike.enums import ConsumerCryptoFailureAction
from pulsarlike.message_batch import MessageBatch
from pulsarlike.schema import BytesSchema

__version__ = "0.1.0"

__all__ = sorted({
    *_client_names, *_exception_names, "NotSupported", "ConsoleLogger", "FileLogger", "LoggerLevel",
    "ServiceInfo", "exceptions", "functions", "schema", "tableview", "AuthenticationAthenz",
    "AutoClusterFailover", "BatchReceivePolicy", "Context", "CryptoKeyReader", "DeadLetterPolicyBuilder",
    "EncryptionContext", "EncryptionKey", "EncryptionKeyInfo", "Function", "IdentitySerDe", "KeySharedPolicy", "MessageBatch",
    "PickleSerDe", "SerDe", "ServiceInfoProvider", "ConsumerCryptoFailureAction", "BytesSchema"})
