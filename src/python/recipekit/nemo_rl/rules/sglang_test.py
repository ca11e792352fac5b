"""The SGLang generation back-end's rules: a value that breaks each is refused, naming the key
and the upstream line.

The Super 3.5 recipes' schema has no ``policy.generation.sglang_cfg``; the examples' schema
declares it, so these tests start from rlvr read as super-v3.5's examples configure GRPO
(``grpo_examples``), with synchronous GRPO (async GRPO has no SGLang path) on SGLang.
"""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name: tp_size_matches_gpus_per_engine, external_router_needs_its_address,
# sglang_names_its_gpus_per_server.
# Not catalogued (no assert states them): sglang_needs_its_settings,
# sglang_needs_the_v2_dtensor_worker.

from __future__ import annotations

import pytest

from recipekit.nemo_rl import SUPER35_BRANCH
from recipekit.nemo_rl.algorithms import NEMO_RL_SUPER35_GRPO
from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules import sglang
from recipekit.nemo_rl.rules.conftest import Plan, RefusedAt, as_examples
from recipekit.nemo_rl.rules.sglang import GRPO_PY
from recipekit.nemo_rl.schema_grpo_examples import GRPOExamplesConfigMain
from recipekit.plan import make_plan
from recipekit.stage import Stage
from recipes.super35.rl import rlvr

SGLANG = "policy.generation.sglang_cfg"
ROUTER = f"{SGLANG}.sglang_router_config"
# GRPO's setup reads sglang_cfg, and hands the engine size to the workers, at lines no rule
# site states (the module's hand-written ones).
READS_SGLANG_CFG = f"{GRPO_PY}:{sglang.READS_SGLANG_CFG} @ {SUPER35_BRANCH}"
HANDS_ENGINE_SIZE = f"{GRPO_PY}:{sglang.HANDS_ENGINE_SIZE} @ {SUPER35_BRANCH}"
# SGLang's weights come from the v2 DTensor worker only (GRPO's setup: HANDS_ENGINE_SIZE).
ON_V2 = (
    "policy.megatron_cfg.enabled=false",
    "policy.dtensor_cfg.enabled=true",
    "policy.dtensor_cfg._v2=true",
)
ON_SGLANG = ("policy.generation.backend=sglang", "grpo.async_grpo.enabled=false", *ON_V2)


@pytest.fixture(scope="module")
def grpo_examples() -> Stage:
    """rlvr as run_grpo.py runs GRPO without NeMo Gym: NeMo Gym's rollouts need a generation
    server that SGLang does not expose (nemo_gym.py's should_use_nemo_gym refuses any backend
    but vLLM, Megatron, TRT-LLM and Dynamo), which the replay of the Gym runner refuses."""
    env = make_plan(rlvr, ()).framework_config["env"] | {"should_use_nemo_gym": False}
    return as_examples(rlvr, GRPOExamplesConfigMain, NEMO_RL_SUPER35_GRPO, env=env)


def _engine(tp: int, pp: int, gpus: int) -> str:
    return (
        f"{SGLANG}={{tp_size: {tp}, pp_size: {pp}, dp_size: 1, ep_size: 1, "
        f"sglang_server_config: {{num_gpus: 64, num_gpus_per_engine: {gpus}}}}}"
    )


def test_tp_size_must_split_an_engines_gpus(grpo_examples: Stage, refused_at: RefusedAt) -> None:
    (error,) = refused_at(
        grpo_examples,
        (*ON_SGLANG, _engine(tp=2, pp=1, gpus=4)),
        f"{SGLANG}.tp_size = 2",
        where("nemo-rl.sglang.worker.engine-tensor-parallel-size-gpu-count"),
    )
    assert "num_gpus_per_engine = 4" in error and "set tp_size to 4" in error


def test_tp_size_is_checked_against_the_pipeline_stages(
    grpo_examples: Stage, refused_at: RefusedAt
) -> None:
    refused_at(
        grpo_examples,
        (*ON_SGLANG, _engine(tp=4, pp=2, gpus=4)),
        f"{SGLANG}.tp_size = 4",
        where("nemo-rl.sglang.worker.engine-tensor-parallel-size-gpu-count"),
    )


def test_matching_engine_sizes_plan(grpo_examples: Stage, errors: Plan) -> None:
    assert errors(grpo_examples, *ON_SGLANG, _engine(tp=4, pp=1, gpus=4)) == []
    # NeMo-RL divides with a floor: 4 GPUs over 3 stages take tensor-parallel size 1.
    assert errors(grpo_examples, *ON_SGLANG, _engine(tp=1, pp=3, gpus=4)) == []


def test_tp_size_is_not_read_off_sglang(grpo_examples: Stage, errors: Plan) -> None:
    assert errors(grpo_examples, "grpo.async_grpo.enabled=false", _engine(2, 1, 4)) == []


def test_an_external_router_needs_its_address(grpo_examples: Stage, refused_at: RefusedAt) -> None:
    (error,) = refused_at(
        grpo_examples,
        (
            *ON_SGLANG,
            f"{SGLANG}={{sglang_router_config: {{use_external_router: true, "
            "sglang_router_ip: 10.0.0.1}}",
        ),
        f"{ROUTER}.use_external_router = True",
        where("nemo-rl.sglang.router.external-router-needs-both-host-port"),
    )
    assert "sglang_router_port is not set" in error
    (error,) = refused_at(
        grpo_examples,
        (*ON_SGLANG, f"{SGLANG}={{sglang_router_config: {{use_external_router: true}}}}"),
        f"{ROUTER}.use_external_router = True",
        where("nemo-rl.sglang.router.external-router-needs-both-host-port"),
    )
    assert "sglang_router_ip and sglang_router_port are not set" in error


def test_a_router_of_nemo_rls_own_or_an_addressed_one_plans(
    grpo_examples: Stage, errors: Plan
) -> None:
    addressed = "use_external_router: true, sglang_router_ip: 10.0.0.1, sglang_router_port: 30000"
    for router in ("use_external_router: false", addressed):
        config = f"{SGLANG}={{sglang_router_config: {{{router}}}}}"
        assert errors(grpo_examples, *ON_SGLANG, config) == []


def test_super35_sglang_without_its_settings_is_refused(refused_at: RefusedAt) -> None:
    # Super 3.5's generation section declares sglang_cfg (upstream's SGLangConfig does), which
    # GRPO's setup indexes for SGLang: unset, the stage is refused naming it.
    (error,) = refused_at(
        rlvr,
        ("policy.generation.backend=sglang", "grpo.async_grpo.enabled=false"),
        "policy.generation.backend = 'sglang'",
        READS_SGLANG_CFG,
    )
    assert "it is not set (set policy.generation.sglang_cfg)" in error


def test_sglang_without_its_settings_is_refused(
    grpo_examples: Stage, refused_at: RefusedAt
) -> None:
    (error,) = refused_at(
        grpo_examples, ON_SGLANG, "policy.generation.backend = 'sglang'", READS_SGLANG_CFG
    )
    assert f"set {SGLANG}" in error


DTENSOR_V1 = (
    "policy.megatron_cfg.enabled=false",
    "policy.dtensor_cfg.enabled=true",
    "policy.dtensor_cfg._v2=false",
)


@pytest.mark.parametrize(
    ("overrides", "worker"),
    [((), "Megatron"), (DTENSOR_V1, "first DTensor")],
    ids=["megatron", "dtensor-v1"],
)
def test_sglang_needs_the_v2_dtensor_worker(
    grpo_examples: Stage, refused_at: RefusedAt, overrides: tuple[str, ...], worker: str
) -> None:
    sglang = (
        "policy.generation.backend=sglang",
        "grpo.async_grpo.enabled=false",
        *overrides,
        _engine(tp=4, pp=1, gpus=4),
    )
    (error,) = refused_at(
        grpo_examples, sglang, "policy.generation.backend = 'sglang'", HANDS_ENGINE_SIZE
    )
    assert f"the {worker} worker fails there" in error


def test_super_v3s_sglang_names_its_gpus_per_server(refused_at: RefusedAt, errors: Plan) -> None:
    from recipes.super3.dapo import dapo_gb200

    refused_at(
        dapo_gb200,
        ("policy.generation.backend=sglang",),
        "policy.generation.sglang_cfg.gpus_per_server",
        where("nemo-rl.v3.models.generation.sglang.sglang-generation.init.gpus-per-server-set"),
    )
    found = errors(
        dapo_gb200,
        "policy.generation.backend=sglang",
        "policy.generation.sglang_cfg={gpus_per_server: 4}",
    )
    assert not [e for e in found if "gpus_per_server" in e]
