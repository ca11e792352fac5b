"""Stands in for NeMo-RL's examples/run_grpo.py in the launcher tests (no GPU here).

Run by the job exactly as the real entry point is (``python examples/run_grpo.py --config
<run>/config.yaml`` on the head node, RAY_ADDRESS set), it checks what the real one would
rely on and exits with the status the test chose:

- the rendered config equals the plan's config key for key;
- the Ray cluster has every planned node and GPU;
- the secrets the test planted arrived in the environment (their values are never printed).

FAKE_GRPO_EXIT (default 0) and FAKE_GRPO_SLEEP (seconds, default 0) come from the submitting
shell through Slurm's --export, like any user environment.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import ray
import yaml


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
    sleep = float(os.environ.get("FAKE_GRPO_SLEEP", "0"))
    if sleep:
        print(f"fake-grpo: training for {sleep:g} s", flush=True)
        time.sleep(sleep)
    status = int(os.environ.get("FAKE_GRPO_EXIT", "0"))
    print(f"fake-grpo: exiting with {status}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
