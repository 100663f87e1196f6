"""pulsar-client's exception names, as ``pulsar.exceptions``: see :mod:`connector.client.exceptions`."""
from connector.client.exceptions import *  # noqa: F401,F403
from connector.client.exceptions import __all__  # noqa: F401
