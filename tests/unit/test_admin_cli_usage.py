"""pulsarlike admin's usage errors (no broker needed): unknown groups, verbs and flags name the closest
match and exit 2; missing options and bad sizes are usage errors; an HTTP admin URL means the REST API."""
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


def test_an_http_admin_url_is_the_rest_api_and_an_unreachable_one_exits_1_naming_it(capsys):
    code, _, err = run(capsys, "--admin-url", "http://127.0.0.1:1", "tenants", "list")
    assert code == 1 and "ConnectError: cannot reach the admin API at http://127.0.0.1:1" in err


def test_a_rest_only_group_over_a_pulsar_url_says_it_needs_an_http_one(capsys):
    code, _, err = run(capsys, "--admin-url", "pulsar://127.0.0.1:1", "clusters", "list")
    assert code == 1 and "NotSupported: list_clusters is served over Pulsar's admin REST API only" in err


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


@pytest.mark.parametrize("verb", ["examine-messages", "examine-message"])
def test_examine_messages_and_its_old_spelling_take_pulsar_admins_flags(verb):
    parsed = build_parser().parse_args(["topics", verb, "t", "-i", "earliest", "-m", "3"])
    assert (parsed.initial_position, parsed.message_position) == ("earliest", 3)


def test_the_groups_and_verbs_of_issue_20_exist():
    leaves = build_parser().leaves
    wanted = {"clusters": "list get", "brokers": "list healthcheck version leader-broker",
              "schemas": "get upload delete compatibility",
              "topics": "examine-messages partitioned-stats-internal"}
    assert {(g, v) for g, verbs in wanted.items() for v in verbs.split()} <= set(leaves)


def test_expire_messages_takes_a_time_or_a_message_id_not_both(capsys):
    code, _, err = run(capsys, "topics", "expire-messages", "t", "-s", "sub", "-t", "1h", "-m", "1:2")
    assert code == 2 and "not allowed with argument" in err
