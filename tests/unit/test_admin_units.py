"""What pulsarlike admin reads (sizes, relative times, message ids) and how it prints (Jackson's pretty
JSON, netty's hex dump), as pulsar-admin does."""
import pytest

from connector import MessageId
from connector.cli.output import hex_dump, pulsar_json
from connector.cli.units import (parse_message_id, parse_relative_seconds, parse_size, seconds_to_minutes,
                                 size_to_mb)


@pytest.mark.parametrize("text, expected", [
    ("10M", 10 << 20), ("10m", 10 << 20), ("1G", 1 << 30), ("3T", 3 << 40), ("512k", 512 << 10),
    ("100", 100), ("0", 0), ("-1", -1), (" 2g ", 2 << 30),
])
def test_sizes_are_bytes_with_binary_units(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("3h", 10800), ("100m", 6000), ("2d", 172800), ("5w", 3024000), ("1y", 31536000), ("30s", 30),
    ("90", 90), ("0", 0), ("-1", -1), ("3H", 10800),
])
def test_relative_times_are_seconds_and_a_bare_number_is_seconds(text, expected):
    assert parse_relative_seconds(text) == expected


@pytest.mark.parametrize("parse, text, match", [
    (parse_size, "10X", "size '10X' is not valid; use 10M"),
    (parse_size, "M", "not valid"),
    (parse_size, "1.5G", "not valid"),
    (parse_size, "-2M", "negative values are refused"),
    (parse_relative_seconds, "3x", "time '3x' is not valid; use 100m, 3h"),
    (parse_relative_seconds, "", "not valid"),
    (parse_relative_seconds, "-5", "negative values are refused"),
])
def test_bad_sizes_and_times_say_what_is_accepted(parse, text, match):
    with pytest.raises(ValueError, match=match):
        parse(text)


def test_retention_arguments_become_whole_minutes_and_megabytes_as_pulsar_admin_sends_them():
    assert seconds_to_minutes(parse_relative_seconds("3h")) == 180
    assert seconds_to_minutes(parse_relative_seconds("90")) == 1
    assert seconds_to_minutes(-1) == -1
    assert size_to_mb(parse_size("10M")) == 10
    assert size_to_mb(parse_size("100k")) == 0  # below 1 MiB: no retention, as pulsar-admin says
    assert size_to_mb(-1) == -1


def test_message_ids_are_ledger_entry_and_optionally_batch_index():
    assert parse_message_id("0:42") == MessageId(-1, 0, 42)
    assert parse_message_id("10:12:3").offset() == 15
    assert parse_message_id("earliest", sentinels=True).is_earliest()
    assert parse_message_id("LATEST", sentinels=True).is_latest()
    for bad in ("42", "a:b", "1:2:3:4", "earliest"):
        with pytest.raises(ValueError, match="ledgerId:entryId"):
            parse_message_id(bad)


def test_json_is_laid_out_like_jacksons_default_pretty_printer():
    stats = {"msgInCounter": 3, "rate": 0.5, "publishers": [], "meta": {}, "name": "é",
             "subscriptions": {"sub": {"consumers": [{"consumerName": "c1"}, {"consumerName": "c2"}],
                                       "type": None, "isDurable": True}},
             "allowedClusters": ["a", "b"]}
    assert pulsar_json(stats) == """{
  "msgInCounter" : 3,
  "rate" : 0.5,
  "publishers" : [ ],
  "meta" : { },
  "name" : "é",
  "subscriptions" : {
    "sub" : {
      "consumers" : [ {
        "consumerName" : "c1"
      }, {
        "consumerName" : "c2"
      } ],
      "type" : null,
      "isDurable" : true
    }
  },
  "allowedClusters" : [ "a", "b" ]
}"""
    assert pulsar_json(None) == "null" and pulsar_json(3600) == "3600"


def test_payloads_are_hex_dumped_like_netty_pretty_hex_dump():
    assert hex_dump(b"") == ""
    assert hex_dump(b"hello, pulsar\x00\x01\xffworld!") == """\
         +-------------------------------------------------+
         |  0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f |
+--------+-------------------------------------------------+----------------+
|00000000| 68 65 6c 6c 6f 2c 20 70 75 6c 73 61 72 00 01 ff |hello, pulsar...|
|00000010| 77 6f 72 6c 64 21                               |world!          |
+--------+-------------------------------------------------+----------------+"""
