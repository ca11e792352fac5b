"""The one check of "a single line of safe text" (issue 39), and ``matching`` built on it."""

from __future__ import annotations

import sys
import unicodedata
from typing import Any

import attrs
import pytest

from recipekit.errors import FieldError
from recipekit.validators import absolute_path, matching, single_line, single_line_problem

REFUSED_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def test_every_control_format_and_separator_character_is_refused_and_nothing_else() -> None:
    # Every code point, so a category the check's fast path (str.isprintable) lets through is
    # found here, and a character it refuses by mistake too.
    wrong = []
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        refused = single_line_problem(f"a{char}b") != ""
        if refused != (unicodedata.category(char) in REFUSED_CATEGORIES):
            wrong.append(f"U+{code:04X}")
    assert wrong == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("abc\n", "holds a newline (\\n) at position 3"),
        ("\rabc", "holds a carriage return (\\r) at position 0"),
        ("a\x85", "holds a next-line character (\\x85) at position 1"),
        ("a\u2028b", "holds a line separator (\\u2028) at position 1"),
        ("\u2029", "holds a paragraph separator (\\u2029) at position 0"),
        ("ab\x00", "holds a NUL (\\x00) at position 2"),
        ("a\x1bb", "holds a control character (\\x1b) at position 1"),
        ("a\u202eb", "holds an invisible format character (\\u202e) at position 1"),
        ("a\ud800", "holds a lone surrogate (\\ud800) at position 1"),
    ],
)
def test_the_message_names_what_is_held_and_where(text: str, message: str) -> None:
    assert single_line_problem(text) == message


def test_text_of_any_script_and_spaces_is_one_line() -> None:
    for text in ["", "a b", "Grüße, 東京", "/shared/runs", "nbsp\xa0here", "emoji \U0001f600"]:
        assert single_line_problem(text) == ""


@attrs.frozen
class Named:
    # A pattern anchored the old way: fullmatch makes its "$" harmless.
    name: str = attrs.field(validator=matching(r"^[a-z]+$", "must be lower-case letters"))
    path: Any = attrs.field(default="/x", validator=absolute_path)
    note: Any = attrs.field(default=None, validator=single_line)


def _refusal(**fields: Any) -> str:
    with pytest.raises(FieldError) as refused:
        Named(**fields)
    return refused.value.message


def test_matching_matches_whole_and_names_a_line_end() -> None:
    assert Named("abc").name == "abc"
    # re.match("^[a-z]+$", "abc\n") matches: "$" also matches before a final newline.
    assert (
        _refusal(name="abc\n") == "holds a newline (\\n) at position 3; must be lower-case letters"
    )
    assert _refusal(name="ABC") == "must be lower-case letters"
    assert _refusal(name=3) == "must be lower-case letters"


def test_a_path_and_free_text_are_one_line_too() -> None:
    assert _refusal(name="a", path="\n/x") == "holds a newline (\\n) at position 0"
    assert _refusal(name="a", path="/x\u2028") == "holds a line separator (\\u2028) at position 2"
    assert _refusal(name="a", path="x").startswith("must be an absolute path")
    assert _refusal(name="a", note="why\r") == "holds a carriage return (\\r) at position 3"
    assert _refusal(name="a", note=7) == "must be text, not int"
    assert Named("a", note=None).note is None
