"""The JSON types admin calls take, checked once for every front end: a value of the wrong type is
``InvalidMessage`` naming the field (REST 400, gRPC ``INVALID_ARGUMENT``), before the stores check ranges
(``InvalidConfiguration``: REST 412). A refusal quotes what was sent at a cost that does not grow with it
(:func:`preview`: a refused body may be a megabyte).

Example: ``integer("4", "partitions")`` raises ``InvalidMessage('partitions: expected an integer, got "4"')``.
"""
from __future__ import annotations

import itertools
import json
from typing import Any

from broker_core.errors import InvalidMessage


def preview(value: Any) -> str:
    """``value`` as JSON for a reason, cut to 64 characters: strings cut, arrays and objects to their first 8
    items, 3 levels deep."""
    return json.dumps(_head(value, 3))[:64]


def _head(value: Any, levels: int) -> Any:
    if isinstance(value, str):
        return value[:64]
    if isinstance(value, list):
        return [_head(item, levels - 1) for item in value[:8]] if levels else []
    if isinstance(value, dict):
        return {str(key)[:64]: _head(item, levels - 1) for key, item in itertools.islice(value.items(), 8)} \
            if levels else {}
    return value


def integer(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidMessage(f"{field}: expected an integer, got {preview(value)}", field=field)
    return value


def boolean(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidMessage(f"{field}: expected true or false, got {preview(value)}", field=field)
    return value


def text(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise InvalidMessage(f"{field}: expected a JSON string, got {preview(value)}", field=field)
    return value


def obj(value: Any, field: str) -> dict:
    if not isinstance(value, dict):
        raise InvalidMessage(f"{field}: expected a JSON object, got {preview(value)}", field=field)
    return value


def strings(value: Any, field: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidMessage(f"{field}: expected a list of strings, got {preview(value)}", field=field)
    return value


MAX_PROPERTIES = 1000
"""The most properties a topic or a subscription holds (keys and values at most :data:`MAX_PROPERTY_CHARS`)."""
MAX_PROPERTY_CHARS = 4096


def string_map(value: Any, field: str) -> dict[str, str]:
    """Properties: a JSON object of non-empty string keys and string values (``InvalidMessage`` otherwise,
    and past :data:`MAX_PROPERTIES` or :data:`MAX_PROPERTY_CHARS`)."""
    found = obj(value, field)
    if len(found) > MAX_PROPERTIES:
        raise InvalidMessage(f"{field}: at most {MAX_PROPERTIES} properties, got {len(found)}", field=field)
    for key, item in found.items():
        if not key or len(key) > MAX_PROPERTY_CHARS or not isinstance(item, str) or len(item) > MAX_PROPERTY_CHARS:
            raise InvalidMessage(f"{field}: expected non-empty keys and string values of at most"
                                 f" {MAX_PROPERTY_CHARS} characters, got {preview({key: item})}", field=field)
    return dict(found)
