"""Pulsar's binary protocol front end: framing, connections, and the commands it serves over the same core as the
gRPC servicer."""
