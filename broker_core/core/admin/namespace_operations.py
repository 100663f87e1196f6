"""What the admin API does to a namespace besides its policies (:mod:`.namespaces`), once for REST
(``/admin/v2/namespaces/{tenant}/{ns}/...``) and gRPC:

- **unload** (``PUT .../unload``): every loaded persistent topic of the namespace is unloaded, its producers'
  and consumers' sessions closed; the clients reconnect (as after Pulsar's bundle unload), which loads the
  topic again from disk. Non-persistent topics live in memory only: nothing is unloaded there.
- **bundles** (``GET .../bundles``): Pulsar's ``BundlesData``; one broker owns the whole namespace, so it is
  one bundle, ``0x00000000``-``0xffffffff``, that is never split.
- **properties** (``properties``, ``property/{key}[/{value}]``): the namespace's key/value metadata, kept
  with its policies (Pulsar's ``Policies.properties``); ``set_properties`` adds to them, as Pulsar's ``PUT``.
- **subscription permissions** (``permissions/subscription/{sub}``, ``permissions/{sub}/{role}``): the roles
  a subscription of the namespace's topics is reserved for (Pulsar's ``auth_policies.subscription_auth_roles``);
  the security layer refuses other roles a ``consume`` on it
  (:meth:`~broker_core.security.authorization.Authorizer.subscription_problem`).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Iterable

from broker_core.core.admin.topics import settled
from broker_core.core.policies import NAMESPACE
from broker_core.core.policy_checks import PROPERTIES, SUBSCRIPTION_AUTH_ROLES
from broker_core.core.topic_protocol import stored
from broker_core.errors import InvalidConfiguration, ServiceNotReady
from broker_core.types import TopicName

if TYPE_CHECKING:
    from broker_core.core.registry import TopicRegistry

log = logging.getLogger(__name__)

FULL_RANGE = ("0x00000000", "0xffffffff")
"""The one bundle of every namespace: the whole hash range."""


class NamespaceOperations:
    """Unload, bundles, properties and subscription permissions of the namespaces of ``registry``."""

    def __init__(self, registry: "TopicRegistry") -> None:
        self._registry = registry

    def _stored(self, namespace: str) -> dict[str, Any]:
        """The namespace's own policies (``NamespaceNotFound`` when it does not exist)."""
        return self._registry.get_policies(NAMESPACE, namespace)

    def _set(self, namespace: str, key: str, value: Any) -> None:
        self._registry.set_policy(NAMESPACE, namespace, key, value)

    # ------------------------------------------------------------------ unload and bundles
    async def unload(self, namespace: str) -> int:
        """Unload every loaded persistent topic of ``namespace``, closing its clients' sessions (they
        reconnect); how many were unloaded."""
        registry = self._registry
        registry.namespaces.check_exists(namespace)
        unloaded = 0
        for key, found in registry.loaded_topics().items():
            if not found.persistent or TopicName.parse(key).namespace_name != namespace:
                continue
            topic = stored(found, "unload")
            ended = topic.disconnect_clients(ServiceNotReady(
                f"namespace {namespace} was unloaded by an operator; reconnect to load {key} again", topic=key))
            await settled(lambda: topic.quiescent or topic.closed, f"closing the {ended} sessions of {key}")
            if registry.unload(key):
                unloaded += 1
        log.info("event=namespace_unloaded namespace=%s topics=%d", namespace, unloaded)
        return unloaded

    def bundles(self, namespace: str) -> dict[str, Any]:
        """Pulsar's ``BundlesData`` of the namespace: one bundle over the whole hash range."""
        self._registry.namespaces.check_exists(namespace)
        return {"boundaries": list(FULL_RANGE), "numBundles": 1}

    # ------------------------------------------------------------------ properties
    def properties(self, namespace: str) -> dict[str, str]:
        return dict(self._stored(namespace).get(PROPERTIES) or {})

    def property(self, namespace: str, key: str) -> str | None:
        return self.properties(namespace).get(key)

    def set_properties(self, namespace: str, properties: dict[str, str]) -> None:
        """Add (or replace) ``properties``; the others stay, as Pulsar's ``PUT properties``."""
        self._set(namespace, PROPERTIES, {**self.properties(namespace), **properties})

    def set_property(self, namespace: str, key: str, value: str) -> None:
        self.set_properties(namespace, {key: value})

    def remove_property(self, namespace: str, key: str) -> str | None:
        """Remove one property; its value (None: there was none)."""
        found = self.properties(namespace)
        value = found.pop(key, None)
        if value is not None:
            self._set(namespace, PROPERTIES, found or None)
        return value

    def clear_properties(self, namespace: str) -> None:
        self._stored(namespace)
        self._set(namespace, PROPERTIES, None)

    # ------------------------------------------------------------------ subscription permissions
    def subscription_permissions(self, namespace: str) -> dict[str, list[str]]:
        """``subscription -> roles`` it is reserved for."""
        return dict(self._stored(namespace).get(SUBSCRIPTION_AUTH_ROLES) or {})

    def grant_subscription(self, namespace: str, subscription: str, roles: Iterable[str]) -> None:
        """Reserve ``subscription`` for ``roles`` (replacing those it had, as Pulsar's grant does)."""
        roles = [role.strip() for role in roles]
        if not subscription or not roles or not all(roles):
            raise InvalidConfiguration("grant-subscription-permission needs a subscription and at least one"
                                       " non-empty role", subscription=subscription[:200])
        found = self.subscription_permissions(namespace)
        found[subscription] = roles
        self._set(namespace, SUBSCRIPTION_AUTH_ROLES, found)

    def revoke_subscription(self, namespace: str, subscription: str, role: str) -> None:
        """``role`` no longer has ``subscription``; a subscription left without roles is open to every role
        that may consume again (nothing granted: nothing to do)."""
        found = self.subscription_permissions(namespace)
        roles = [r for r in found.get(subscription, []) if r != role]
        if roles == found.get(subscription, []):
            return
        if roles:
            found[subscription] = roles
        else:
            del found[subscription]
        self._set(namespace, SUBSCRIPTION_AUTH_ROLES, found or None)
