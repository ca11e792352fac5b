"""DPO's own rules (``nemo_rl/algorithms/dpo.py``, super-v3.5-posttraining, run by
``examples/run_dpo.py``): what its setup and training loop refuse or warn about.

Each check reads the typed config; an absent key is NeMo-RL's default for it (dpo.py's
DPOConfig). The loop and checkpoint-ranking helpers are ``rules.checkpoint_ranking``'s.
"""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.markers import given
from recipekit.nemo_rl.rules.checkpoint_ranking import (
    LoopDefaults,
    metric_without_its_source,
    misspelt_metric_check,
    resolved_loop,
    unranked_saves,
)
from recipekit.nemo_rl.rules.citation import cite_super35 as _cite
from recipekit.nemo_rl.rules.citation import mirrors_super35
from recipekit.nemo_rl.rules.generation_split import stated_cluster
from recipekit.nemo_rl.schema_dpo import DPOMasterConfigMain
from recipekit.parallelism import DTENSOR, NEMO_RL, ParallelLayout

# dpo.py, DPOConfig's defaults.
DPO_LOOP = LoopDefaults(max_num_steps=150, val_period=25)


def _policy_layout(config: DPOMasterConfigMain) -> ParallelLayout | None:
    """The policy's layout on the cluster's GPUs (Megatron-Core, else DTensor); None where the
    cluster's size is open or neither back-end is on (the policy refuses that itself)."""
    cluster = stated_cluster(config)
    if cluster is None:
        return None
    gpus = cluster[0] * cluster[1]
    megatron = given(config.policy.megatron_cfg, None)
    if megatron is not None and megatron.enabled is True:
        return NEMO_RL.read(megatron, gpus)
    if config.policy.dtensor_cfg.enabled is True:
        return DTENSOR.read(config.policy.dtensor_cfg, gpus)
    return None


@mirrors_super35(
    "nemo-rl.algorithms.dpo.add-ref-logprobs-to-data.training-batch-fills-whole-micro-batches"
)
def dpo_train_batches_fill_the_micro_batches(config: DPOMasterConfigMain) -> Iterator[Issue]:
    """dpo.py, add_ref_logprobs_to_data: before each training step DPO computes the reference
    policy's logprobs in micro-batches of train_micro_batch_size pairs on each data-parallel rank,
    and refuses a training batch those do not fill (only a validation batch is padded)."""
    policy = config.policy
    gbs, mbs = policy.train_global_batch_size, policy.train_micro_batch_size
    layout = _policy_layout(config)
    if layout is None or layout.dp <= 0 or not isinstance(gbs, int):
        return  # an unfit layout is refused by the layout rules
    per_step = layout.dp * mbs
    if gbs % per_step:
        yield Issue(
            "policy.train_global_batch_size",
            f"DPO splits each training batch over {layout.dp} data-parallel ranks in "
            f"micro-batches of {mbs} pairs (policy.train_micro_batch_size), so it must be a "
            f"multiple of {layout.dp} x {mbs} = {per_step}; DPO refuses the partial batch at its "
            "first training step",
            value=gbs,
            hint=f"a multiple of {per_step}",
        )


def dpo_checkpoint_metric_names_its_source(config: DPOMasterConfigMain) -> Iterator[Issue]:
    """dpo.py, dpo_train: a ranking metric says whether it is a training or a validation metric."""
    yield from metric_without_its_source(
        config.checkpointing,
        "DPO",
        _cite("nemo-rl.algorithms.dpo.dpo-train.ranking-metric-starts-train-val"),
    )


def dpo_checkpoint_saved_without_its_validation_metric(
    config: DPOMasterConfigMain,
) -> Iterator[Issue]:
    """dpo.py, dpo_train: a checkpoint ranked by a ``val:`` metric, saved at a step that ran no
    validation, is warned about and left out of the top-k (saves the config cannot fix are
    not foreseen, as for SFT)."""
    loop = resolved_loop(config.dpo, DPO_LOOP)
    yield from unranked_saves(
        config.checkpointing,
        loop,
        "dpo",
        "DPO",
        _cite("nemo-rl.algorithms.dpo.dpo-train.val-ranking-metric-save-step-ran"),
    )


DPO_ERROR_CHECKS = (
    dpo_train_batches_fill_the_micro_batches,
    dpo_checkpoint_metric_names_its_source,
)
DPO_WARNING_CHECKS = (
    dpo_checkpoint_saved_without_its_validation_metric,
    misspelt_metric_check(
        "dpo", "DPO", "nemo-rl.algorithms.dpo.dpo-train.ranking-metric-one-run-collects"
    ),
)

__all__ = ["DPO_ERROR_CHECKS", "DPO_WARNING_CHECKS"]
