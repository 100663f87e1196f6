"""StreamNative pulsar-spark's sink options that are not the sink's own names, accepted with their meaning:

======================================== =================================================================
``pulsar.producer.<key>``                 the Java producer's settings. Those the sink has are the sink's
                                          options of the same name (:data:`PRODUCER_APPLIED`:
                                          ``batchingMaxMessages``, ``batchingMaxBytes``,
                                          ``maxPendingMessages``, ``sendTimeoutMs``, ``compressionType``);
                                          ``batchingEnabled=false`` is ``batchingMaxMessages=1``. The ones
                                          the sink decides itself (:data:`PRODUCER_SINKS_OWN`: producer
                                          names and sequence ids carry effectively-once; rows route by
                                          ``__partition`` or key hash) are refused, saying why; the Java
                                          client's tuning keys (:data:`PRODUCER_NO_EFFECT`) are accepted
                                          and logged as having no effect. ``encryptionKeys`` and
                                          ``cryptoFailureAction`` are the sink's options of the same name
                                          (:mod:`connector.spark.crypto_options`).
``pulsar.client.<key>``                   as on the source: authentication and TLS apply
                                          (:mod:`connector.spark.auth_options`), ``operationTimeoutMs`` is
                                          the sink's ``operationTimeoutMs``, the other Java tuning keys are
                                          logged as having no effect.
``topic.schema.class``                    refused: a Java class only pulsar-spark's JVM can load; the sink
                                          derives a schema from the DataFrame (option ``topicSchema``).
======================================== =================================================================
"""
from __future__ import annotations

import difflib
import logging
from typing import Mapping

from connector.spark.pulsar_spark_options import (
    CLIENT_NO_EFFECT, CLIENT_PREFIX, SCHEMA_CLASS, SCHEMA_CLASS_REFUSAL)

log = logging.getLogger(__name__)

PRODUCER_PREFIX = "pulsar.producer."
PRODUCER_APPLIED = ("batchingMaxMessages", "batchingMaxBytes", "maxPendingMessages", "sendTimeoutMs",
                    "compressionType", "batchingEnabled")
PRODUCER_SINKS_OWN = {
    "producerName": "the sink names its producers itself: with effectivelyOnce the name and the sequence ids "
                    "are what the broker's deduplication keys on",
    "initialSequenceId": "the sink numbers messages from (batch id, row position) for effectively-once",
    "topicName": "name the topic with option topic or a __topic column",
    "messageRoutingMode": "rows go to the partition in __partition, else by key hash, else round robin",
    "customMessageRouter": "rows go to the partition in __partition, else by key hash, else round robin",
}
"""Producer settings the sink decides itself -> why (refused)."""
PRODUCER_NO_EFFECT = ("blockIfQueueFull", "batchingMaxPublishDelayMicros", "maxPendingMessagesAcrossPartitions",
                      "hashingScheme", "autoUpdatePartitions", "autoUpdatePartitionsIntervalSeconds",
                      "batchingPartitionSwitchFrequencyByPublishDelay", "batcherBuilder", "chunkingEnabled",
                      "chunkMaxMessageSize", "multiSchema", "lazyStartPartitionedProducers", "accessMode",
                      "properties")
"""The Java producer's settings without an equivalent in the sink (it always waits when its queue is full and
sends a batch when it is full or the task's rows end)."""
_PRODUCER = {name.lower(): name for name in PRODUCER_APPLIED + tuple(PRODUCER_SINKS_OWN) + PRODUCER_NO_EFFECT}
_CLIENT = {name.lower(): name for name in CLIENT_NO_EFFECT}


def split_pulsar_spark_sink(options: Mapping[str, str]) -> dict[str, str]:
    """The options with pulsar-spark's producer and client keys turned into the sink's own (the sink's own
    spelling wins when both are given and they differ: ``ValueError``); the authentication and TLS keys
    (``pulsar.client.authParams``...) are left for :func:`~connector.spark.auth_options.split_security`."""
    rest: dict[str, str] = {}
    mapped: dict[str, tuple[str, str]] = {}
    for key, value in options.items():
        lowered = key.lower()
        if lowered == SCHEMA_CLASS:
            raise ValueError(SCHEMA_CLASS_REFUSAL.format(
                fix="set option topicSchema=avro or json to derive and register a schema from the DataFrame's "
                    "columns, or write value bytes"))
        if lowered.startswith(PRODUCER_PREFIX):
            name = _known(key, PRODUCER_PREFIX, _PRODUCER, ", ".join(PRODUCER_APPLIED + PRODUCER_NO_EFFECT))
            if name in PRODUCER_SINKS_OWN:
                raise ValueError(f"option {key} is not served by the pulsarlike sink: {PRODUCER_SINKS_OWN[name]}")
            if name == "batchingEnabled":
                flag = str(value).strip().lower()
                if flag not in ("true", "false"):
                    raise ValueError(f"option {key}={value!r} is not valid; use 'true' or 'false'")
                if flag == "false":
                    mapped["batchingMaxMessages"] = (key, "1")
            elif name in PRODUCER_APPLIED:
                mapped[name] = (key, value)
            else:
                log.info("event=pulsar_spark_option_no_effect option=%s%s: the sink's producers have no such "
                         "setting", PRODUCER_PREFIX, name)
        elif lowered.startswith(CLIENT_PREFIX) and lowered[len(CLIENT_PREFIX):] in _CLIENT:
            name = _CLIENT[lowered[len(CLIENT_PREFIX):]]
            if name == "operationTimeoutMs":
                mapped[name] = (key, value)
            else:
                log.info("event=pulsar_spark_option_no_effect option=%s%s: pulsarlike's Python client has no "
                         "such setting", CLIENT_PREFIX, name)
        else:
            rest[key] = value
    for name, (key, value) in mapped.items():
        own = next((k for k in rest if k.lower() == name.lower()), None)
        if own is not None and str(rest[own]).strip() != str(value).strip():
            raise ValueError(f"options {own}={rest[own]!r} and {key}={value!r} conflict; set only one of them")
        if own is None:
            rest[name] = value
    return rest


def _known(key: str, prefix: str, known: dict[str, str], listing: str) -> str:
    suffix = key[len(prefix):]
    name = known.get(suffix.lower())
    if name is not None:
        return name
    match = difflib.get_close_matches(suffix.lower(), list(known), n=1, cutoff=0.6)
    hint = f"; did you mean {prefix + known[match[0]]!r}?" if match else ""
    raise ValueError(f"unknown option {key!r} for the pulsarlike sink{hint} Known {prefix}* keys: {listing}")
