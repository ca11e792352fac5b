"""last_call keeps one result: the last argument's, by identity (not equality)."""

from __future__ import annotations

from recipekit.memo import last_call


def test_the_last_argument_is_worked_out_once_and_an_equal_one_again() -> None:
    calls: list[object] = []

    @last_call
    def seen(argument: object) -> int:
        calls.append(argument)
        return len(calls)

    first, equal = {"a": 1}, {"a": 1}
    assert seen(first) == seen(first) == 1
    assert seen(equal) == 2  # equal, but another object: worked out again
    assert seen(first) == 3  # only the last one is kept
    assert calls == [first, equal, first]
