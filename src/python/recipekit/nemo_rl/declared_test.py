"""Each NeMo-RL version's sections are complete both ways against its own pinned source.

The generated tables (``recipekit/upstream/declared/*.json``) are what
``tools/generate_declared.py`` writes from the pinned sources. From every entry point's master
config down, each section names the upstream class(es) NeMo-RL types that key with, of the
version it runs; it has every key they declare, and states no other key without an
``undeclared_keys`` reason that holds in the pinned sources.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import attrs
import pytest

from recipekit.nemo_rl import SUPER35_TYPES, SUPER_V3_TYPES, algorithms
from recipekit.nemo_rl.config_guards import MODELS
from recipekit.nemo_rl.rules.conftest import plan_errors
from recipekit.nemo_rl.schema_distillation import (
    DistillationMasterConfig,
    DistillationMasterConfigMain,
    XTokenDistillationMasterConfig,
)
from recipekit.nemo_rl.schema_dpo import DPOMasterConfig, DPOMasterConfigMain
from recipekit.nemo_rl.schema_eval import EvalMasterConfig
from recipekit.nemo_rl.schema_grpo_examples import (
    GRPOExamplesConfig,
    GRPOExamplesConfigMain,
    GRPOSingleControllerConfigMain,
)
from recipekit.nemo_rl.schema_main import GRPOMasterConfigMain, MegatronMain
from recipekit.nemo_rl.schema_ppo import PPOMasterConfig
from recipekit.nemo_rl.schema_rm import RMMasterConfig, RMMasterConfigMain
from recipekit.nemo_rl.schema_sft import SFTMasterConfig, SFTMasterConfigMain
from recipekit.nemo_rl.schema_super_v3 import GRPOMasterConfig
from recipekit.sections import UPSTREAM, frozen_section, optional, section
from recipekit.upstream.completeness import Found, problems, sections_below
from recipekit.upstream.declared import CONFIGS, READ, members
from recipes.super3.dapo import dapo_gb200
from recipes.super35.rl import rlvr
from tools import generate_declared
from tools.generated_modules import absent_pins

# Each entry point's master config: the schema class recipekit builds, and NeMo-RL's own.
ROOTS: list[tuple[str, type, str]] = [
    (SUPER_V3_TYPES, GRPOMasterConfig, "nemo_rl.algorithms.grpo:MasterConfig"),
    (SUPER_V3_TYPES, GRPOExamplesConfig, "nemo_rl.algorithms.grpo:MasterConfig"),
    (SUPER_V3_TYPES, SFTMasterConfig, "nemo_rl.algorithms.sft:MasterConfig"),
    (SUPER_V3_TYPES, DPOMasterConfig, "nemo_rl.algorithms.dpo:MasterConfig"),
    (SUPER_V3_TYPES, RMMasterConfig, "nemo_rl.algorithms.rm:MasterConfig"),
    (SUPER_V3_TYPES, DistillationMasterConfig, "nemo_rl.algorithms.distillation:MasterConfig"),
    (SUPER35_TYPES, GRPOMasterConfigMain, "nemo_rl.algorithms.grpo:MasterConfig"),
    (SUPER35_TYPES, GRPOExamplesConfigMain, "nemo_rl.algorithms.grpo:MasterConfig"),
    (
        SUPER35_TYPES,
        GRPOSingleControllerConfigMain,
        "nemo_rl.algorithms.single_controller_utils.config:MasterConfig",
    ),
    (SUPER35_TYPES, SFTMasterConfigMain, "nemo_rl.algorithms.sft:MasterConfig"),
    (SUPER35_TYPES, DPOMasterConfigMain, "nemo_rl.algorithms.dpo:MasterConfig"),
    (SUPER35_TYPES, RMMasterConfigMain, "nemo_rl.algorithms.rm:MasterConfig"),
    (
        SUPER35_TYPES,
        DistillationMasterConfigMain,
        "nemo_rl.algorithms.distillation:MasterConfig",
    ),
    (
        SUPER35_TYPES,
        XTokenDistillationMasterConfig,
        "nemo_rl.algorithms.xtoken_off_policy_distillation:MasterConfig",
    ),
    (SUPER35_TYPES, PPOMasterConfig, "nemo_rl.algorithms.ppo:MasterConfig"),
    (SUPER35_TYPES, EvalMasterConfig, "nemo_rl.evals.eval:MasterConfig"),
]


def test_every_entry_point_is_a_root_here() -> None:
    runs = [v for v in vars(algorithms).values() if isinstance(v, algorithms.NemoRLRun)]
    assert runs
    roots = {(label, cls) for label, cls, _ in ROOTS}
    for run in runs:
        label = SUPER35_TYPES if run.version == algorithms.SUPER35_VERSION else SUPER_V3_TYPES
        assert (label, run.config_type) in roots, (run.entry_point, run.config_type)


@pytest.mark.parametrize("label", sorted(generate_declared.SOURCES))
def test_each_table_is_what_the_generator_writes(label: str, reference_dir: Path) -> None:
    spec = next(t for t in generate_declared.TABLES_WRITTEN if t.label == label)
    absent = absent_pins(reference_dir, tuple(tree.label for tree in spec.trees))
    if absent:
        # Only files GitHub alone serves can be absent (fetch-reference without GitHub).
        pytest.skip(f"{len(absent)} GitHub-only pinned files absent, e.g. {absent[0]}")
    written = generate_declared.generated(label).read_text()
    assert written == generate_declared.table_text(
        label, reference_dir
    ), f"{generate_declared.generated(label)} is stale: run python tools/generate_declared.py"


@cache
def _all_sections() -> list[Found]:
    seen: dict[tuple[str, type, str], Found] = {}
    # A section NeMo-RL also validates as a model of its own (config_guards' boundaries: GRPO's
    # setup builds DynamoConfig from policy.generation) names that model too, wherever the
    # section class is used.
    validated = {b["model"] for b in MODELS.boundaries()}
    for label, cls, master in ROOTS:
        for found in sections_below(label, cls, (master,)):
            named = {
                c for m in members(getattr(found.section, UPSTREAM, None) or ()) for c in m.classes
            }
            also = tuple(sorted((named - set(found.candidates)) & validated))
            if also and label == SUPER35_TYPES:
                found = attrs.evolve(found, candidates=(*found.candidates, *also))
            seen.setdefault((found.label, found.section, found.path), found)
    return list(seen.values())


def test_every_section_names_its_upstream_and_is_complete_both_ways() -> None:
    assert problems(_all_sections()) == []


def test_sections_shared_by_two_versions_declare_the_same_keys() -> None:
    for found in _all_sections():
        versions = members(found.section.__dict__.get(UPSTREAM) or ())
        keysets = {frozenset(v.keys) for v in versions}
        assert len(keysets) <= 1, (found.section.__name__, [v.source for v in versions])


@cache
def _source_text(label: str, reference: Path) -> str:
    return "\n".join(p.read_text() for p in sorted((reference / label / "nemo_rl").rglob("*.py")))


@cache
def _example_configs(reference: Path) -> str:
    return "\n".join(p.read_text() for p in sorted(reference.rglob("*.yaml")))


def test_each_undeclared_key_is_what_its_reason_says(reference_dir: Path) -> None:
    problems = []
    for found in _all_sections():
        for key, why in found.section.__dict__.get("undeclared_keys", {}).items():
            if why == READ:
                named = re.compile(rf"""["']{re.escape(key)}["']|\.{re.escape(key)}\b""")
                if not named.search(_source_text(found.label, reference_dir)):
                    problems.append(f"{found.section.__name__}.{key}: not read at {found.label}")
            elif why == CONFIGS:
                if not re.search(rf"^\s*{re.escape(key)}:", _example_configs(reference_dir), re.M):
                    problems.append(f"{found.section.__name__}.{key}: no pinned config sets it")
            else:
                problems.append(f"{found.section.__name__}.{key}: unknown reason {why!r}")
    assert problems == []


# --- what a user sees --------------------------------------------------------------------


@pytest.mark.parametrize(
    "override",
    [
        "policy.megatron_cfg.attention_backend=flash",
        "policy.megatron_cfg.moe_router_num_groups=8",
        "policy.generation.refit_transport=null",
        "policy.dtensor_cfg.expert_parallel_size=2",
        "cluster.segment_size=18",
    ],
)
def test_a_key_upstream_declares_plans(override: str) -> None:
    key = override.split("=")[0]
    assert not [e for e in plan_errors(rlvr, override) if e.startswith(key)]


def test_a_key_the_version_does_not_declare_is_refused_with_a_suggestion() -> None:
    # super-v3's MegatronConfig has no attention_backend: the Super V3 stages refuse it.
    [error] = plan_errors(dapo_gb200, "policy.megatron_cfg.attention_backend=flash")
    assert error.startswith("policy.megatron_cfg.attention_backend: unknown key")
    [typo] = plan_errors(rlvr, "policy.megatron_cfg.attention_backnd=flash")
    assert "did you mean 'attention_backend'" in typo


def test_a_declared_key_is_checked_against_its_upstream_type() -> None:
    [error] = plan_errors(rlvr, "policy.megatron_cfg.moe_router_num_groups=many")
    assert "expected an integer or null" in error


def test_a_mapping_under_a_declared_key_is_checked_against_its_upstream_class() -> None:
    [error] = plan_errors(rlvr, "policy.megatron_cfg.peft={enabled: true, dimm: 8}")
    assert error.startswith("policy.megatron_cfg.peft.dimm: unknown key: MegatronPeftConfig")
    assert "did you mean 'dim'" in error
    [typed] = plan_errors(rlvr, "policy.megatron_cfg.peft={enabled: true, dim: eight}")
    assert typed.startswith("policy.megatron_cfg.peft.dim = 'eight': expected an integer")


def test_an_overlay_that_outlives_what_it_explains_stops_the_import() -> None:
    from recipekit.upstream.declared import undeclared

    with pytest.raises(TypeError, match="upstream now declares attention_backend"):

        @section("policy.megatron_cfg")
        @frozen_section(kw_only=True, repr=False, eq=False)
        class Stale(MegatronMain):
            upstream = MegatronMain.upstream
            undeclared_keys = undeclared(read=("attention_backend",))

    with pytest.raises(TypeError, match="no key of the section: no_such_key"):

        @section("policy.megatron_cfg")
        @frozen_section(kw_only=True, repr=False, eq=False)
        class Unknown(MegatronMain):
            upstream = MegatronMain.upstream
            undeclared_keys = undeclared(configs=("no_such_key",))
            own: int | None = optional()
