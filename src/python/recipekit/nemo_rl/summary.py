"""The one-screen plan rows of a NeMo-RL GRPO stage (either schema): layout, batch, data."""

from __future__ import annotations

from recipekit.markers import UNSET, given, given_at
from recipekit.nemo_rl.checks.context import GrpoConfig
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.layout import Layout


def _nodes(first: int, count: int) -> str:
    return f"node {first}" if count == 1 else f"nodes {first}-{first + count - 1}"


def grpo_summary(cfg: GrpoConfig, lay: Layout) -> list[tuple[str, str]]:
    grpo, policy, data, ckpt = cfg.grpo, cfg.policy, cfg.data, cfg.checkpointing
    gen = given(policy.generation, None)
    vllm = given_at(gen, "vllm_cfg")
    rows: list[tuple[str, str]] = []
    nodes, training = lay.nodes, lay.parallel
    dp = training.whole_groups
    train_desc = f"{lay.backend} TP {training.tp} x PP {training.pp} x CP {training.cp} -> DP {dp}"
    if lay.backend == "megatron":
        train_desc += f"; experts EP {training.ep} x ETP {training.etp}"
    vllm_desc = (
        f"vLLM TP {lay.vllm_tensor_parallel} x PP {lay.vllm_pipeline_parallel} -> "
        f"{lay.vllm_instances} instance{'s' if lay.vllm_instances != 1 else ''}"
    )
    if nodes.colocated:
        rows.append(("layout", f"colocated on all {nodes.total_gpus} GPUs: {vllm_desc}"))
        rows.append(("", f"training {train_desc}"))
    else:
        rows.append(
            (
                "layout",
                f"generation {_nodes(1, nodes.generation_nodes)} "
                f"({nodes.generation_gpus} GPUs): {vllm_desc}",
            )
        )
        rows.append(
            (
                "",
                f"training {_nodes(nodes.generation_nodes + 1, nodes.training_nodes)} "
                f"({nodes.training_gpus} GPUs): {train_desc}",
            )
        )
    if nodes.teacher_nodes:
        first = nodes.generation_nodes + nodes.training_nodes + 1
        rows.append(
            (
                "",
                f"teachers {_nodes(first, nodes.teacher_nodes)}: {nodes.teachers} distinct "
                f"checkpoints x {nodes.teacher_nodes // nodes.teachers} nodes",
            )
        )
    if nodes.gym_nodes:
        first = nodes.generation_nodes + nodes.training_nodes + nodes.teacher_nodes + 1
        rows.append(
            (
                "",
                f"NeMo Gym {_nodes(first, nodes.gym_nodes)}: its judges "
                "(env.nemo_gym.num_gpu_nodes, outside cluster.num_nodes)",
            )
        )
    rows.append(
        (
            "batch",
            f"{grpo.num_prompts_per_step} prompts x "
            f"{grpo.num_generations_per_prompt} generations = "
            f"train_global_batch_size {policy.train_global_batch_size}, "
            f"micro batch {policy.train_micro_batch_size}, "
            f"{grpo.max_num_steps} steps",
        )
    )
    if grpo.use_dynamic_sampling:
        rows.append(
            (
                "",
                f"dynamic sampling: batch_multiplier {given_at(grpo, 'batch_multiplier')}, "
                f"up to {given_at(grpo, 'dynamic_sampling_max_gen_batches')} generation batches",
            )
        )
    seq = (
        f"max_total_sequence_length {policy.max_total_sequence_length}, "
        f"max_new_tokens {given_at(gen, 'max_new_tokens')}, "
        f"vLLM max_model_len {given_at(vllm, 'max_model_len')}, "
        f"prompt <= {data.max_input_seq_length}"
    )
    rows.append(("sequence", seq))
    shaping = grpo.reward_shaping
    if given_at(shaping, "enabled"):
        rows.append(
            (
                "",
                f"overlong buffer {given_at(shaping, 'overlong_buffer_length')} of "
                f"{given_at(shaping, 'max_response_length')} tokens, penalty "
                f"{given_at(shaping, 'overlong_buffer_penalty')}",
            )
        )
    packing = given(policy.sequence_packing, None)
    if packing is not None and packing.enabled:
        rows.append(
            (
                "",
                f"sequence packing {given_at(packing, 'algorithm')}: "
                f"{given_at(packing, 'train_mb_tokens')} train / "
                f"{given_at(packing, 'logprob_mb_tokens')} logprob tokens per micro-batch",
            )
        )
    train, val = data.train, data.validation
    env_name = given_at(train, "env_name") or given_at(data.default, "env_name")
    validation = (
        f"validation {given_at(val, 'dataset_name') or given_at(val, 'data_path')} every "
        f"{grpo.val_period} steps, {grpo.max_val_samples} samples"
        if grpo.val_period
        else "no validation"
    )
    rows.append(
        (
            "data",
            f"train {given_at(train, 'dataset_name') or given_at(train, 'data_path')} "
            f"(env {env_name}); " + validation,
        )
    )
    # main's env section names NeMo Gym; super-v3's is a dict of environments by name.
    gym_paths = given_at(cfg.env, "nemo_gym", "config_paths")
    if gym_paths:
        servers = [p.split("/")[1] for p in gym_paths if p.startswith("resources_")]
        rows.append(("", f"NeMo Gym: {', '.join(servers)}"))
    opd = value_of(cfg, "on_policy_distillation", UNSET)
    if given_at(opd, "enabled"):
        routes = given_at(opd, "teacher_model_by_agent_name") or {}
        rows.append(
            (
                "distillation",
                f"{len(routes)} Gym agents routed to {len(set(routes.values()))} teachers; "
                f"default {given_at(opd, 'default_teacher_alias')}",
            )
        )
    rows.append(("model", policy.model_name))
    keep = ""
    keep_top_k = given(ckpt.keep_top_k, None)
    if keep_top_k:
        # Without a metric NeMo-RL ranks checkpoints by step: the latest are kept.
        metric = ckpt.metric_name
        keep = f", keep {keep_top_k} " + (f"best by {metric}" if metric else "latest")
    rows.append(
        (
            "checkpoints",
            f"{ckpt.checkpoint_dir} every {ckpt.save_period} steps{keep}"
            if ckpt.enabled
            else "disabled",
        )
    )
    return rows
