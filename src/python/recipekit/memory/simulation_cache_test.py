from __future__ import annotations

from pathlib import Path

import pytest

from recipekit.memory import megatron, simulation_cache
from recipekit.plan import make_plan


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(simulation_cache.VARIABLE, str(tmp_path / "cache"))
    return tmp_path / "cache"


class Counting:
    def __init__(self, result: tuple[float, float]) -> None:
        self.result, self.calls = result, 0

    def __call__(self) -> tuple[float, float]:
        self.calls += 1
        return self.result


def test_a_result_is_computed_once_per_arguments() -> None:
    compute = Counting((3.5e9, 2.25e9))
    assert simulation_cache.cached_pair(("a", 1), compute) == (3.5e9, 2.25e9)
    assert simulation_cache.cached_pair(("a", 1), compute) == (3.5e9, 2.25e9)
    assert compute.calls == 1
    assert simulation_cache.cached_pair(("a", 2), compute) == (3.5e9, 2.25e9)
    assert compute.calls == 2


def test_a_damaged_entry_is_computed_again_and_replaced(_cache: Path) -> None:
    compute = Counting((1.0, 2.0))
    simulation_cache.cached_pair(("b",), compute)
    (entry,) = (_cache / "allocator").iterdir()
    entry.write_text('[1.0, "')  # a torn write (the real writes rename whole files)
    assert simulation_cache.cached_pair(("b",), compute) == (1.0, 2.0)
    assert compute.calls == 2
    assert entry.read_text() == "[1.0, 2.0]"
    assert [p.name for p in (_cache / "allocator").iterdir()] == [entry.name]  # no temporaries


def test_a_cache_that_is_a_file_still_gives_the_result(_cache: Path) -> None:
    _cache.write_text("not a directory")
    compute = Counting((4.0, 5.0))
    assert simulation_cache.cached_pair(("c",), compute) == (4.0, 5.0)
    assert compute.calls == 1


def test_a_stored_simulation_gives_the_plan_the_same_estimate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from recipes.super35.pretrain import pretrain

    def memory_lines() -> list[str]:
        megatron._training_terms.cache_clear()  # the in-process cache
        estimate = make_plan(pretrain, ()).memory
        assert estimate is not None
        return [repr(phase) for phase in estimate.phases]

    computed = memory_lines()

    def no_simulation(*args: object, **kwargs: object) -> tuple[float, float]:
        raise AssertionError("simulated again")

    monkeypatch.setattr(megatron, "_simulated_step", no_simulation)
    assert memory_lines() == computed
