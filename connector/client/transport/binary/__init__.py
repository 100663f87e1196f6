"""The binary transport: Pulsar's binary protocol under the client core (see :mod:`connector.client.transport`).

- :mod:`.wire`: frames in and out, the typed error of an answer;
- :mod:`.connection`: :class:`~.connection.PulsarConnection`, one per broker address;
- :mod:`.transport`: :class:`~.transport.BinaryTransport`, the :class:`~connector.client.transport.Transport`
  (connection pool, lookups, unary calls, streams);
- :mod:`.producing` / :mod:`.consuming`: the ``Produce`` / ``Consume`` streams over it; :mod:`.positions`:
  message ids of brokers whose ids are not pulsarlike's dense offsets.
"""
