"""The broker's log lines: one line per record, key=value (logfmt)."""
from __future__ import annotations

import logging

from broker_core.logs import MAX_MESSAGE, KeyValueFormatter, quote


def record(msg: str, *args: object, exc_info: object = None) -> logging.LogRecord:
    return logging.LogRecord("broker_core.x", logging.WARNING, __file__, 1, msg, args, exc_info)


def test_event_records_keep_their_key_value_pairs_after_the_common_fields():
    line = KeyValueFormatter().format(record("event=topic_loaded topic=%s", "persistent://public/default/t"))
    ts, rest = line.split(" ", 1)
    assert ts.startswith("ts=") and ts.endswith("Z") and "T" in ts
    assert rest == "level=WARNING logger=broker_core.x event=topic_loaded topic=persistent://public/default/t"


def test_free_text_from_other_libraries_becomes_a_quoted_msg_value():
    line = KeyValueFormatter().format(record('Task was destroyed but it is pending! "x"'))
    assert line.endswith('event=log msg="Task was destroyed but it is pending! \\"x\\""')


def test_a_traceback_stays_on_the_same_line():
    try:
        raise ValueError("bad\nthing")
    except ValueError:
        import sys

        line = KeyValueFormatter().format(record("event=failed", exc_info=sys.exc_info()))
    assert "\n" not in line
    assert ' exc="Traceback (most recent call last):\\n' in line and "ValueError: bad\\nthing" in line


def test_quote_leaves_simple_values_bare():
    assert quote("group") == "group"
    assert quote("") == '""'
    assert quote("a b") == '"a b"'
    assert quote("k=v") == '"k=v"'


def test_a_client_sized_value_is_cut_so_a_line_stays_short():
    name = "p" * 4_000_000  # a 4 MB producer name from a client
    line = KeyValueFormatter().format(record("event=producer_opened producer=%s peer=x", name))
    assert len(line) < MAX_MESSAGE + 200
    assert line.endswith(f"... cut={len(name) + len('event=producer_opened producer= peer=x') - MAX_MESSAGE}")
