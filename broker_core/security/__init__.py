"""The security layer both front ends call (see :mod:`broker_core.security.layer`)."""
from broker_core.security.authorization import ACTIONS, ADMIN, CONSUME, LOOKUP, PRODUCE, SUPER, Authorizer
from broker_core.security.layer import ANONYMOUS, Principal, Security

__all__ = ["ACTIONS", "ADMIN", "ANONYMOUS", "CONSUME", "LOOKUP", "PRODUCE", "SUPER", "Authorizer", "Principal",
           "Security"]
