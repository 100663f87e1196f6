"""The gRPC transport: pulsarlike's own ``broker.proto`` service, translated into the client's events."""
