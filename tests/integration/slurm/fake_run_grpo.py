"""Stands in for NeMo-RL's examples/run_grpo.py in the launcher tests (no GPU here).

Run by the job exactly as the real entry point is (``python examples/run_grpo.py --config
<run>/config.yaml`` on the head node, RAY_ADDRESS set), it checks what the real one would
rely on and exits with the status the test chose:

- the rendered config equals the plan's config key for key;
- the Ray cluster has every planned node and GPU;
- the secrets the test planted arrived in the environment (their values are never printed);
- the starting checkpoint (``policy.model_name``) exists: a stage that reads a missing input
  fails here, as NeMo-RL would when it loads the weights.

A MOPD stage's teacher checkpoints (``on_policy_distillation.teacher_model_by_agent_name``) must
exist too. On the Megatron backend it then finds or makes the HF -> Megatron conversion where
NeMo-RL's own code puts it: ``validate_model_paths`` (``nemo_rl/models/megatron/setup.py``) and
``get_megatron_checkpoint_dir`` (``nemo_rl/models/policy/utils.py``), executed from the pinned
sources of the stage's NeMo-RL version under ``FAKE_GRPO_NEMO_RL_SOURCE`` (they use only ``os``,
``json`` and ``hashlib``; the modules around them need a GPU stack), so where the cache lands is
decided by NeMo-RL, not by recipekit. Then it "trains" as NeMo-RL's GRPO loop saves: a
``step_N`` directory every ``checkpointing.save_period`` steps and at ``grpo.max_num_steps``,
keeping only the newest ``checkpointing.keep_top_k`` (NeMo-RL's CheckpointManager with no
metric), and resuming after the newest ``step_N`` already in ``checkpoint_dir`` (a requeued
job). Paths are resolved as OmegaConf resolves ``${oc.env:VAR}`` when NeMo-RL loads the config.

FAKE_GRPO_EXIT (default 0), FAKE_GRPO_SLEEP (seconds, default 0) and FAKE_GRPO_STEP_SECONDS
(seconds a training step takes, default 0) come from the submitting shell through Slurm's
--export, like any user environment. FAKE_GRPO_SLEEP holds the first attempt only: it is the
window in which a test kills a node or cancels the job, and a requeued attempt
(SLURM_RESTART_COUNT > 0) has nothing left to wait for.
"""

import argparse
import ast
import hashlib
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

import ray
import yaml


def resolve_env(value: str) -> str:
    """``${oc.env:VAR}`` as OmegaConf resolves it (an unset variable is an error there too)."""
    return re.sub(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: os.environ[m.group(1)], value)


def nemo_rl_functions(source: Path) -> dict:
    """NeMo-RL's own model-path functions, read from its pinned source and executed."""
    wanted = {
        "models/megatron/setup.py": (
            "_canonicalize_hf_config_overrides",
            "_canonicalize_hf_config_overrides",
            "_get_hf_config_overrides_hash",
            "_resolve_iter_dir_from_root",
            "validate_model_paths",
        ),
        "models/policy/utils.py": ("get_megatron_checkpoint_dir",),
    }
    namespace: dict = {"os": os, "json": json, "hashlib": hashlib}
    namespace.update(dict.fromkeys(("Any", "PolicyConfig", "Optional"), object))
    for module, names in wanted.items():
        tree = ast.parse((source / "nemo_rl" / module).read_text())
        found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
        exec(compile(ast.Module(body=found, type_ignores=[]), module, "exec"), namespace)
    # super-v3's validate_model_paths has no helpers; both versions have these two.
    assert "validate_model_paths" in namespace and "get_megatron_checkpoint_dir" in namespace
    return namespace


def megatron_start(policy: dict, version: str) -> None:
    """Find or make the Megatron checkpoint NeMo-RL ``version`` converts ``policy.model_name``
    into."""
    sources = Path(os.environ["FAKE_GRPO_NEMO_RL_SOURCE"])
    functions = nemo_rl_functions(sources / version.split("@")[0])
    _, path, exists = functions["validate_model_paths"](policy)
    if exists:
        print(f"fake-grpo: conversion found in {path}", flush=True)
        return
    # What NeMo-RL's conversion leaves: the iteration directory its existence check reads.
    converted = Path(path) / "iter_0000000"
    converted.mkdir(parents=True)
    (converted / "converted_from").write_text(f"{policy['model_name']}\n")
    print(f"fake-grpo: converted {policy['model_name']} into {path}", flush=True)


def must_save_by(ckpt: dict) -> float | None:
    """``checkpointing.checkpoint_must_save_by`` (DD:HH:MM:SS) in seconds, as NeMo-RL reads it."""
    text = ckpt.get("checkpoint_must_save_by")
    if not text:
        return None
    days, hours, minutes, seconds = (int(part) for part in str(text).split(":"))
    return float(((days * 24 + hours) * 60 + minutes) * 60 + seconds)


def train(config: dict) -> int:
    """Save checkpoints as NeMo-RL's GRPO loop does; returns the last step reached.

    The save deadline counts from here, the start of the training loop, as NeMo-RL's
    TimeoutChecker does (``timeout.start_iterations()`` at the top of ``grpo_train``,
    grpo.py:2703 @ super-v3.5-posttraining): once the next step would pass it (the last step's
    time, ``fit_last_save_time=True``), it saves, says "Timeout has been reached, stopping
    training early" (grpo.py:3800) and returns. FAKE_GRPO_CRASH_ATTEMPT=N exits 1 after the
    first step of attempt N (SLURM_RESTART_COUNT + 1), saving nothing."""
    ckpt, steps = config["checkpointing"], config["grpo"]["max_num_steps"]
    started, deadline = time.monotonic(), must_save_by(ckpt)
    attempt = int(os.environ.get("SLURM_RESTART_COUNT", "0") or "0") + 1
    crash = os.environ.get("FAKE_GRPO_CRASH_ATTEMPT") == str(attempt)
    if not ckpt.get("enabled"):
        return 0
    directory = Path(resolve_env(ckpt["checkpoint_dir"]))
    directory.mkdir(parents=True, exist_ok=True)
    done = [int(p.name[5:]) for p in directory.glob("step_*") if p.name[5:].isdigit()]
    start = max(done, default=0)
    if start:
        print(f"fake-grpo: resuming from {directory}/step_{start}", flush=True)
    step_seconds = float(os.environ.get("FAKE_GRPO_STEP_SECONDS", "0"))
    for step in range(start + 1, steps + 1):
        began = time.monotonic()
        time.sleep(step_seconds)
        print(f"fake-grpo: step {step} done", flush=True)
        if crash:
            print(f"fake-grpo: crashing in attempt {attempt}", flush=True)
            sys.exit(1)
        now = time.monotonic()
        timeout = deadline is not None and now - started + (now - began) >= deadline
        if step % ckpt["save_period"] and step != steps and not timeout:
            continue
        saved = directory / f"step_{step}"
        tmp = directory / f"tmp_step_{step}"
        # NeMo-RL's Megatron policy: a Megatron checkpoint of iteration 0 in policy/weights.
        weights = tmp / "policy" / "weights" / "iter_0000000"
        weights.mkdir(parents=True, exist_ok=True)
        (weights / "weights.bin").write_text(f"{config['grpo']['seed']}:{step}\n")
        tmp.rename(saved)
        print(f"fake-grpo: saved {saved}", flush=True)
        keep = ckpt.get("keep_top_k")
        if keep:
            kept = sorted((int(p.name[5:]) for p in directory.glob("step_*")), reverse=True)
            for old in kept[keep:]:
                shutil.rmtree(directory / f"step_{old}")
        if timeout and step != steps:
            print("Timeout has been reached, stopping training early", flush=True)
            return step
    return steps


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    args = parser.parse_args()
    config = yaml.safe_load(Path(args.config).read_text())
    plan = json.loads((Path(os.environ["RECIPEKIT_RUN_DIR"]) / "plan.json").read_text())
    if config != plan["config"]:
        print("fake-grpo: config.yaml does not match plan.json", flush=True)
        return 90
    print(f"fake-grpo: config matches plan {plan['hash'][:12]}", flush=True)

    ray.init(address=os.environ["RAY_ADDRESS"], logging_level="ERROR", log_to_driver=False)
    alive = [n for n in ray.nodes() if n["Alive"]]
    gpus = ray.cluster_resources().get("GPU", 0)
    hw = plan["hardware"]
    want_nodes, want_gpus = hw["num_nodes"], hw["num_nodes"] * hw["gpus_per_node"]
    print(f"fake-grpo: ray sees {len(alive)} nodes, {gpus:g} GPUs", flush=True)

    @ray.remote(num_gpus=hw["gpus_per_node"])
    def where() -> str:
        return f"{ray.util.get_node_ip_address()} {os.environ.get('CUDA_VISIBLE_DEVICES', '')}"

    placed = sorted(ray.get([where.remote() for _ in range(want_nodes)]))
    print(f"fake-grpo: one {hw['gpus_per_node']}-GPU task per node: {placed}", flush=True)
    ray.shutdown()
    if len(alive) != want_nodes or gpus != want_gpus:
        return 91

    for name in ("WANDB_API_KEY", "HF_TOKEN"):
        print(f"fake-grpo: {name} present: {'yes' if os.environ.get(name) else 'no'}", flush=True)
    model = Path(resolve_env(str(config["policy"]["model_name"])))
    if not model.exists():
        print(f"fake-grpo: the starting checkpoint {model} does not exist", flush=True)
        return 92
    print(f"fake-grpo: starting from {model.resolve()}", flush=True)
    # On-policy distillation (MOPD) also loads every teacher's checkpoint.
    teachers = (config.get("on_policy_distillation") or {}).get("teacher_model_by_agent_name")
    for agent, teacher in sorted((teachers or {}).items()):
        if not Path(resolve_env(str(teacher))).exists():
            print(f"fake-grpo: teacher {teacher} of {agent} does not exist", flush=True)
            return 92
    if teachers:
        print(f"fake-grpo: {len(set(teachers.values()))} teacher checkpoints found", flush=True)
    if (config["policy"].get("megatron_cfg") or {}).get("enabled"):
        policy = {**config["policy"], "model_name": str(model)}
        megatron_start(policy, plan["framework"]["version"])
    train(config)
    sleep = float(os.environ.get("FAKE_GRPO_SLEEP", "0"))
    if sleep and int(os.environ.get("SLURM_RESTART_COUNT", "0") or "0") > 0:
        print("fake-grpo: a requeued attempt: no wait", flush=True)
    elif sleep:
        print(f"fake-grpo: training for {sleep:g} s", flush=True)
        time.sleep(sleep)
    status = int(os.environ.get("FAKE_GRPO_EXIT", "0"))
    print(f"fake-grpo: exiting with {status}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
