"""Reward-model training's own rules (``nemo_rl/algorithms/rm.py``, super-v3.5-posttraining,
run by ``examples/run_rm.py``): what its setup and training loop refuse or warn about.

Each check reads the typed config; an absent key is NeMo-RL's default for it (rm.py's
RMConfig). The loop and checkpoint-ranking helpers are ``rules.checkpoint_ranking``'s.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import attrs

from recipekit.errors import Issue
from recipekit.nemo_rl.rules.checkpoint_ranking import (
    LoopDefaults,
    metric_without_its_source,
    misspelt_metric_check,
    resolved_loop,
    unranked_saves,
)
from recipekit.nemo_rl.rules.citation import cite_super35 as _cite
from recipekit.nemo_rl.schema_rm import RMMasterConfigMain

# rm.py, RMConfig's defaults; max_num_steps -1 trains for max_num_epochs.
RM_LOOP = LoopDefaults(max_num_steps=-1, val_period=16)


def rm_checkpoint_metric_names_its_source(config: RMMasterConfigMain) -> Iterator[Issue]:
    """rm.py, rm_train: a ranking metric says whether it is a training or a validation metric."""
    yield from metric_without_its_source(
        config.checkpointing,
        "RM",
        _cite("nemo-rl.algorithms.rm.rm-train.ranking-metric-starts-train-val"),
    )


def rm_checkpoint_saved_without_its_validation_metric(
    config: RMMasterConfigMain,
) -> Iterator[Issue]:
    """rm.py, rm_train: a checkpoint ranked by a ``val:`` metric, saved at a step that ran no
    validation, is warned about and left out of the top-k (saves the config cannot fix are
    not foreseen, as for SFT). With max_num_steps -1 the run lasts max_num_epochs of a
    dataset the plan does not read: its periodic saves are foreseen, its last step is not."""
    loop = resolved_loop(config.rm, RM_LOOP)
    if loop.max_num_steps == -1:
        loop = attrs.evolve(loop, max_num_steps=sys.maxsize, val_at_end=True)
    yield from unranked_saves(
        config.checkpointing,
        loop,
        "rm",
        "RM",
        _cite("nemo-rl.algorithms.rm.rm-train.val-ranking-metric-save-step-ran"),
    )


RM_ERROR_CHECKS = (rm_checkpoint_metric_names_its_source,)
RM_WARNING_CHECKS = (
    rm_checkpoint_saved_without_its_validation_metric,
    misspelt_metric_check(
        "rm", "RM", "nemo-rl.algorithms.rm.rm-train.ranking-metric-one-run-collects"
    ),
)

__all__ = ["RM_ERROR_CHECKS", "RM_WARNING_CHECKS"]
