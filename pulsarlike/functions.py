"""``pulsar.functions``'s names, refused: Pulsar Functions are not part of pulsarlike."""
from pulsarlike._unsupported import Context, Function, IdentitySerDe, PickleSerDe, SerDe

__all__ = ["Context", "Function", "IdentitySerDe", "PickleSerDe", "SerDe"]
