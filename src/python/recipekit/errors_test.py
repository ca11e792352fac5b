"""How an issue shows the value it is about."""

from __future__ import annotations

from recipekit.errors import SHOWN_CHARS, Issue


def test_a_long_value_is_cut_in_the_message_and_kept_whole_in_json() -> None:
    # An interpolation such as ${mul:${a},${b}} with a string a makes a string of any length.
    value = "four" * 1024
    issue = Issue("policy.dynamic_batching.train_mb_tokens", "expected an integer", value=value)
    line = issue.render()
    assert len(line) < SHOWN_CHARS + 100
    assert "... (4,098 characters): expected an integer" in line
    assert issue.as_json()["value"] == value
    assert Issue("a", "b", value=3).render() == "a = 3: b"
