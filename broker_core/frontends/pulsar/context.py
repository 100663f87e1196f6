"""What every Pulsar binary protocol connection shares: the broker's core and the front end's own
broker-wide state."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

from broker_core.clock import Clock
from broker_core.config import BrokerConfig
from broker_core.net.client_limits import ClientLimits
from broker_core.security.credential_checks import CredentialChecks
from broker_core.core.producers import ProducerNames
from broker_core.core.schemas import SchemaRegistry
from broker_core.security import Security
from broker_core.core.registry import TopicRegistry

if TYPE_CHECKING:
    from broker_core.frontends.pulsar.connection import PulsarConnection


@dataclass
class FrontEnd:
    registry: TopicRegistry
    config: BrokerConfig
    producer_names: ProducerNames
    schemas: SchemaRegistry
    limits: ClientLimits
    consumer_ids: Iterator[int]
    """Broker-wide consumer ids, shared with the gRPC front end (dispatch and termination key on them)."""
    clock: Clock
    security: Security = field(default_factory=Security)
    checks: CredentialChecks | None = None
    """Where connections with expiring credentials are checked (``authenticationRefreshCheckSeconds``)."""
    broker_url: str = ""
    """What LOOKUP answers: ``pulsar://<advertised host>:<port>`` (set once the port is bound)."""
    broker_url_tls: str = ""
    """``pulsar+ssl://<advertised host>:<TLS port>`` when the broker has one."""
    connections: set["PulsarConnection"] = field(default_factory=set)
    producers: dict[tuple[str, str], Any] = field(default_factory=dict)
    """(topic, producer name) -> its producer session on some connection: a producer reconnecting with a
    higher epoch replaces one the broker has not yet seen go (Pulsar's ``isSuccessorTo``)."""
    subscribers: dict[tuple[str, str], set] = field(default_factory=dict)
    """(topic, subscription) -> the consumer sessions on it: a seek closes them all, as Pulsar's does."""
