"""``Broker``: a real pulsarlike broker running in this process, on its own event-loop thread.

    with Broker(data_dir="/tmp/pl", port=0) as broker:
        client = Client(broker.service_url)      # "pulsar://127.0.0.1:<port>"

Keyword arguments are broker configuration keys (``broker.conf`` names, see :mod:`broker_core.config`).
``clock`` replaces the broker's time source (tests pass a :class:`~broker_core.clock.FakeClock`).
Without ``data_dir`` the broker keeps its data in a temporary folder removed on stop.
"""
from __future__ import annotations

import asyncio
import tempfile
import threading
from pathlib import Path
from typing import Any

from broker_core.clock import SYSTEM_CLOCK, Clock
from broker_core.config import BrokerConfig
from broker_core.server import BrokerService
from broker_core.storage.paths import remove_tree


class Broker:
    def __init__(self, data_dir: str | Path | None = None, port: int = 0, host: str | None = None,
                 clock: Clock = SYSTEM_CLOCK, **config: Any) -> None:
        values = dict(config)
        values["brokerServicePort"] = port
        if int(port) == 0:  # a broker on any free port must not take the fixed metrics port either
            values.setdefault("webServicePort", 0)
        if host is not None:
            values["bindAddress"] = host
        self.config = BrokerConfig.from_mapping(values)
        self._clock = clock
        self._temp = data_dir is None
        self.data_dir = Path(tempfile.mkdtemp(prefix="pulsarlike-")) if data_dir is None else Path(data_dir)
        self._service: BrokerService | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._service is None:
            raise RuntimeError("the broker is not running; call start() or use it as a context manager")
        return self._service.port

    @property
    def host(self) -> str:
        return self.config.bindAddress

    @property
    def address(self) -> str:
        """``host:port``"""
        return f"{self.host}:{self.port}"

    @property
    def service_url(self) -> str:
        """``pulsar://host:port``, what :class:`connector.Client` takes."""
        return f"pulsar://{self.address}"

    @property
    def tls_port(self) -> int:
        """The bound TLS port (``brokerServicePortTls``), 0 without one."""
        if self._service is None:
            raise RuntimeError("the broker is not running; call start() or use it as a context manager")
        return self._service.tls_port

    @property
    def service_url_tls(self) -> str | None:
        """``pulsar+ssl://host:tls_port``, None without a TLS port."""
        port = self.tls_port
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"pulsar+ssl://{host}:{port}" if port else None

    @property
    def web_url(self) -> str:
        """``http://host:port`` of the web service port (``webServicePort``: the admin REST API, HTTP lookups,
        ``/metrics``), what ``pulsar-admin --admin-url`` takes."""
        if self._service is None:
            raise RuntimeError("the broker is not running; call start() or use it as a context manager")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self._service.web_port}"

    @property
    def web_url_tls(self) -> str | None:
        """``https://host:port`` of ``webServicePortTls``, None without one."""
        if self._service is None:
            raise RuntimeError("the broker is not running; call start() or use it as a context manager")
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = self._service.web_tls_port
        return f"https://{host}:{port}" if port else None

    @property
    def metrics_port(self) -> int:
        """The bound HTTP port of ``/metrics`` (0 with ``metricsEnabled=False``)."""
        if self._service is None:
            raise RuntimeError("the broker is not running; call start() or use it as a context manager")
        return self._service.metrics_port

    @property
    def metrics_tls_port(self) -> int:
        """The bound HTTPS port of ``/metrics`` (``webServicePortTls``), 0 without one."""
        if self._service is None:
            raise RuntimeError("the broker is not running; call start() or use it as a context manager")
        return self._service.metrics_tls_port

    @property
    def metrics_url(self) -> str | None:
        """``http://host:port/metrics`` (Prometheus text format), or None with ``metricsEnabled=False``."""
        port = self.metrics_port
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{port}/metrics" if port else None

    def start(self) -> "Broker":
        if self._service is not None:
            return self
        from broker_core.event_loops import loop_factory

        loop = loop_factory(self.config)()
        thread = threading.Thread(target=loop.run_forever, name="pulsarlike-broker", daemon=True)
        thread.start()
        service = BrokerService(self.data_dir, self.config, self._clock)
        try:
            asyncio.run_coroutine_threadsafe(service.start(), loop).result(timeout=60)
        except BaseException:
            asyncio.run_coroutine_threadsafe(service.stop(0), loop).result(timeout=60)
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
            raise
        self._loop, self._thread, self._service = loop, thread, service
        return self

    def stop(self, grace: float = 0.5) -> None:
        """Stop accepting, close streams, flush and sync every topic. Idempotent."""
        service, loop, thread = self._service, self._loop, self._thread
        if service is None or loop is None or thread is None:
            return
        self._service = self._loop = self._thread = None
        try:
            asyncio.run_coroutine_threadsafe(service.stop(grace), loop).result(timeout=60)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
            if self._temp:
                remove_tree(self.data_dir.parent, self.data_dir)

    def __enter__(self) -> "Broker":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
