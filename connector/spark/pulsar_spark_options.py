"""StreamNative pulsar-spark's source options that are not pulsarlike's own names, accepted with their meaning:

============================== ==========================================================================
``admin.url``                   pulsar-spark's HTTP admin URL. pulsarlike's source makes its admin calls
                                over ``service.url``, so it is only checked (``http(s)://host:port``) and
                                logged; an application written for pulsar-spark runs unchanged.
``predefinedSubscription``      the subscription the query uses: an alias of ``subscriptionName``
                                (in :mod:`connector.spark.options`).
``subscriptionPrefix``          the prefix of the subscription a query creates when none is named
                                (``spark-pulsarlike`` by default); Kafka's ``groupIdPrefix`` is an alias.
``pulsar.client.<key>``         pulsar-client settings. The authentication and TLS ones apply
                                (:mod:`connector.spark.auth_options`); the Java client's tuning keys
                                (:data:`CLIENT_NO_EFFECT`) are accepted and logged as having no effect;
                                any other is refused, naming the closest known key.
``pulsar.reader.<key>``         reader settings: ``readCompacted`` (as the option ``readCompacted``) and
                                ``receiverQueueSize`` (the flow-control window of each range reader) apply;
                                ``readerName``/``subscriptionRolePrefix``/``subscriptionName`` are the
                                connector's to choose and are logged as ignored, as pulsar-spark does; any
                                other is refused.
``pulsar.admin.<key>``          pulsar-spark's admin client settings. The source makes its admin calls
                                over ``service.url`` with the client's authentication and TLS, so the
                                Java admin client's keys (:data:`ADMIN_KEYS`) are accepted and logged as
                                having no effect; any other is refused, naming the closest known key.
``waitingForNonExistedTopic``   ``true``: a batch read waits (up to ``pollTimeoutMs``) for topics that do
                                not exist yet instead of failing with ``TopicNotFound``; a stream reads a
                                topic from when it appears either way (in :mod:`connector.spark.options`).
``allowDifferentTopicSchemas``  ``true``: topics read together whose registered schemas differ are read
                                as ``value`` bytes instead of being refused (in :mod:`connector.spark.options`).
``topic.schema.class``          refused: it names a Java class that pulsar-spark's JVM loads to build the
                                topic's schema; a Python data source cannot load one. The source reads the
                                schema from the broker's registry; the sink derives one (``topicSchema``).
============================== ==========================================================================
"""
from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass
from typing import Mapping
from urllib.parse import urlparse

log = logging.getLogger(__name__)

CLIENT_PREFIX = "pulsar.client."
READER_PREFIX = "pulsar.reader."
ADMIN_PREFIX = "pulsar.admin."
ADMIN_KEYS = ("authPluginClassName", "authParams", "tlsTrustCertsFilePath", "tlsAllowInsecureConnection",
              "tlsHostnameVerificationEnable", "useKeyStoreTls", "tlsTrustStoreType", "tlsTrustStorePath",
              "tlsTrustStorePassword", "connectionTimeoutMs", "readTimeoutMs", "requestTimeoutMs",
              "autoCertRefreshTime", "serviceUrl")
"""The Java admin client's keys pulsar-spark passes on; here admin calls go over ``service.url``."""
SCHEMA_CLASS = "topic.schema.class"
SCHEMA_CLASS_REFUSAL = ("option topic.schema.class names a Java class that pulsar-spark's JVM loads to build the "
                        "topic's schema; a Python data source cannot load Java classes: {fix}")
CLIENT_NO_EFFECT = (
    "operationTimeoutMs", "connectionTimeoutMs", "lookupTimeoutMs", "numIoThreads", "numListenerThreads",
    "numConnectionsPerBroker", "connectionsPerBroker", "statsIntervalSeconds", "useTcpNoDelay",
    "concurrentLookupRequest", "maxLookupRequest", "maxLookupRedirects",
    "maxNumberOfRejectedRequestPerConnection", "keepAliveIntervalSeconds", "memoryLimitBytes",
    "initialBackoffIntervalNanos", "maxBackoffIntervalNanos", "enableBusyWait", "requestTimeoutMs",
    "listenerName", "enableTransaction", "connectionMaxIdleSeconds")
"""The Java client's tuning keys: they tune threads and timers pulsarlike's Python client does not have (the
source's waits are bounded by ``pollTimeoutMs``)."""
READER_APPLIED = ("readCompacted", "receiverQueueSize")
READER_IGNORED = ("readerName", "subscriptionRolePrefix", "subscriptionName")
"""pulsar-spark names its readers itself; so does pulsarlike's source."""
_CLIENT = {name.lower(): name for name in CLIENT_NO_EFFECT}
_READER = {name.lower(): name for name in READER_APPLIED + READER_IGNORED}
_ADMIN = {name.lower(): name for name in ADMIN_KEYS}


@dataclass(frozen=True)
class PulsarSparkOptions:
    admin_url: str | None = None
    subscription_prefix: str = "spark-pulsarlike"
    receiver_queue_size: int | None = None
    """``pulsar.reader.receiverQueueSize``: each range reader's flow-control window (None: the default)."""


def split_pulsar_spark(options: Mapping[str, str]) -> tuple[dict[str, str], PulsarSparkOptions]:
    """(the other options, pulsar-spark's parsed); ``pulsar.reader.readCompacted`` comes back as the option
    ``readCompacted``. ``ValueError`` names a wrong or unknown one (with the closest known key)."""
    rest: dict[str, str] = {}
    admin_url: str | None = None
    prefix = "spark-pulsarlike"
    queue_size: int | None = None
    compacted: tuple[str, str] | None = None
    for key, value in options.items():
        lowered = key.lower()
        if lowered == "admin.url":
            admin_url = _admin_url(value)
        elif lowered == SCHEMA_CLASS:
            raise ValueError(SCHEMA_CLASS_REFUSAL.format(
                fix="the source reads each topic's schema from the broker's registry (typed columns), so "
                    "remove the option"))
        elif lowered.startswith(ADMIN_PREFIX):
            name = _known(key, key[len(ADMIN_PREFIX):], _ADMIN, ADMIN_PREFIX, ", ".join(ADMIN_KEYS))
            log.info("event=pulsar_spark_option_no_effect option=%s%s: the source's admin calls go over "
                     "service.url with the pulsar.client.* authentication and TLS", ADMIN_PREFIX, name)
        elif lowered in ("subscriptionprefix", "groupidprefix"):
            prefix = str(value).strip()
            if not prefix or any(c.isspace() or c == "/" for c in prefix):
                raise ValueError(f"option {key}={value!r} is not valid; use a non-empty name "
                                 "without spaces or '/'")
        elif lowered.startswith(CLIENT_PREFIX):
            name = _known(key, key[len(CLIENT_PREFIX):], _CLIENT, CLIENT_PREFIX,
                          "the authentication and TLS options and " + ", ".join(CLIENT_NO_EFFECT))
            log.info("event=pulsar_spark_option_no_effect option=%s%s: pulsarlike's Python client has no such "
                     "setting (the source's waits are bounded by pollTimeoutMs)", CLIENT_PREFIX, name)
        elif lowered.startswith(READER_PREFIX):
            name = _known(key, key[len(READER_PREFIX):], _READER, READER_PREFIX,
                          ", ".join(READER_APPLIED + READER_IGNORED))
            if name == "readCompacted":
                compacted = (key, value)
            elif name == "receiverQueueSize":
                queue_size = _positive(key, value)
            else:
                log.info("event=pulsar_spark_option_ignored option=%s%s: the source names its readers itself",
                         READER_PREFIX, name)
        else:
            rest[key] = value
    if compacted is not None:
        own = next((k for k in rest if k.lower() == "readcompacted"), None)
        if own is not None and str(rest[own]).strip().lower() != str(compacted[1]).strip().lower():
            raise ValueError(f"options {own}={rest[own]!r} and {compacted[0]}={compacted[1]!r} conflict; "
                             "set only one of them")
        rest.setdefault(own or "readCompacted", compacted[1])
    return rest, PulsarSparkOptions(admin_url, prefix, queue_size)


def _known(key: str, suffix: str, known: dict[str, str], prefix: str, listing: str) -> str:
    name = known.get(suffix.lower())
    if name is not None:
        return name
    match = difflib.get_close_matches(suffix.lower(), list(known), n=1, cutoff=0.6)
    hint = f"; did you mean {prefix + known[match[0]]!r}?" if match else ""
    raise ValueError(f"unknown option {key!r} for the pulsarlike source{hint} Known {prefix}* keys: {listing}")


def _admin_url(value: str) -> str:
    url = str(value).strip()
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(f"option admin.url={value!r} is not valid; use the broker's HTTP admin URL, e.g. "
                         "http://127.0.0.1:8080 (pulsarlike's source makes its admin calls over service.url, "
                         "so the option may also be left out)")
    log.info("event=pulsar_spark_admin_url admin_url=%s: accepted; the source's admin calls go over "
             "service.url", url)
    return url


def _positive(key: str, value: str) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        number = 0
    if number <= 0:
        raise ValueError(f"option {key}={value!r} is not valid; use a whole number > 0")
    return number
