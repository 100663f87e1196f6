"""Topic-list patterns are matched with RE2 (linear time), and left to the client when RE2 would not read
them as Java does."""
from __future__ import annotations

import pytest

from broker_core.core.topics_pattern import MAX_PATTERN, safe_pattern


def test_a_pattern_is_applied_without_its_scheme_to_the_whole_name():
    pattern = safe_pattern("persistent://public/default/orders-.*")
    assert pattern.fullmatch("public/default/orders-eu")
    assert not pattern.fullmatch("public/default/other")
    assert not pattern.fullmatch("xpublic/default/orders-eu")


def test_an_exponential_pattern_for_backtracking_engines_is_applied_and_answers_at_once():
    # Python's re takes 0.33 s at 20 characters here, doubling per character: 10,000 would never end
    pattern = safe_pattern("persistent://public/default/(.|.)*Z")
    assert not pattern.fullmatch("public/default/" + "a" * 10_000)
    assert pattern.fullmatch("public/default/" + "a" * 10_000 + "Z")
    assert safe_pattern("(a+)+b").fullmatch("aaab")


@pytest.mark.parametrize("java_only", [
    r"public/default/(a)\1",        # backreference
    r"public/default/(?=a)a",       # lookahead
    r"public/default/(?<!b)a",      # lookbehind
    r"public/default/a*+",          # possessive
    r"public/default/(?>a)",        # atomic group
    r"public/default/\p{Lower}+",   # Java's POSIX class
    r"public/default/a\Z",          # end before a final line terminator
])
def test_a_construct_re2_lacks_is_left_to_the_client(java_only):
    assert safe_pattern(java_only) is None


@pytest.mark.parametrize("read_otherwise", [
    r"public/default/[a-z&&[^e]]+",  # Java: intersection; RE2: the characters '&' and '['
    r"public/default/[a[bc]]",       # Java: union
    r"public/default/[]a]",
    r"public/default/[[:alpha:]]+",  # RE2: a POSIX class; Java: a nested class of those characters
])
def test_a_class_java_reads_otherwise_than_re2_is_left_to_the_client(read_otherwise):
    assert safe_pattern(read_otherwise) is None


def test_escaped_and_quoted_brackets_are_ordinary_characters():
    assert safe_pattern(r"public/default/[a\[]x").fullmatch("public/default/[x")
    assert safe_pattern(r"public/default/\Q[a&&b]\E").fullmatch("public/default/[a&&b]")


def test_a_pattern_that_does_not_compile_or_is_too_long_is_left_to_the_client():
    assert safe_pattern("public/default/[") is None
    assert safe_pattern("public/default/" + "a" * MAX_PATTERN) is None


def test_re2_is_loaded_by_the_first_pattern_not_by_importing_the_module():
    import subprocess
    import sys

    script = ("import sys\nfrom broker_core.core.topics_pattern import safe_pattern\nbefore = 're2' in sys.modules\n"
              "safe_pattern('persistent://public/default/a.*')\nprint(before, 're2' in sys.modules)")
    found = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert found.stdout.split() == ["False", "True"], found.stderr
