"""Distillation's own rules (``examples/run_distillation.py``, super-v3.5-posttraining): what
``nemo_rl/algorithms/distillation.py``'s setup, training loop and checkpointing refuse or warn
about. This is distillation as its own entry point (the student samples, the teacher scores the
student's tokens, no GRPO loop); distillation inside GRPO is ``rules/distillation.py``, the
cross-tokenizer variant ``rules/xtoken_distillation.py``.

Each check reads the typed config (the entry point is a NemoRLRun, which has no GRPO
CheckContext). An absent key is NeMo-RL's default for it (distillation.py's
``DistillationConfig``); a check only flags what the rule itself says.
"""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.markers import given
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.checkpoint_ranking import (
    LoopDefaults,
    metric_without_its_source,
    misspelt_metric_check,
    resolved_loop,
    unranked_saves,
)
from recipekit.nemo_rl.rules.citation import cite_super35, cite_super35_line, mirrors_super35
from recipekit.nemo_rl.rules.generation_split import (
    policy_generation,
)
from recipekit.nemo_rl.rules.weight_sync import SPARSE_TRANSPORTS
from recipekit.nemo_rl.schema_distillation import DistillationMasterConfigMain

DISTILLATION_PY = "nemo_rl/algorithms/distillation.py"
# Where validate divides max_val_samples by val_batch_size: no rule site (a TypeError, no
# assert), so written here by hand, once (an upgrade must check it).
VALIDATION_BATCHES = cite_super35_line(DISTILLATION_PY, 1206)
# DistillationConfig's defaults for the keys the loop's validation and saves read.
DISTILLATION_LOOP = LoopDefaults(max_num_steps=1000, val_period=20)
# How the checkpoint-ranking messages name the loop.
WHO = "NeMo-RL's distillation"


# --- distillation.py's setup --------------------------------------------------------------------


@mirrors_super35(
    "nemo-rl.algorithms.distillation.setup.vllm-generation-refits-without-remote-sparse"
)
def distillation_refits_without_sparse_transport(
    config: DistillationMasterConfigMain,
) -> Iterator[Issue]:
    """distillation.py, setup: the remote sparse refit transports are GRPO's only
    (NVIDIA-NeMo/RL#3275)."""
    gen = policy_generation(config)
    if gen is None or gen.backend != "vllm":
        return
    transport = given(gen.refit_transport, None)
    if transport in SPARSE_TRANSPORTS:  # which only GRPO streams
        yield Issue(
            "policy.generation.refit_transport",
            "remote sparse refit is implemented for GRPO only; distillation's setup refuses it",
            value=transport,
            hint="set it null (NeMo-RL's collective refit), or another transport",
        )


@mirrors_super35("nemo-rl.algorithms.distillation.setup.dtensor-student-teacher-does-not-combine")
def dtensor_sequence_parallel_excludes_packing(
    config: DistillationMasterConfigMain,
) -> Iterator[Issue]:
    """distillation.py, setup: for the student and for the teacher, a DTensor model does not
    combine sequence parallelism with sequence packing (NVIDIA-NeMo/RL#1178)."""
    for role, who in (("policy", "student"), ("teacher", "teacher")):
        model = getattr(config, role)
        dtensor = model.dtensor_cfg
        packing = given(model.sequence_packing, None)
        if (
            dtensor.enabled is True
            and given(dtensor.sequence_parallel, False) is True
            and value_of(packing, "enabled", False) is True
        ):
            yield Issue(
                f"{role}.dtensor_cfg.sequence_parallel",
                f"with {role}.sequence_packing.enabled, sequence parallelism on the DTensor "
                f"{who} may break some models; distillation's setup refuses the two together",
                value=True,
                hint=f"set it false, or {role}.sequence_packing.enabled false",
            )


# --- distillation.py's training loop ------------------------------------------------------------


def distillation_checkpoint_metric_names_its_source(
    config: DistillationMasterConfigMain,
) -> Iterator[Issue]:
    """distillation.py, distillation_train: a ranking metric says whether it is a training or a
    validation metric."""
    yield from metric_without_its_source(
        config.checkpointing,
        WHO,
        cite_super35(
            "nemo-rl.algorithms.distillation.distillation-train.ranking-metric-starts-train-val"
        ),
    )


def distillation_checkpoint_saved_without_its_validation_metric(
    config: DistillationMasterConfigMain,
) -> Iterator[Issue]:
    """distillation.py, distillation_train: a checkpoint ranked by a ``val:`` metric, saved at a
    step that ran no validation, is left out of the top-k. The loop validates every val_period steps
    and, with val_at_end, at its last step, as GRPO's does. Saves the config cannot fix
    (checkpoint_must_save_by's time limit, an epoch limit reached before max_num_steps) are not
    foreseen."""
    loop = resolved_loop(config.distillation, DISTILLATION_LOOP)
    yield from unranked_saves(
        config.checkpointing,
        loop,
        "distillation",
        WHO,
        cite_super35(
            "nemo-rl.algorithms.distillation.distillation-train.val-ranking-metric-save-step-ran"
        ),
    )


def validation_counts_its_samples(config: DistillationMasterConfigMain) -> Iterator[Issue]:
    """distillation.py, validate: validation divides max_val_samples by val_batch_size to count
    its batches, so a null limit (which DistillationConfig allows, for NeMo Gym) fails with a
    TypeError the first time the loop validates, if it ever does (val_at_start, val_period,
    val_at_end) with a validation dataset. No assert states it."""
    section = config.distillation
    if section.max_val_samples is not None:
        return
    loop = resolved_loop(section, DISTILLATION_LOOP)
    when = [
        label
        for label, on in (
            ("distillation.val_at_start", given(section.val_at_start, False) is True),
            (f"distillation.val_period = {loop.val_period}", loop.val_period > 0),
            ("distillation.val_at_end", loop.val_at_end),
        )
        if on
    ]
    if when:
        yield Issue(
            "distillation.max_val_samples",
            f"validation runs ({', '.join(when)}) and counts its batches from this limit, so "
            "with a validation dataset the job fails there with a TypeError "
            f"({VALIDATION_BATCHES})",
            value=None,
            hint="a number of samples, e.g. 512 (NeMo-RL's default)",
        )


DISTILLATION_ERROR_CHECKS = (
    distillation_refits_without_sparse_transport,
    dtensor_sequence_parallel_excludes_packing,
    distillation_checkpoint_metric_names_its_source,
)
DISTILLATION_WARNING_CHECKS = (
    distillation_checkpoint_saved_without_its_validation_metric,
    misspelt_metric_check(
        "distillation",
        "Distillation",
        "nemo-rl.algorithms.distillation.distillation-train.ranking-metric-one-run-collects",
    ),
    validation_counts_its_samples,
)

__all__ = ["DISTILLATION_ERROR_CHECKS", "DISTILLATION_WARNING_CHECKS"]
