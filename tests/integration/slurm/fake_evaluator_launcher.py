#!/usr/bin/env python3
"""Stands in for ``nemo-evaluator-launcher`` on the submit host, in the delegated-stage test.

The real launcher's Slurm executor composes the config, writes a batch job (vLLM, then each
task's harness) and submits it with ``sbatch`` on ``execution.hostname``. This stand-in keeps
that boundary and nothing behind it: it reads ``run --config FILE -o KEY=VALUE ...`` as the
stage's script calls it, and submits, with the real ``sbatch`` of the test cluster, a job to the
given partition and account that writes down what it saw (node, partition, account, the image
and checkpoint it was told to serve, and what that checkpoint holds when the job starts) to
``<execution.output_dir>/seen.json``; ``execution.sbatch_extra_flags.*`` become options of its
``sbatch``, as the real executor's ``#SBATCH`` lines. It prints the
job id as ``submitted batch job N``, and exits 2 on arguments the real launcher would refuse.
It reads the ``config.yaml`` it is handed, as the real launcher does (whose own rendering of
that file is checked in ``recipekit/nemo_evaluator/launcher_oracle_test.py``). It runs with
the submit host's Python and its PyYAML (Debian's python3-yaml).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

SITE_KEYS = ("execution.hostname", "execution.account", "execution.partition", "deployment.image")

JOB = """#!/bin/bash
#SBATCH --job-name=fake-evaluation
#SBATCH --nodes={nodes}
#SBATCH --partition={partition}
#SBATCH --account={account}
#SBATCH --output={output_dir}/slurm-%j.out
python3 - <<'PY'
import json, os
told = json.loads({told!r})
seen = {{
    "node": os.environ.get("SLURMD_NODENAME"),
    "partition": os.environ.get("SLURM_JOB_PARTITION"),
    "account": os.environ.get("SLURM_JOB_ACCOUNT"),
    "told": told,
    # vLLM loads the checkpoint when this job starts, not when it was submitted.
    "checkpoint files": sorted(os.listdir(told["deployment.checkpoint_path"]))
    if os.path.isdir(told["deployment.checkpoint_path"]) else None,
}}
open({seen!r}, "w").write(json.dumps(seen))
PY
"""


def main(argv: list[str]) -> int:
    if argv[:2] != ["run", "--config"] or len(argv) < 3:
        print(f"fake-evaluator-launcher: expected `run --config FILE`, got {argv}", flush=True)
        return 2
    config_file = Path(argv[2])
    overrides: dict[str, str] = {}
    rest = argv[3:]
    while rest:
        flag, assignment, *rest = rest
        key, sep, value = assignment.partition("=")
        if flag != "-o" or not sep:
            print(f"fake-evaluator-launcher: bad override {flag} {assignment}", flush=True)
            return 2
        overrides[key.lstrip("+")] = value  # Hydra's "+"/"++": add the key
    missing = [key for key in SITE_KEYS if not overrides.get(key)]
    if not config_file.is_file() or missing:
        print(f"fake-evaluator-launcher: config {config_file}, missing {missing}", flush=True)
        return 2
    config = yaml.safe_load(config_file.read_text())
    if not isinstance(config, dict) or "deployment" not in config:
        print(f"fake-evaluator-launcher: {config_file} is not an evaluation config", flush=True)
        return 2
    output_dir = Path(config["execution"]["output_dir"])
    output_dir.mkdir(parents=True, exist_ok=True)
    told = {
        **overrides,
        "deployment.checkpoint_path": config["deployment"]["checkpoint_path"],
        "tasks": [task["name"] for task in config["evaluation"]["tasks"]],
        "HF_TOKEN set": "HF_TOKEN" in os.environ,
    }
    script = output_dir / "fake-evaluation.sbatch"
    script.write_text(
        JOB.format(
            nodes=config["execution"].get("num_nodes", 1),
            partition=overrides["execution.partition"],
            account=overrides["execution.account"],
            output_dir=output_dir,
            told=json.dumps(told),
            seen=str(output_dir / "seen.json"),
        )
    )
    # The real executor writes each execution.sbatch_extra_flags entry as an #SBATCH option.
    extra = [
        f"--{key.rsplit('.', 1)[1]}={value}"
        for key, value in overrides.items()
        if key.startswith("execution.sbatch_extra_flags.")
    ]
    done = subprocess.run(
        ["sbatch", "--parsable", *extra, str(script)], capture_output=True, text=True
    )
    if done.returncode != 0:
        print(f"fake-evaluator-launcher: sbatch failed: {done.stderr.strip()}", flush=True)
        return 1
    print(f"submitted batch job {done.stdout.strip().split(';')[0]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
