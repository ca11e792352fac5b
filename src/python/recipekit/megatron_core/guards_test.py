"""Megatron-Core's config-class guards, read from the pinned wheel (tools/generate_mcore_guards.py)
and evaluated on what a framework passes: each is refused at the stage key that sets a field it
reads; the replay of Megatron-Core's own verdicts (verdicts_test.py) holds them to the framework.

# The catalogued check these tests break, which the rule catalogue's meta-test finds by name:
# post_init_guards_hold.
"""

from __future__ import annotations

import ast

import pytest

from recipekit.megatron_core.guards import tables
from recipekit.nemo_rl.rules.conftest import plan_errors as errors
from recipekit.stage import Stage
from recipes.super35.pretrain import pretrain
from recipes.super35.rl import rlvr
from tools import generate_mcore_guards as generator
from tools.generated_modules import stale_outputs
from tools.guard_reader import guards, readable


def test_the_generated_table_is_what_the_tool_writes() -> None:
    stale = stale_outputs(generator.generate, [generator.MCORE])
    assert not stale, f"{stale} stale: run python3 {generator.TOOL}"


def _where(klass: str, condition: str) -> str:
    return str(next(g[2] for g in tables()[klass]["guards"] if g[0] == condition))


@pytest.mark.parametrize(
    ("stage", "overrides", "key", "condition", "klass"),
    [
        (
            pretrain,
            ("ddp.num_buckets=0",),
            "ddp.num_buckets",
            "num_buckets is not None and (not num_buckets > 0)",
            "ddp",
        ),
        (
            pretrain,
            ("ddp.num_buckets=4", "ddp.bucket_size=100"),
            "ddp.num_buckets",
            "num_buckets is not None and (not bucket_size is None)",
            "ddp",
        ),
        (
            rlvr,
            ("policy.megatron_cfg.model_overrides={moe_router_group_topk: 2}",),
            "policy.megatron_cfg.model_overrides.moe_router_group_topk",
            "moe_router_group_topk and (not moe_router_num_groups)",
            "model",
        ),
    ],
)
def test_a_broken_guard_is_refused_at_the_key_that_sets_it(
    stage: Stage, overrides: tuple[str, ...], key: str, condition: str, klass: str
) -> None:
    found = [e for e in errors(stage, *overrides) if f"`{condition}`" in e]
    assert found and found[0].startswith(key), errors(stage, *overrides)
    assert f"({_where(klass, condition)} @ Megatron-Core 0.19.2)" in found[0]


def test_megatron_bridge_finalizes_before_the_guards() -> None:
    # finalize() turns sequence parallelism off at TP 1, so its guard never sees both.
    found = errors(pretrain, "model.tensor_model_parallel_size=1", "model.sequence_parallel=true")
    assert not [e for e in found if "sequence_parallel and tensor_model_parallel_size" in e]


SOURCE = """
class Config:
    def __post_init__(self):
        if self.a is not None:
            assert self.a > 0, "a"
            if self.b:
                raise ValueError("b")
        self.c = self.a
        if self.c > 3:
            raise ValueError("c was assigned first")
        for x in self.d:
            assert x
        if call(self.a):
            raise ValueError("a call")
"""


def test_the_reader_keeps_what_reads_only_fields_given() -> None:
    fn = ast.parse(SOURCE).body[0].body[0]  # type: ignore[attr-defined]
    fields = frozenset("abcd")
    found = [(g.text, g.raised) for g in readable(guards(fn, fields), fields)]
    assert found == [
        ("a is not None and (not a > 0)", "AssertionError"),
        ("a is not None and b", "ValueError"),
    ]
