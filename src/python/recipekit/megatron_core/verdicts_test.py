"""Megatron-Core's own verdicts, replayed: recipekit must agree with the framework on every case.

``verdicts/megatron-core-0.19.2.json`` holds, for every Megatron-backed stage in ``recipes/`` and
hundreds of ``--set`` mutations of it, the constructor arguments the framework passes
(``kwargs``) and what Megatron-Core 0.19.2's config classes did with them, recorded on the
device machine by ``tools/record_megatron_verdicts.py``. Each upstream line in a verdict is
looked up in the catalogue (``rule_catalogue/megatron-core.toml``, each entry's line found from
its anchor in the pinned wheel's file):

- an error from a mirrored line: that rule must fire, naming one of the entry's keys;
- a case the framework accepts: no mirrored error rule may fire, and the mirrored warnings
  that fire are exactly those the framework gave;
- a line the catalogue says is out of reach must be catalogued so, with its reason.

The mapping is checked too: the current recipes must still produce the recorded arguments, so a
recipe change cannot leave the fixture silently stale.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any

import attrs
import pytest

from recipekit import rule_catalogue
from recipekit.errors import Issue, RecipeError
from recipekit.keypaths import parse_assignment, replace_at
from recipekit.megatron_core.kwargs import framework_kwargs
from recipekit.parallelism import MEGATRON_BRIDGE, NEMO_RL, LayoutContext
from recipekit.plan import resolve_run_inputs

HERE = Path(__file__).parent
FIXTURE = HERE / "verdicts" / "megatron-core-0.19.2.json"
CATALOGUE = "megatron-core.toml"
# The classes whose __post_init__ the recorder runs: the lines they raise from.
RECORDED_FILES = (
    "megatron/core/transformer/transformer_config.py",
    "megatron/core/model_parallel_config.py",
    "megatron/core/optimizer/optimizer_config.py",
    "megatron/core/distributed/distributed_data_parallel_config.py",
    "megatron/core/optimizer_param_scheduler.py",
)


@cache
def fixture() -> dict[str, Any]:
    return dict(json.loads(FIXTURE.read_text()))


@cache
def catalogue() -> dict[tuple[str, int], rule_catalogue.RuleEntry]:
    """(file, line) -> the entry, the line read from the entry's anchor in the pinned file."""
    found = {}
    for entry in rule_catalogue.load("megatron-core"):
        line = rule_catalogue.locate_line(entry)
        assert line is not None, f"{entry.id}: {entry.anchor} is not in {entry.file}"
        found[(entry.file, line)] = entry
    return found


def resolve(dotted: str) -> Callable[[Any], Iterable[Issue]]:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


@cache
def stage_of(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def planned(case: dict[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
    """The stage, its derived typed config and its rendered config, with the case's overrides."""
    stage = stage_of(case["stage"])
    config = stage.config
    for assignment in case["overrides"]:
        path, value = parse_assignment(config, assignment)
        config = replace_at(config, path, value)
    config, _ = resolve_run_inputs(attrs.evolve(stage, config=config))
    config, _ = stage.framework.derive(config, stage.hardware)
    return stage, config, stage.framework.render(config)


def context(stage: Any, config: Any) -> Any:
    fw = stage.framework
    return fw.context_type(config, stage.hardware, stage.model, fw.layout(config, stage.hardware))


def mirrored() -> dict[str, list[rule_catalogue.RuleEntry]]:
    """check name -> the catalogue entries (of the recorded files) it mirrors."""
    out: dict[str, list[rule_catalogue.RuleEntry]] = {}
    for entry in catalogue().values():
        if entry.file in RECORDED_FILES and entry.check:
            out.setdefault(entry.check, []).append(entry)
    return out


def layout_context(ctx: Any) -> LayoutContext:
    """The parallel layout's rules read a LayoutContext: the layout as the stage's keys state it."""
    policy = getattr(ctx.config, "policy", None)
    keys, section = (
        (NEMO_RL, policy.megatron_cfg)
        if policy is not None
        else (
            MEGATRON_BRIDGE,
            ctx.config.model,
        )
    )
    return LayoutContext(
        layout=keys.read(section, ctx.hardware.total_gpus),
        keys=keys,
        node=ctx.hardware.node,
        model_name=ctx.model.name,
        num_layers=ctx.model.num_layers,
        num_experts=ctx.model.num_experts,
        gpus_text="the GPUs",
    )


def fired(ctx: Any, kinds: tuple[str, ...]) -> dict[str, list[Issue]]:
    """Each mirrored check of those kinds -> the issues it yields for ``ctx``."""
    out = {}
    for name, entries in mirrored().items():
        if any(e.kind in kinds for e in entries):
            arg = layout_context(ctx) if name.startswith("recipekit.parallelism.") else ctx
            issues = list(resolve(name)(arg))
            if issues:
                out[name] = issues
    return out


def upstream_lines(case: dict[str, Any]) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    errors, warnings = [], []
    for verdict in case["verdict"].values():
        if verdict["error"] is not None:
            errors.append((verdict["error"]["file"], verdict["error"]["line"]))
        warnings += [(w["file"], w["line"]) for w in verdict["warnings"]]
    return errors, warnings


CASES = fixture()["cases"]
# Cases recorded before recipekit's schema read a value's allowed set, which it now refuses
# before any config class runs: Megatron-Core's config classes accepted them because they do
# not look at the value, which the code that reads it refuses later. By the case id's mutation:
# the expected refusal. The recorder mutates with the valid spelling since.
REFUSED_BY_THE_SCHEMA = {
    # cp_comm_type: Transformer Engine's context-parallel attention takes all_gather (the
    # docstring at transformer_config.py lists p2p, all_gather, a2a, a2a+p2p).
    "cp2-allgather": "did you mean 'all_gather'?",
}


def test_the_fixture_was_recorded_by_megatron_core_with_hundreds_of_cases() -> None:
    assert fixture()["recorded_with"]["megatron_core"] == "0.19.2"
    assert len(CASES) >= 300
    assert all("verdict" in case for case in CASES)


def test_every_upstream_line_in_a_verdict_is_catalogued() -> None:
    missing = sorted(
        {
            line
            for case in CASES
            for line in sum(upstream_lines(case), [])
            if line not in catalogue()
        }
    )
    assert not missing, f"upstream lines in the verdicts but not in {CATALOGUE}: {missing}"


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_recipekit_agrees_with_megatron_core(case: dict[str, Any]) -> None:
    refusal = REFUSED_BY_THE_SCHEMA.get(case["id"].rpartition("/")[2])
    if refusal is not None:
        with pytest.raises(RecipeError, match=refusal):
            planned(case)
        return
    stage, config, rendered = planned(case)
    # The mapping still gives what was recorded: else re-record (the tool's docstring says how).
    assert framework_kwargs(case["framework"], rendered, stage.model) == case["kwargs"]
    ctx = context(stage, config)
    errors, warnings = upstream_lines(case)
    got_errors = fired(ctx, ("assert", "raise"))
    for line in errors:
        entry = catalogue()[line]
        if not entry.check:
            assert entry.reason, entry.id
            continue
        issues = got_errors.get(entry.check)
        assert issues, f"Megatron-Core refused it at {line} ({entry.id}); recipekit did not"
        keys = set(entry.keys)
        assert any(issue.path in keys for issue in issues), (issues, keys)
    if errors:
        return  # Megatron-Core stops at its first error; recipekit may report more
    # The layout's rules also mirror checks Megatron-Core makes when it builds the model
    # (transformer_block.py: PP divides the layers; moe_layer.py: EP divides the experts), which
    # the config classes do not run: a layout rule may refuse what they accept.
    beyond = {name for name in got_errors if name.startswith("recipekit.parallelism.")}
    assert set(got_errors) <= beyond, f"Megatron-Core accepts it; recipekit refused: {got_errors}"
    expected = {catalogue()[line].check for line in warnings if catalogue()[line].check}
    for line in warnings:
        entry = catalogue()[line]
        assert entry.check or entry.reason, entry.id
    got_warnings = set(fired(ctx, ("warning",)))
    assert got_warnings == expected
