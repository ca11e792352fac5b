"""The second DTensor policy worker's rules (dtensor_policy_worker_v2.py and
nemo_rl/models/automodel/, super-v3.5-posttraining): a value that breaks each is refused (or
warned about) at its key, citing the upstream line. The Super 3.5 RL stage trains on the v2
worker with DTENSOR_V2; NeMo-RL's own examples serve the entry points the stage does not
(one training GPU, cross-tokenizer teachers, PPO)."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by name:
# packing_needs_a_text_tokenizer, yarn_rope_scaling_needs_megatron,
# context_parallel_without_sequence_packing, cpu_offload_needs_several_gpus,
# context_parallel_without_sequence_parallel, context_parallel_needs_a_text_tokenizer,
# lora_triton_needs_one_tensor_parallel_rank, packing_needs_flash_attention_2,
# teacher_full_logits_without_sequence_packing, sglang_refit_outside_grpo,
# sequence_parallel_without_tensor_parallel, clear_cache_every_n_steps_slows_training,
# cpu_offload_with_non_colocated_refit.

from __future__ import annotations

from pathlib import Path

import pytest

from recipekit.importers.nemo_rl_yaml import ImportedRecipe, import_yaml
from recipekit.loading import load_object
from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules.conftest import Plan, RefusedAt, imported_stage
from recipekit.sections import evolve
from recipekit.stage import Stage
from recipes.super35.rl import rlvr

CONFIGS = "nemo-rl/main/examples/configs"
DTENSOR_V2 = (
    "policy.megatron_cfg.enabled=false",
    "policy.dtensor_cfg.enabled=true",
    "policy.dtensor_cfg._v2=true",
)
UNPACKED = ("policy.sequence_packing.enabled=false",)
SETUP = "automodel/setup.py:"


def _example(reference_dir: Path, tmp: Path, name: str) -> Stage:
    return imported_stage(reference_dir / CONFIGS / name, tmp)


@pytest.mark.parametrize(
    ("overrides", "key", "reason"),
    [
        (
            ("policy.tokenizer.use_processor=true",),
            "policy.sequence_packing.enabled",
            where(
                "nemo-rl.automodel.setup.validate-and-prepare-config.no-sequence-packing-model-loaded-hf"
            ),
        ),
        (
            ("policy.hf_config_overrides={rope_scaling: {rope_type: yarn, factor: 4.0}}",),
            "policy.hf_config_overrides.rope_scaling.rope_type",
            where(
                "nemo-rl.automodel.setup.validate-and-prepare-config.no-yarn-rope-scaling-automodel-back"
            ),
        ),
        (
            # Replayed: the refusal names the key the failing test reads.
            ("policy.dtensor_cfg.context_parallel_size=2",),
            "policy.sequence_packing.enabled",
            where(
                "nemo-rl.automodel.setup.validate-and-prepare-config.no-context-parallelism-sequence-packing"
            ),
        ),
        (
            (
                *UNPACKED,
                "policy.dtensor_cfg.context_parallel_size=2",
                "policy.dtensor_cfg.tensor_parallel_size=2",
                "policy.dtensor_cfg.sequence_parallel=true",
            ),
            "policy.dtensor_cfg.sequence_parallel",
            where(
                "nemo-rl.automodel.setup.setup-model-and-optimizer.no-sequence-parallelism-over-tp"
            ),
        ),
        (
            (
                *UNPACKED,
                "policy.tokenizer.use_processor=true",
                "policy.dtensor_cfg.context_parallel_size=2",
            ),
            "policy.dtensor_cfg.context_parallel_size",
            where(
                "nemo-rl.automodel.setup.setup-model-and-optimizer.no-context-parallelism-model-loaded-hf"
            ),
        ),
        (
            (
                "policy.dtensor_cfg.lora_cfg={enabled: true, use_triton: true}",
                "policy.dtensor_cfg.tensor_parallel_size=2",
            ),
            "policy.dtensor_cfg.lora_cfg.use_triton",
            where("nemo-rl.automodel.setup.setup-model-and-optimizer.lora-triton-kernels-need-tp"),
        ),
        (
            ("policy.dtensor_cfg.automodel_kwargs={attn_implementation: sdpa}",),
            "policy.dtensor_cfg.automodel_kwargs.attn_implementation",
            where(
                "nemo-rl.automodel.setup.setup-model-and-optimizer.sequence-packing-stated-attention-implementation-flash"
            ),
        ),
    ],
)
def test_refused_on_the_v2_worker(
    refused_at: RefusedAt, overrides: tuple[str, ...], key: str, reason: str
) -> None:
    refused_at(rlvr, (*DTENSOR_V2, *overrides), key, reason)


def test_super_v3_states_the_triton_rule_too(refused_at: RefusedAt) -> None:
    from recipes.super3.dapo import dapo_h100

    lora = ("policy.dtensor_cfg.lora_cfg={enabled: true, use_triton: true}",)
    refused_at(
        dapo_h100,
        (*DTENSOR_V2, *lora, "policy.dtensor_cfg.tensor_parallel_size=2"),
        "policy.dtensor_cfg.lora_cfg.use_triton",
        where(
            "nemo-rl.v3.models.automodel.setup.setup-model-and-optimizer.lora-triton-needs-tp-one"
        ),
    )


def test_the_first_worker_is_not_held_to_them(errors: Plan) -> None:
    v1 = (*DTENSOR_V2[:2], "policy.dtensor_cfg._v2=false")
    found = errors(rlvr, *v1, "policy.dtensor_cfg.automodel_kwargs={attn_implementation: sdpa}")
    assert not [e for e in found if SETUP in e]


def test_packing_with_flash_attention_2_named_plans(warned: Plan) -> None:
    flash = "policy.dtensor_cfg.automodel_kwargs={attn_implementation: flash_attention_2}"
    assert warned(rlvr, *DTENSOR_V2, flash) == []


@pytest.mark.parametrize(
    ("overrides", "key", "reason"),
    [
        (
            ("policy.dtensor_cfg.sequence_parallel=true",),
            "policy.dtensor_cfg.sequence_parallel",
            where(
                "nemo-rl.automodel.setup.validate-and-prepare-config.sequence-parallelism-tp-1-has-no-effect"
            ),
        ),
        (
            ("policy.dtensor_cfg.clear_cache_every_n_steps=4",),
            "policy.dtensor_cfg.clear_cache_every_n_steps",
            where("nemo-rl.automodel.worker.train.emptying-cuda-cache-few-micro-batches"),
        ),
        (
            ("policy.dtensor_cfg.cpu_offload=true",),
            "policy.dtensor_cfg.cpu_offload",
            where(
                "nemo-rl.automodel.worker.broadcast-weights-for-collective.cpu-offload-collective-refit-non-colocated"
            ),
        ),
    ],
)
def test_warned_on_the_v2_worker(
    warned: Plan, overrides: tuple[str, ...], key: str, reason: str
) -> None:
    found = warned(rlvr, *DTENSOR_V2, *overrides)
    assert [w for w in found if w.startswith(key) and reason in w], found


def test_cpu_offload_on_one_training_gpu(
    reference_dir: Path, tmp_path: Path, refused_at: RefusedAt
) -> None:
    sft = _example(reference_dir, tmp_path, "sft.yaml")
    refused_at(
        sft,
        ("policy.dtensor_cfg._v2=true", "policy.dtensor_cfg.cpu_offload=true"),
        "policy.dtensor_cfg.cpu_offload",
        where("nemo-rl.automodel.setup.setup-distributed.no-cpu-offload-single-training-gpu"),
    )


def test_a_distillation_teacher_starts_the_same_worker(
    reference_dir: Path, tmp_path: Path, refused_at: RefusedAt
) -> None:
    # distillation_math.yaml's teacher is a v2 DTensor policy at context_parallel_size 2.
    distillation = _example(reference_dir, tmp_path, "distillation_math.yaml")
    refused_at(
        distillation,
        ("teacher.sequence_packing.enabled=true", "teacher.dynamic_batching.enabled=false"),
        "teacher.sequence_packing.enabled",
        where(
            "nemo-rl.automodel.setup.validate-and-prepare-config.no-context-parallelism-sequence-packing"
        ),
    )


def test_a_cross_tokenizer_teacher_does_not_pack(
    reference_dir: Path, tmp_path: Path, refused_at: RefusedAt
) -> None:
    xtoken = _example(reference_dir, tmp_path, "xtoken_off_policy_distillation.yaml")
    # A list element has no --set key: the teacher is changed in the stage.
    [teacher] = xtoken.config.teachers
    packed = evolve(teacher, sequence_packing=evolve(teacher.sequence_packing, enabled=True))
    refused_at(
        xtoken.with_values({"teachers": (packed,)}),
        (),
        "teachers[0].sequence_packing.enabled",
        where(
            "nemo-rl.automodel.train.full-logits-post-processor.cross-tokenizer-teacher-full-logit-export"
        ),
    )


def test_ppo_refits_colocated_sglang_only_from_megatron(
    reference_dir: Path, tmp_path: Path, refused_at: RefusedAt
) -> None:
    module = tmp_path / "ppo_math_1B.py"
    module.write_text(import_yaml(reference_dir / CONFIGS / "ppo_math_1B.yaml").source)
    recipe = load_object(f"{module}:recipe")
    assert isinstance(recipe, ImportedRecipe)
    refused_at(
        recipe.stage,
        ("policy.generation.backend=sglang",),
        "policy.generation.backend",
        where(
            "nemo-rl.automodel.worker.stream-weights-via-http.colocated-sglang-refit-needs-engines-gpu"
        ),
    )
