"""An ``AuthenticationToken`` whose supplier function raises: the call that needed the token fails with
``AuthenticationError`` naming what the supplier raised, as pulsar-client answers (``Result.AuthenticationError``
in ``pulsar.asyncio``), never with the supplier's own exception. One in-process broker on port 0."""
from __future__ import annotations

import asyncio
import uuid

import pytest

pytestmark = pytest.mark.transports


def _failing() -> str:
    raise RuntimeError("token supplier failed")


def test_a_failing_token_supplier_fails_each_call_with_authentication_error(broker, transport):
    from connector import AuthenticationError, AuthenticationToken, Client, MessageId

    client = Client(broker.service_url, authentication=AuthenticationToken(_failing), transport=transport,
                    operation_timeout_seconds=5)
    topic = f"supplier-{uuid.uuid4().hex[:8]}"
    try:
        for call in (lambda: client.create_producer(topic), lambda: client.subscribe(topic, "s"),
                     lambda: client.create_reader(topic, MessageId.earliest)):
            with pytest.raises(AuthenticationError, match="token supplier failed"):
                call()
    finally:
        client.close()


def test_a_failing_token_supplier_is_an_authentication_error_in_asyncio(broker, transport):
    import pulsarlike
    from pulsarlike.asyncio import Client, PulsarException

    async def main():
        client = Client(broker.service_url, authentication=pulsarlike.AuthenticationToken(_failing),
                        transport=transport, operation_timeout_seconds=5)
        try:
            with pytest.raises(PulsarException) as failed:
                await client.create_producer(f"supplier-{uuid.uuid4().hex[:8]}")
            return failed.value
        finally:
            await client.close()

    error = asyncio.run(main())
    assert error.error() == pulsarlike.Result.AuthenticationError
    assert "token supplier failed" in str(error)
