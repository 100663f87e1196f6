"""``pulsar.exceptions``: pulsar-client's exception names (:mod:`connector.client.exceptions`), plus
``NotSupported``, raised for the pulsar-client features pulsarlike refuses by name."""
from broker_core.errors import NotSupported
from connector.client.exceptions import *  # noqa: F401,F403
from connector.client.exceptions import __all__ as _client_names

__all__ = [*_client_names, "NotSupported"]
