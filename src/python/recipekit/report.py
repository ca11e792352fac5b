"""A plan as people and files read it: the one-screen summary, JSON, and the rendered files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from recipekit.errors import Issue
from recipekit.plan import Plan


def config_yaml(config: dict[str, Any]) -> str:
    """YAML that NeMo-RL's OmegaConf reads back to exactly ``config`` (floats stay floats)."""
    return yaml.safe_dump(config, sort_keys=False, default_flow_style=False, width=100)


def plan_json(plan: Plan) -> str:
    return json.dumps(plan.as_json(), indent=2) + "\n"


def write_rendered(plan: Plan, directory: Path) -> list[Path]:
    """``config.yaml`` (what ``--config`` reads) and ``plan.json``, written atomically."""
    directory.mkdir(parents=True, exist_ok=True)
    files = {"config.yaml": config_yaml(plan.framework_config), "plan.json": plan_json(plan)}
    written = []
    for name, text in files.items():
        target = directory / name
        tmp = target.with_suffix(target.suffix + ".tmp")
        tmp.write_text(text)
        tmp.replace(target)
        written.append(target)
    return written


def _nodes(first: int, count: int) -> str:
    return f"node {first}" if count == 1 else f"nodes {first}-{first + count - 1}"


def plan_text(plan: Plan) -> str:
    stage, hw, lay = plan.stage, plan.stage.hardware, plan.layout
    cfg = plan.framework_config
    grpo, policy, data, ckpt = cfg["grpo"], cfg["policy"], cfg["data"], cfg["checkpointing"]
    gen = policy.get("generation", {})
    vllm = gen.get("vllm_cfg", {})
    node = hw.node
    rows: list[tuple[str, str]] = []
    rows.append(
        (
            "framework",
            f"{stage.framework.name} {stage.framework.version} · "
            f"{stage.framework.entry_point} --config config.yaml",
        )
    )
    extra = ", IMEX channel required" if node.needs_imex_channel else ""
    rows.append(
        (
            "hardware",
            f"{hw.num_nodes} x {node.name} nodes, {node.gpus_per_node} x "
            f"{node.gpu.model} ({node.gpu.hbm_gib} GiB) each, {node.cpu_arch.value}, "
            f"{node.interconnect.value}{extra}",
        )
    )
    train_desc = (
        f"{lay.backend} TP {lay.tensor_parallel} x PP {lay.pipeline_parallel} x "
        f"CP {lay.context_parallel} -> DP {lay.data_parallel}"
    )
    if lay.backend == "megatron":
        train_desc += f"; experts EP {lay.expert_parallel} x ETP {lay.expert_tensor_parallel}"
    vllm_desc = (
        f"vLLM TP {lay.vllm_tensor_parallel} x PP {lay.vllm_pipeline_parallel} -> "
        f"{lay.vllm_instances} instance{'s' if lay.vllm_instances != 1 else ''}"
    )
    if lay.colocated:
        rows.append(("layout", f"colocated on all {lay.total_gpus} GPUs: {vllm_desc}"))
        rows.append(("", f"training {train_desc}"))
    else:
        rows.append(
            (
                "layout",
                f"generation {_nodes(1, lay.generation_nodes)} "
                f"({lay.generation_gpus} GPUs): {vllm_desc}",
            )
        )
        rows.append(
            (
                "",
                f"training {_nodes(lay.generation_nodes + 1, lay.training_nodes)} "
                f"({lay.training_gpus} GPUs): {train_desc}",
            )
        )
    rows.append(
        (
            "batch",
            f"{grpo['num_prompts_per_step']} prompts x "
            f"{grpo['num_generations_per_prompt']} generations = "
            f"train_global_batch_size {policy['train_global_batch_size']}, "
            f"micro batch {policy['train_micro_batch_size']}, "
            f"{grpo['max_num_steps']} steps",
        )
    )
    if grpo.get("use_dynamic_sampling"):
        rows.append(
            (
                "",
                f"dynamic sampling: batch_multiplier {grpo.get('batch_multiplier')}, "
                f"up to {grpo.get('dynamic_sampling_max_gen_batches')} generation batches",
            )
        )
    seq = (
        f"max_total_sequence_length {policy['max_total_sequence_length']}, "
        f"max_new_tokens {gen.get('max_new_tokens')}, "
        f"vLLM max_model_len {vllm.get('max_model_len')}, "
        f"prompt <= {data.get('max_input_seq_length')}"
    )
    rows.append(("sequence", seq))
    shaping = grpo.get("reward_shaping", {})
    if shaping.get("enabled"):
        rows.append(
            (
                "",
                f"overlong buffer {shaping.get('overlong_buffer_length')} of "
                f"{shaping.get('max_response_length')} tokens, penalty "
                f"{shaping.get('overlong_buffer_penalty')}",
            )
        )
    packing = policy.get("sequence_packing", {})
    if packing.get("enabled"):
        rows.append(
            (
                "",
                f"sequence packing {packing.get('algorithm')}: "
                f"{packing.get('train_mb_tokens')} train / "
                f"{packing.get('logprob_mb_tokens')} logprob tokens per micro-batch",
            )
        )
    train, val = data.get("train", {}), data.get("validation") or {}
    rows.append(
        (
            "data",
            f"train {train.get('dataset_name') or train.get('data_path')} "
            f"(env {train.get('env_name')}); validation {val.get('dataset_name', '-')} "
            f"every {grpo['val_period']} steps, {grpo['max_val_samples']} samples",
        )
    )
    rows.append(("model", policy["model_name"]))
    keep = (
        f", keep {ckpt['keep_top_k']} best by {ckpt['metric_name']}"
        if ckpt.get("keep_top_k")
        else ""
    )
    rows.append(
        (
            "checkpoints",
            f"{ckpt['checkpoint_dir']} every {ckpt['save_period']} steps" f"{keep}"
            if ckpt["enabled"]
            else "disabled",
        )
    )
    rows.append(("overrides", ", ".join(plan.overrides) or "none"))
    rows.append(
        (
            "derived",
            f"{len(plan.derived)} keys follow their source " "(plan --format json lists them)",
        )
    )
    rows.append(("hash", plan.hash))
    width = max(len(k) for k, _ in rows)
    lines = [f"{stage.name}: {stage.description}", ""]
    lines += [f"{k.ljust(width)}  {v}" for k, v in rows]
    lines += warnings_text(plan.warnings)
    return "\n".join(lines) + "\n"


def warnings_text(warnings: tuple[Issue, ...] | list[Issue]) -> list[str]:
    if not warnings:
        return ["", "warnings: none"]
    return ["", f"warnings ({len(warnings)}):"] + [f"  ! {w.render()}" for w in warnings]
