"""``Record`` (pulsar-client's ``pulsar.schema.Record``): a class whose class attributes are typed fields;
its instances are the values a JsonSchema or AvroSchema producer sends, and its :meth:`Record.schema` is the
Avro record definition pulsar-client generates for the same class, key for key, so both clients register
the same schema and read each other's messages.

A record class is also a field type: ``inner = Inner(required=True)`` nests it.
"""
from __future__ import annotations

import copy
from enum import Enum, EnumMeta
from typing import Any

from connector.client.schema.fields import Array, CustomEnum, Field, Map, type_name

RESERVED = ("_default", "_required", "_required_default")
"""Instance attributes of a record that are not fields (its settings when used as a field)."""


class RecordMeta(type):
    def __new__(mcs, name: str, bases: tuple, namespace: dict) -> "RecordMeta":
        if name != "Record":
            namespace["_fields"] = mcs._fields_of(namespace)
            namespace["_required"] = False
        return super().__new__(mcs, name, bases, namespace)

    @staticmethod
    def _fields_of(namespace: dict) -> dict[str, Any]:
        """The declared fields, in declaration order: an Enum class becomes a CustomEnum, a Record class a
        nested record instance."""
        fields: dict[str, Any] = {}
        for name, value in namespace.items():
            if isinstance(value, EnumMeta):
                value = CustomEnum(value)
            elif isinstance(value, RecordMeta):
                value = value()
            if isinstance(value, (Record, Field)):
                fields[name] = value
        return fields


class Record(metaclass=RecordMeta):
    _avro_namespace: str | None = None
    """The Avro namespace of the record's definition (none by default)."""
    _sorted_fields = False
    """True: the definition lists the fields alphabetically instead of in declaration order."""
    _fields: dict[str, Any] = {}

    def __init__(self, default: Any = None, required_default: bool = False, required: bool = False,
                 *args: Any, **kwargs: Any) -> None:
        if type(self) is Record:  # pulsar-client's base class has no fields to set either (AttributeError)
            raise TypeError("Record is the base class of records: declare one with its fields "
                            "(class Example(Record): a = Integer()) and make that")
        self._required_default = required_default
        self._default = default
        self._required = required
        for name, field in self._fields.items():
            if name in kwargs:
                self.__setattr__(name, _from_plain(field, kwargs[name]))
            elif isinstance(field, Record):
                self.__setattr__(name, field)
            else:
                # the default as declared, not validated again (pulsar-client does the same)
                object.__setattr__(self, name, field.default())

    @classmethod
    def schema(cls) -> dict:
        """The record's Avro definition (the JSON pulsar-client registers for JsonSchema and AvroSchema)."""
        return cls.schema_info(set())

    @classmethod
    def schema_info(cls, defined_names: set[str]) -> Any:
        full_name = cls.__name__ if cls._avro_namespace is None else f"{cls._avro_namespace}.{cls.__name__}"
        if full_name in defined_names:
            return full_name  # a record seen before is referred to by name, as Avro requires
        defined_names.add(full_name)
        definition: dict[str, Any] = {"type": "record", "name": cls.__name__}
        if cls._avro_namespace is not None:
            definition["namespace"] = cls._avro_namespace
        names = sorted(cls._fields) if cls._sorted_fields else list(cls._fields)
        fields = []
        for name in names:
            field = cls._fields[name]
            kind = field.schema_info(defined_names)
            kind = kind if field._required else ["null", kind]
            if field.required_default():
                default = field.default()
                fields.append({"name": name, "default": default.name if isinstance(default, Enum) else default,
                               "type": kind})
            else:
                fields.append({"name": name, "type": kind})
        definition["fields"] = fields
        return definition

    def __setattr__(self, key: str, value: Any) -> None:
        if key in RESERVED:
            object.__setattr__(self, key, value)
            return
        if key not in self._fields:
            raise AttributeError(f"Cannot set undeclared field {key} on record")
        object.__setattr__(self, key, self._fields[key].validate_type(key, value))

    def __eq__(self, other: object) -> bool:
        return all(getattr(self, name) == getattr(other, name, None) for name in self._fields)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return str(self.__dict__)

    def __repr__(self) -> str:
        values = ", ".join(f"{name}={getattr(self, name, None)!r}" for name in self._fields)
        return f"{type(self).__name__}({values})"

    # --- a record used as a field of another ------------------------------------------------------------
    def type(self) -> str:
        return type(self).__name__

    def python_type(self) -> type:
        return type(self)

    def validate_type(self, name: str, val: Any) -> Any:
        if val is None and not self._required:
            return self.default()
        if not isinstance(val, type(self)):
            raise TypeError(f"Invalid type '{type(val)}' for sub-record field '{name}'. Expected: "
                            f"{type_name(type(self))}")
        return val

    def default(self) -> Any:
        return self._default

    def required_default(self) -> bool:
        return self._required_default

    def to_dict(self) -> dict[str, Any]:
        """The record's field values (nested records as dicts too), without its field settings."""
        return {name: _plain(getattr(self, name)) for name in self._fields}


def _from_plain(field: Any, value: Any) -> Any:
    """A constructor argument given as plain data (a dict for a record, lists or maps of dicts) as records."""
    if isinstance(field, Record) and isinstance(value, dict):
        return _record_like(field, value)
    if isinstance(field, Array) and isinstance(value, list) and value and isinstance(field.array_type, Record) \
            and isinstance(value[0], dict):
        return [_record_like(field.array_type, item) for item in value]
    if isinstance(field, Map) and isinstance(value, dict) and value and isinstance(field.value_type, Record) \
            and isinstance(next(iter(value.values())), dict):
        return {key: _record_like(field.value_type, item) for key, item in value.items()}
    return value


def _record_like(template: Record, values: dict) -> Record:
    # a copy keeps the template's field settings (required, default) as pulsar-client's does
    record = copy.copy(template)
    Record.__init__(record, template._default, template._required_default, template._required, **values)
    return record


def _plain(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value
