"""The sbatch script of a plan: resources, Slurm semantics, environment and one job step.

The script holds no secret and no logic: the job step on every node is the packaged launcher
(``launcher.pex job-step``), which runs preflight, brings Ray up and runs the framework.
"""

from __future__ import annotations

import shlex
from typing import Any

from recipekit.images.stage_image import LAUNCHER_PEX as BAKED_LAUNCHER
from recipekit.launch.profile import ClusterProfile
from recipekit.launch.run_dir import LAUNCHER, LOGS, RunDir, job_name


def job_environment(profile: ClusterProfile) -> dict[str, str]:
    env: dict[str, str] = {}
    if profile.hf_home:
        env["HF_HOME"] = profile.hf_home
    if profile.gb200 is not None:
        env.update(profile.gb200.environment())
    env.update(profile.extra_env)
    return env


def render_job_script(
    plan: dict[str, Any], profile: ClusterProfile, run: RunDir, *, interactive: bool = False
) -> str:
    hw = plan["hardware"]
    nodes, gpus = hw["num_nodes"], hw["gpus_per_node"]
    name = job_name(plan["stage"], plan["hash"])
    directives = [
        f"--job-name={name}",
        f"--nodes={nodes}",
        "--ntasks-per-node=1",
        f"--gres=gpu:{gpus}",
        "--exclusive",
        f"--time={profile.time_limit}",
        f"--partition={profile.partition}",
        *([f"--account={profile.account}"] if profile.account else []),
        # Never two jobs of one plan at once: a second one waits for the first to end.
        "--dependency=singleton",
        # Preemption requeues the job; the framework resumes from its checkpoint directory.
        "--requeue",
        f"--output={run.path / LOGS}/slurm-%j.out",
        "--open-mode=append",
    ]
    container = profile.container
    launcher = (
        BAKED_LAUNCHER
        if profile.shipping == "baked"
        else container.in_container(str(run.file(LAUNCHER)))
    )
    run_in_container = container.in_container(str(run.path))
    step = [
        "srun",
        "--kill-on-bad-exit=1",
        f"--nodes={nodes}",
        "--ntasks-per-node=1",
        *container.srun_flags(),
        container.python,
        launcher,
        "job-step",
        run_in_container,
        *(["--interactive"] if interactive else []),
    ]
    secrets = ", ".join(profile.secret_env) or "none"
    lines = [
        "#!/bin/bash",
        f"# recipekit: stage {plan['stage']}, plan {plan['hash']}",
        f"# cluster profile {profile.name}; {nodes} x {hw['node']} ({gpus} GPUs each)",
        *[f"#SBATCH {d}" for d in directives],
        "",
        "set -euo pipefail",
        f"# Secrets ({secrets}) come from the submitting shell through Slurm's --export;",
        "# they are never written here.",
    ]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in job_environment(profile).items()]
    lines += [
        "",
        "# One task per node: preflight, then Ray (head on the first node), then the framework"
        + (" on request (`run`): an interactive cluster." if interactive else "."),
        "exec " + " \\\n    ".join(shlex.quote(a) for a in step),
        "",
    ]
    return "\n".join(lines)
