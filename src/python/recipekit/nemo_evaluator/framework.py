"""nemo-evaluator-launcher with a vLLM deployment, as a framework a stage can target.

The launcher is its own Slurm client: its Slurm executor writes a batch job (the vLLM
deployment, then each task's harness container against it) and submits it with ``sbatch`` on
``execution.hostname`` (over ssh), so it runs where a user submits from, not inside an
allocation, where it would hold a node idle while it queued a second job. Hence
``launch="delegated"``: ``submit`` runs ``nemo-evaluator-launcher run --config config.yaml``
once on the submit host. The launcher composes the rendered file over its packaged defaults
(the ``defaults:`` list: Slurm execution, vLLM deployment). What belongs to the cluster, not
the recipe (login host, account, partition, and the vLLM image by digest), comes from the
cluster profile as ``-o key=value`` overrides of the same command.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import attrs

from recipekit.derivation import Derivation
from recipekit.framework import CONFIG_PLACEHOLDER, FrameworkBase, Launch
from recipekit.hardware import Hardware
from recipekit.lineage.steps import SavePolicy
from recipekit.markers import given_at
from recipekit.memory.estimate import MemoryEstimate
from recipekit.model_card import ModelCard
from recipekit.nemo_evaluator import LAUNCHER_VERSION
from recipekit.nemo_evaluator.checks import (
    ERROR_CHECKS,
    WARNING_CHECKS,
    Check,
    CheckContext,
    ServingLayout,
    compute_layout,
)
from recipekit.nemo_evaluator.derivations import RULES
from recipekit.nemo_evaluator.memory import estimate as estimate_memory
from recipekit.nemo_evaluator.schema import LauncherConfig, Task


def hydra_defaults() -> list[Any]:
    """Hydra's defaults list: the launcher's packaged configs this file is merged over."""
    return [{"execution": "slurm/default"}, {"deployment": "vllm"}, "_self_"]


@attrs.frozen
class NemoEvaluatorLauncher(FrameworkBase):
    name: str = "nemo-evaluator"
    version: str = LAUNCHER_VERSION
    # The console script of the nemo-evaluator-launcher package.
    entry_point: str = "nemo-evaluator-launcher"
    config_type: type = LauncherConfig
    launch: Launch = "delegated"
    image: str = "vllm"
    # What `recipekit explain` shows for a derived key (the formula and its sources).
    rules: tuple[Derivation, ...] = RULES
    error_checks: tuple[Check, ...] = ERROR_CHECKS
    warning_checks: tuple[Check, ...] = WARNING_CHECKS
    context_type: ClassVar[type] = CheckContext

    def memory(
        self, config: Any, hardware: Hardware, model: ModelCard, layout: Any
    ) -> MemoryEstimate | None:
        return estimate_memory(config, hardware, model, layout)

    def layout(self, config: Any, hardware: Hardware) -> ServingLayout:
        return compute_layout(config, hardware)

    def render(self, config: Any) -> dict[str, Any]:
        return {"defaults": hydra_defaults(), **super().render(config)}

    def arguments(self, rendered: dict[str, Any]) -> list[str]:
        # The cluster's values (recipekit.framework.SITE_PLACEHOLDERS), as the launcher's own
        # Hydra overrides; deployment.image replaces the recipe's tag with the profile's digest.
        site = {
            "execution.hostname": "{login_host}",
            "execution.account": "{account}",
            "execution.partition": "{partition}",
            "deployment.image": "{image}",
        }
        overrides = [a for key, value in site.items() for a in ("-o", f"{key}={value}")]
        return ["run", "--config", CONFIG_PLACEHOLDER, *overrides]

    def waiting_for(self, job_ids: Sequence[str]) -> list[str]:
        # The Slurm executor writes each execution.sbatch_extra_flags entry as an #SBATCH
        # option of its job (executors/slurm/executor.py), as the launcher's own watcher chains
        # evaluation after conversion. "++": Hydra adds the key, which its defaults lack, or
        # replaces it.
        dependency = "afterok:" + ":".join(job_ids)
        return ["-o", f"++execution.sbatch_extra_flags.dependency={dependency}"]

    def inputs(self, config: Any) -> dict[str, str]:
        """The checkpoint vLLM serves (and the tasks read the tokenizer from)."""
        checkpoint = config.deployment.checkpoint_path
        return {"model": checkpoint} if isinstance(checkpoint, str) else {}

    def outputs(self, config: Any) -> dict[str, str]:
        return {"results": config.execution.output_dir}

    def save_policy(self, config: Any) -> SavePolicy | None:
        return None  # evaluation saves no checkpoints

    def summary(self, config: Any, layout: Any) -> list[tuple[str, str]]:
        return evaluation_summary(config, layout)


# What the plan shows of the sampling, in this order, where the evaluation sets it.
_SAMPLING = ("temperature", "top_p", "max_new_tokens", "parallelism")


def evaluation_summary(cfg: LauncherConfig, lay: ServingLayout) -> list[tuple[str, str]]:
    deployment, execution = cfg.deployment, cfg.execution
    evaluation = cfg.evaluation
    replicas = f"{lay.data_parallel} replica{'s' if lay.data_parallel != 1 else ''}"
    served = deployment.checkpoint_path or given_at(deployment, "hf_model_handle")
    rows = [
        (
            "layout",
            f"vLLM TP {lay.tensor_parallel} x PP {lay.pipeline_parallel} -> {replicas} on "
            f"{lay.serving_gpus} of {lay.total_gpus} GPUs",
        ),
        (
            "serving",
            f"{served} as {deployment.served_model_name!r} on port {deployment.port}, "
            f"{deployment.image}",
        ),
    ]
    params = given_at(evaluation, "nemo_evaluator_config", "config", "params")
    sampling = ", ".join(
        f"{key} {value}"
        for key in _SAMPLING
        if (value := given_at(params, key)) is not None
    )
    if sampling:
        rows.append(("sampling", sampling))
    rows.append(("tasks", ", ".join(_task_text(task) for task in evaluation.tasks)))
    exported = given_at(execution, "auto_export", "destinations") or ()
    where = f"; exported to {', '.join(exported)}" if exported else ""
    rows.append(("results", f"{execution.output_dir}{where}, {execution.walltime} limit"))
    return rows


def _task_text(task: Task) -> str:
    repeats = given_at(task, "nemo_evaluator_config", "config", "params", "extra", "num_repeats")
    return f"{task.name} x{repeats}" if isinstance(repeats, int) and repeats > 1 else task.name


NEMO_EVALUATOR = NemoEvaluatorLauncher()
