"""pulsar-client names that pulsarlike does not serve: each is defined, so that ``import pulsarlike as pulsar``
and code that only mentions it keep working, and using it raises :class:`~broker_core.errors.NotSupported`
naming it (never a silent no-op). :data:`REFUSED` lists them with the reason, for the docs and the coverage
test."""
from __future__ import annotations

from typing import Any, NoReturn

from broker_core.errors import NotSupported

REFUSED: dict[str, str] = {}
"""Name (as pulsar-client spells it, ``schema.`` prefixed for ``pulsar.schema``) -> why it is not served."""


def refuse(name: str, why: str) -> NoReturn:
    raise NotSupported(f"{name}: not supported by pulsarlike yet ({why})")


def unsupported_class(name: str, why: str, module: str = "pulsarlike") -> type:
    """A class named ``name`` whose construction raises ``NotSupported``. Defining a subclass does not: a
    program that merely defines one (at class level, say) must import; what uses an instance refuses it."""
    qualified = name if module == "pulsarlike" else f"{module.rsplit('.', 1)[-1]}.{name}"
    REFUSED[qualified] = why

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        refuse(qualified, why)

    return type(name, (), {"__init__": __init__, "__module__": module,
                           "__doc__": f"Not served by pulsarlike: {why}."})


_AUTH = "Athenz role tokens need an Athenz ZTS server and the broker's Athenz provider, which pulsarlike " \
        "does not have; its broker authenticates tokens (OpenID Connect ones too), TLS certificates and basic " \
        "credentials: use AuthenticationToken, AuthenticationOauth2, AuthenticationTLS or AuthenticationBasic"
_FUNCTIONS = "Pulsar Functions are not part of pulsarlike"

AuthenticationAthenz = unsupported_class("AuthenticationAthenz", _AUTH)
Function = unsupported_class("Function", _FUNCTIONS, "pulsarlike.functions")
Context = unsupported_class("Context", _FUNCTIONS, "pulsarlike.functions")
SerDe = unsupported_class("SerDe", _FUNCTIONS, "pulsarlike.functions")
IdentitySerDe = unsupported_class("IdentitySerDe", _FUNCTIONS, "pulsarlike.functions")
PickleSerDe = unsupported_class("PickleSerDe", _FUNCTIONS, "pulsarlike.functions")
