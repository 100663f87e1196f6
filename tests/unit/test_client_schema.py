"""The client's typed schemas (connector.client.schema) against pulsar-client's pulsar.schema: the same
Record classes give the same definitions, byte for byte, and values round-trip between the two."""
from __future__ import annotations

import enum

import pulsar.schema as official
import pytest

from connector.client import schema as ours


class Color(enum.Enum):
    red = 1
    green = 2


def classes(m):
    """The same record classes declared with either library."""

    class Point(m.Record):
        x = m.Integer(required=True)
        y = m.Double(default=1.5, required_default=True)

    class Everything(m.Record):
        _avro_namespace = "test.ns"
        name = m.String(required=True)
        count = m.Long()
        ratio = m.Float()
        flag = m.Boolean(default=True, required_default=True)
        blob = m.Bytes()
        tags = m.Array(m.String())
        scores = m.Map(m.Double())
        color = Color
        origin = Point()
        path = m.Array(Point())
        places = m.Map(Point())

    class Sorted(m.Record):
        _sorted_fields = True
        zeta = m.Integer()
        alpha = m.String(default="a", required_default=True)

    return Point, Everything, Sorted


OURS, THEIRS = classes(ours), classes(official)
NAMES = ["Point", "Everything", "Sorted"]


@pytest.mark.parametrize("index", range(3), ids=NAMES)
def test_a_record_s_definition_is_the_one_pulsar_client_generates(index):
    assert OURS[index].schema() == THEIRS[index].schema()


@pytest.mark.parametrize("make", ["JsonSchema", "AvroSchema"])
@pytest.mark.parametrize("index", range(3), ids=NAMES)
def test_the_registered_definition_text_is_identical_too(make, index):
    mine = getattr(ours, make)(OURS[index]).schema_info()
    theirs = getattr(official, make)(THEIRS[index]).schema_info()
    assert (mine.definition, mine.name()) == (theirs.schema(), theirs.name())


def everything(m, Point, Everything):
    return Everything(name="n", count=7, ratio=0.5, flag=False, blob=b"\x00\x01", tags=["a", "b"],
                      scores={"k": 2.0}, color=Color.green, origin=Point(x=1, y=2.0),
                      path=[Point(x=2), Point(x=3, y=0.0)], places={"home": Point(x=4)})


def assert_same_values(mine, theirs):
    for name in ("name", "count", "ratio", "flag", "blob", "tags", "scores", "color"):
        assert getattr(mine, name) == getattr(theirs, name), name
    assert (mine.origin.x, mine.origin.y) == (theirs.origin.x, theirs.origin.y)
    assert [(p.x, p.y) for p in mine.path] == [(p.x, p.y) for p in theirs.path]
    assert {k: (p.x, p.y) for k, p in mine.places.items()} == {k: (p.x, p.y) for k, p in theirs.places.items()}


@pytest.mark.parametrize("make", ["JsonSchema", "AvroSchema"])
def test_a_record_written_by_either_library_is_read_by_the_other(make):
    mine_schema, their_schema = getattr(ours, make)(OURS[1]), getattr(official, make)(THEIRS[1])
    mine, theirs = everything(ours, *OURS[:2]), everything(official, *THEIRS[:2])
    assert mine_schema.encode(mine) == their_schema.encode(theirs)
    assert_same_values(mine_schema.decode(their_schema.encode(theirs)), theirs)
    assert_same_values(their_schema.decode(mine_schema.encode(mine)), mine)
    assert mine_schema.decode(mine_schema.encode(mine)) == mine


def test_fields_not_given_take_their_defaults():
    Point = OURS[0]
    point = Point(x=3)
    assert (point.x, point.y) == (3, 1.5)
    assert ours.Boolean().default() is False and ours.Integer().default() is None
    assert ours.AvroSchema(Point).decode(ours.AvroSchema(Point).encode(point)) == point


def test_values_of_the_wrong_type_and_undeclared_fields_are_refused():
    Point = OURS[0]
    with pytest.raises(TypeError, match="'x'"):
        Point(x="three")
    with pytest.raises(AttributeError, match="undeclared field z"):
        Point(x=1).z = 2
    with pytest.raises(TypeError, match="items should all be of type"):
        OURS[1](name="n", tags=[1])
    with pytest.raises(TypeError, match="Invalid enum value"):
        OURS[1](name="n", color="blue")
    with pytest.raises(TypeError):
        ours.JsonSchema(Point).encode(OURS[2]())


def test_nested_records_arrays_and_maps_are_built_from_plain_dicts():
    Point, Everything, _ = OURS
    record = Everything(name="n", origin={"x": 1}, path=[{"x": 2}], places={"p": {"x": 3, "y": 4.0}})
    assert isinstance(record.origin, Point) and record.origin.x == 1
    assert [p.x for p in record.path] == [2] and record.places["p"].y == 4.0
    assert record.to_dict()["places"] == {"p": {"x": 3, "y": 4.0}}


def test_an_avro_reader_resolves_an_older_writer_version():
    class V1(ours.Record):
        a = ours.Integer(required=True)

    class V2(ours.Record):
        a = ours.Integer(required=True)
        b = ours.String(default="new", required_default=True)

    old = ours.AvroSchema(V1)
    value = ours.AvroSchema(V2).decode_message(old.encode(V1(a=5)), old.schema_info())
    assert (value.a, value.b) == (5, "new")


def test_avro_with_a_definition_alone_encodes_dicts():
    definition = OURS[0].schema()
    schema = ours.AvroSchema(None, schema_definition=definition)
    assert schema.decode(schema.encode({"x": 1, "y": 2.0})) == {"x": 1, "y": 2.0}
    assert schema.encode({"x": 1, "y": 2.0}) == official.AvroSchema(None, definition).encode({"x": 1, "y": 2.0})


def test_string_and_bytes_schemas():
    assert ours.StringSchema().decode(ours.StringSchema().encode("héllo")) == "héllo"
    assert ours.StringSchema().encode("é") == official.StringSchema().encode("é")
    assert ours.BytesSchema().encode(b"x") == b"x" and not ours.BytesSchema.registered
    assert ours.StringSchema().schema_info().definition == official.StringSchema().schema_info().schema()
    with pytest.raises(TypeError):
        ours.StringSchema().encode(b"bytes")
