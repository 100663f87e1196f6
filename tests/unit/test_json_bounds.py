"""A JSON body measured before it is parsed (broker_core.frontends.http.json_bounds): values and depth counted
outside strings, escapes never taken for a string's end (even cut by a window), the count stopped at the first
bound passed or where the body cannot be JSON, and the event loop given back between turns."""
from __future__ import annotations

import asyncio
import json

import pytest

from broker_core.frontends.http import json_bounds
from broker_core.frontends.http.json_bounds import WINDOW, JsonTooLarge, Shape, measure


def shape(raw: bytes, max_values: int = 10_000, max_depth: int = 64) -> Shape:
    return asyncio.run(measure(raw, max_values, max_depth))


def test_the_worked_example_of_the_docstring():
    assert shape(b'{"a": [1, 2, "x,]"]}') == Shape(values=7, depth=2)


def test_structure_inside_strings_is_not_counted():
    body = json.dumps({"schema": '{"type": "record", "fields": [1, 2, 3, [4]]}'}).encode()
    assert shape(body) == Shape(values=4, depth=1)  # {, two strings, plus one


def test_escaped_quotes_and_backslashes_do_not_end_a_string():
    body = json.dumps(['a"b', "c\\", '\\"', "[,,,]"]).encode()  # ["a\"b", "c\\", "\\\"", "[,,,]"]
    assert shape(body) == Shape(values=9, depth=1)  # [, four strings, three commas, plus one


@pytest.mark.parametrize("offset", [-2, -1, 0, 1, 2])
def test_an_escape_cut_by_a_window_is_read_whole(offset):
    before = "x" * (WINDOW + offset - 2)  # puts the escape's backslash on either side of a window's end
    body = json.dumps([before + '"' + ",[" * 10, "after"]).encode()
    assert shape(body) == Shape(values=5, depth=1)


def test_more_values_than_allowed_are_refused_naming_the_setting():
    with pytest.raises(JsonTooLarge) as refused:
        shape(json.dumps(list(range(100))).encode(), max_values=50)
    assert refused.value.what == "more than 50 values" and refused.value.key == "httpMaxRequestJsonValues"
    assert shape(json.dumps(list(range(40))).encode(), max_values=50).values == 41


def test_nesting_deeper_than_allowed_is_refused():
    with pytest.raises(JsonTooLarge) as refused:
        shape(b"[" * 100_000 + b"]" * 100_000)
    assert "nested deeper than 64 levels" in refused.value.what and not refused.value.key
    assert shape(b"[" * 64 + b"]" * 64).depth == 64


@pytest.mark.parametrize("body", [b"]" * 100_000 + b"[" * 100_000, b'"unterminated' + b",[" * 100_000,
                                  b'"ends with a backslash\\', b"[1, 2]]]]]]" + b"[" * 100_000])
def test_a_body_that_cannot_be_json_stops_the_count_where_it_breaks(body):
    counted = shape(body)
    assert counted.values < 10_000 and counted.depth < 64
    with pytest.raises(ValueError):
        json.loads(body)


def test_numbers_literals_and_spaces_cost_no_values():
    assert shape(b"[ 12345.5e3 , true,false , null ]") == Shape(values=5, depth=1)  # [, three commas, plus one
    assert shape(b" " * (1 << 20) + b"1").values == 1


def test_the_event_loop_runs_others_between_turns(monkeypatch):
    monkeypatch.setattr(json_bounds, "TURN_S", 0.0)  # give the loop back at every step
    ran = []

    async def main() -> Shape:
        async def other() -> None:
            while True:
                ran.append(1)
                await asyncio.sleep(0)
        task = asyncio.get_running_loop().create_task(other())
        counted = await measure(json.dumps(list(range(1000))).encode(), 10_000)
        task.cancel()
        return counted
    assert asyncio.run(main()).values == 1001
    assert len(ran) > 500
