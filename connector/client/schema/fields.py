"""The field types of a :class:`~connector.client.schema.record.Record` (pulsar-client's ``pulsar.schema``
field classes): each validates the values assigned to it and names its Avro type in the record's definition.

A field is optional unless ``required=True``: its Avro type is then the union ``["null", type]``, and
assigning None gives its default. ``required_default=True`` writes the default into the definition.
"""
from __future__ import annotations

from enum import Enum
from typing import Any


def type_name(kind: Any) -> str:
    return getattr(kind, "__name__", str(kind))


def _is_record(value: Any) -> bool:
    from connector.client.schema.record import Record
    return isinstance(value, Record) or (isinstance(value, type) and issubclass(value, Record))


class Field:
    """A typed field; subclasses say their Avro type (:meth:`type`) and the Python type(s) they take."""

    avro_type = ""
    python_types: Any = object
    fallback: Any = None
    """The default when none is given (False for Boolean, None otherwise)."""

    def __init__(self, default: Any = None, required: bool = False, required_default: bool = False) -> None:
        self._required = required
        self._required_default = required_default
        self._default = None
        if default is not None:
            default = self.validate_type("default", default)
        self._default = default

    def type(self) -> str:
        return self.avro_type

    def python_type(self) -> Any:
        return self.python_types

    def default(self) -> Any:
        return self.fallback if self._default is None else self._default

    def required_default(self) -> bool:
        return self._required_default

    def validate_type(self, name: str, val: Any) -> Any:
        if val is None and not self._required:
            return self.default()
        if not isinstance(val, self.python_type()):
            raise TypeError(f"Invalid type '{type(val)}' for field '{name}'. Expected: "
                            f"{type_name(self.python_type())}")
        return val

    def schema(self) -> Any:
        return self.schema_info(set())

    def schema_info(self, defined_names: set[str]) -> Any:
        """The field's Avro type: a name for primitives, a dict for complex types."""
        return self.type()


class Null(Field):
    avro_type, python_types = "null", type(None)

    def validate_type(self, name: str, val: Any) -> Any:
        if val is not None:
            raise TypeError(f"Field {name} is set to be None")
        return val


class Boolean(Field):
    avro_type, python_types, fallback = "boolean", bool, False


class Integer(Field):
    avro_type, python_types = "int", int


class Long(Field):
    avro_type, python_types = "long", int


class Float(Field):
    avro_type, python_types = "float", (float, int)


class Double(Field):
    avro_type, python_types = "double", (float, int)


class Bytes(Field):
    avro_type, python_types = "bytes", (bytes, str)

    def validate_type(self, name: str, val: Any) -> Any:
        # pulsar-client takes a str as its UTF-8 bytes and checks nothing else
        return val.encode() if isinstance(val, str) else val


class String(Field):
    avro_type, python_types = "string", (str, bytes)

    def validate_type(self, name: str, val: Any) -> Any:
        if val is None and not self._required:
            return self.default()
        if not isinstance(val, (str, bytes)):
            raise TypeError(f"Invalid type '{type(val)}' for field '{name}'. Expected a string")
        return val.decode() if isinstance(val, bytes) else val


class CustomEnum(Field):
    """A Python ``Enum`` as an Avro enum of its member names; a value may be given by member, name or value."""

    avro_type = "enum"

    def __init__(self, enum_type: type[Enum], default: Any = None, required: bool = False,
                 required_default: bool = False) -> None:
        if not (isinstance(enum_type, type) and issubclass(enum_type, Enum)):
            raise TypeError(f"{type_name(enum_type)} is not a valid Enum type")
        self.enum_type = enum_type
        self.values = {member.value: member for member in enum_type}
        super().__init__(default, required, required_default)

    def python_type(self) -> Any:
        return self.enum_type

    def validate_type(self, name: str, val: Any) -> Any:
        if val is None:
            return None
        members = self.enum_type.__members__
        if type(val) is str:
            if val not in members:
                raise TypeError(f"Invalid enum value '{val}' for field '{name}'. Expected: {members.keys()}")
            return members[val]
        if type(val) is int:
            if val not in self.values:
                raise TypeError(f"Invalid enum value '{val}' for field '{name}'. Expected: {self.values.keys()}")
            return self.values[val]
        if not isinstance(val, self.enum_type):
            raise TypeError(f"Invalid type '{type(val)}' for field '{name}'. Expected: {type_name(self.enum_type)}")
        return val

    def schema_info(self, defined_names: set[str]) -> Any:
        name = self.enum_type.__name__
        if name in defined_names:
            return name
        defined_names.add(name)
        return {"type": "enum", "name": name, "symbols": [member.name for member in self.enum_type]}


def _element_schema(element: Any, defined_names: set[str]) -> Any:
    # pulsar-client spells an enum element as the bare type name "enum": kept, so definitions are identical
    if isinstance(element, (Array, Map)) or _is_record(element):
        return element.schema_info(defined_names)
    return element.type()


def _check_element(element: Any) -> None:
    if not (isinstance(element, Field) or _is_record(element)):
        raise TypeError(f"Argument {type_name(element)} is not a Record or a Field")


class Array(Field):
    avro_type, python_types = "array", list

    def __init__(self, array_type: Any, default: Any = None, required: bool = False,
                 required_default: bool = False) -> None:
        _check_element(array_type)
        self.array_type = array_type() if isinstance(array_type, type) else array_type
        super().__init__(default=default, required=required, required_default=required_default)

    def validate_type(self, name: str, val: Any) -> Any:
        if val is None:
            return None
        super().validate_type(name, val)
        kind = self.array_type.python_type()
        if any(not isinstance(item, kind) for item in val):
            raise TypeError(f"Array field {name} items should all be of type {type_name(self.array_type.type())}")
        return val

    def schema_info(self, defined_names: set[str]) -> Any:
        return {"type": "array", "items": _element_schema(self.array_type, defined_names)}


class Map(Field):
    avro_type, python_types = "map", dict

    def __init__(self, value_type: Any, default: Any = None, required: bool = False,
                 required_default: bool = False) -> None:
        _check_element(value_type)
        self.value_type = value_type() if isinstance(value_type, type) else value_type
        super().__init__(default=default, required=required, required_default=required_default)

    def validate_type(self, name: str, val: Any) -> Any:
        if val is None:
            return None
        super().validate_type(name, val)
        kind = self.value_type.python_type()
        for key, value in val.items():
            if not isinstance(key, str):
                raise TypeError(f"Map keys for field {name} should all be strings")
            if not isinstance(value, kind):
                raise TypeError(f"Map values for field {name} should all be of type {type_name(kind)}")
        return val

    def schema_info(self, defined_names: set[str]) -> Any:
        return {"type": "map", "values": _element_schema(self.value_type, defined_names)}
