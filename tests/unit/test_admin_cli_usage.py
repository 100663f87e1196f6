"""pulsarlike admin's usage errors (no broker needed): unknown groups, verbs and flags name the closest
match and exit 2; missing options and bad sizes are usage errors; an HTTP admin URL is explained."""
import pytest

from connector.cli.admin import build_parser, main


def run(capsys, *argv):
    code = main(["admin", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("argv, message", [
    (["topics", "stat", "t"], "unknown verb 'stat'; did you mean 'stats'?"),
    (["topic", "stats", "t"], "unknown group 'topic'; did you mean 'topics'?"),
    (["namespaces", "set-retension", "public/default"], "did you mean 'set-retention'?"),
    (["topics", "peek-messages", "t", "-s", "sub", "--cont", "2"], "unknown option '--cont'; did you mean "
                                                                    "'--count'?"),
    (["topics", "skip", "t", "-s", "sub"], "the following arguments are required: -n/--count"),
    (["namespaces", "set-retention", "public/default", "-t", "3h", "-s", "10Q"], "size '10Q' is not valid"),
    (["namespaces", "set-deduplication", "public/default"], "one of the arguments -e/--enable -d/--disable"),
    (["topics", "reset-cursor", "t", "-s", "sub", "-m", "42"], "ledgerId:entryId"),
    (["namespaces", "set-retention", "public/default", "-t", "1h", "-s", "-5M"], "negative values are refused"),
    (["namespaces", "set-retention", "public/default", "-t", "-2h", "-s", "1M"], "negative values are refused"),
])
def test_bad_usage_prints_the_usage_and_the_closest_match_and_exits_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert "usage: pulsarlike admin" in err and message in err


def test_no_arguments_prints_the_help_and_exits_2(capsys):
    code, _, err = run(capsys)
    assert code == 2 and "tenants" in err and "namespaces" in err and "topics" in err


def test_help_exits_0(capsys):
    code, out, _ = run(capsys, "topics", "--help")
    assert code == 0 and "peek-messages" in out


def test_an_http_admin_url_is_explained(capsys):
    code, _, err = run(capsys, "--admin-url", "http://localhost:8080", "tenants", "list")
    assert code == 2 and "pulsar://HOST:PORT" in err


def test_the_url_option_is_accepted_before_or_after_the_verb():
    parser = build_parser()
    before = parser.parse_args(["--admin-url", "pulsar://h:1", "topics", "stats", "t"])
    after = parser.parse_args(["topics", "stats", "t", "--service-url", "pulsar://h:2"])
    assert (before.admin_url, after.admin_url) == ("pulsar://h:1", "pulsar://h:2")


def test_every_verb_the_issue_names_exists():
    leaves = build_parser().leaves
    wanted = {"tenants": "list create delete", "namespaces": "list create delete set-retention get-retention "
              "set-message-ttl set-deduplication policies",
              "topics": "list create create-partitioned-topic delete stats partitioned-stats stats-internal "
                        "subscriptions create-subscription unsubscribe skip clear-backlog reset-cursor "
                        "peek-messages"}
    assert {(g, v) for g, verbs in wanted.items() for v in verbs.split()} <= set(leaves)


def test_every_operator_verb_of_issue_11_exists():
    leaves = build_parser().leaves
    wanted = {"namespaces": "clear-backlog unsubscribe set-subscription-expiration-time "
                            "get-subscription-expiration-time remove-subscription-expiration-time",
              "topics": "update-partitioned-topic expire-messages expire-messages-all-subscriptions "
                        "last-message-id examine-message terminate unload lookup list-partitioned-topics"}
    assert {(g, v) for g, verbs in wanted.items() for v in verbs.split()} <= set(leaves)


def test_examine_message_takes_pulsar_admins_flags():
    parsed = build_parser().parse_args(["topics", "examine-message", "t", "-i", "earliest", "-m", "3"])
    assert (parsed.initial_position, parsed.message_position) == ("earliest", 3)


def test_expire_messages_takes_a_time_or_a_message_id_not_both(capsys):
    code, _, err = run(capsys, "topics", "expire-messages", "t", "-s", "sub", "-t", "1h", "-m", "1:2")
    assert code == 2 and "not allowed with argument" in err
