"""Plan-time checks that need more than one key: layout, sequence budget, known traps.

Each check is a small function named for what it guards; it yields an Issue naming the key,
the value and the arithmetic. ``ERROR_CHECKS`` stop the plan, ``WARNING_CHECKS`` are printed
with it (settings NeMo-RL silently ignores, or that look inherited by mistake).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import attrs

from recipekit import checking
from recipekit.errors import Issue, did_you_mean
from recipekit.markers import UNSET, Marker
from recipekit.nemo_rl.layout import Layout, cluster_nodes
from recipekit.nemo_rl.schema_main import (
    GenerationMain,
    GRPOMasterConfigMain,
    NonColocatedTeachers,
    OnPolicyDistillation,
    TeacherResources,
)
from recipekit.nemo_rl.schema_super_v3 import (
    AdvantageEstimator,
    Colocation,
    DynamicBatching,
    Generation,
    GRPOMasterConfig,
    Megatron,
    SequencePacking,
    VllmConfig,
)
from recipekit.parallelism import ParallelKeys, model_layout_issues

# The GRPO config of either schema: the checks read keys both declare.
GrpoConfig = GRPOMasterConfig | GRPOMasterConfigMain


@attrs.frozen
class CheckContext(checking.CheckContext[GrpoConfig, Layout]):
    @property
    def megatron(self) -> Megatron | None:
        m = self.config.policy.megatron_cfg
        return m if isinstance(m, Megatron) and m.enabled else None

    @property
    def generation(self) -> Generation | GenerationMain | None:
        g = self.config.policy.generation
        return g if isinstance(g, Generation | GenerationMain) else None

    @property
    def vllm(self) -> VllmConfig | None:
        g = self.generation
        return g.vllm_cfg if g is not None and isinstance(g.vllm_cfg, VllmConfig) else None


Check = Callable[[CheckContext], Iterator[Issue]]

MEGATRON = "policy.megatron_cfg"
VLLM = "policy.generation.vllm_cfg"
RESOURCES = "policy.generation.colocated.resources"
SEQ = "policy.max_total_sequence_length"


# --- hardware and resources ----------------------------------------------------------------


def cluster_matches_hardware(ctx: CheckContext) -> Iterator[Issue]:
    cluster, hw = ctx.config.cluster, ctx.hardware
    if cluster.gpus_per_node != hw.gpus_per_node:
        yield Issue(
            "cluster.gpus_per_node",
            f"the stage runs on {hw.node.name} nodes with {hw.gpus_per_node} GPUs each",
            value=cluster.gpus_per_node,
            hint="leave it derived, or change the stage's hardware",
        )
    gym = ctx.layout.nodes.gym_nodes
    if cluster.num_nodes != cluster_nodes(hw.num_nodes, gym):
        of_them = f", {gym} of them NeMo Gym's (env.nemo_gym.num_gpu_nodes)" if gym else ""
        yield Issue(
            "cluster.num_nodes",
            f"the stage's hardware is {hw.num_nodes} nodes{of_them}",
            value=cluster.num_nodes,
            hint="leave it derived, or change the stage's hardware",
        )
    if gym and gym >= hw.num_nodes:
        yield Issue(
            "env.nemo_gym.num_gpu_nodes",
            f"NeMo Gym's judges would take all {hw.num_nodes} nodes of the stage",
            value=gym,
            hint="add nodes to the stage's hardware",
        )


def generation_resources_fit(ctx: CheckContext) -> Iterator[Issue]:
    gen = ctx.generation
    if gen is None or not isinstance(gen.colocated, Colocation) or gen.colocated.enabled:
        return
    res, hw = gen.colocated.resources, ctx.hardware
    if isinstance(res.gpus_per_node, int) and res.gpus_per_node > hw.gpus_per_node:
        yield Issue(
            f"{RESOURCES}.gpus_per_node",
            f"a {hw.node.name} node has {hw.gpus_per_node} GPUs",
            value=res.gpus_per_node,
        )
    if hw.num_nodes > 1 and isinstance(res.num_nodes, int) and res.num_nodes >= hw.num_nodes:
        yield Issue(
            f"{RESOURCES}.num_nodes",
            f"generation takes {res.num_nodes} of the {hw.num_nodes} nodes, "
            "leaving none to train on",
            value=res.num_nodes,
            hint=f"at most {hw.num_nodes - 1}, or colocate generation",
        )
    if (
        hw.num_nodes > 1
        and isinstance(res.gpus_per_node, int)
        and res.gpus_per_node != hw.gpus_per_node
    ):
        yield Issue(
            f"{RESOURCES}.gpus_per_node",
            f"on {hw.num_nodes} nodes generation gets whole nodes, so this must equal the "
            f"{hw.gpus_per_node} GPUs of a {hw.node.name} node",
            value=res.gpus_per_node,
        )
    if hw.num_nodes == 1 and res.num_nodes not in (None, 1):
        yield Issue(
            f"{RESOURCES}.num_nodes",
            "on a single node generation shares the node: leave this null or 1",
            value=res.num_nodes,
        )
    if hw.num_nodes == 1 and ctx.layout.nodes.training_gpus <= 0:
        yield Issue(
            f"{RESOURCES}.gpus_per_node",
            f"generation takes every GPU of the single node ({hw.gpus_per_node})",
            value=res.gpus_per_node,
        )
    if gen.backend == "megatron":
        yield Issue(
            "policy.generation.backend",
            "Megatron generation runs inside the training workers; it cannot be non-colocated",
            value=gen.backend,
        )


def one_training_backend(ctx: CheckContext) -> Iterator[Issue]:
    dtensor = ctx.config.policy.dtensor_cfg.enabled
    if dtensor and ctx.megatron is not None:
        yield Issue(
            "policy.dtensor_cfg.enabled",
            "both dtensor_cfg and megatron_cfg are enabled; NeMo-RL trains with one",
            value=True,
        )
    if not dtensor and ctx.megatron is None:
        yield Issue(
            "policy.megatron_cfg.enabled", "neither dtensor_cfg nor megatron_cfg is enabled"
        )


# --- training layout -----------------------------------------------------------------------


def parallel_layout_holds(ctx: CheckContext) -> Iterator[Issue]:
    """Every Megatron-Core layout rule (``recipekit.parallelism.LAYOUT_RULES``) on the
    training GPUs, in the keys of the backend that trains."""
    lay = ctx.layout
    nodes = lay.nodes
    after = ", after the generation nodes)" if not nodes.colocated else ")"
    yield from model_layout_issues(
        lay.parallel,
        lay.keys,
        ctx.hardware.node,
        ctx.model,
        f"the {nodes.training_gpus} training GPUs ({nodes.training_nodes} nodes x "
        f"{ctx.hardware.gpus_per_node}{after}",
    )


def batch_divides_data_parallel(ctx: CheckContext) -> Iterator[Issue]:
    training, policy, grpo = ctx.layout.parallel, ctx.config.policy, ctx.config.grpo
    dp = training.dp
    gbs, mbs = policy.train_global_batch_size, policy.train_micro_batch_size
    if not isinstance(gbs, int):
        return
    samples = grpo.num_prompts_per_step * grpo.num_generations_per_prompt
    if samples % gbs:
        yield Issue(
            "policy.train_global_batch_size",
            f"the {grpo.num_prompts_per_step} x {grpo.num_generations_per_prompt} = {samples} "
            "samples of a step must split into whole global batches",
            value=gbs,
        )
    if dp <= 0:
        return  # the layout rules report it
    if gbs % dp:
        yield Issue(
            "policy.train_global_batch_size",
            f"must be a multiple of the data-parallel size DP = {dp}",
            value=gbs,
        )
    packing = policy.sequence_packing
    packed = isinstance(packing, SequencePacking) and packing.enabled
    if not packed and gbs % dp == 0 and (gbs // dp) % mbs:
        yield Issue(
            "policy.train_micro_batch_size",
            f"each DP rank gets {gbs} / {dp} = {gbs // dp} samples, not a multiple of this",
            value=mbs,
        )


def micro_batches_agree_at_large_tp(ctx: CheckContext) -> Iterator[Issue]:
    policy, tp = ctx.config.policy, ctx.layout.parallel.tp
    if tp >= 4 and policy.logprob_batch_size != policy.train_micro_batch_size:
        yield Issue(
            "policy.logprob_batch_size",
            f"with TP={tp} (>= 4) NeMo-RL requires it to equal "
            f"train_micro_batch_size ({policy.train_micro_batch_size}) for logprob accuracy",
            value=policy.logprob_batch_size,
            hint="or set NRL_IGNORE_TP_ACCURACY_CHECK=1 in the job environment",
        )


def dynamic_sampling_settings_agree(ctx: CheckContext) -> Iterator[Issue]:
    grpo = ctx.config.grpo
    if not grpo.use_dynamic_sampling and grpo.batch_multiplier not in (UNSET, 1):
        yield Issue(
            "grpo.batch_multiplier",
            "only dynamic sampling draws extra prompts; without it this must be 1",
            value=grpo.batch_multiplier,
        )


def vllm_fits_generation_gpus(ctx: CheckContext) -> Iterator[Issue]:
    vllm, nodes = ctx.vllm, ctx.layout.nodes
    if vllm is None or ctx.generation is None or ctx.generation.backend != "vllm":
        return
    per_instance = vllm.tensor_parallel_size * vllm.pipeline_parallel_size
    if per_instance > nodes.generation_gpus or nodes.generation_gpus % per_instance:
        yield Issue(
            f"{VLLM}.tensor_parallel_size",
            f"vLLM TP x PP = {vllm.tensor_parallel_size} x {vllm.pipeline_parallel_size} = "
            f"{per_instance} does not divide the {nodes.generation_gpus} generation GPUs",
            value=vllm.tensor_parallel_size,
        )
    if vllm.pipeline_parallel_size > 1 and not vllm.async_engine:
        yield Issue(
            f"{VLLM}.pipeline_parallel_size",
            "vLLM pipeline parallelism needs async_engine: true",
            value=vllm.pipeline_parallel_size,
        )
    ep, tp = vllm.expert_parallel_size, vllm.tensor_parallel_size
    if ep > 1 and ep % tp:
        yield Issue(
            f"{VLLM}.expert_parallel_size",
            f"must be a multiple of vLLM tensor_parallel_size ({tp})",
            value=ep,
        )
    if ep > 1 and ep != tp and vllm.async_engine:
        yield Issue(
            f"{VLLM}.expert_parallel_size",
            f"EP != TP ({tp}) is not supported with async_engine",
            value=ep,
        )
    if vllm.kv_cache_dtype != "auto" and vllm.precision != "fp8":
        yield Issue(
            f"{VLLM}.kv_cache_dtype",
            "an FP8 KV cache needs vllm_cfg.precision: fp8",
            value=vllm.kv_cache_dtype,
        )
    if vllm.precision == "fp8" and not ctx.config.loss_fn.use_importance_sampling_correction:
        yield Issue(
            f"{VLLM}.precision",
            "FP8 generation needs loss_fn.use_importance_sampling_correction: true",
            value=vllm.precision,
        )
    problem = ctx.hardware.node.tensor_parallel_problem(vllm.tensor_parallel_size)
    if problem:
        yield Issue(
            f"{VLLM}.tensor_parallel_size",
            f"vLLM tensor parallelism must stay inside NVLink: {problem}",
            value=vllm.tensor_parallel_size,
        )


# --- sequence budget -----------------------------------------------------------------------


def response_budget_fits(ctx: CheckContext) -> Iterator[Issue]:
    policy = ctx.config.policy
    total = policy.max_total_sequence_length
    gen = ctx.generation
    if gen is not None and isinstance(gen.max_new_tokens, int) and gen.max_new_tokens > total:
        yield Issue(
            "policy.generation.max_new_tokens",
            f"a response cannot be longer than {SEQ} ({total})",
            value=gen.max_new_tokens,
        )
    vllm = ctx.vllm
    if vllm is not None and isinstance(vllm.max_model_len, int) and vllm.max_model_len > total:
        yield Issue(
            f"{VLLM}.max_model_len",
            f"vLLM would generate sequences longer than training accepts ({SEQ} = {total})",
            value=vllm.max_model_len,
        )
    max_input = ctx.config.data.max_input_seq_length
    if isinstance(max_input, int) and max_input > total:
        yield Issue(
            "data.max_input_seq_length",
            f"a prompt cannot be longer than {SEQ} ({total})",
            value=max_input,
        )
    shaping = ctx.config.grpo.reward_shaping
    if not isinstance(shaping, Marker) and shaping.enabled:
        budget, buffer = shaping.max_response_length, shaping.overlong_buffer_length
        if isinstance(budget, int) and budget > total:
            yield Issue(
                "grpo.reward_shaping.max_response_length",
                f"larger than the whole sequence budget ({SEQ} = {total})",
                value=budget,
            )
        if isinstance(budget, int) and isinstance(buffer, int) and buffer >= budget:
            yield Issue(
                "grpo.reward_shaping.overlong_buffer_length",
                f"the overlong buffer must sit inside the response budget "
                f"(max_response_length = {budget})",
                value=buffer,
            )
        if not isinstance(budget, int) or not isinstance(buffer, int):
            yield Issue(
                "grpo.reward_shaping",
                "reward shaping is enabled but max_response_length or overlong_buffer_length "
                "is not set",
            )


def token_budgets_hold_a_sequence(ctx: CheckContext) -> Iterator[Issue]:
    policy = ctx.config.policy
    total = policy.max_total_sequence_length
    packing, dynamic = policy.sequence_packing, policy.dynamic_batching
    if isinstance(packing, SequencePacking) and packing.enabled and dynamic.enabled:
        yield Issue(
            "policy.dynamic_batching.enabled",
            "sequence packing and dynamic batching are mutually exclusive in NeMo-RL",
            value=True,
        )
    for name, section in (("sequence_packing", packing), ("dynamic_batching", dynamic)):
        if not isinstance(section, (SequencePacking, DynamicBatching)) or not section.enabled:
            continue
        for key in ("train_mb_tokens", "logprob_mb_tokens"):
            budget = getattr(section, key)
            if isinstance(budget, int) and budget < total:
                yield Issue(
                    f"policy.{name}.{key}",
                    f"a micro-batch token budget must hold one full sequence ({SEQ} = {total})",
                    value=budget,
                )


def sequence_divisible_for_parallelism(ctx: CheckContext) -> Iterator[Issue]:
    m, policy = ctx.megatron, ctx.config.policy
    if m is None:
        return
    tp, cp = m.tensor_model_parallel_size, m.context_parallel_size
    divisor = policy.make_sequence_length_divisible_by
    if m.sequence_parallel and tp > 1 and isinstance(divisor, int) and divisor % tp:
        yield Issue(
            "policy.make_sequence_length_divisible_by",
            f"with sequence parallelism, sequences are split over TP={tp} ranks",
            value=divisor,
            hint=f"use a multiple of {tp}",
        )
    packing = policy.sequence_packing
    packed = isinstance(packing, SequencePacking) and packing.enabled
    if cp > 1 and not packed:
        yield Issue(
            f"{MEGATRON}.context_parallel_size",
            "Megatron context parallelism in NeMo-RL needs policy.sequence_packing.enabled",
            value=cp,
        )
    if cp > 1:
        # Packing pads every sequence to a multiple of 2 x CP x TP (CP load-balances two
        # chunks per rank); a full-length sequence must not grow past the budget.
        unit = 2 * cp * tp
        total = policy.max_total_sequence_length
        if total % unit:
            yield Issue(
                SEQ,
                f"with CP={cp} and TP={tp} packed sequences are padded to multiples of "
                f"2 x {cp} x {tp} = {unit}; {total} is not one",
                value=total,
                hint=f"use {(total // unit + 1) * unit}",
            )


def megatron_settings_agree(ctx: CheckContext) -> Iterator[Issue]:
    m, policy = ctx.megatron, ctx.config.policy
    if m is None:
        return
    opt = m.optimizer
    fraction = opt.optimizer_offload_fraction
    if isinstance(ctx.config, GRPOMasterConfigMain):
        # super-v3.5-posttraining offloads any share: setup.py:1218-1219 @ 5d63149a.
        if opt.optimizer_cpu_offload and not 0 < fraction <= 1:
            yield Issue(
                f"{MEGATRON}.optimizer.optimizer_offload_fraction",
                "NeMo-RL's Megatron setup refuses it: optimizer_cpu_offload needs a fraction in"
                " (0, 1] (nemo_rl/models/megatron/setup.py:1219 @ super-v3.5-posttraining)",
                value=fraction,
            )
    elif opt.optimizer_cpu_offload and fraction != 1.0:
        yield Issue(
            f"{MEGATRON}.optimizer.optimizer_offload_fraction",
            "NeMo-RL offloads the whole optimizer state: with optimizer_cpu_offload it must be 1.0"
            " (nemo_rl/models/megatron/setup.py:498 @ super-v3)",
            value=fraction,
        )
    if opt.optimizer_cpu_offload and opt.optimizer != "adam":
        yield Issue(
            f"{MEGATRON}.optimizer.optimizer",
            "with optimizer_cpu_offload Megatron-Core silently switches anything but adam to SGD",
            value=opt.optimizer,
        )
    if isinstance(policy.logprob_chunk_size, int) and m.defer_fp32_logits is not True:
        yield Issue(
            "policy.logprob_chunk_size",
            "chunked logprobs need policy.megatron_cfg.defer_fp32_logits: true",
            value=policy.logprob_chunk_size,
        )
    if m.moe_enable_deepep and m.moe_token_dispatcher_type != "flex":
        yield Issue(
            f"{MEGATRON}.moe_token_dispatcher_type",
            "DeepEP (moe_enable_deepep) needs the flex dispatcher",
            value=m.moe_token_dispatcher_type,
        )


def math_verifier_is_set(ctx: CheckContext) -> Iterator[Issue]:
    envs = ctx.config.env
    named = envs.items() if isinstance(envs, dict) else [("math", envs.math)]
    for name, env in named:
        if isinstance(env, Marker):
            continue
        if env.math_verify_impl is None:
            yield Issue(
                f"env.{name}.math_verify_impl",
                "null makes every reward 0.0 silently (the verifier's error is swallowed)",
                value=None,
                hint="remove the key for hf_math_verify, or name a verifier",
            )


# --- on-policy distillation (MOPD) ----------------------------------------------------------

OPD = "on_policy_distillation"
# A teacher's log-probability workers: Megatron-Core, with the sizes TeacherResourceConfig has.
TEACHER = ParallelKeys(
    f"{OPD}.non_colocated_teachers.default_teacher_cfg",
    vpp=None,
    etp=None,
    sp=None,
    first_stage_layers=None,
    last_stage_layers=None,
)


def _distillation(ctx: CheckContext) -> OnPolicyDistillation | None:
    opd = getattr(ctx.config, "on_policy_distillation", None)
    return opd if isinstance(opd, OnPolicyDistillation) and opd.enabled is True else None


def default_teacher_is_routed(ctx: CheckContext) -> Iterator[Issue]:
    opd = _distillation(ctx)
    if opd is None or not isinstance(opd.teacher_model_by_agent_name, dict):
        return
    alias, routes = opd.default_teacher_alias, opd.teacher_model_by_agent_name
    if isinstance(alias, str) and alias not in routes:
        yield Issue(
            f"{OPD}.default_teacher_alias",
            "prompts no teacher owns go to this agent's teacher, but no teacher is routed "
            "for it in teacher_model_by_agent_name",
            value=alias,
            hint=did_you_mean(alias, list(routes)),
        )


def distillation_teachers_fit(ctx: CheckContext) -> Iterator[Issue]:
    opd = _distillation(ctx)
    if opd is None or not isinstance(opd.non_colocated_teachers, NonColocatedTeachers):
        return
    cfg = opd.non_colocated_teachers.default_teacher_cfg
    if opd.non_colocated_teachers.enabled is not True or not isinstance(cfg, TeacherResources):
        return
    key = f"{OPD}.non_colocated_teachers.default_teacher_cfg"
    hw, nodes = ctx.hardware, ctx.layout.nodes

    def size(value: object) -> int:
        return value if isinstance(value, int) else 1

    per_node = size(cfg.gpus_per_node) if cfg.gpus_per_node is not UNSET else hw.gpus_per_node
    if per_node != hw.gpus_per_node:
        yield Issue(
            f"{key}.gpus_per_node",
            f"a {hw.node.name} node has {hw.gpus_per_node} GPUs",
            value=cfg.gpus_per_node,
        )
    gpus = size(cfg.num_nodes) * per_node
    yield from model_layout_issues(
        TEACHER.read(cfg, gpus),
        TEACHER,
        hw.node,
        ctx.model,
        f"a teacher's {size(cfg.num_nodes)} x {per_node} = {gpus} GPUs",
    )
    if nodes.training_nodes < 1:
        yield Issue(
            f"{key}.num_nodes",
            f"{nodes.teachers} teachers x {size(cfg.num_nodes)} nodes and "
            f"{nodes.generation_nodes} generation nodes leave no training node of the "
            f"{hw.num_nodes}",
            value=cfg.num_nodes,
            hint="add nodes to the stage's hardware",
        )


ERROR_CHECKS: tuple[Check, ...] = (
    cluster_matches_hardware,
    generation_resources_fit,
    one_training_backend,
    parallel_layout_holds,
    batch_divides_data_parallel,
    micro_batches_agree_at_large_tp,
    dynamic_sampling_settings_agree,
    vllm_fits_generation_gpus,
    megatron_settings_agree,
    math_verifier_is_set,
    response_budget_fits,
    token_budgets_hold_a_sequence,
    sequence_divisible_for_parallelism,
    default_teacher_is_routed,
    distillation_teachers_fit,
)


# --- warnings: ignored or inherited settings -----------------------------------------------


def leave_one_out_shadowed_by_adv_estimator(ctx: CheckContext) -> Iterator[Issue]:
    grpo = ctx.config.grpo
    est = grpo.adv_estimator
    if not isinstance(est, AdvantageEstimator):
        return
    for key in ("use_leave_one_out_baseline", "normalize_rewards"):
        top, inner = getattr(grpo, key), getattr(est, key)
        if isinstance(inner, bool) and top != inner:
            also = (
                "; the top-level value still drives dynamic sampling's per-sample std filter"
                if key == "use_leave_one_out_baseline"
                else ""
            )
            yield Issue(
                f"grpo.{key}",
                f"shadowed on super-v3: advantages use grpo.adv_estimator.{key} = {inner}{also}",
                value=top,
                hint=f"set grpo.adv_estimator.{key} if {top} is what you want",
            )


# What grpo_math_1B.yaml sets for its 1B dense model; on an MoE model they are a trap.
_DENSE_MOE_DEFAULTS = {
    "freeze_moe_router": True,
    "moe_router_dtype": "fp64",
    "moe_router_load_balancing_type": "none",
    "moe_router_bias_update_rate": 0.0,
}
_DENSE_CONVERTERS = re.compile(r"^(Qwen2|Llama|Mistral|Gemma\d?)ForCausalLM$")


def dense_settings_on_moe_model(ctx: CheckContext) -> Iterator[Issue]:
    m = ctx.megatron
    if m is None or not ctx.model.is_moe:
        return
    if isinstance(m.converter_type, str) and _DENSE_CONVERTERS.match(m.converter_type):
        yield Issue(
            f"{MEGATRON}.converter_type",
            f"a dense-model converter on {ctx.model.name} (MoE), inherited from "
            "grpo_math_1B.yaml; super-v3 never reads it",
            value=m.converter_type,
        )
    inherited = [k for k, v in _DENSE_MOE_DEFAULTS.items() if getattr(m, k) == v]
    if len(inherited) >= 2:
        shown = ", ".join(f"{k}={getattr(m, k)!r}" for k in inherited)
        yield Issue(
            MEGATRON,
            f"{shown} are grpo_math_1B.yaml's settings for a 1B dense model; on "
            f"{ctx.model.name} ({ctx.model.num_experts} experts) they freeze or disable the router",
            hint="set them for this model deliberately (the H100 recipe shows MoE values)",
        )


_GPU_NAMES = re.compile(r"(gb200|b200|h100|h200|a100)", re.IGNORECASE)


def tracking_names_mention_other_hardware(ctx: CheckContext) -> Iterator[Issue]:
    wandb = ctx.config.logger.wandb
    here = ctx.hardware.node.name.lower()
    for key in ("project", "name"):
        value = getattr(wandb, key)
        if not isinstance(value, str):
            continue
        named = {m.lower() for m in _GPU_NAMES.findall(value)}
        if named and here not in named:
            yield Issue(
                f"logger.wandb.{key}",
                f"names {'/'.join(sorted(named))} but this stage runs on {ctx.hardware.node.name}; "
                "copied from another variant?",
                value=value,
            )


def checkpoint_metric_needs_validation(ctx: CheckContext) -> Iterator[Issue]:
    ckpt, grpo = ctx.config.checkpointing, ctx.config.grpo
    metric = ckpt.metric_name
    if (
        ckpt.enabled
        and isinstance(metric, str)
        and metric.startswith("val")
        and grpo.val_period == 0
    ):
        yield Issue(
            "checkpointing.metric_name",
            "checkpoints are ranked by a validation metric but grpo.val_period is 0",
            value=metric,
        )


# Keys that appear in upstream configs but that super-v3 never reads.
_UNREAD_MEGATRON_KEYS = ("moe_aux_loss_coeff",)


def megatron_keys_never_read(ctx: CheckContext) -> Iterator[Issue]:
    m = ctx.megatron
    if m is None:
        return
    for key in _UNREAD_MEGATRON_KEYS:
        value = getattr(m, key)
        if value is not UNSET:
            yield Issue(
                f"{MEGATRON}.{key}",
                "super-v3 never reads this key; the value comes from the converted checkpoint",
                value=value,
            )


WARNING_CHECKS: tuple[Check, ...] = (
    megatron_keys_never_read,
    leave_one_out_shadowed_by_adv_estimator,
    dense_settings_on_moe_model,
    tracking_names_mention_other_hardware,
    checkpoint_metric_needs_validation,
)


# super-v3's own traps (keys it never reads, the shadowed baseline) are not main's.
# main's Gym configs inherit from grpo_nanov3.yaml, a MoE model: its router settings are meant.
WARNING_CHECKS_MAIN: tuple[Check, ...] = (
    tracking_names_mention_other_hardware,
    checkpoint_metric_needs_validation,
)


__all__ = ["CheckContext", "ERROR_CHECKS", "WARNING_CHECKS", "Marker"]
