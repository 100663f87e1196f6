"""pulsar-client enums that live with the feature they configure (re-exported under pulsar-client's names)."""
from connector.client.security.message_crypto import ConsumerCryptoFailureAction

__all__ = ["ConsumerCryptoFailureAction"]
