"""The policy's own rules (its class, workers, Megatron-Core setup and config classes) on the
entry points other than GRPO: SFT, DPO, RM, PPO and off-policy distillation start the same
policy, so the stages ``recipekit import-yaml`` makes of NeMo-RL's own examples are refused
(or warned about) at the key a broken value sets, as a GRPO stage is."""

from __future__ import annotations

from pathlib import Path

import pytest

from recipekit.megatron_bridge.rules import cite as bridge_cite
from recipekit.nemo_rl.algorithms import (
    NEMO_RL_DISTILLATION,
    NEMO_RL_DPO,
    NEMO_RL_RM,
    NEMO_RL_SFT,
    NEMO_RL_SUPER35_DISTILLATION,
    NEMO_RL_SUPER35_DPO,
    NEMO_RL_SUPER35_PPO,
    NEMO_RL_SUPER35_RM,
    NEMO_RL_SUPER35_SFT,
    NEMO_RL_SUPER35_VLM_SFT,
    NEMO_RL_SUPER35_XTOKEN_DISTILLATION,
    NemoRLRun,
)
from recipekit.nemo_rl.framework import NEMO_RL_GRPO
from recipekit.nemo_rl.framework_super35 import NEMO_RL_SUPER35
from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules import (
    POLICY_ERROR_CHECKS_SUPER35,
    POLICY_ERROR_CHECKS_SUPER_V3,
    POLICY_WARNING_CHECKS_SUPER35,
    POLICY_WARNING_CHECKS_SUPER_V3,
)
from recipekit.nemo_rl.rules.conftest import Plan, imported_stage
from recipekit.stage import Stage

CONFIGS = "nemo-rl/main/examples/configs"
TRAINING_RUNS = (
    NEMO_RL_SUPER35_SFT,
    NEMO_RL_SUPER35_VLM_SFT,
    NEMO_RL_SUPER35_DPO,
    NEMO_RL_SUPER35_RM,
    NEMO_RL_SUPER35_PPO,
    NEMO_RL_SUPER35_DISTILLATION,
    NEMO_RL_SUPER35_XTOKEN_DISTILLATION,
)
MEGATRON_ON = (
    "policy.dtensor_cfg.enabled=false",
    "policy.megatron_cfg.enabled=true",
    "policy.megatron_cfg.tensor_model_parallel_size=1",
)


@pytest.fixture(scope="module")
def stages(reference_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Stage]:
    tmp = tmp_path_factory.mktemp("policy")
    names = ("sft_openmathinstruct2_megatron.yaml", "dpo.yaml", "rm.yaml", "ppo_math_1B.yaml")
    return {name: imported_stage(reference_dir / CONFIGS / name, tmp) for name in names}


def test_grpo_runs_every_policy_rule() -> None:
    # One list of functions: the entry points share GRPO's checks, not copies of them.
    assert set(POLICY_ERROR_CHECKS_SUPER35) <= set(NEMO_RL_SUPER35.error_checks)
    assert set(POLICY_WARNING_CHECKS_SUPER35) <= set(NEMO_RL_SUPER35.warning_checks)
    assert set(POLICY_ERROR_CHECKS_SUPER_V3) <= set(NEMO_RL_GRPO.error_checks)
    assert set(POLICY_WARNING_CHECKS_SUPER_V3) <= set(NEMO_RL_GRPO.warning_checks)


@pytest.mark.parametrize("run", TRAINING_RUNS, ids=lambda run: run.entry_point)
def test_every_entry_point_that_trains_a_policy_runs_its_rules(run: NemoRLRun) -> None:
    assert run.policy_error_checks == POLICY_ERROR_CHECKS_SUPER35
    assert run.policy_warning_checks == POLICY_WARNING_CHECKS_SUPER35


@pytest.mark.parametrize(
    "run", (NEMO_RL_SFT, NEMO_RL_DPO, NEMO_RL_RM, NEMO_RL_DISTILLATION), ids=lambda r: r.algorithm
)
def test_super_v3_entry_points_run_that_versions_policy_rules(run: NemoRLRun) -> None:
    assert run.policy_error_checks == POLICY_ERROR_CHECKS_SUPER_V3
    assert run.policy_warning_checks == POLICY_WARNING_CHECKS_SUPER_V3


def test_sft_megatron_context_parallelism_needs_packing(
    stages: dict[str, Stage], refused: Plan
) -> None:
    stage = stages["sft_openmathinstruct2_megatron.yaml"]
    assert stage.framework is NEMO_RL_SUPER35_SFT
    errors = refused(
        stage,
        "policy.megatron_cfg.context_parallel_size=2",
        "policy.sequence_packing.enabled=false",
    )
    assert errors == [
        "policy.megatron_cfg.context_parallel_size = 2: Megatron context parallelism in NeMo-RL "
        "needs policy.sequence_packing.enabled"
    ]


def test_sft_at_tensor_parallel_four_needs_equal_logprob_and_micro_batches(
    stages: dict[str, Stage], refused: Plan
) -> None:
    # The policy's class asks it of every entry point (lm_policy.py, Policy.__init__); only GRPO
    # and PPO
    # can lift it, through force_on_policy_ratio.
    errors = refused(stages["sft_openmathinstruct2_megatron.yaml"], "policy.logprob_batch_size=7")
    assert len(errors) == 1 and errors[0].startswith(
        "policy.logprob_batch_size = 7: with TP=4 (>= 4) NeMo-RL requires it to equal "
        "train_micro_batch_size (1)"
    ), errors


def test_dpo_needs_a_training_backend(stages: dict[str, Stage], refused: Plan) -> None:
    # Policy.__init__ raises it (lm_policy.py @ super-v3.5), replayed from the pinned source.
    errors = refused(stages["dpo.yaml"], "policy.dtensor_cfg.enabled=false")
    assert len(errors) == 1, errors
    assert errors[0].startswith("policy.dtensor_cfg.enabled = False: NeMo-RL's Policy.__init__")
    assert "megatron_cfg.enabled=False" in errors[0]


def test_dpo_warm_up_is_held_against_twice_its_steps(
    stages: dict[str, Stage], warned: Plan
) -> None:
    # DPO hands Megatron-Core train_iters = 2 x its steps (dpo.py, setup): dpo.yaml's 150 steps
    # give 300 scheduler iterations, so a 250-step warm-up ends in time and a 400-step one
    # does not.
    stage = stages["dpo.yaml"]
    assert warned(stage, *MEGATRON_ON, "policy.megatron_cfg.scheduler.lr_warmup_iters=250") == []
    assert warned(stage, *MEGATRON_ON, "policy.megatron_cfg.scheduler.lr_warmup_iters=400") == [
        "policy.megatron_cfg.scheduler.lr_warmup_iters = 400: the warm-up does not end before "
        "the decay does (2 x dpo.max_num_steps = 300, which bounds the run's train_iters): "
        "Megatron-Bridge warns and cuts it to one step less "
        + bridge_cite(
            "megatron-bridge.config.calculate-scheduler-steps.warm-up-long-decay-longer-cut"
        )
    ]


def test_rm_save_format_needs_the_second_dtensor_worker(
    stages: dict[str, Stage], refused: Plan
) -> None:
    errors = refused(stages["rm.yaml"], "checkpointing.model_save_format=safetensors")
    assert errors == [
        "checkpointing.model_save_format = 'safetensors': NeMo-RL refuses it at the first "
        "checkpoint unless policy.dtensor_cfg._v2 is true ("
        + where("nemo-rl.models.policy.lm-policy.save-checkpoint.save-format-needs-dtensor-cfg-v2")
        + ") (leave it null, or set policy.dtensor_cfg._v2: true)"
    ]


def test_ppo_precision_aware_optimizer_keeps_bf16_states(
    stages: dict[str, Stage], refused: Plan
) -> None:
    errors = refused(
        stages["ppo_math_1B.yaml"],
        *MEGATRON_ON,
        "policy.megatron_cfg.optimizer.use_precision_aware_optimizer=true",
        "policy.megatron_cfg.optimizer.bf16=false",
    )
    assert any(
        e.startswith("policy.megatron_cfg.optimizer.bf16 = False: NeMo-RL's Megatron setup refuses")
        and where(
            "nemo-rl.models.megatron.setup.validate-dtype-config.bfloat16-precision-aware-optimizer-has-bf16"
        )
        in e
        for e in errors
    ), errors


def test_super_v3_rm_cites_that_versions_line(
    reference_dir: Path, tmp_path: Path, refused: Plan
) -> None:
    stage = imported_stage(reference_dir / "nemo-rl/super-v3/examples/configs/rm.yaml", tmp_path)
    assert stage.framework is NEMO_RL_RM
    errors = refused(stage, "checkpointing.model_save_format=safetensors")
    assert errors == [
        "checkpointing.model_save_format = 'safetensors': NeMo-RL refuses it at the first "
        "checkpoint unless policy.dtensor_cfg._v2 is true ("
        + where(
            "nemo-rl.v3.models.policy.lm-policy.save-checkpoint.save-format-needs-dtensor-cfg-v2"
        )
        + ") (leave it null, or set policy.dtensor_cfg._v2: true)"
    ]


def test_a_dtensor_layout_must_divide_the_gpus_outside_grpo(
    reference_dir: Path, tmp_path: Path, refused: Plan
) -> None:
    # lm_policy.py, Policy.__init__, and the DTensor worker (DTensorPolicyWorkerImpl.__init__)
    # refuse it for
    # every entry point, not only GRPO.
    yaml = reference_dir / CONFIGS / "recipes/llm/sft-llama3.2-1b-1n8g-fsdp2tp1.v3.yaml"
    stage = imported_stage(yaml, tmp_path)
    assert stage.framework is NEMO_RL_SUPER35_SFT
    errors = refused(stage, "policy.dtensor_cfg.tensor_parallel_size=3")
    assert any(
        e.startswith("policy.dtensor_cfg: tensor_parallel_size x context_parallel_size = 3 x 1")
        and "does not divide the 8 GPUs of NeMo-RL's cluster (1 x 8)" in e
        for e in errors
    ), errors
