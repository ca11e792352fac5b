"""The nemo-evaluator-launcher run config (vLLM deployment, Slurm execution) as frozen sections.

Key names are the launcher's own (``configs/deployment/vllm.yaml``, ``configs/execution/slurm/
default.yaml``, ``common/config_models.py`` at ``nemo-evaluator-launcher-v0.2.6``) and, under
``nemo_evaluator_config``, nemo-evaluator's (``ConfigParams`` in ``api/api_dataclasses.py``, the
adapter flags of ``adapters/adapter_config.py``), so their docs apply. The launcher merges what
is written here over its packaged defaults (the rendered ``defaults:`` list), so a key left
``UNSET`` keeps the launcher's default.

Execution carries only what the plan decides (nodes, GPUs per node, time, where results go,
what the evaluation containers must see). The Slurm host, user, account and partition belong
to the cluster, not the recipe: they reach the launcher as ``-o execution.<key>=...`` overrides
from the cluster profile.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import attrs

from recipekit.errors import FieldError
from recipekit.markers import Derived, RunInput, Unset
from recipekit.nemo_evaluator.tasks import task_problem
from recipekit.sections import derived, fixed, frozen_section, optional, required, section
from recipekit.validators import at_least, between, one_of, single_line_problem

# The exporters of nemo-evaluator-launcher 0.2.6 (exporters/registry.py); only W&B is typed here.
EXPORT_DESTINATIONS = ("wandb", "mlflow", "gsheets", "local")
# How the launcher reads an env var value (common/env_vars.py): from the submit host's
# environment, a literal, or the job's environment at run time.
ENV_VALUE_PREFIXES = ("host:", "lit:", "runtime:")
# Matched whole (fullmatch): "$" alone also matches before a final newline, which would end
# the #SBATCH --time line of the launcher's job script.
_SLURM_TIME = re.compile(r"(\d+-)?\d{1,3}:\d{2}:\d{2}")


def _raise(attribute: attrs.Attribute[Any], message: str, value: Any, hint: str = "") -> None:
    exc = FieldError(message, value, hint)
    exc.field_name = attribute.name  # type: ignore[attr-defined]
    raise exc


def absolute_path(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    # The launcher passes paths to srun and container mounts on other machines: a relative path
    # would resolve against whatever directory the job happens to start in. An input artifact's
    # path (RunInput) is checked once the plan has resolved it. A path is one line: the launcher
    # writes it into its job script (issue 39).
    if isinstance(value, str) and (problem := single_line_problem(value)):
        _raise(attribute, problem, value)
    if isinstance(value, str) and not isinstance(value, RunInput) and not value.startswith("/"):
        _raise(attribute, "must be an absolute path, seen the same from every node", value)


def slurm_time(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, str) and not _SLURM_TIME.fullmatch(value):
        problem = single_line_problem(value)
        message = f"{problem}; not a Slurm time limit" if problem else "not a Slurm time limit"
        _raise(attribute, message, value, hint="HH:MM:SS or D-HH:MM:SS")


def env_var_values(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, dict):
        return
    for name, text in value.items():
        if not isinstance(text, str) or not text.startswith(ENV_VALUE_PREFIXES):
            _raise(
                attribute,
                f"{name}: the launcher reads a value only with a source prefix",
                text,
                hint="host:VAR (submit host), lit:VALUE or runtime:VAR",
            )


def known_task(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """``value`` names exactly one task of the launcher's registry (``tasks.task_problem``)."""
    if isinstance(value, str):
        message, hint = task_problem(value)
        if message:
            _raise(attribute, message, value, hint)


def each_one_of(allowed: tuple[str, ...]) -> Any:
    item_check = one_of(allowed)

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if isinstance(value, tuple):
            for item in value:
                item_check(instance, attribute, item)

    return check


# --- deployment ---------------------------------------------------------------------------


@section("deployment.endpoints")
@frozen_section(kw_only=True, repr=False, eq=False)
class Endpoints:
    """Paths on the vLLM server; the launcher's vllm.yaml defaults fit vLLM's OpenAI server."""

    chat: str | Unset = optional()
    completions: str | Unset = optional()
    health: str | Unset = optional()


@section("deployment")
@frozen_section(kw_only=True, repr=False, eq=False)
class VllmDeployment:
    """``vllm serve /checkpoint`` in ``image``: the launcher mounts ``checkpoint_path`` there
    unless ``hf_model_handle`` names a model to download instead (its vllm.yaml)."""

    type: Literal["vllm"] = fixed("vllm")
    image: str = required()
    checkpoint_path: str | None = required(absolute_path)
    hf_model_handle: str | None | Unset = optional()
    # The name clients send as ``model``; the launcher gives it to the evaluation as model_id.
    served_model_name: str | Derived = derived()
    # The Slurm executor starts vLLM with the host's network, so no port below 1024.
    port: int = fixed(8000, between(1024, 65535))
    tensor_parallel_size: int = required(at_least(1))
    pipeline_parallel_size: int = fixed(1, at_least(1))
    data_parallel_size: int = fixed(1, at_least(1))
    gpu_memory_utilization: float = fixed(0.95, between(0.05, 1.0))
    # Appended to the launcher's ``vllm serve`` command line as written.
    extra_args: str = fixed("")
    env_vars: dict[str, str] | Unset = optional(env_var_values)
    endpoints: Endpoints | Unset = optional()


# --- evaluation ---------------------------------------------------------------------------
# The same params/adapter sections serve the global ``evaluation.nemo_evaluator_config`` and a
# task's own (the task's wins, key by key), so their paths start at ``nemo_evaluator_config``.


@section("nemo_evaluator_config.config.params.extra")
@frozen_section(kw_only=True, repr=False, eq=False)
class Extra:
    """Harness-specific parameters (``params.extra``); the keys nemo_skills tasks read."""

    tokenizer: str | Derived | Unset = optional()
    tokenizer_backend: str | Unset = optional()
    num_repeats: int | Unset = optional(at_least(1))
    # Hydra overrides nemo_skills appends to ``ns eval`` (``++prompt_config=...``).
    args: str | Unset = optional()
    dataset_split: str | Unset = optional()


@section("nemo_evaluator_config.config.params")
@frozen_section(kw_only=True, repr=False, eq=False)
class Params:
    limit_samples: int | float | None | Unset = optional()
    max_new_tokens: int | Unset = optional(at_least(1))
    max_retries: int | Unset = optional(at_least(0))
    parallelism: int | Unset = optional(at_least(1))
    temperature: float | Unset = optional(at_least(0))
    request_timeout: int | Unset = optional(at_least(1))
    top_p: float | Unset = optional(between(0, 1))
    extra: Extra | Unset = optional()


@section("nemo_evaluator_config.config")
@frozen_section(kw_only=True, repr=False, eq=False)
class EvaluatorConfig:
    params: Params = required()


@section("nemo_evaluator_config.target.api_endpoint.adapter_config")
@frozen_section(kw_only=True, repr=False, eq=False)
class AdapterConfig:
    """The request/response interceptors nemo-evaluator puts between a harness and the server."""

    # Merged into every request body (``chat_template_kwargs``, ``skip_special_tokens``, ...).
    params_to_add: dict[str, Any] | Unset = optional()
    use_caching: bool | Unset = optional()
    caching_dir: str | None | Unset = optional()
    output_dir: str | None | Unset = optional()
    use_progress_tracking: bool | Unset = optional()
    use_reasoning: bool | Unset = optional()
    process_reasoning_traces: bool | Unset = optional()
    tracking_requests_stats: bool | Unset = optional()
    log_failed_requests: bool | Unset = optional()
    use_request_logging: bool | Unset = optional()
    max_logged_requests: int | None | Unset = optional(at_least(0))
    use_response_logging: bool | Unset = optional()
    max_logged_responses: int | None | Unset = optional(at_least(0))


@section("nemo_evaluator_config.target.api_endpoint")
@frozen_section(kw_only=True, repr=False, eq=False)
class ApiEndpoint:
    adapter_config: AdapterConfig = required()


@section("nemo_evaluator_config.target")
@frozen_section(kw_only=True, repr=False, eq=False)
class Target:
    api_endpoint: ApiEndpoint = required()


@section("nemo_evaluator_config")
@frozen_section(kw_only=True, repr=False, eq=False)
class NemoEvaluatorConfig:
    config: EvaluatorConfig | Unset = optional()
    target: Target | Unset = optional()


@section("evaluation.tasks[]")
@frozen_section(kw_only=True, repr=False, eq=False)
class Task:
    name: str = required(known_task)
    env_vars: dict[str, str] | Unset = optional(env_var_values)
    nemo_evaluator_config: NemoEvaluatorConfig | Unset = optional()


@section("evaluation")
@frozen_section(kw_only=True, repr=False, eq=False)
class Evaluation:
    tasks: tuple[Task, ...] = required()
    env_vars: dict[str, str] | Unset = optional(env_var_values)
    nemo_evaluator_config: NemoEvaluatorConfig | Unset = optional()


# --- execution ----------------------------------------------------------------------------


@section("execution.mounts")
@frozen_section(kw_only=True, repr=False, eq=False)
class Mounts:
    """Host path -> container path, per container the launcher starts."""

    deployment: dict[str, str] | Unset = optional()
    evaluation: dict[str, str] | Derived | Unset = derived()
    mount_home: bool | Unset = optional()


@section("execution.auto_export")
@frozen_section(kw_only=True, repr=False, eq=False)
class AutoExport:
    """Exporters the launcher's job runs once every task has finished."""

    destinations: tuple[str, ...] = required(each_one_of(EXPORT_DESTINATIONS))


@section("execution")
@frozen_section(kw_only=True, repr=False, eq=False)
class SlurmExecution:
    num_nodes: int | Derived = derived(at_least(1))
    # ``#SBATCH --gres``; the launcher's default, gpu:8, asks a 4-GPU GB200 node for 8.
    gres: str | Derived = derived()
    walltime: str = required(slurm_time)
    output_dir: str = required(absolute_path)
    mounts: Mounts = attrs.field(factory=lambda: Mounts())
    auto_export: AutoExport | Unset = optional()


# --- export -------------------------------------------------------------------------------


@section("export.wandb")
@frozen_section(kw_only=True, repr=False, eq=False)
class WandbExport:
    # Required by the launcher's W&B exporter; a team's name is not the recipe's to choose, so
    # it may come as ``-o export.wandb.entity=...`` (a plan warning says so when it is unset).
    entity: str | Unset = optional()
    project: str = required()
    name: str | Unset = optional()
    tags: tuple[str, ...] | Unset = optional()
    log_logs: bool | Unset = optional()


@section("export")
@frozen_section(kw_only=True, repr=False, eq=False)
class Export:
    wandb: WandbExport | Unset = optional()


# --- the run config -----------------------------------------------------------------------


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class LauncherConfig:
    """What ``nemo-evaluator-launcher run --config`` reads, below its ``defaults:`` list."""

    execution: SlurmExecution = required()
    deployment: VllmDeployment = required()
    evaluation: Evaluation = required()
    export: Export | Unset = optional()
