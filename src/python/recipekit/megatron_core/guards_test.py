"""Megatron-Core's config-class guards, read from the pinned wheel (tools/generate_mcore_guards.py)
and evaluated on what a framework passes: each is refused at the stage key that sets a field it
reads; the replay of Megatron-Core's own verdicts (verdicts_test.py) holds them to the framework.

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by name:
# post_init_guards_hold, post_init_warnings.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from recipekit.megatron_core.guards import tables
from recipekit.nemo_rl.rules.conftest import plan_errors as errors
from recipekit.nemo_rl.rules.conftest import plan_warnings as warnings
from recipekit.stage import Stage
from recipekit.upstream.replay import located, replay
from recipes.super35.pretrain import pretrain
from recipes.super35.rl import rlvr
from tools import generate_mcore_guards as generator
from tools.config_programs import Pinned, catalogue_gaps
from tools.generated_modules import stale_outputs
from tools.guard_reader import guards, program, readable


def test_the_generated_table_is_what_the_tool_writes() -> None:
    stale = stale_outputs(generator.generate, [generator.MCORE])
    assert not stale, f"{stale} stale: run python3 {generator.TOOL}"


def _where(klass: str, condition: str) -> str:
    return str(next(g[3] for g in located(tables()[klass]["program"]) if g[4] == condition))


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
        if len(self.d) > 2:
            warnings.warn("many d")
"""


def _program() -> list[list[object]]:
    fn = ast.parse(SOURCE).body[0].body[0]  # type: ignore[attr-defined]
    return program(fn, frozenset("abcd"))


def test_the_reader_keeps_what_reads_only_fields_given() -> None:
    fn = ast.parse(SOURCE).body[0].body[0]  # type: ignore[attr-defined]
    fields = frozenset("abcd")
    found = [(g.text, g.raised) for g in readable(guards(fn, fields), fields)]
    assert found == [
        ("a is not None and (not a > 0)", "AssertionError"),
        ("a is not None and b", "ValueError"),
    ]


@pytest.mark.parametrize(
    ("values", "reached"),
    [
        ({"a": 1, "b": False, "d": []}, []),
        ({"a": 0, "b": False, "d": []}, ["a is not None and (not a > 0)"]),
        # c is assigned a's value first: the replay reads the value the method made.
        ({"a": 5, "b": False, "d": []}, ["c > 3"]),
        ({"a": 5, "b": True, "d": [1, 2, 3]}, ["a is not None and b", "c > 3", "len(d) > 2"]),
        # No value for a: neither a's guards nor c's, which the method takes from a.
        ({"b": True, "d": []}, []),
    ],
)
def test_the_replay_reaches_the_guards_the_values_break(
    values: dict[str, object], reached: list[str]
) -> None:
    # The loop's assert and the call's raise are never evaluated: the replay does not follow
    # them.
    assert [r.step[4 if r.step[0] == "guard" else 2] for r in replay(_program(), values)] == reached


def test_a_branch_it_cannot_decide_forgets_what_it_changes() -> None:
    fn = ast.parse(
        "def f(self):\n"
        "    if unknown(self.a):\n"
        "        self.b = 0\n"
        "    assert self.b != 0\n"
    ).body[0]
    assert isinstance(fn, ast.FunctionDef)
    assert not replay(program(fn, frozenset("ab")), {"a": 1, "b": 0})
    fn = ast.parse(
        "def f(self):\n" "    if unknown(self.a):\n" "        return\n" "    assert self.b != 0\n"
    ).body[0]
    assert isinstance(fn, ast.FunctionDef)
    # The method may have returned before its assert.
    assert not replay(program(fn, frozenset("ab")), {"a": 1, "b": 0})


def test_a_guard_on_a_value_the_method_computes_reads_that_value() -> None:
    # TransformerConfig.__post_init__ sets mup_base_hidden_size to hidden_size where none is
    # given, then asserts it is positive: use_mup alone passes, a base of 0 does not.
    mup = "`use_mup and (not mup_base_hidden_size > 0)`"
    key = "policy.megatron_cfg.model_overrides"
    assert not [e for e in errors(rlvr, f"{key}={{use_mup: true}}") if mup in e]
    found = [
        e for e in errors(rlvr, f"{key}={{use_mup: true, mup_base_hidden_size: 0}}") if mup in e
    ]
    assert found and found[0].startswith(f"{key}.use_mup = True:"), found
    assert "given: use_mup=True, mup_base_hidden_size=0" in found[0]


def test_a_warning_megatron_core_issues_is_a_warning() -> None:
    # post_init_warnings: TransformerConfig warns, and takes ffn_hidden_size, where an MoE model
    # gives no moe_ffn_hidden_size.
    found = [w for w in warnings(pretrain, "model.moe_ffn_hidden_size=null") if "warns" in w]
    assert found and found[0].startswith("model.moe_ffn_hidden_size = None: Megatron-Core warns")
    assert "`num_moe_experts is not None and moe_ffn_hidden_size is None`" in found[0]
    assert not errors(pretrain, "model.moe_ffn_hidden_size=null")


def test_the_catalogue_names_the_generic_checks_for_what_the_replay_evaluates() -> None:
    # Each guard or warning the replay can evaluate that no hand-written rule mirrors is
    # catalogued as the generic checks', or as out of reach with its reason; and each entry that
    # names a generic check is one the replay evaluates.
    pinned = Pinned(Path(), "megatron-core", generator.GENERIC)
    assert not catalogue_gaps(tables(), pinned, reasons=("unreachable",))
