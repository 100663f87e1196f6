"""``pulsarlike admin namespaces|topics grant-permission|revoke-permission|permissions``, as pulsar-admin:

    pulsarlike admin namespaces grant-permission acme/orders --role billing --actions produce,consume
    pulsarlike admin namespaces revoke-permission acme/orders --role billing
    pulsarlike admin namespaces permissions acme/orders        # JSON: {"billing": ["consume", "produce"]}
    pulsarlike admin topics grant-permission persistent://acme/orders/t --role shop --actions produce
"""
from __future__ import annotations

import argparse
from typing import Any, Callable

from connector.cli import output

ACTIONS = ("produce", "consume")


def _actions(text: str) -> list[str]:
    actions = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [a for a in actions if a not in ACTIONS]
    if not actions or unknown:
        raise argparse.ArgumentTypeError(f"invalid actions {text!r} (a comma-separated list of "
                                         f"{', '.join(ACTIONS)})")
    return actions


def add_verbs(verb: Callable[..., argparse.ArgumentParser], level: str, arg: str) -> None:
    """The three verbs for ``level`` (``namespace`` or ``topic``) whose positional is ``arg``."""
    p = verb("grant-permission", lambda a, o: getattr(a, f"grant_{level}_permission")(
        getattr(o, arg), o.role, o.actions), f"Grant a role actions on a {level}", arg)
    p.add_argument("-r", "--role", required=True, help="the client role (a token's subject, a certificate's CN)")
    p.add_argument("-a", "--actions", type=_actions, required=True, help="comma-separated: produce, consume")
    verb("revoke-permission", lambda a, o: getattr(a, f"revoke_{level}_permission")(getattr(o, arg), o.role),
         f"Revoke what a role was granted on a {level}", arg).add_argument("-r", "--role", required=True,
                                                                           help="the client role")
    verb("permissions", lambda a, o: _permissions(a, level, getattr(o, arg)),
         f"The roles granted actions on a {level} (JSON)", arg)


def _permissions(admin: Any, level: str, name: str) -> str:
    return output.pulsar_json(getattr(admin, f"get_{level}_permissions")(name))
