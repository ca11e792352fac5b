"""Plan-time checks of an evaluation: does vLLM fit the stage's GPUs, and will the run start?

Each check is a small function named for what it guards and yields Issues naming the key, the
value and the arithmetic. ``ERROR_CHECKS`` stop the plan; ``WARNING_CHECKS`` are shown with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs

from recipekit import checking
from recipekit.errors import Issue
from recipekit.hardware import Hardware
from recipekit.lineage.model_files import belongs_to_model
from recipekit.markers import Marker
from recipekit.nemo_evaluator import LAUNCHER_VERSION
from recipekit.nemo_evaluator.schema import LauncherConfig, WandbExport
from recipekit.rule_sites import sites

SITES = sites("nemo_evaluator")

DEPLOYMENT = "deployment"
# The launcher's vllm.yaml serves the checkpoint as it is; an HF export of the BF16 release
# (the recipe: NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16) holds two bytes per parameter.
BYTES_PER_PARAMETER = 2
# Linux's default ip_local_port_range: the kernel hands these ports to outgoing connections, so
# one can be taken on the node when vLLM tries to listen on it.
EPHEMERAL_PORTS = range(32768, 61000)
# OmegaConf resolvers that read a secret into the config itself; the launcher allows none of them
# in an env var value (nemo-evaluator.env.no-resolver-in-values), whose source a host:/lit:/runtime:
# prefix names.
SECRET_RESOLVERS = ("${oc.env:", "${oc.decode:")
# Where the launcher's modules lie in its repository.
PACKAGE = "src/nemo_evaluator_launcher/"


def cite(rule: str) -> str:
    """Where a catalogued launcher rule lives (``rule_catalogue/nemo-evaluator.toml``), as
    messages quote it: ``file:line @ launcher version`` (the file under the package,
    nemo_evaluator_launcher/)."""
    _, file, line = SITES[rule]
    return f"{file.split(PACKAGE, 1)[1]}:{line} @ nemo-evaluator-launcher {LAUNCHER_VERSION}"


@attrs.frozen(kw_only=True)
class ServingLayout:
    """One ``vllm serve`` on the stage's node: TP x PP GPUs per replica, DP replicas."""

    num_nodes: int
    gpus_per_node: int
    tensor_parallel: int
    pipeline_parallel: int
    data_parallel: int

    @property
    def total_gpus(self) -> int:
        return self.num_nodes * self.gpus_per_node

    @property
    def gpus_per_replica(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel

    @property
    def serving_gpus(self) -> int:
        return self.gpus_per_replica * self.data_parallel

    @property
    def idle_gpus(self) -> int:
        return max(self.total_gpus - self.serving_gpus, 0)

    def as_json(self) -> dict[str, Any]:
        return {
            **attrs.asdict(self),
            "total_gpus": self.total_gpus,
            "serving_gpus": self.serving_gpus,
            "idle_gpus": self.idle_gpus,
        }


def compute_layout(config: LauncherConfig, hardware: Hardware) -> ServingLayout:
    deployment, nodes = config.deployment, config.execution.num_nodes
    return ServingLayout(
        num_nodes=nodes if isinstance(nodes, int) else hardware.num_nodes,
        gpus_per_node=hardware.gpus_per_node,
        tensor_parallel=deployment.tensor_parallel_size,
        pipeline_parallel=deployment.pipeline_parallel_size,
        data_parallel=deployment.data_parallel_size,
    )


@attrs.frozen
class CheckContext(checking.CheckContext[LauncherConfig, ServingLayout]):
    """The launcher's config as its checks read it (no views of its own yet)."""


Check = Callable[[CheckContext], Iterator[Issue]]


# --- the allocation ------------------------------------------------------------------------


def execution_matches_hardware(ctx: CheckContext) -> Iterator[Issue]:
    execution, hw = ctx.config.execution, ctx.hardware
    if isinstance(execution.num_nodes, int) and execution.num_nodes != hw.num_nodes:
        yield Issue(
            "execution.num_nodes",
            f"the stage's hardware is {hw.num_nodes} nodes",
            value=execution.num_nodes,
            hint="leave it derived, or change the stage's hardware",
        )
    if isinstance(execution.gres, str) and execution.gres != f"gpu:{hw.gpus_per_node}":
        yield Issue(
            "execution.gres",
            f"a {hw.node.name} node has {hw.gpus_per_node} GPUs: Slurm would not place the job",
            value=execution.gres,
            hint="leave it derived",
        )


def one_serving_node(ctx: CheckContext) -> Iterator[Issue]:
    # vllm.yaml's command is one `vllm serve` per srun task; on more nodes each node starts its
    # own server and nothing joins or balances them.
    if ctx.layout.num_nodes > 1:
        yield Issue(
            "execution.num_nodes",
            "the launcher's vllm deployment serves from one node",
            value=ctx.layout.num_nodes,
            hint="use one node; more need execution.num_instances or the vllm_ray deployment",
        )


# --- vLLM on the node ----------------------------------------------------------------------


def tensor_parallel_within_node(ctx: CheckContext) -> Iterator[Issue]:
    tp, per_node = ctx.layout.tensor_parallel, ctx.hardware.gpus_per_node
    if tp > per_node or per_node % tp:
        yield Issue(
            f"{DEPLOYMENT}.tensor_parallel_size",
            f"tensor parallelism must stay inside one node: {per_node} GPUs per "
            f"{ctx.hardware.node.name} node is not a multiple of TP={tp}",
            value=tp,
        )


def replicas_fit_node(ctx: CheckContext) -> Iterator[Issue]:
    lay = ctx.layout
    if lay.serving_gpus <= lay.gpus_per_node:
        return
    arithmetic = (
        f"TP {lay.tensor_parallel} x PP {lay.pipeline_parallel} x DP {lay.data_parallel} = "
        f"{lay.serving_gpus} GPUs, a {ctx.hardware.node.name} node has {lay.gpus_per_node}"
    )
    if lay.gpus_per_replica <= lay.gpus_per_node:
        yield Issue(
            f"{DEPLOYMENT}.data_parallel_size",
            arithmetic,
            value=lay.data_parallel,
            hint=f"at most {lay.gpus_per_node // lay.gpus_per_replica}",
        )
    elif lay.tensor_parallel <= lay.gpus_per_node:  # TP alone is reported above otherwise
        yield Issue(f"{DEPLOYMENT}.pipeline_parallel_size", arithmetic, value=lay.pipeline_parallel)


def weights_fit_replica(ctx: CheckContext) -> Iterator[Issue]:
    deployment, lay, gpu = ctx.config.deployment, ctx.layout, ctx.hardware.node.gpu
    weights_gib = ctx.model.total_params_b * 1e9 * BYTES_PER_PARAMETER / 2**30
    per_gpu = weights_gib / lay.gpus_per_replica
    usable = deployment.gpu_memory_utilization * gpu.hbm_gib
    if per_gpu > usable:
        yield Issue(
            f"{DEPLOYMENT}.tensor_parallel_size",
            f"{ctx.model.name}'s weights alone are {weights_gib:.0f} GiB in BF16: "
            f"{per_gpu:.0f} GiB a GPU over TP {lay.tensor_parallel} x PP "
            f"{lay.pipeline_parallel}, vLLM may use {usable:.0f} GiB "
            f"({deployment.gpu_memory_utilization} x {gpu.hbm_gib} GiB)",
            value=lay.tensor_parallel,
            hint=f"at least {_min_split(weights_gib, usable)} GPUs per replica",
        )


def _min_split(weights_gib: float, usable_gib: float) -> int:
    gpus = 1
    while weights_gib / gpus > usable_gib:
        gpus *= 2
    return gpus


def something_to_serve(ctx: CheckContext) -> Iterator[Issue]:
    deployment = ctx.config.deployment
    if deployment.checkpoint_path is None and not isinstance(deployment.hf_model_handle, str):
        yield Issue(
            f"{DEPLOYMENT}.checkpoint_path",
            "neither checkpoint_path nor hf_model_handle is set: vLLM has no model to serve",
        )


# --- tasks and results ---------------------------------------------------------------------


def at_least_one_task(ctx: CheckContext) -> Iterator[Issue]:
    if not ctx.config.evaluation.tasks:
        yield Issue("evaluation.tasks", "no task to run: the launcher would start vLLM for nothing")


def exported_destinations_configured(ctx: CheckContext) -> Iterator[Issue]:
    """exporters/config.py, load_export_config_from_file (and its warning for no export section
    at all): the export
    job reads each destination's settings from the run's export section."""
    auto_export, export = ctx.config.execution.auto_export, ctx.config.export
    if isinstance(auto_export, Marker):
        return
    for destination in auto_export.destinations:
        configured = not isinstance(export, Marker) and not isinstance(
            getattr(export, destination, None), Marker | None
        )
        if not configured:
            yield Issue(
                "execution.auto_export.destinations",
                f"exports to {destination!r}, but export.{destination} is not set: the "
                "launcher's export job refuses a destination without its settings "
                f"({cite('nemo-evaluator.export.destination-configured')})",
                value=auto_export.destinations,
            )


def _env_var_sections(config: LauncherConfig) -> Iterator[tuple[str, Any]]:
    """Each env_vars mapping of the config, at its key path."""
    yield f"{DEPLOYMENT}.env_vars", config.deployment.env_vars
    yield "evaluation.env_vars", config.evaluation.env_vars
    for index, task in enumerate(config.evaluation.tasks):
        yield f"evaluation.tasks[{index}].env_vars", task.env_vars


def env_values_without_resolvers(ctx: CheckContext) -> Iterator[Issue]:
    """common/env_vars.py, parse_env_var_value: no ${oc.env:...} or ${oc.decode:...} inside an env
    var value. Written plainly in the YAML, OmegaConf resolves it before the launcher looks, so
    instead of the refusal the secret is copied into the resolved config the launcher saves
    (run.sub's debug comment, the task's metadata, the config auto-export uploads)."""
    for path, env_vars in _env_var_sections(ctx.config):
        if not isinstance(env_vars, dict):
            continue
        for name, value in env_vars.items():
            if isinstance(value, str) and any(r in value for r in SECRET_RESOLVERS):
                yield Issue(
                    path,
                    f"{name}: the launcher allows no Hydra resolver in an env var value, since it "
                    "would put the secret itself into the config it saves and exports "
                    f"({cite('nemo-evaluator.env.no-resolver-in-values')})",
                    value=value,
                    hint=f"{name}: host:VAR reads the variable on the submit host instead",
                )


def tokenizer_is_the_checkpoints(ctx: CheckContext) -> Iterator[Issue]:
    """The tasks count and format tokens with the evaluated checkpoint's own tokenizer (its HF
    export carries the files): another model's gives wrong lengths and prompts, silently."""
    checkpoint = ctx.config.deployment.checkpoint_path
    # Each level may be UNSET (a Marker): getattr reads through it as absent.
    evaluator = getattr(ctx.config.evaluation.nemo_evaluator_config, "config", None)
    extra = getattr(getattr(evaluator, "params", None), "extra", None)
    tokenizer = getattr(extra, "tokenizer", None)
    if (
        isinstance(checkpoint, str)
        and isinstance(tokenizer, str)
        and not belongs_to_model(tokenizer, checkpoint)
    ):
        yield Issue(
            "evaluation.nemo_evaluator_config.config.params.extra.tokenizer",
            f"is not the tokenizer of deployment.checkpoint_path ({checkpoint}): the tasks would "
            "tokenize with another model's vocabulary and template",
            value=tokenizer,
            hint="leave it derived from deployment.checkpoint_path",
        )


ERROR_CHECKS: tuple[Check, ...] = (
    execution_matches_hardware,
    one_serving_node,
    tensor_parallel_within_node,
    replicas_fit_node,
    weights_fit_replica,
    something_to_serve,
    at_least_one_task,
    exported_destinations_configured,
    env_values_without_resolvers,
)


# --- warnings ------------------------------------------------------------------------------


def idle_gpus(ctx: CheckContext) -> Iterator[Issue]:
    lay = ctx.layout
    if lay.idle_gpus and lay.serving_gpus <= lay.total_gpus:
        yield Issue(
            f"{DEPLOYMENT}.data_parallel_size",
            f"vLLM uses {lay.serving_gpus} of the {lay.total_gpus} GPUs; "
            f"{lay.idle_gpus} stay idle",
            value=lay.data_parallel,
            hint=f"{lay.total_gpus // lay.gpus_per_replica} replicas would use them all",
        )


def port_outside_ephemeral_range(ctx: CheckContext) -> Iterator[Issue]:
    port = ctx.config.deployment.port
    if port in EPHEMERAL_PORTS:
        yield Issue(
            f"{DEPLOYMENT}.port",
            f"inside the kernel's ephemeral range ({EPHEMERAL_PORTS.start}-"
            f"{EPHEMERAL_PORTS.stop - 1}): an outgoing connection may already hold it",
            value=port,
            hint="a port below 32768, e.g. the launcher's 8000",
        )


def checkpoint_not_shadowed(ctx: CheckContext) -> Iterator[Issue]:
    deployment = ctx.config.deployment
    if isinstance(deployment.hf_model_handle, str) and deployment.checkpoint_path is not None:
        yield Issue(
            f"{DEPLOYMENT}.hf_model_handle",
            "vLLM serves hf_model_handle when it is set; checkpoint_path is mounted but not "
            "evaluated",
            value=deployment.hf_model_handle,
        )


def wandb_entity_given(ctx: CheckContext) -> Iterator[Issue]:
    export = ctx.config.export
    wandb = None if isinstance(export, Marker) else export.wandb
    if isinstance(wandb, WandbExport) and isinstance(wandb.entity, Marker):
        yield Issue(
            "export.wandb.entity",
            "the launcher's W&B exporter needs an entity; the recipe leaves the team to you",
            hint="--set export.wandb.entity=TEAM, or -o export.wandb.entity=TEAM at launch",
        )


def wandb_log_logs_is_deprecated(ctx: CheckContext) -> Iterator[Issue]:
    """exporters/base.py, ExportConfig._handle_deprecated_args: the exporters' config warns on
    log_logs, which it reads as copy_logs (whether the task's log files are uploaded too)."""
    export = ctx.config.export
    wandb = None if isinstance(export, Marker) else export.wandb
    if isinstance(wandb, WandbExport) and isinstance(wandb.log_logs, bool):
        yield Issue(
            "export.wandb.log_logs",
            "deprecated: the launcher's W&B export warns and reads it as copy_logs, the key "
            f"it will keep ({cite('nemo-evaluator.export.log-logs-deprecated')})",
            value=wandb.log_logs,
            hint="leave it unset unless the task's log files must reach W&B",
        )


WARNING_CHECKS: tuple[Check, ...] = (
    idle_gpus,
    port_outside_ephemeral_range,
    checkpoint_not_shadowed,
    wandb_entity_given,
    wandb_log_logs_is_deprecated,
    # A tokenizer kept apart from the export may still be its own: a warning.
    tokenizer_is_the_checkpoints,
)
