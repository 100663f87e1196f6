"""Authorization: may a role do an action on a resource? Pulsar's ``PulsarAuthorizationProvider`` rules.

Resources are named as the wire names them: a topic (``persistent://tenant/ns/t``, a partition included), a
namespace (``tenant/ns``), a tenant (``tenant``) or the broker (``""``). Actions:

========== ===================================================================================================
``produce`` publish to the topic
``consume`` subscribe to / read the topic, and the subscription verbs (skip, reset, peek, expire, ack up to,
           delete); on a namespace: its namespace-wide subscription verbs (clear-backlog, unsubscribe)
``lookup``  find the topic or read its stats and metadata: any role granted ``produce`` or ``consume``;
           on a namespace: list its topics, for a role granted something on the namespace itself
``admin``   everything else on a tenant's namespaces and topics (create, delete, terminate, unload,
           policies, permissions): the tenant's ``adminRoles``
``super``   tenants themselves (create, update, delete, list): ``superUserRoles`` only
========== ===================================================================================================

Decision, in order: authorization off -> allowed; a super-user -> allowed; the resource's tenant does not
exist -> ``TenantNotFound`` (a ``TopicNotFound``: Pulsar's provider fails with "not found" when it reads the
missing tenant, so a client creating a producer, a consumer or looking up a topic there learns the topic
does not exist, not that it is forbidden; a missing namespace of an existing tenant is not revealed to a role
without rights on it, as in Pulsar: ``AuthorizationError``); an admin role of the resource's
tenant -> allowed (tenant admins may also produce and consume, as in Pulsar); ``produce``/``consume``/
``lookup`` -> what the role was granted on the topic, its partitioned topic and its namespace, added together;
anything else -> refused.

``consume`` on a topic with a subscription named (a consumer's subscribe, the subscription verbs) is refused
first, as Pulsar's ``canConsume``, when the namespace grants that subscription to roles
(``grant-subscription-permission``) and not to this one, or when its ``subscriptionAuthMode`` is ``Prefix``
and the subscription's name does not start with the role (:meth:`Authorizer.subscription_problem`).

Example::

    policies.grant("namespaces", "acme/orders", "billing", ["consume"])
    authorizer.allowed("billing", "consume", "persistent://acme/orders/t")   # True
    authorizer.allowed("billing", "produce", "persistent://acme/orders/t")   # False
"""
from __future__ import annotations

from broker_core.errors import PulsarLikeError, TenantNotFound
from broker_core.core.namespaces import NamespacesStore
from broker_core.core.policies import PoliciesStore
from broker_core.core.policy_checks import SUBSCRIPTION_AUTH_MODE, SUBSCRIPTION_AUTH_ROLES
from broker_core.types import TopicName

PRODUCE, CONSUME, LOOKUP, ADMIN, SUPER = "produce", "consume", "lookup", "admin", "super"
ACTIONS = (PRODUCE, CONSUME, LOOKUP, ADMIN, SUPER)


def tenant_of(resource: str) -> str:
    """The tenant a resource belongs to (``""`` for the broker itself)."""
    if "://" in resource:
        return resource.split("://", 1)[1].split("/", 1)[0]
    return resource.split("/", 1)[0]


class Authorizer:
    def __init__(self, super_users: frozenset[str], namespaces: NamespacesStore, policies: PoliciesStore) -> None:
        self._super_users = super_users
        self._namespaces = namespaces
        self._policies = policies

    def is_super_user(self, role: str) -> bool:
        return role in self._super_users

    def allowed(self, role: str, action: str, resource: str, subscription: str = "") -> bool:
        """Whether ``role`` may do ``action`` on ``resource`` (``subscription``: the one a ``consume`` uses)."""
        if role in self._super_users:
            return True
        if action == SUPER:
            return False
        if self._tenant_admin(role, tenant_of(resource)):  # raises TenantNotFound for a missing tenant
            return True
        if action == ADMIN or not resource:
            return False
        if "://" in resource:
            topic = TopicName.parse(resource)
            if action == CONSUME and subscription and self.subscription_problem(role, topic, subscription):
                return False
            granted = self._policies.granted_actions(topic, topic.namespace_name, role)
        elif "/" in resource:
            granted = self._policies.granted_actions(None, resource, role)
        else:
            return False
        if action == LOOKUP:
            return bool(granted & {PRODUCE, CONSUME})
        return action in granted

    def subscription_problem(self, role: str, topic: TopicName, subscription: str) -> str | None:
        """Why ``role`` may not consume from ``subscription`` of ``topic`` whatever it was granted (None: it may
        if granted): the subscription is granted to other roles only, or (``Prefix`` mode) its name does not
        start with the role, in Pulsar's words."""
        roles = (self._policies.resolve(topic, SUBSCRIPTION_AUTH_ROLES, None) or {}).get(subscription)
        if roles and role not in roles:
            return (f"role {role!r} is not authorized to subscribe on {topic}-{subscription[:200]}: the subscription"
                    " is granted to other roles (namespaces grant-subscription-permission)")
        if self._policies.resolve(topic, SUBSCRIPTION_AUTH_MODE, "None") == "Prefix" and \
                not subscription.startswith(role):
            return (f"Failed to create consumer - The subscription name needs to be prefixed by the authentication"
                    f" role, like {role}-xxxx for topic: {topic}")
        return None

    def _tenant_admin(self, role: str, tenant: str) -> bool:
        if not tenant:
            return False
        try:
            admins = self._namespaces.tenant_info(tenant)["adminRoles"]
        except TenantNotFound:
            raise
        except PulsarLikeError:  # a bad name: nobody administers it
            return False
        return bool(role) and role in admins
