"""The redrive job (jobs/redrive.py) in-process against a real broker: dead letters back to their
REAL_TOPIC (or --to), optionally filtered, and acknowledged on the DLQ's subscription."""
from __future__ import annotations

import io
import re
import sys
import time

import pytest

from broker_core.errors import Timeout
from connector import ConsumerDeadLetterPolicy, ConsumerType, MessageId
from jobs import redrive

from tests.spark.sink_helpers import read_all

pytestmark = pytest.mark.spark

SUB = redrive.DEFAULT_SUBSCRIPTION


def run(spark, broker, *args: str) -> int:
    return redrive.main([*args, "--service-url", broker.service_url, "--no-progress"], spark)


def backlog(admin, topic: str, subscription: str = SUB) -> int:
    return admin.topic_stats(topic)["subscriptions"][subscription]["msgBacklog"]


def dead_letters(client, admin, topic: str, n: int) -> str:
    """Send ``n`` keyed messages to ``topic`` and nack each until the client dead-letters it; returns the
    dead letter topic (its subscription ``pulsarlike-redrive`` created by the dead letter policy)."""
    consumer = client.subscribe(topic, "billing", consumer_type=ConsumerType.Shared,
                                negative_ack_redelivery_delay_ms=100,
                                dead_letter_policy=ConsumerDeadLetterPolicy(
                                    max_redeliver_count=1, initial_subscription_name=SUB))
    producer = client.create_producer(topic)
    for i in range(n):
        producer.send(f"order-{i}".encode(), partition_key=f"k{i % 2}", properties={"attempt": "1"},
                      event_timestamp=1_700_000_000_000 + i)
    producer.close()
    dlq = f"{topic}-billing-DLQ"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            consumer.negative_acknowledge(consumer.receive(timeout_millis=200))
        except Timeout:
            if dlq in admin.list_topics("public/default") and backlog(admin, dlq) == n:
                break
    consumer.close()
    assert backlog(admin, dlq) == n
    return dlq


def test_redrive_moves_dead_letters_back_to_their_topic_and_drains_the_backlog(spark, broker, client, admin,
                                                                              topic, capsys):
    dlq = dead_letters(client, admin, topic, 6)

    assert run(spark, broker, dlq) == 0

    redriven = read_all(client, topic)[6:]  # after the six originals
    assert sorted(m.data() for m in redriven) == sorted(f"order-{i}".encode() for i in range(6))
    first = min(redriven, key=lambda m: m.data())
    assert (first.partition_key(), first.event_timestamp()) == ("k0", 1_700_000_000_000)
    assert first.properties() == {"attempt": "1"}  # REAL_TOPIC and ORIGIN_MESSAGE_ID dropped
    assert backlog(admin, dlq) == 0
    assert "re-driven        6 (6 written" in capsys.readouterr().out

    assert run(spark, broker, dlq) == 0  # nothing left: nothing twice
    assert len(read_all(client, topic)) == 12


def dlq_with_letters(admin, client, real_topic: str, keys: str) -> str:
    """A dead letter topic holding one message per character of ``keys`` (with REAL_TOPIC), and the
    redrive subscription at its start."""
    dlq = f"{real_topic}-ops-DLQ"
    admin.create_topic(dlq)
    admin.create_subscription(dlq, SUB, MessageId.earliest)
    producer = client.create_producer(dlq)
    for i, key in enumerate(keys):
        producer.send_async(f"{key}{i}".encode(), None, partition_key=key,
                            properties={"REAL_TOPIC": real_topic, "ORIGIN_MESSAGE_ID": f"0:{i}:-1"})
    producer.flush()
    producer.close()
    return dlq


def test_redrive_with_a_filter_acknowledges_only_what_it_moved(spark, broker, client, admin, topic):
    dlq = dlq_with_letters(admin, client, topic, "abbaab")

    assert run(spark, broker, dlq, "--filter", "__key = 'a'") == 0
    assert sorted(m.data() for m in read_all(client, topic)) == [b"a0", b"a3", b"a4"]
    assert backlog(admin, dlq) == 3

    assert run(spark, broker, dlq) == 0  # the rest, without the ones moved already
    assert sorted(m.data() for m in read_all(client, topic)) == [b"a0", b"a3", b"a4", b"b1", b"b2", b"b5"]
    assert backlog(admin, dlq) == 0


def test_redrive_to_another_topic(spark, broker, client, admin, topic):
    dlq = dlq_with_letters(admin, client, topic, "ab")

    assert run(spark, broker, dlq, "--to", topic + "-replay") == 0

    assert sorted(m.data() for m in read_all(client, topic + "-replay")) == [b"a0", b"b1"]
    assert backlog(admin, dlq) == 0


def test_redrive_dry_run_changes_nothing(spark, broker, client, admin, topic, capsys):
    dlq = dlq_with_letters(admin, client, topic, "aab")

    assert run(spark, broker, dlq, "--dry-run", "--filter", "__key = 'a'") == 0

    assert f"-> {topic}  2" in capsys.readouterr().out
    assert backlog(admin, dlq) == 3
    assert topic not in admin.list_topics("public/default")


def test_redrive_of_messages_without_real_topic_fails_before_any_write(spark, broker, client, admin, topic,
                                                                      capsys):
    dlq = f"{topic}-DLQ"
    admin.create_topic(dlq)
    admin.create_subscription(dlq, SUB, MessageId.earliest)
    producer = client.create_producer(dlq)
    producer.send(b"orphan")
    producer.close()

    assert run(spark, broker, dlq) == 2

    assert "no REAL_TOPIC property" in capsys.readouterr().err
    assert backlog(admin, dlq) == 1


def test_redrive_with_a_bad_filter_or_a_missing_topic_fails_with_exit_2(spark, broker, client, admin, topic,
                                                                       capsys):
    assert run(spark, broker, topic + "-nothing-DLQ") == 2
    assert "does not exist" in capsys.readouterr().err
    dlq = dlq_with_letters(admin, client, topic, "a")

    assert run(spark, broker, dlq, "--filter", "__kee = 'a'") == 2

    err = capsys.readouterr().err
    assert "--filter" in err and "__kee" in err
    assert backlog(admin, dlq) == 1


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_redrive_progress_counts_up_to_the_range_it_reads_and_never_past_it(spark, broker, client, admin, topic,
                                                                           monkeypatch):
    dlq = dlq_with_letters(admin, client, topic, "abababab")  # 8 read, 4 re-driven
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("COLUMNS", "200")  # the whole line, tasks included

    assert redrive.main([dlq, "--filter", "__key = 'a'", "--service-url", broker.service_url], spark) == 0

    shown = [(int(n), int(total)) for n, total in re.findall(r"(\d+)/(\d+) \[", terminal.getvalue())]
    assert shown and all(n <= total == 8 for n, total in shown)
    assert shown[-1] == (8, 8) and "tasks 1/1" in terminal.getvalue()


def test_redrive_shows_no_progress_when_stderr_is_not_a_terminal(spark, broker, client, admin, topic, capsys):
    dlq = dlq_with_letters(admin, client, topic, "ab")

    assert redrive.main([dlq, "--service-url", broker.service_url], spark) == 0

    assert capsys.readouterr().err == ""
