"""The sbatch script of a plan: resources, Slurm semantics, environment and its job steps.

The script holds no secret and no logic: every job step is the packaged launcher. Every stage
starts with a preflight step on every node (``launcher.pex preflight``). A "ray" stage then has
one step, ``job-step`` on every node, which brings Ray up and runs the framework. A "per-gpu"
or "head" stage has the framework step (``entry-point``: one task per GPU, or one on the first
node), then, when the profile tracks runs, ``record`` on the first node. A "delegated" stage's
script is no batch job: ``submit`` runs it on the submit host (``_submit_host_script``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable

from recipekit.errors import Issue, RecipeError
from recipekit.framework import SITE_PLACEHOLDERS
from recipekit.images.paths import LAUNCHER_PEX as BAKED_LAUNCHER
from recipekit.launch import continuation
from recipekit.launch.framework_process import framework_command
from recipekit.launch.placement import INVENTORY_DIR, Placement
from recipekit.launch.profile import ClusterProfile
from recipekit.launch.ray_gcs import gcs_script_lines
from recipekit.launch.run_dir import LAUNCHER, LOGS, LOST_NODES, RunDir, job_name
from recipekit.launch.slurm import NODE_ADDRESSES_VARIABLE
from recipekit.launch.time_budget import time_budget
from recipekit.lineage.store import RUN_VARIABLE, run_name
from recipekit.plan import Plan
from recipekit.validators import single_line_problem

# What the script writes unquoted: a stage's name (in --job-name and comments) and the names of
# the variables it exports, matched whole (a pattern's "$" alone also matches before a final
# newline). The profile's own values are checked when it is made.
_STAGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def job_environment(profile: ClusterProfile, plan: Plan) -> dict[str, str]:
    stage = plan.stage
    if not _STAGE_NAME.fullmatch(stage.name):
        problem = single_line_problem(stage.name)
        letters = "a stage's name is letters, digits, '.', '_' and '-'"
        message = f"{problem}; {letters}" if problem else letters
        raise RecipeError([Issue("stage", message, stage.name)])
    # The run's name: its checkpoints' folder in the artifact store (configs name it as
    # ${oc.env:RECIPEKIT_RUN}); a requeued job has the same one, and resumes there.
    env: dict[str, str] = {RUN_VARIABLE: run_name(stage.name, plan.hash)}
    if profile.hf_home:
        env["HF_HOME"] = profile.hf_home
    if profile.gb200 is not None:
        env.update(profile.gb200.environment())
    env.update(stage.environment)
    env.update(profile.extra_env)
    issues = []
    for name, text in env.items():
        if not _ENV_NAME.fullmatch(name):
            # Shown quoted: a name with a newline would break the message's one line too.
            issues.append(Issue("environment", f"{name!r} is not an environment variable name"))
        # Values are quoted, yet one line each: review.compiled reads an export a line, and
        # nothing means a control character in a value.
        elif problem := single_line_problem(text):
            issues.append(Issue(f"environment.{name}", f"the value {problem}", value=text))
    if issues:
        raise RecipeError(issues)
    return env


def render_job_script(
    plan: Plan, profile: ClusterProfile, run: RunDir, *, interactive: bool = False
) -> str:
    stage, hw = plan.stage, plan.stage.hardware
    launch = stage.framework.launch
    if launch == "delegated":
        return _submit_host_script(plan, profile, run)
    nodes, gpus = hw.num_nodes, hw.gpus_per_node
    name = job_name(stage.name, plan.hash)
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
    # The framework's save deadline (time_budget); the signal is the last line of defence.
    budget = time_budget(plan, profile)
    directives += continuation.script_directives(budget)
    placement = _placement(plan, profile)
    if placement is not None and profile.gb200 is not None and not profile.gb200.slurm_segment:
        placement = None  # its sbatch predates --segment (the profile says so)
    if placement is not None:
        directives.append(f"--segment={placement.segment}")
    container = profile.job_container(stage.code)
    launcher = (
        BAKED_LAUNCHER
        if profile.shipping == "baked"
        else container.in_container(str(run.file(LAUNCHER)))
    )
    run_in_container = container.in_container(str(run.path))

    def launcher_step(command: str, *srun_flags: str) -> list[str]:
        launched = [container.python, launcher, command, run_in_container]
        return ["srun", *srun_flags, *container.srun_flags(), *launched]

    secrets = ", ".join(profile.secret_env) or "none"
    lines = [
        "#!/bin/bash",
        f"# recipekit: stage {stage.name}, plan {plan.hash}",
        f"# cluster profile {profile.name}; {nodes} x {hw.node.name} ({gpus} GPUs each)",
        *[f"#SBATCH {d}" for d in directives],
        *_placement_comment(plan, placement),
        "",
        "set -euo pipefail",
        f"# Secrets ({secrets}) come from the submitting shell through Slurm's --export;",
        "# they are never written here.",
    ]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in job_environment(profile, plan).items()]
    record = shlex.quote(str(run.file(LOST_NODES)))
    lines += ["", *_LOST_NODE_CHECK.format(record=record).split("\n")]
    lines += ["", *continuation.script_functions(budget, run)]
    lines += ["", *_NODE_ADDRESSES.format(variable=NODE_ADDRESSES_VARIABLE).split("\n")]
    if launch == "ray":
        lines += ["", *gcs_script_lines(nodes)]
    if interactive and launch != "ray":
        raise ValueError(f"an interactive job keeps a Ray cluster up; this stage launches {launch}")
    # Separate job steps, so that each starts only once the one before has ended well on every
    # node (set -e): the framework never starts beside a node that failed preflight, and the
    # run is recorded only once every rank has finished. (A per-node step that spawned its GPU
    # processes itself would need a barrier across nodes; the end of a step is that barrier.)
    # Preflight has no --kill-on-bad-exit: every node finishes its checks, so the log names
    # every bad node at once, and no node's reason is lost (srun stops forwarding a task's
    # output when it kills the step for another task's exit).
    preflight = (
        "1. Preflight on every node, one task each: the job ends here if any node fails.",
        launcher_step("preflight", f"--nodes={nodes}", f"--ntasks={nodes}", "--ntasks-per-node=1"),
    )
    if placement is not None:
        # Each node's NVLink domain, for preflight (and Ray's nvlink_domain_ resource): one step
        # on the host, a file a node (srun's %N), freshly written for every attempt.
        inventory = [
            "srun", f"--nodes={nodes}", f"--ntasks={nodes}", "--ntasks-per-node=1",
            "--open-mode=truncate", f"--output={run.path / INVENTORY_DIR}/%N.txt",
            "nvidia-smi", "-q",
        ]
        # Not fatal here: preflight names a node whose file is missing or says no domain.
        lines += [
            "",
            "# 0. Each node's NVLink domain (nvidia-smi -q): preflight checks the racks.",
            f"mkdir -p {shlex.quote(str(run.path / INVENTORY_DIR))}",
            _command(inventory) + ' \\\n    || echo "recipekit: nvidia-smi -q failed ($?)" >&2',
        ]
    if launch == "ray":
        step = launcher_step(
            "job-step", "--kill-on-bad-exit=1", f"--nodes={nodes}", "--ntasks-per-node=1"
        )
        step += ["--interactive"] if interactive else []
        comment = "2. One task per node: Ray (head on the first node), then the framework" + (
            " on request (`run`): an interactive cluster." if interactive else "."
        )
        lines += ["", f"# {preflight[0]}", _checked(preflight[1])]
        lines += ["", f"# {comment}", continuation.waited(_command(step), budget), ""]
        lines += [*_CONTINUED, ""] if budget is not None else []
        return "\n".join(lines)
    steps = [preflight, _framework_step(launch, nodes, gpus, launcher_step)]
    tracking = profile.tracking
    publishes = plan.published_run() is not None
    # The head decides whether the stage goes on (continuation.finish_attempt) in this step.
    if tracking.mode != "off" or publishes or budget is not None:
        done = [
            *(["Whether the stage is done or continues"] if budget is not None else []),
            *(["Publish the saved checkpoints as artifact versions"] if publishes else []),
            *(
                [f"record the run in W&B ({tracking.mode}, project {tracking.project})"]
                if tracking.mode != "off"
                else []
            ),
        ]
        steps.append(
            (
                "3. " + "; ".join(done) + ".",
                launcher_step("record", *_HEAD_ONLY, "--gres=none"),
            )
        )
    for index, (comment, step) in enumerate(steps):
        framework = index == 1
        shown = continuation.waited(_command(step), budget) if framework else _checked(step)
        lines += ["", f"# {comment}", shown]
    lines += ["", *_CONTINUED] if budget is not None else []
    return "\n".join(lines) + "\n"


_CONTINUED = (
    "# Stopped at its save deadline before its step budget: continue as this job.",
    "continue_if_unfinished",
)


def _placement(plan: Plan, profile: ClusterProfile) -> Placement | None:
    """The plan's --segment on this cluster: refused where the profile's NVLink domain is
    smaller than the segment (Slurm would never start the job)."""
    found = plan.as_json().get("placement")
    if found is None or "unplaced" in found or profile.gb200 is None:
        return None
    placement = Placement.from_json(found)
    domain = profile.gb200.nvlink_domain_nodes
    if placement.segment > domain:
        raise RecipeError(
            [
                Issue(
                    f"profile {profile.name}: gb200.nvlink_domain_nodes",
                    f"the plan asks Slurm for {placement.segment}-node segments inside one "
                    f"NVLink domain; this cluster's hold {domain} nodes",
                    value=domain,
                )
            ]
        )
    return placement


def _placement_comment(plan: Plan, placement: Placement | None) -> list[str]:
    found = plan.as_json().get("placement")
    if found is not None and "unplaced" in found:
        return [f"# Not placed by rack: {found['unplaced']}."]
    if placement is None:
        return []
    return [
        f"# --segment: {placement.segment}-node segments, each inside one NVLink domain (rack),",
        *[f"#   for the {g.name} over {g.nodes} nodes" for g in placement.groups],
        "# Needs Slurm 24.05+ with TopologyPlugin=topology/block; elsewhere Slurm ignores it",
        "# (an older sbatch refuses it) and only preflight's nvlink-domains check stands.",
    ]


def _submit_host_script(plan: Plan, profile: ClusterProfile, run: RunDir) -> str:
    """A "delegated" stage's script: run by ``submit`` on the submit host, not by sbatch. The
    framework's own Slurm client submits the job that does the work."""
    stage, hw = plan.stage, plan.stage.hardware
    secrets = ", ".join(profile.secret_env) or "none"
    lines = [
        "#!/bin/bash",
        f"# recipekit: stage {stage.name}, plan {plan.hash}",
        f"# cluster profile {profile.name}; {hw.num_nodes} x {hw.node.name}"
        f" ({hw.gpus_per_node} GPUs each), allocated by {stage.framework.entry_point}",
        "# Run by `submit` on the submit host, not by sbatch: the framework is its own Slurm",
        "# client and submits the job that deploys and evaluates; recipekit allocates nothing.",
        # The job's environment is the framework's to set (its config's env_vars): exports
        # here would reach only this host.
        f"# Secrets ({secrets}) are read from the submitting shell; never written here.",
    ]
    command = framework_command(plan.framework_call(), profile, run)
    unfilled = [p for p in SITE_PLACEHOLDERS if any(p in argument for argument in command)]
    lines += [f"# {p} unset in the profile: submit refuses until it is set." for p in unfilled]
    lines += ["", "set -euo pipefail", f"cd {shlex.quote(str(run.path))}"]
    # Arguments given to this script follow the framework's: what a pipeline adds so that the
    # client's job waits for the stages before it (Framework.waiting_for).
    lines += ["exec " + _command(command) + ' \\\n    "$@"', ""]
    return "\n".join(lines)


# One task on the first node of the allocation (where the batch script runs).
_HEAD_ONLY = ("--nodes=1", "--ntasks=1", "--relative=0")


def _framework_step(
    launch: str, nodes: int, gpus: int, launcher_step: Callable[..., list[str]]
) -> tuple[str, list[str]]:
    if launch == "per-gpu":
        # As NeMo-Run's Slurm executor starts Megatron-Bridge: one task per GPU, each given
        # torch.distributed's RANK, LOCAL_RANK, WORLD_SIZE and MASTER_ADDR from Slurm's task
        # layout. srun exits with the highest status of its tasks; ranks that Slurm stops
        # because another failed exit 1 (entry_point.EXIT_STOPPED), so the failing rank's
        # status is the job's.
        comment = (
            f"2. The framework: one process per GPU, {nodes * gpus} ranks; "
            "the job's status is the worst rank's."
        )
        # Counts given in full: the job's one task per node (SLURM_NTASKS, inherited by srun)
        # would otherwise cap the step at one task per node.
        flags = [
            "--kill-on-bad-exit=1",
            f"--nodes={nodes}",
            f"--ntasks={nodes * gpus}",
            f"--ntasks-per-node={gpus}",
        ]
        return comment, launcher_step("entry-point", *flags)
    if launch == "head":
        return "2. The framework, once, on the first node.", launcher_step(
            "entry-point", *_HEAD_ONLY
        )
    raise ValueError(f"unknown launch kind {launch!r} (Framework.launch)")


def _command(argv: list[str]) -> str:
    return " \\\n    ".join(shlex.quote(a) for a in argv)


def _checked(argv: list[str]) -> str:
    """A step whose failure is first told apart from a lost node (``step_failed``)."""
    return _command(argv) + " \\\n    || step_failed $?"


# A step that fails may have lost a node (its slurmd and processes gone): srun ends before the
# controller notices (SlurmdTimeout), so the job would end FAILED like a crash, and --requeue
# would never apply. One step asks every node at once (one srun whatever the node count, as
# NeMo-RL keeps its Slurm calls, #3132); a node whose slurmd does not answer prints no name and
# is lost. The first node runs this script, so it answers unless the check itself failed: then
# it is tried once more, and else the failure is a crash. A lost node: the script says so,
# records it for `status`, and waits for Slurm to declare the node
# down, which ends the job NODE_FAIL and requeues it (--requeue) on other nodes; past that
# wait (Slurm did not: a job run with --no-kill, say) it says so and requeues the job itself.
# The wait is the controller's own bound, read from its configuration: a node is declared down
# at the first ping after SlurmdTimeout without an answer, the controller pings every
# SlurmdTimeout / 3 (slurmctld/controller.c: "ping_interval = slurm_conf.slurmd_timeout / 3")
# and waits MessageTimeout for the ping; 30 s more let the job be ended and requeued.
# A step that failed with every node alive ends the job with
# its status, as a crash.
_LOST_NODE_CHECK = """\
# A failed step: a lost node (requeue, resume) or a crash (end with its status)?
step_failed() {{
    local status=$1 node answered="" lost=() slurmd_timeout message_timeout wait_s
    for _ in 1 2; do
        answered=$(timeout 60 srun --nodes="$SLURM_JOB_NUM_NODES" \\
            --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 --overlap --gres=none \\
            printenv SLURMD_NODENAME 2>/dev/null || true)
        grep -qx "$SLURMD_NODENAME" <<< "$answered" && break
        answered=""
    done
    if [ -z "$answered" ]; then
        echo "recipekit: cannot tell whether a node was lost (a step on every node got no" \\
            "answer, from this node either); the step ended with $status" >&2
        exit "$status"
    fi
    for node in $(scontrol show hostnames "$SLURM_JOB_NODELIST"); do
        grep -qx "$node" <<< "$answered" || lost+=("$node")
    done
    [ ${{#lost[@]}} -eq 0 ] && exit "$status"
    for node in "${{lost[@]}}"; do
        echo "$SLURM_JOB_ID $(date +%s) $node" >> {record}
    done
    echo "recipekit: lost node(s) ${{lost[*]}} (slurmd does not answer; the step ended" \\
        "with $status): waiting for Slurm to requeue job $SLURM_JOB_ID on other nodes" >&2
    read -r slurmd_timeout message_timeout < <(scontrol show config | awk \\
        '/^SlurmdTimeout/ {{t = $3}} /^MessageTimeout/ {{m = $3}} END {{print t, m}}')
    # Slurm's defaults where the controller does not answer with a number.
    [[ $slurmd_timeout =~ ^[0-9]+$ ]] || slurmd_timeout=300
    [[ $message_timeout =~ ^[0-9]+$ ]] || message_timeout=10
    wait_s=$(( slurmd_timeout + slurmd_timeout / 3 + message_timeout + 30 ))
    sleep "$wait_s"
    echo "recipekit: Slurm has not requeued job $SLURM_JOB_ID in $wait_s s (SlurmdTimeout" \\
        "$slurmd_timeout s, a third of it between pings, MessageTimeout $message_timeout s," \\
        "30 s to act): requeueing it with scontrol requeue" >&2
    scontrol requeue "$SLURM_JOB_ID"
    exit "$status"
}}"""


# Every node's address (NodeAddr), from one call to the controller, for the steps on every node
# (slurm.node_addresses): a step that asked Slurm itself would make the calls grow with the
# node count. Empty if the controller does not answer: each step then asks for its own.
_NODE_ADDRESSES = """\
# Each node's address, asked once for all (the steps read it; none asks Slurm).
{variable}=$(timeout 60 scontrol show node --oneliner "$SLURM_JOB_NODELIST" | awk \\
    '{{for (i = 1; i <= NF; i++) {{if ($i ~ /^NodeName=/) n = substr($i, 10)
      if ($i ~ /^NodeAddr=/) a = substr($i, 10)}}; printf "%s=%s ", n, a}}' || true)
export {variable}"""
