"""Names become paths in one place (broker_core.storage.paths): a topic's folder is derived under the topics
root and checked to stay inside it, and every removal refuses an escape or a symbolic link."""
from __future__ import annotations

import logging

import pytest

from broker_core.errors import InvalidTopicName, UnsafePath
from broker_core.storage.paths import namespace_dir, remove_tree, tenant_dir, topic_dir
from broker_core.types import TopicName


def test_a_topic_folder_is_its_percent_encoded_local_name_under_its_namespace(tmp_path):
    name = TopicName.parse("persistent://acme/orders/eu:v1%2Ex")
    assert topic_dir(tmp_path, name) == tmp_path / "persistent" / "acme" / "orders" / "eu%3Av1%252Ex"


def test_a_name_built_around_the_parser_still_cannot_escape(tmp_path):
    forged = TopicName("persistent", "public", "default", "..")
    with pytest.raises(InvalidTopicName):
        topic_dir(tmp_path, forged)


def test_a_partition_name_made_too_long_is_refused_before_it_becomes_a_path(tmp_path):
    long = TopicName.parse("p" * 250)
    with pytest.raises(InvalidTopicName, match="the limit is 255"):
        topic_dir(tmp_path, long.partition(0))


@pytest.mark.parametrize("tenant", ["..", ".", "a/b", ""])
def test_a_tenant_folder_is_refused_for_a_name_that_is_not_one_folder(tmp_path, tenant):
    with pytest.raises(UnsafePath):
        tenant_dir(tmp_path, "persistent", tenant)


def test_a_namespace_folder_is_refused_for_dot_dot(tmp_path):
    with pytest.raises(UnsafePath):
        namespace_dir(tmp_path, "persistent", "public", "..")


def test_a_folder_reached_through_a_symlink_out_of_the_root_is_refused(tmp_path):
    root, outside = tmp_path / "topics", tmp_path / "elsewhere"
    (root / "persistent").mkdir(parents=True)
    outside.mkdir()
    (root / "persistent" / "public").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafePath, match="outside the broker's data dir"):
        topic_dir(root, TopicName.parse("t"))


def test_remove_tree_removes_a_folder_inside_the_root_and_logs_it(tmp_path, caplog):
    victim = tmp_path / "a" / "b"
    victim.mkdir(parents=True)
    (victim / "f").write_bytes(b"x")
    with caplog.at_level(logging.INFO, logger="broker_core.storage.paths"):
        assert remove_tree(tmp_path, victim) is True
    assert not victim.exists() and (tmp_path / "a").is_dir()
    assert "event=tree_removed" in caplog.text and str(victim) in caplog.text


def test_remove_tree_of_a_missing_folder_is_a_no_op(tmp_path):
    assert remove_tree(tmp_path, tmp_path / "never") is False


@pytest.mark.parametrize("relative", [".", "..", "a/../..", "a/../../x"])
def test_remove_tree_refuses_the_root_itself_and_anything_outside_it(tmp_path, relative):
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (tmp_path / "x").mkdir()
    with pytest.raises(UnsafePath):
        remove_tree(root, root / relative)
    assert (root / "a").is_dir() and (tmp_path / "x").is_dir()


def test_remove_tree_refuses_a_symlink_even_one_pointing_inside_the_root(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    with pytest.raises(UnsafePath, match="symbolic link"):
        remove_tree(tmp_path, tmp_path / "link")
    assert (tmp_path / "real").is_dir()


def test_remove_tree_removes_links_inside_the_tree_without_following_them(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "topic").mkdir(parents=True)
    outside.mkdir()
    (outside / "precious").write_bytes(b"keep")
    (root / "topic" / "link").symlink_to(outside, target_is_directory=True)
    remove_tree(root, root / "topic")
    assert not (root / "topic").exists()
    assert (outside / "precious").read_bytes() == b"keep"


def test_an_unsafe_path_error_never_shows_the_path(tmp_path):
    with pytest.raises(UnsafePath) as info:
        remove_tree(tmp_path / "root", tmp_path)
    assert str(tmp_path) not in info.value.message
