"""pulsarlike's client side: ``from connector import Client, ConsumerType, MessageId, ...``."""
from connector.client import *  # noqa: F401,F403
from connector.client import __all__  # noqa: F401
