"""SFT's own rules (``nemo_rl/algorithms/sft.py``, super-v3.5-posttraining): what its training
loop refuses or warns about, for ``examples/run_sft.py`` and ``examples/run_vlm_sft.py`` alike
(both run sft.py's setup and loop).

Each check reads the typed config (the entry point is a NemoRLRun, which has no GRPO
CheckContext). An absent key is NeMo-RL's default for it, which each algorithm's pydantic
config sets on its own (sft.py's SFTConfig, dpo.py's DPOConfig, rm.py's RMConfig).
"""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.nemo_rl.rules.checkpoint_ranking import (
    LoopDefaults,
    metric_without_its_source,
    misspelt_metric_check,
    resolved_loop,
    unranked_saves,
)
from recipekit.nemo_rl.rules.citation import cite_super35 as _cite
from recipekit.nemo_rl.schema_sft import SFTMasterConfigMain

# sft.py, SFTConfig's defaults.
SFT_LOOP = LoopDefaults(max_num_steps=60, val_period=10)


def sft_checkpoint_metric_names_its_source(config: SFTMasterConfigMain) -> Iterator[Issue]:
    """sft.py, sft_train: a ranking metric says whether it is a training or a validation metric."""
    yield from metric_without_its_source(
        config.checkpointing,
        "SFT",
        _cite("nemo-rl.algorithms.sft.sft-train.ranking-metric-starts-train-val"),
    )


def sft_checkpoint_saved_without_its_validation_metric(
    config: SFTMasterConfigMain,
) -> Iterator[Issue]:
    """sft.py, sft_train: a checkpoint ranked by a ``val:`` metric, saved at a step that ran no
    validation, is warned about and left out of the top-k. Saves the config cannot fix (the
    checkpoint_must_save_by deadline, the last step of an epoch-bounded run) are not
    foreseen."""
    loop = resolved_loop(config.sft, SFT_LOOP)
    yield from unranked_saves(
        config.checkpointing,
        loop,
        "sft",
        "SFT",
        _cite("nemo-rl.algorithms.sft.sft-train.val-ranking-metric-save-step-ran"),
    )


SFT_ERROR_CHECKS = (sft_checkpoint_metric_names_its_source,)
SFT_WARNING_CHECKS = (
    sft_checkpoint_saved_without_its_validation_metric,
    misspelt_metric_check(
        "sft", "SFT", "nemo-rl.algorithms.sft.sft-train.ranking-metric-one-run-collects"
    ),
)

__all__ = ["SFT_ERROR_CHECKS", "SFT_WARNING_CHECKS"]
