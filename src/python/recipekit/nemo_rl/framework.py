"""NeMo-RL's GRPO entry point as a framework a stage can target."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import attrs

from recipekit.framework import CONFIG_PLACEHOLDER, FrameworkBase, Launch
from recipekit.hardware import Hardware
from recipekit.lineage.checkpoint_stamp import CheckpointReads
from recipekit.lineage.steps import SavePolicy
from recipekit.markers import UNSET, given
from recipekit.megatron_core.checks import NEMO_RL_ERROR_CHECKS as MCORE_ERRORS
from recipekit.megatron_core.checks import NEMO_RL_WARNING_CHECKS as MCORE_WARNINGS
from recipekit.memory.estimate import MemoryEstimate
from recipekit.model_card import ModelCard
from recipekit.nemo_rl import NEMO_RL_VERSION
from recipekit.nemo_rl.checks import (
    ERROR_CHECKS,
    WARNING_CHECKS,
    Check,
    CheckContext,
)
from recipekit.nemo_rl.config_guards import runner_refusals, runner_warnings
from recipekit.nemo_rl.derivations import RULES, Derivation
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.layout import Layout, compute_layout, layout_candidates
from recipekit.nemo_rl.memory import estimate as estimate_memory
from recipekit.nemo_rl.memory import layout_pricer as memory_pricer
from recipekit.nemo_rl.rules import ERROR_CHECKS_SUPER_V3, WARNING_CHECKS_SUPER_V3
from recipekit.nemo_rl.schema_super_v3 import GRPOMasterConfig
from recipekit.nemo_rl.summary import grpo_summary
from recipekit.parallelism import ParallelLayout


def nemo_rl_checkpoint_reads(config: Any) -> CheckpointReads:
    """NeMo-RL resumes the newest checkpoint of ``checkpoint_dir`` whole (grpo.py, setup
    @ super-v3.5-posttraining) and starts the policy from ``model_name``'s weights when it is a
    directory (a Hub name is not)."""
    ckpt = given(value_of(config, "checkpointing", UNSET), None)
    policy = given(value_of(config, "policy", UNSET), None)
    model = value_of(policy, "model_name", None)
    return CheckpointReads(
        resumes={"checkpointing.checkpoint_dir": ckpt.checkpoint_dir}
        if ckpt is not None and ckpt.enabled
        else {},
        starts={"policy.model_name": model}
        if isinstance(model, str) and model.startswith("/")
        else {},
    )


@attrs.frozen
class NemoRLGrpo(FrameworkBase):
    name: str = "nemo-rl"
    version: str = NEMO_RL_VERSION
    # The guide's YAML header names examples/run_grpo_math.py, which super-v3 does not have.
    entry_point: str = "examples/run_grpo.py"
    config_type: type = GRPOMasterConfig
    launch: Launch = "ray"
    image: str = "nemo-rl"
    rules: tuple[Derivation, ...] = RULES
    # Last, the runner's own checks, replayed from the pinned source (config_guards).
    error_checks: tuple[Check, ...] = (
        *ERROR_CHECKS,
        *ERROR_CHECKS_SUPER_V3,
        *MCORE_ERRORS,
        runner_refusals,
    )
    warning_checks: tuple[Check, ...] = (
        *WARNING_CHECKS,
        *WARNING_CHECKS_SUPER_V3,
        *MCORE_WARNINGS,
        runner_warnings,
    )
    context_type: ClassVar[type] = CheckContext

    def layout(self, config: Any, hardware: Hardware) -> Layout:
        return compute_layout(config, hardware)

    def check_context(
        self, config: Any, hardware: Hardware, model: ModelCard, layout: Any
    ) -> CheckContext:
        # The runner too: what a run reaches, and so which keys it reads, depends on it.
        return CheckContext(config, hardware, model, layout, entry_point=self.entry_point)

    def inputs(self, config: Any) -> dict[str, str]:
        """Paths the run reads, which every node must see (preflight checks them)."""
        policy, data = config.policy, config.data
        found = {"model": policy.model_name, "tokenizer": policy.tokenizer.name}
        for split in ("train", "validation", "default"):
            path = value_of(value_of(data, split, None), "data_path", None)
            if isinstance(path, str):
                found[f"data.{split}"] = path
        return found

    def outputs(self, config: Any) -> dict[str, str]:
        ckpt = config.checkpointing
        return {"checkpoints": ckpt.checkpoint_dir} if ckpt.enabled else {}

    def checkpoint_reads(self, config: Any) -> CheckpointReads:
        return nemo_rl_checkpoint_reads(config)

    def save_policy(self, config: Any) -> SavePolicy | None:
        return nemo_rl_save_policy(config, "grpo")

    def summary(self, config: Any, layout: Any) -> list[tuple[str, str]]:
        return grpo_summary(config, layout)

    def arguments(self, rendered: dict[str, Any]) -> list[str]:
        return ["--config", CONFIG_PLACEHOLDER]

    def memory(
        self, config: Any, hardware: Hardware, model: ModelCard, layout: Any
    ) -> MemoryEstimate | None:
        return estimate_memory(config, hardware, model, layout)

    def layout_pricer(
        self, config: Any, hardware: Hardware, model: ModelCard
    ) -> Callable[[Any], MemoryEstimate | None]:
        return memory_pricer(config, hardware, model)

    def layout_candidates(
        self, layout: Any, hardware: Hardware, model: ModelCard
    ) -> Iterator[tuple[Any, dict[str, Any]]]:
        return layout_candidates(layout, hardware, model.num_layers, model.num_experts)

    def microbatches(self, config: Any, parallel: ParallelLayout) -> int:
        # The global batch is derived (from the prompts and generations a step) before this.
        policy = config.policy
        return parallel.microbatches(policy.train_global_batch_size, policy.train_micro_batch_size)


def nemo_rl_save_policy(config: Any, algorithm: str) -> SavePolicy | None:
    """NeMo-RL saves every ``save_period`` steps and at its last (``<algorithm>.max_num_steps``);
    with no ``metric_name``, ``keep_top_k`` keeps the newest (``utils/checkpoint.py``)."""
    ckpt = given(value_of(config, "checkpointing", UNSET), None)
    steps = value_of(value_of(config, algorithm, None), "max_num_steps", None)
    if ckpt is None or not ckpt.enabled or not isinstance(steps, int):
        return None
    keep = given(ckpt.keep_top_k, None)
    return SavePolicy(
        every=ckpt.save_period,
        last=steps,
        every_key="checkpointing.save_period",
        last_key=f"{algorithm}.max_num_steps",
        keep_latest=None if keep is None else (0 if ckpt.metric_name is not None else keep),
        keep_key="checkpointing.keep_top_k",
    )


NEMO_RL_GRPO = NemoRLGrpo()
