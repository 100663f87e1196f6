"""pulsar-client enums the client takes but has no use for yet."""
import enum


class ConsumerCryptoFailureAction(enum.IntEnum):
    """pulsar-client's ``ConsumerCryptoFailureAction`` (same values). pulsarlike has no end-to-end encryption:
    ``crypto_failure_action=`` is accepted, and only its default, ``FAIL``, has a meaning here."""
    FAIL = 0
    DISCARD = 1
    CONSUME = 2
