"""``http://`` and ``https://`` service URLs, as pulsar-client takes them: ``Client("http://host:8080")``.

pulsar-client given the web service's URL finds each topic's broker over HTTP (its ``HTTPLookupService``:
``GET /lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}``, answered Pulsar's LookupData) and then speaks
the binary protocol to the broker the answer names: ``brokerUrl``, or ``brokerUrlTls`` when the service URL
is ``https://``. :class:`HttpLookupTransport` does the same at the first call that names a topic: one HTTP
lookup (:class:`HttpLookup`), then the transport :func:`~connector.client.transport.choice.open_transport`
opens to the broker URL it answered; further lookups (and their redirects) are the binary protocol's, on
that broker, which every Pulsar broker answers for any topic.

The request carries what the client's authentication sends over HTTP (``Authorization: Bearer <token>``,
``Basic ...``; an ``AuthenticationTLS`` certificate in the TLS handshake of ``https://``) and the
``listener_name`` (``?listenerName=``). Failures as pulsar-client reports them: an unreachable web service or
an HTTP error (401 and 403 included) is ``ConnectError``, 404 ``TopicNotFound``, no answer within the
connection timeout ``Timeout``.

A call that names no topic before the first lookup (``ensure_ready``, ``positions``) has no broker to go to:
it raises ``InvalidConfiguration`` saying to use the broker's ``pulsar://`` URL.
"""
from __future__ import annotations

import json
import logging
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable

from broker_core import errors
from broker_core.types import TopicName

from connector.client.security import Security, ssl_context

log = logging.getLogger(__name__)

HTTP_SCHEMES = ("http://", "https://")
LOOKUP_PATH = "/lookup/v2/topic/"
LISTENER_HEADER = "X-Pulsar-ListenerName"


def is_http_url(service_url: Any) -> bool:
    return isinstance(service_url, str) and service_url.strip().lower().startswith(HTTP_SCHEMES)


def is_https_url(service_url: Any) -> bool:
    return isinstance(service_url, str) and service_url.strip().lower().startswith("https://")


def check_http_url(service_url: str) -> str:
    """``scheme://host:port`` of an ``http(s)://`` service URL (a path or a trailing ``/`` dropped); ValueError
    when it names no host."""
    parsed = urllib.parse.urlsplit(service_url.strip())
    try:
        port = parsed.port
    except ValueError:
        port = None
    if not parsed.hostname or (parsed.port is None and ":" in parsed.netloc.rsplit("]", 1)[-1]) or \
            (port is not None and not 0 < port < 65536):
        raise ValueError(f"service_url={service_url!r} is not valid; use 'http://host:port' (the broker's web "
                         "service, e.g. http://localhost:8080) or the broker's pulsar:// URL")
    default = 443 if parsed.scheme.lower() == "https" else 80
    host = f"[{parsed.hostname}]" if ":" in parsed.hostname else parsed.hostname
    return f"{parsed.scheme.lower()}://{host}:{port or default}"


def lookup_url(web_url: str, topic: str, listener_name: str | None = None) -> str:
    """The lookup's URL for ``topic`` (pulsar-client's: the local name URL-encoded)."""
    name = TopicName.parse(topic)
    path = f"{LOOKUP_PATH}{name.domain}/{name.tenant}/{name.namespace}/{urllib.parse.quote(name.local_name, safe='')}"
    query = f"?listenerName={urllib.parse.quote(listener_name, safe='')}" if listener_name else ""
    return web_url + path + query


class HttpLookup:
    """One HTTP lookup: :meth:`broker_url` of a topic (module docstring)."""

    def __init__(self, service_url: str, security: Security, timeout_s: float,
                 listener_name: str | None = None) -> None:
        self.web_url = check_http_url(service_url)
        self.security = security
        self.timeout_s = timeout_s
        self.listener_name = listener_name

    def broker_url(self, topic: str) -> str:
        """``pulsar://host:port`` (``pulsar+ssl://`` over ``https://``) of the broker serving ``topic``."""
        answer = self._get(lookup_url(self.web_url, topic, self.listener_name), topic)
        key = "brokerUrlTls" if self.security.tls is not None else "brokerUrl"
        url = answer.get(key) or (answer.get("brokerUrlSsl") if key == "brokerUrlTls" else None)
        if not isinstance(url, str) or not url:
            raise errors.ServiceNotReady(f"the HTTP lookup of {topic} at {self.web_url} named no {key}",
                                         topic=topic)
        return url

    def _get(self, url: str, topic: str) -> dict[str, Any]:
        headers = {"Accept": "application/json"}
        authorization = self.security.authorization()
        if authorization:
            headers["Authorization"] = authorization
        if self.listener_name:
            headers[LISTENER_HEADER] = self.listener_name
        request = urllib.request.Request(url, headers=headers)
        context = ssl_context(self.security.tls, self.security.tls.validate_hostname) \
            if self.security.tls is not None else None
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s, context=context) as response:
                body = response.read(1 << 20)
        except urllib.error.HTTPError as exc:
            reason = _reason(exc)
            if exc.code == 404:
                raise errors.TopicNotFound(f"the HTTP lookup of {topic} at {self.web_url}: {reason}",
                                           topic=topic) from None
            raise errors.ConnectError(f"the HTTP lookup of {topic} at {self.web_url} was answered {exc.code}: "
                                      f"{reason}", target=self.web_url) from None
        except (socket.timeout, TimeoutError):
            raise errors.Timeout(f"the HTTP lookup of {topic} at {self.web_url} got no answer within "
                                 f"{self.timeout_s:g}s", target=self.web_url) from None
        except (urllib.error.URLError, OSError) as exc:
            why = getattr(exc, "reason", exc)
            if isinstance(why, (socket.timeout, TimeoutError)):
                raise errors.Timeout(f"the HTTP lookup of {topic} at {self.web_url} got no answer within "
                                     f"{self.timeout_s:g}s", target=self.web_url) from None
            raise errors.ConnectError(f"cannot reach the web service at {self.web_url} to look up {topic}: {why}",
                                      target=self.web_url) from None
        try:
            answer = json.loads(body)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise errors.ConnectError(f"the HTTP lookup of {topic} at {self.web_url} answered no LookupData",
                                      target=self.web_url)
        return answer


def _reason(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read(2000)
        reason = json.loads(body).get("reason") if body else None
    except (ValueError, AttributeError, OSError):
        reason = None
    return str(reason or exc.reason)[:300]


class HttpLookupTransport:
    """A :class:`~connector.client.transport.Transport` for an ``http(s)://`` service URL (module docstring):
    the first call naming a topic looks its broker up over HTTP and opens ``open(broker_url)``; every call
    then goes to that transport."""

    def __init__(self, lookup: HttpLookup, operation_timeout_s: float, connection_timeout_s: float,
                 open_broker: Callable[[str], Any]) -> None:
        self._lookup = lookup
        self._open = open_broker
        self.target = lookup.web_url
        self.operation_timeout_s = operation_timeout_s
        self.connection_timeout_s = connection_timeout_s
        self.security = lookup.security
        self.closed = threading.Event()
        self._transport: Any = None
        self._lock = threading.Lock()

    def resolve(self, topic: str | None) -> Any:
        transport = self._transport
        if transport is not None:
            return transport
        with self._lock:
            if self._transport is not None:
                return self._transport
            if self.closed.is_set():
                raise errors.AlreadyClosed("the client is closed")
            if topic is None:
                raise errors.InvalidConfiguration(
                    f"an http(s):// service URL ({self.target}) finds a broker by looking up a topic, and this "
                    "call names none: use the broker's pulsar:// URL")
            broker_url = self._lookup.broker_url(topic)
            log.info("event=http_lookup topic=%s broker=%s web=%s", topic, broker_url, self.target)
            transport = self._open(broker_url)
            transport.closed = self.closed  # one "closed" for the waits of both
            self._transport = transport
            return transport

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.resolve(None), name)

    def ensure_ready(self) -> None:
        self.resolve(None).ensure_ready()

    def partitions(self, topic: str, timeout_s: float | None = None, retry: bool = False) -> int:
        return self.resolve(topic).partitions(topic, timeout_s, retry)

    def list_topics(self, namespace: str, timeout_s: float | None = None, retry: bool = False) -> list[str]:
        return self.resolve(None).list_topics(namespace, timeout_s, retry)

    def last_message(self, topic: str, read_compacted: bool = False, timeout_s: float | None = None,
                     retry: bool = False) -> Any:
        return self.resolve(topic).last_message(topic, read_compacted, timeout_s, retry)

    def schema(self, topic: str, version: int = -1, timeout_s: float | None = None, retry: bool = False) -> Any:
        return self.resolve(topic).schema(topic, version, timeout_s, retry)

    def register_schema(self, topic: str, schema: Any, check_only: bool = False, timeout_s: float | None = None,
                        retry: bool = False) -> int:
        return self.resolve(topic).register_schema(topic, schema, check_only, timeout_s, retry)

    def create_topic(self, topic: str, timeout_s: float | None = None, retry: bool = False) -> None:
        self.resolve(topic).create_topic(topic, timeout_s, retry)

    def create_subscription(self, topic: str, subscription: str, timeout_s: float | None = None,
                            retry: bool = False) -> None:
        self.resolve(topic).create_subscription(topic, subscription, timeout_s, retry)

    def consume(self, spec: Any, on_event: Callable[[Any], None], name: str = "consumer",
                reconnecting: bool = False) -> Any:
        return self.resolve(spec.topic).consume(spec, on_event, name, reconnecting)

    def produce(self, spec: Any, on_event: Callable[[Any], None], name: str = "producer",
                reconnecting: bool = False) -> Any:
        return self.resolve(spec.topic).produce(spec, on_event, name, reconnecting)

    def retire(self) -> None:
        """The client switched to another service (:mod:`connector.client.failover`): the broker's transport is
        retired (its streams reconnect through the client's new one); one never opened is closed."""
        with self._lock:
            transport = self._transport
            if transport is None:
                self.closed.set()
        retire = getattr(transport, "retire", None)
        if callable(retire):
            retire()
        elif transport is not None:
            transport.close()

    def close(self) -> None:
        self.closed.set()
        with self._lock:
            transport = self._transport
        if transport is not None:
            transport.close()
