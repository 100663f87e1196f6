"""Broker configuration, parsed once into a frozen dataclass.

Keys follow Apache Pulsar's ``broker.conf`` names where Pulsar has one. Values come from keyword
arguments (``Broker(data_dir, maxMessageSize=1024)``), a ``broker.conf``-style file (``key=value`` lines,
``#`` comments) and ``--set key=value`` on the command line, later sources winning. An unknown key or a
bad value raises :class:`InvalidConfiguration` naming the key and what it accepts.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from broker_core.errors import InvalidConfiguration

if TYPE_CHECKING:
    from broker_core.net.advertised_listeners import Listener

SYNC_MODES = ("always", "group", "never")
EVENT_LOOPS = ("asyncio", "uvloop")
AUTO_TOPIC_TYPES = ("non-partitioned", "partitioned")
INACTIVE_TOPIC_MODES = ("delete_when_no_subscriptions", "delete_when_subscriptions_caught_up")
SUBSCRIPTION_TYPES = ("Exclusive", "Shared", "Failover", "Key_Shared")
_PULSAR_AUTH = "org.apache.pulsar.broker.authentication."
PROVIDER_NAMES = {"token": "token", "tls": "tls", "basic": "basic",
                  f"{_PULSAR_AUTH}AuthenticationProviderToken": "token",
                  f"{_PULSAR_AUTH}AuthenticationProviderTls": "tls",
                  f"{_PULSAR_AUTH}AuthenticationProviderBasic": "basic", "openid": "openid",
                  f"{_PULSAR_AUTH}oidc.AuthenticationProviderOpenID": "openid",
                  "AuthenticationProviderOpenID": "openid"}
"""``authenticationProviders`` entries -> the provider's short name."""


# init=False, eq=False, repr=False: __init__ (keyword arguments only), __eq__, __hash__ and __repr__ are written
# below, over fields() -- generated, they are four functions of ~80 fields compiled at every start of the broker
# (~4 ms of it; issue 19)
@dataclass(frozen=True, init=False, eq=False, repr=False)
class BrokerConfig:
    """The broker's settings, one field per key (Pulsar's ``broker.conf`` name where Pulsar has the key)."""

    bindAddress: str = "127.0.0.1"
    """Address the broker's port binds (Pulsar: ``bindAddress``)."""
    brokerServicePort: int = 6650
    """The broker's port, serving both its gRPC API and Pulsar's binary protocol; 0 picks a free one."""
    advertisedAddress: str = ""
    """The host name clients are told to use (``topics lookup``); empty: ``bindAddress``, or this machine's
    host name when ``bindAddress`` is a wildcard (``0.0.0.0``, ``::``), as Pulsar advertises its hostname."""
    advertisedListeners: str = ""
    """Named addresses a LOOKUP naming a listener is answered with: ``name:pulsar://host:port`` entries,
    comma-separated, at most one ``pulsar://`` and one ``pulsar+ssl://`` per name (Pulsar's format; see
    :mod:`broker_core.net.advertised_listeners`). A lookup naming no listener is answered ``advertisedAddress``."""
    clusterName: str = "standalone"
    """Used in default producer names, as Pulsar does (``<cluster>-<broker>-<n>``)."""
    maxMessageSize: int = 5242880
    """Largest entry (a message, or a batch of messages) the broker accepts, in bytes."""
    allowAutoTopicCreation: bool = True
    allowAutoTopicCreationType: str = "non-partitioned"
    defaultNumPartitions: int = 1
    """Partitions of an auto-created topic when ``allowAutoTopicCreationType=partitioned``."""
    enableNonPersistentTopics: bool = True
    """Serve ``non-persistent://`` topics (in memory only, see :mod:`broker_core.core.nonpersistent.topic`);
    false: every use of one is refused with ``NotAllowedError``."""
    brokerDeduplicationEnabled: bool = False
    """Drop entries whose sequence id is not above the highest one stored for their producer name (the
    broker-wide default; namespace and topic policies set through ``Admin`` override it)."""
    brokerDeduplicationEntriesInterval: int = 1000
    """Deduplication state is snapshotted every this many stored entries (and on close); a restart
    replays the entries after the last snapshot."""
    journalSyncMode: str = "group"
    """``always``: fsync each write before its receipt; ``group``: one fsync covers every append made
    while the previous fsync ran, receipts wait for it; ``never``: page cache only."""
    journalSyncIntervalMs: int = 0
    """``group`` mode: the least time between two fsyncs (0: start the next as soon as one ends)."""
    eventLoop: str = "asyncio"
    """pulsarlike: the event loop the broker runs on: ``asyncio`` (the standard library's) or ``uvloop`` (libuv's,
    the ``uvloop`` extra: 8-28% less broker CPU per produced message in bench/README.md's runs). Read when the
    broker starts (``pulsarlike broker``, ``Broker(...)``); a broker embedded in a running loop keeps that one."""
    managedLedgerMaxSizePerLedgerMbytes: int = 256
    """A segment rolls over when it reaches this size."""
    managedLedgerMaxLedgerRolloverTimeMinutes: int = 240
    """A segment rolls over when it is this old (and not empty)."""
    managedLedgerMaxEntriesPerLedger: int = 50000
    """A segment rolls over before a write that would take it past this many entries (one write of more
    entries still goes to one segment)."""
    autoSkipNonRecoverableData: bool = False
    """What a subscription does when its next message is in a damaged stored range (a frame that fails its
    CRC, a truncated or missing segment; see docs/operations.md, "When the disk lies"). false: dispatch stops
    there and its consumers get one ``DataLost`` naming the offsets (pulsarlike's clients; the official
    clients, whose protocol has no such error, wait there, and a new consumer starting inside the range is
    refused with ``NotAllowedError``). true: the range is skipped, logged once per subscription, counted
    (``nonRecoverableMessagesSkipped``) and acknowledged (Pulsar's key of that name)."""
    managedLedgerCacheSizeMB: int = 64
    """Recently appended entries kept in memory so tailing consumers never read the disk."""
    managedLedgerMaxOpenFiles: int = 256
    """pulsarlike extension: segment and index files kept open at once over every topic (0: no limit); the
    least recently used idle ones are closed and reopened on their next use."""
    brokerTopicIdleUnloadSeconds: int = 120
    """pulsarlike extension: a topic with no producers or consumers and no activity for this long is
    unloaded (files closed, memory freed; cursors, deduplication state and data stay on disk) and loaded
    again on its next use (0: never)."""
    managedLedgerCursorFlushIntervalMs: int = 200
    """Acknowledgments are persisted at most this often (and on close); a crash redelivers at most
    this window of acknowledged messages (at-least-once, as in Pulsar)."""
    defaultRetentionTimeInMinutes: int = 0
    """Keep acknowledged data this long (-1: forever; 0: not at all) unless a namespace or topic
    ``retention`` policy says otherwise (see :mod:`broker_core.core.retention_rules`)."""
    defaultRetentionSizeInMB: int = 0
    """Keep acknowledged data while the topic holds at most this much (-1: no size limit; 0: none)."""
    retentionCheckIntervalInSeconds: int = 120
    """How often each topic deletes the segments retention no longer needs."""
    backlogQuotaCheckIntervalInSeconds: int = 60
    """How often loaded topics are checked against their namespace's ``backlogQuota`` (also when a quota is
    set, and at each producer's creation)."""
    brokerServiceCompactionMonitorIntervalInSeconds: int = 60
    """How often each loaded persistent topic checks its ``compactionThreshold`` (Pulsar's default, 60)."""
    brokerServiceCompactionThresholdInBytes: int = 0
    """Compact a topic automatically once its backlog not yet compacted exceeds this many bytes, unless a
    namespace or topic ``compactionThreshold`` policy says otherwise (0: never)."""
    topicCompactionRetainNullKey: bool = False
    """Keep the messages without a key in the compacted ledger (Pulsar 3.2+'s default: dropped)."""
    compactionTombstoneRetentionSeconds: int = 3600
    """pulsarlike extension: compaction keeps the tombstones a compacted reader may still have to read (see
    docs/compaction.md); a compacted reader that left (closed, or lost its connection), or that a restart or
    unload made the broker forget, still holds them this long (0: only the readers the broker sees now)."""
    ttlDurationDefaultInSeconds: int = 0
    """Message TTL when no ``messageTTLInSeconds`` policy applies (0: messages never expire)."""
    messageExpiryCheckIntervalInMinutes: int = 5
    """How often each topic acknowledges expired messages on its durable subscriptions."""
    messageExpiryCheckIntervalInSeconds: int = 0
    """pulsarlike extension: when > 0, the expiry check interval in seconds instead of minutes."""
    subscriptionExpirationTimeMinutes: int = 0
    """A durable subscription with no consumer and no activity for this long is deleted (0: never), unless
    a namespace or topic ``subscriptionExpirationTimeMinutes`` policy says otherwise (see
    :mod:`broker_core.core.subscription_expiry`)."""
    subscriptionExpiryCheckIntervalInMinutes: int = 5
    """How often subscriptions are checked for expiration (loaded topics and topics on disk)."""
    subscriptionExpiryCheckIntervalInSeconds: int = 0
    """pulsarlike extension: when > 0, the subscription expiry check interval in seconds instead of minutes."""
    dispatcherMaxReadBatchSize: int = 100
    """Most entries read for one dispatch round."""
    dispatcherMaxDeliveryBytes: int = 8 * 1024 * 1024
    """Most bytes of entries packed into one delivery message to a consumer."""
    maxUnackedMessagesPerConsumer: int = 50000
    """Dispatch stops to a consumer holding this many unacked messages until it acknowledges some (0: no
    limit). Every subscription type (Pulsar caps only Shared and Key_Shared); readers, which never
    acknowledge, are not capped."""
    maxProducersPerTopic: int = 0
    """Most producers connected to one topic partition (0: no limit); namespace and topic policies
    override it. One more is refused with ``ProducerBusy``."""
    maxConsumersPerTopic: int = 0
    """Most consumers (of every subscription, readers included) on one topic partition (0: no limit);
    namespace and topic policies override it. One more is refused with ``ConsumerBusy``."""
    maxConsumersPerSubscription: int = 0
    """Most consumers on one subscription of a topic partition (0: no limit); namespace and topic policies
    override it. One more is refused with ``ConsumerBusy`` ("Subscription reached max consumers limit")."""
    maxSubscriptionsPerTopic: int = 0
    """Most subscriptions (durable ones and readers') on one topic partition (0: no limit); namespace and topic
    policies override it. A new one beyond it is refused with ``NotAllowedError``."""
    maxUnackedMessagesPerSubscription: int = 200000
    """Shared and Key_Shared: dispatch on a subscription stops while its consumers hold this many unacked
    messages and goes on once they hold half as many, as Pulsar's dispatcher (0: no limit)."""
    maxTopicsPerNamespace: int = 0
    """Most topics in a namespace, each partition of a partitioned topic counting as one (0: no limit); one
    more is refused, created by the admin API (412) or by a client (``NotAllowedError``)."""
    subscriptionBacklogScanMaxEntries: int = 10000
    """Most entries one ``analyze-backlog`` request reads (Pulsar's key); past it the answer says ``aborted``
    and ``pulsarlike admin topics analyze-backlog -b N`` asks again from where it stopped, as pulsar-admin."""
    allowAutoSubscriptionCreation: bool = True
    """A consumer may create a durable subscription by subscribing; false: a consumer of a subscription that
    does not exist is refused with ``SubscriptionNotFound`` (the admin API still creates them)."""
    subscriptionTypesEnabled: str = "Exclusive,Shared,Failover,Key_Shared"
    """The subscription types consumers may use (comma-separated); namespace policies override it. Another
    is refused with ``NotAllowedError``."""
    isAllowAutoUpdateSchemaEnabled: bool = True
    """Producers and consumers may register a new schema version; false: only the admin API uploads them, and
    a client bringing a schema not registered yet is refused with ``IncompatibleSchema``."""
    isSchemaValidationEnforced: bool = False
    """On a topic with a schema, refuse messages sent without one (a BYTES producer's)."""
    brokerDeleteInactiveTopicsEnabled: bool = False
    """Delete topics left inactive (no producers, no consumers, and no subscriptions or every subscription
    caught up, per ``brokerDeleteInactiveTopicsMode``) for ``brokerDeleteInactiveTopicsMaxInactiveDurationSeconds``;
    namespace and topic ``inactiveTopicPolicies`` override it. Pulsar's default is true; pulsarlike, an
    embedded broker whose topics are often made once and used later, deletes nothing unless told to."""
    brokerDeleteInactiveTopicsFrequencySeconds: int = 60
    """How often inactive topics are looked for."""
    brokerDeleteInactiveTopicsMode: str = "delete_when_no_subscriptions"
    """``delete_when_no_subscriptions`` or ``delete_when_subscriptions_caught_up``."""
    brokerDeleteInactiveTopicsMaxInactiveDurationSeconds: int = 60
    """How long a topic stays inactive before it is deleted."""
    brokerDeduplicationSnapshotIntervalSeconds: int = 120
    """Deduplication state is also snapshotted when this long has passed since the last snapshot and entries
    were stored since (0: by ``brokerDeduplicationEntriesInterval`` only); the namespace's
    ``deduplicationSnapshotInterval`` overrides it."""
    delayedDeliveryEnabled: bool = True
    """Honour ``deliver_at``/``deliver_after`` on Shared and Key_Shared subscriptions; off, delayed
    messages are delivered at once."""
    delayedDeliveryTickTimeMillis: int = 1000
    """Precision of delayed delivery: delivery may be up to one tick early (or, strict, late)."""
    isDelayedDeliveryDeliverAtTimeStrict: bool = False
    """``true``: never deliver before the deliver-at time (possibly up to a tick late)."""
    delayedDeliveryMaxDelayInMillis: int = 0
    """The longest delay a message may ask (deliver-at minus publish time) while delayed delivery is on;
    one asking more is refused (0: no limit). A ``delayedDelivery`` policy's ``maxDeliveryDelayInMillis``
    overrides it."""
    subscriptionKeySharedUseConsistentHashing: bool = False
    """Key_Shared AUTO_SPLIT uses a consistent-hashing ring instead of splitting hash ranges."""
    acknowledgmentAtBatchIndexLevelEnabled: bool = False
    """Redeliver only the unacknowledged messages of a partly acknowledged batch; off, the whole batch
    is redelivered (consumers skip what they acknowledged when they also enable batch index acks)."""

    # --- rate limits (docs/rate-limits.md; namespace and topic policies override the per-topic ones) ----------
    dispatchThrottlingRatePerTopicInMsg: int = 0
    """Messages each topic partition dispatches per second at most, over all its subscriptions (<= 0: no
    limit) unless a ``dispatchRate`` policy says otherwise."""
    dispatchThrottlingRatePerTopicInByte: int = 0
    """The same in bytes."""
    dispatchThrottlingRatePerSubscriptionInMsg: int = 0
    """Messages each subscription of a topic partition dispatches per second at most (<= 0: no limit) unless a
    ``subscriptionDispatchRate`` policy says otherwise."""
    dispatchThrottlingRatePerSubscriptionInByte: int = 0
    """The same in bytes."""
    dispatchThrottlingRateRelativeToPublishRate: bool = False
    """The broker's dispatch rates above are added to each topic's publish rate (measured over the last stats
    interval), as a ``dispatchRate`` with ``relativeToPublishRate``."""
    dispatchThrottlingRateInMsg: int = 0
    """Messages the whole broker dispatches per second at most, every topic together (<= 0: no limit)."""
    dispatchThrottlingRateInByte: int = 0
    """The same in bytes."""
    maxPublishRatePerTopicInMessages: int = 0
    """Messages each topic partition takes per second at most (<= 0: no limit) unless a ``publishRate`` policy
    says otherwise; beyond it producers are throttled (their connection, or gRPC stream, is read no more until
    the rate allows)."""
    maxPublishRatePerTopicInBytes: int = 0
    """The same in bytes."""
    brokerPublisherThrottlingMaxMessageRate: int = 0
    """Messages the whole broker takes per second at most, every topic together (<= 0: no limit)."""
    brokerPublisherThrottlingMaxByteRate: int = 0
    """The same in bytes."""
    subscribeThrottlingRatePerConsumer: int = 0
    """Subscribes each consumer (client host, consumer name and id) may make per
    ``subscribeRatePeriodPerConsumerInSecond`` (<= 0: no limit) unless a ``subscribeRate`` policy says otherwise;
    one more is refused with ``NotAllowedError``."""
    subscribeRatePeriodPerConsumerInSecond: int = 30
    """The period of ``subscribeThrottlingRatePerConsumer``."""

    streamReplyQueueMaxMessages: int = 1000
    """pulsarlike extension: replies waiting to be written to one stream's client (for a producer, its
    sends waiting to be persisted count too); beyond it the broker reads no more of that stream's requests
    and dispatches nothing more to it until the client has read half of them (back-pressure)."""
    streamReplyQueueMaxBytes: int = 16 * 1024 * 1024
    """pulsarlike extension: the same bound in bytes of replies."""
    brokerReplyQueueMaxBytes: int = 256 * 1024 * 1024
    """pulsarlike extension: bytes of replies waiting on every stream together; beyond it each stream with
    unread replies waits until its client has read them all."""
    brokerMaxConnections: int = 0
    """Client connections open at once, on the plain and TLS ports together (0: no limit, but never more
    than the process's open-file limit allows, keeping a reserve for storage); one more is closed as soon
    as it is accepted. A gRPC call from a new connection beyond it also fails with ``TooManyRequests``."""
    brokerMaxConnectionsPerIp: int = 0
    """The same per client IP address (0: no limit)."""
    handshakeTimeoutSeconds: int = 30
    """pulsarlike extension: a client connection that has not completed its handshake this long after it was
    accepted is closed, however many bytes it trickles: a Pulsar client its ``CONNECT`` (authenticated and
    answered ``CONNECTED``), a gRPC client its HTTP/2 preface. Pulsar closes a connection without a completed
    handshake at its first keep-alive check (``keepAliveIntervalSeconds``, 30 s)."""
    maxStreamsPerConnection: int = 10000
    """pulsarlike extension: producer and consumer streams open at once on one client connection (0: no
    limit); one more fails with ``TooManyRequests``."""
    maxConcurrentLookupRequest: int = 50000
    """Unary calls (lookups, admin) being served at once over every connection (0: no limit); one more
    fails with ``TooManyRequests``."""
    maxConcurrentRequestsPerConnection: int = 1000
    """pulsarlike extension: unary calls being served at once for one client connection (0: no limit)."""

    keepAliveIntervalSeconds: int = 30
    """Pulsar binary protocol connections: one silent this long is sent a PING, one silent twice this long is
    closed (0: no keep-alive checks)."""

    statsUpdateFrequencyInSecs: int = 60
    """Rates in topic stats and metrics (``msgRateIn`` ...) are per-second averages over this interval,
    measured at its end (see :mod:`broker_core.core.rates`)."""
    webServicePort: int = 8080
    """HTTP port of the Prometheus metrics (``/metrics``) and ``/status.html``; 0 picks a free one. A broker
    started with ``brokerServicePort`` 0 (``--port 0``, ``Broker(port=0)``) also takes a free metrics port
    unless this key is given."""
    metricsEnabled: bool = True
    """pulsarlike extension: false starts no HTTP server (Pulsar always runs its web service)."""
    exposeTopicLevelMetricsInPrometheus: bool = True
    """Per-topic and per-subscription series; false: the same metrics summed per namespace."""
    metricsServletTimeoutMs: int = 30000
    """Longest a scrape of ``/metrics`` waits for its answer (the stats encoded on a worker thread); then 503."""
    maxHttpServerConnections: int = 2048
    """Web service port connections (``webServicePort`` and ``webServicePortTls`` together) open at once (0: no
    limit, but never more than the open-file limit allows); one more is closed as soon as it is accepted. They
    are counted apart from ``brokerMaxConnections`` (the broker's port), so web clients can never take the
    broker port's places; ``brokerMaxConnectionsPerIp`` applies to each count."""
    httpMaxRequestSize: int = 1048576
    """Largest request body the web service port reads, in bytes (Pulsar's default, -1, is no limit; pulsarlike
    always has one): a ``Content-Length`` over it is refused with 413 before a byte of the body is read, a
    chunked body as soon as it has sent more. Nothing over it is ever buffered."""
    httpRequestBodyTimeoutMs: int = 30000
    """pulsarlike extension: a request body must have arrived whole this long after the end of its headers,
    however it trickles; else the answer is 408 and the connection is closed."""
    httpMaxRequestJsonValues: int = 10000
    """pulsarlike extension: most values (objects, arrays, strings, numbers...) a JSON request body may hold,
    counted before it is parsed (400 beyond): parsing one costs the event loop about a quarter of a
    microsecond, and the admin API's documents hold a few dozen."""

    # --- TLS (docs/security.md) ---------------------------------------------------------------------
    brokerServicePortTls: int | None = None
    """A second port, served over TLS, beside the plain ``brokerServicePort`` (both protocols, as the plain
    one); unset: no TLS port, 0: any free one. Needs ``tlsCertificateFilePath`` and ``tlsKeyFilePath``."""
    webServicePortTls: int | None = None
    """HTTPS port of ``/metrics`` and ``/status.html`` with the same certificate; unset: none."""
    tlsCertificateFilePath: str = ""
    """The broker's certificate (PEM; its chain may follow it in the file)."""
    tlsKeyFilePath: str = ""
    """The broker's private key (PEM)."""
    tlsTrustCertsFilePath: str = ""
    """CA certificates (PEM) that client certificates must chain to; a client certificate is asked for (not
    required) whenever this is set."""
    tlsRequireTrustedClientCertOnConnect: bool = False
    """mTLS: a TLS client without a certificate signed by ``tlsTrustCertsFilePath`` is refused during the
    handshake."""
    tlsHandshakeTimeoutSeconds: int = 10
    """pulsarlike extension: a TLS client that has not finished its handshake after this long is closed."""

    # --- authentication and authorization (docs/security.md) ------------------------------------------
    authenticationEnabled: bool = False
    """Clients must present credentials one of ``authenticationProviders`` accepts (false: everyone is
    anonymous, as Pulsar's default)."""
    authenticationProviders: str = ""
    """Comma-separated: ``token``, ``tls``, ``basic`` and/or ``openid`` (Pulsar's class names
    ``org.apache.pulsar.broker.authentication.AuthenticationProviderToken`` / ``...Tls`` / ``...Basic`` /
    ``...oidc.AuthenticationProviderOpenID`` are accepted)."""
    authorizationEnabled: bool = False
    """Every call is checked: role x action x resource (super-users, tenant admins, grants)."""
    superUserRoles: str = ""
    """Comma-separated roles that may do everything (create tenants, grant permissions ...)."""
    anonymousUserRole: str = ""
    """The role of a client that presents no credentials while authentication is on (unset: refused)."""
    authenticationRefreshCheckSeconds: int = 60
    """How often open connections and streams are checked for expired credentials: a gRPC stream whose token
    expired is closed with ``AuthenticationError``; a Pulsar binary connection gets ``AUTH_CHALLENGE`` and is
    closed unless it answers with a valid token of the same role by the next check."""
    basicAuthConf: str = ""
    """The ``basic`` provider's users, htpasswd lines ``name:hash`` (``$apr1$``, ``$1$``, ``$5$``, ``$6$`` or
    DES crypt): ``file:///path``, a path, ``data:;base64,<content>`` or the content base64-encoded."""
    basicAuthMaxFailuresPerAddress: int = 10
    """pulsarlike extension (Pulsar has no such limit): after this many refused Basic logins (wrong password or
    unknown user) from one client address within ``basicAuthFailureWindowSeconds``, its Basic logins are
    refused at once, nothing hashed, for ``basicAuthBlockSeconds`` (``TooManyRequests``, 429 on HTTP); 0: no
    limit. See :mod:`broker_core.security.failed_logins`."""
    basicAuthFailureWindowSeconds: int = 60
    """The window ``basicAuthMaxFailuresPerAddress`` counts failures in."""
    basicAuthBlockSeconds: int = 60
    """How long an address that reached ``basicAuthMaxFailuresPerAddress`` is refused."""
    tokenSecretKey: str = ""
    """HS256/384/512 secret: ``data:;base64,<key>``, ``file:///path`` (raw bytes, as ``pulsarlike tokens
    create-secret-key --output`` writes), ``env:VAR`` or bare base64."""
    tokenPublicKey: str = ""
    """Public key (DER or PEM) for RS*/ES*/PS* tokens, in the same forms as ``tokenSecretKey``."""
    tokenPublicAlg: str = "RS256"
    """The algorithm tokens signed with the private key of ``tokenPublicKey`` use (RS256, ES256 ...)."""
    tokenAuthClaim: str = "sub"
    """The claim holding the role."""
    tokenAudienceClaim: str = ""
    """When set with ``tokenAudience``: the claim (``aud``) that must hold ``tokenAudience``."""
    tokenAudience: str = ""
    """The audience this broker accepts (see ``tokenAudienceClaim``)."""
    tokenAllowedClockSkewSeconds: int = 0
    """Leeway for ``exp``/``nbf`` checks."""
    openIDAllowedTokenIssuers: str = ""
    """OpenID Connect (``AuthenticationProviderOpenID``): comma-separated issuer URLs whose tokens are accepted
    (a token's ``iss`` exactly); their keys come from ``<issuer>/.well-known/openid-configuration``."""
    openIDAllowedAudiences: str = ""
    """Comma-separated: a token's ``aud`` must hold one of them (required with the OpenID provider)."""
    openIDRoleClaim: str = "sub"
    """The claim holding the role (a string, or a list whose first item is taken)."""
    openIDAcceptedTimeLeewaySeconds: int = 0
    """Leeway for ``exp``/``nbf``/``iat`` checks of OpenID tokens."""
    openIDRequireIssuersUseHttps: bool = True
    """Refuse to start with an ``http://`` issuer (set false only for a local test issuer)."""
    openIDTokenIssuerTrustCertsFilePath: str = ""
    """CA certificates (PEM) the issuers' HTTPS certificates must chain to (empty: the system's roots)."""
    openIDCacheSize: int = 5
    """Issuers whose keys are kept (least recently used dropped)."""
    openIDCacheExpirationSeconds: int = 86400
    """Keys older than this are fetched again before use."""
    openIDCacheRefreshAfterWriteSeconds: int = 64800
    """Keys older than this are fetched again in the background, the cached ones serving meanwhile."""
    openIDKeyIdCacheMissRefreshSeconds: int = 300
    """A token whose ``kid`` the cached keys lack fetches them again at most this often."""
    openIDHttpConnectionTimeoutMillis: int = 10000
    """Connecting to an issuer (discovery document, JWKS)."""
    openIDHttpReadTimeoutMillis: int = 10000
    """Reading an issuer's answer."""

    def subscription_expiry_check_s(self) -> int:
        """The subscription expiry check interval in seconds."""
        return self.subscriptionExpiryCheckIntervalInSeconds or self.subscriptionExpiryCheckIntervalInMinutes * 60

    def __post_init__(self) -> None:
        if self.journalSyncMode not in SYNC_MODES:
            raise _bad("journalSyncMode", self.journalSyncMode, f"one of {', '.join(SYNC_MODES)}")
        if self.eventLoop not in EVENT_LOOPS:
            raise _bad("eventLoop", self.eventLoop, f"one of {', '.join(EVENT_LOOPS)}")
        if self.allowAutoTopicCreationType not in AUTO_TOPIC_TYPES:
            raise _bad("allowAutoTopicCreationType", self.allowAutoTopicCreationType,
                       f"one of {', '.join(AUTO_TOPIC_TYPES)}")
        if self.brokerDeleteInactiveTopicsMode not in INACTIVE_TOPIC_MODES:
            raise _bad("brokerDeleteInactiveTopicsMode", self.brokerDeleteInactiveTopicsMode,
                       f"one of {', '.join(INACTIVE_TOPIC_MODES)}")
        types = [t.strip() for t in self.subscriptionTypesEnabled.split(",") if t.strip()]
        if not types or not set(types) <= set(SUBSCRIPTION_TYPES):
            raise _bad("subscriptionTypesEnabled", self.subscriptionTypesEnabled,
                       f"a comma-separated list of {', '.join(SUBSCRIPTION_TYPES)}")
        for name in ("maxMessageSize", "managedLedgerMaxSizePerLedgerMbytes", "dispatcherMaxReadBatchSize",
                     "dispatcherMaxDeliveryBytes", "defaultNumPartitions",
                     "brokerDeduplicationEntriesInterval", "delayedDeliveryTickTimeMillis",
                     "managedLedgerMaxEntriesPerLedger", "retentionCheckIntervalInSeconds",
                     "backlogQuotaCheckIntervalInSeconds", "brokerServiceCompactionMonitorIntervalInSeconds",
                     "messageExpiryCheckIntervalInMinutes", "metricsServletTimeoutMs",
                     "subscriptionExpiryCheckIntervalInMinutes", "statsUpdateFrequencyInSecs",
                     "streamReplyQueueMaxMessages", "streamReplyQueueMaxBytes", "brokerReplyQueueMaxBytes",
                     "httpMaxRequestSize", "httpRequestBodyTimeoutMs", "httpMaxRequestJsonValues",
                     "brokerDeleteInactiveTopicsFrequencySeconds", "subscribeRatePeriodPerConsumerInSecond",
                     "subscriptionBacklogScanMaxEntries"):
            if getattr(self, name) <= 0:
                raise _bad(name, getattr(self, name), "a positive integer")
        for name in ("journalSyncIntervalMs", "delayedDeliveryMaxDelayInMillis", "managedLedgerCacheSizeMB",
                     "brokerServicePort",
                     "managedLedgerCursorFlushIntervalMs", "maxUnackedMessagesPerConsumer",
                     "maxProducersPerTopic", "maxConsumersPerTopic",
                     "managedLedgerMaxLedgerRolloverTimeMinutes", "ttlDurationDefaultInSeconds",
                     "messageExpiryCheckIntervalInSeconds", "webServicePort", "managedLedgerMaxOpenFiles",
                     "subscriptionExpirationTimeMinutes", "subscriptionExpiryCheckIntervalInSeconds",
                     "brokerTopicIdleUnloadSeconds", "brokerMaxConnections", "maxHttpServerConnections",
                     "brokerMaxConnectionsPerIp", "maxStreamsPerConnection", "maxConcurrentLookupRequest",
                     "maxConcurrentRequestsPerConnection", "keepAliveIntervalSeconds",
                     "tokenAllowedClockSkewSeconds", "brokerServiceCompactionThresholdInBytes",
                     "compactionTombstoneRetentionSeconds", "maxConsumersPerSubscription",
                     "maxSubscriptionsPerTopic", "maxUnackedMessagesPerSubscription", "maxTopicsPerNamespace",
                     "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds",
                     "brokerDeduplicationSnapshotIntervalSeconds"):
            if getattr(self, name) < 0:
                raise _bad(name, getattr(self, name), "an integer >= 0")
        for name in ("defaultRetentionTimeInMinutes", "defaultRetentionSizeInMB"):
            if getattr(self, name) < -1:
                raise _bad(name, getattr(self, name), "-1 (infinite) or an integer >= 0")
        for name in ("authenticationRefreshCheckSeconds", "tlsHandshakeTimeoutSeconds", "handshakeTimeoutSeconds"):
            if getattr(self, name) <= 0:
                raise _bad(name, getattr(self, name), "a positive integer")
        if self.basicAuthMaxFailuresPerAddress < 0:
            raise _bad("basicAuthMaxFailuresPerAddress", self.basicAuthMaxFailuresPerAddress,
                       "an integer >= 0 (0: no limit)")
        for name in ("basicAuthFailureWindowSeconds", "basicAuthBlockSeconds"):
            if getattr(self, name) <= 0:
                raise _bad(name, getattr(self, name), "a positive integer")
        for name in ("brokerServicePortTls", "webServicePortTls"):
            value = getattr(self, name)
            if value is not None and not 0 <= value < 65536:
                raise _bad(name, value, "a port number (0: any free one), or unset for none")
        self.authentication_providers()
        for name in ("openIDAcceptedTimeLeewaySeconds", "openIDCacheExpirationSeconds", "openIDCacheSize",
                     "openIDCacheRefreshAfterWriteSeconds", "openIDKeyIdCacheMissRefreshSeconds",
                     "openIDHttpConnectionTimeoutMillis", "openIDHttpReadTimeoutMillis"):
            if getattr(self, name) < 0:
                raise _bad(name, getattr(self, name), "an integer >= 0")
        self.advertised_listeners  # noqa: B018  (parsed once, here: a bad value stops the start)
        if self.brokerServicePortTls is not None or self.webServicePortTls is not None:
            for name in ("tlsCertificateFilePath", "tlsKeyFilePath"):
                if not getattr(self, name):
                    raise _bad(name, "", "a PEM file: brokerServicePortTls/webServicePortTls need a certificate"
                                         " and its key")
        if self.tlsRequireTrustedClientCertOnConnect and not self.tlsTrustCertsFilePath:
            raise _bad("tlsTrustCertsFilePath", "", "the CA certificates (PEM) client certificates must chain to,"
                                                    " since tlsRequireTrustedClientCertOnConnect=true")

    def authentication_providers(self) -> tuple[str, ...]:
        """``authenticationProviders`` as short names (``token``, ``tls``, ``basic``, ``openid``), in the order
        given."""
        names = []
        for item in (part.strip() for part in self.authenticationProviders.split(",")):
            if not item:
                continue
            name = PROVIDER_NAMES.get(item, PROVIDER_NAMES.get(item.lower()))
            if name is None:
                raise _bad("authenticationProviders", item, "a comma-separated list of token, tls, basic, openid "
                                                            "(or Pulsar's AuthenticationProviderToken/Tls/Basic/"
                                                            "OpenID class names)")
            names.append(name)
        return tuple(dict.fromkeys(names))

    @functools.cached_property
    def advertised_listeners(self) -> dict[str, Listener]:
        """``advertisedListeners`` by listener name (parsed once)."""
        if not self.advertisedListeners.replace(",", "").strip():
            return {}  # the usual case: no need to import the parser (its regular expressions) at start
        from broker_core.net.advertised_listeners import parse_listeners

        return parse_listeners(self.advertisedListeners)

    def __init__(self, **values: Any) -> None:
        unknown = values.keys() - _DEFAULTS.keys()
        if unknown:
            raise TypeError(f"BrokerConfig.__init__() got an unexpected keyword argument {min(unknown)!r}")
        for name, default in _DEFAULTS.items():
            object.__setattr__(self, name, values.get(name, default))
        self.__post_init__()

    def _values(self) -> tuple:
        return tuple(getattr(self, f.name) for f in fields(self))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{f.name}={getattr(self, f.name)!r}' for f in fields(self))})"

    def super_user_roles(self) -> frozenset[str]:
        return frozenset(r.strip() for r in self.superUserRoles.split(",") if r.strip())

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> "BrokerConfig":
        """Build from ``key -> value``; string values are converted to each key's type."""
        known = {f.name: f for f in fields(cls)}
        kwargs: dict[str, Any] = {}
        for key, value in values.items():
            if key not in known:
                import difflib

                close = difflib.get_close_matches(key, known, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise InvalidConfiguration(f"unknown configuration key {key!r}{hint}", key=key)
            kwargs[key] = _convert(key, known[key].type, value)
        return cls(**kwargs)

    def with_overrides(self, values: Mapping[str, Any]) -> "BrokerConfig":
        merged = dataclasses.asdict(self)
        merged.update(values)
        return BrokerConfig.from_mapping(merged)


_DEFAULTS = {f.name: f.default for f in fields(BrokerConfig)}
"""Every key's default, in the order of the fields (what ``__init__`` fills in)."""


def parse_conf_file(path: str | Path) -> dict[str, str]:
    """Read ``key=value`` lines (``broker.conf`` style); ``#`` starts a comment."""
    result: dict[str, str] = {}
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InvalidConfiguration(f"cannot read config file {path}: {exc.strerror}", path=str(path)) from None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise InvalidConfiguration(f"{path}:{lineno}: expected key=value, got {raw!r}", path=str(path))
        result[key.strip()] = value.strip()
    return result


def parse_assignments(items: list[str]) -> dict[str, str]:
    """Parse ``--set key=value`` arguments."""
    result: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidConfiguration(f"--set expects key=value, got {item!r}")
        result[key.strip()] = value.strip()
    return result


def _convert(key: str, type_name: Any, value: Any) -> Any:
    type_name = getattr(type_name, "__name__", type_name)
    if type_name == "int | None":  # an optional port: empty (as Pulsar's broker.conf leaves it) is unset
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        type_name = "int"
    if type_name == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "1", "yes", "on"):
            return True
        if text in ("false", "0", "no", "off"):
            return False
        raise _bad(key, value, "true or false")
    if type_name == "int":
        if isinstance(value, bool):
            raise _bad(key, value, "an integer")
        try:
            return int(value)
        except (TypeError, ValueError):
            raise _bad(key, value, "an integer") from None
    return str(value)


def _bad(key: str, value: Any, accepted: str) -> InvalidConfiguration:
    return InvalidConfiguration(f"invalid value {value!r} for {key}: expected {accepted}", key=key)
