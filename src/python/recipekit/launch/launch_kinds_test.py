"""Launch kinds without Ray, blocked stages and tracking at submit: what needs no cluster.

The same paths run under a real Slurm in tests/integration/slurm/launch_kinds_test.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from click.testing import CliRunner

from recipekit.cli import stage_launcher
from recipekit.errors import RecipeError
from recipekit.launch.entry_point import (
    RendezvousError,
    distributed_environment,
    read_rendezvous,
    write_rendezvous,
)
from recipekit.launch.job_script import render_job_script
from recipekit.launch.preflight import (
    NodeContext,
    framework_entry_point_present,
    master_port_free,
    outputs_writable,
    ray_ports_free,
)
from recipekit.launch.profile import (
    ArtifactStore,
    ClusterProfile,
    Mount,
    NoContainer,
    Pyxis,
    Tracking,
)
from recipekit.launch.ray_ports import RayPorts
from recipekit.launch.run_dir import RunDir
from recipekit.launch.run_record import EXIT_NOT_RECORDED, capture_provenance, checkout_state
from recipekit.launch.submit import (
    check_submittable,
    check_tracking,
    submit_delegated,
    submit_plan,
)
from recipekit.lineage.store import init_store
from recipekit.lineage.tracking import lineage_from_json
from recipekit.nemo_rl.framework import NEMO_RL_GRPO
from recipekit.plan import Plan, make_plan
from recipekit.stage import Stage
from recipes.clusters import PROFILES, SHARED
from recipes.super3.dapo import dapo_b200
from recipes.super35.evaluation import evaluation
from recipes.super35.lineage import NOT_PUBLIC, SUPER35

# The recipe: the agentic teacher "depends on NeMo Gym components that are not public".
blocked = attrs.evolve(dapo_b200, name="teacher-agentic", lineage=SUPER35.stage("teacher-agentic"))
# A real framework implementation that launches per GPU (NeMo-RL's, with its launch changed).
per_gpu = attrs.evolve(dapo_b200, framework=attrs.evolve(NEMO_RL_GRPO, launch="per-gpu"))


def _profile(tmp_path: Path, **changes: Any) -> ClusterProfile:
    """The B200 cluster's profile, run without a container, artifact store or tracking."""
    (tmp_path / "runs").mkdir(exist_ok=True)
    local = {"container": NoContainer(), "runs_dir": str(tmp_path / "runs"), "artifact_store": None}
    return attrs.evolve(PROFILES["b200"], **{"tracking": Tracking(mode="off"), **local, **changes})


def _plan(stage: Stage, launch: str) -> Plan:
    """``stage``'s plan, as if its framework were started the ``launch`` way."""
    plan = make_plan(stage)
    started: Any = plan.stage.framework  # an attrs class, as every framework is
    framework = attrs.evolve(started, launch=launch)
    return attrs.evolve(plan, stage=attrs.evolve(plan.stage, framework=framework))


def _plan_json(stage: Stage, launch: str) -> dict[str, Any]:
    """What a node reads of it (``plan.json``)."""
    return _plan(stage, launch).as_json()


def _script(tmp_path: Path, launch: str, **profile_changes: Any) -> list[str]:
    plan = _plan(dapo_b200, launch)
    run = RunDir(tmp_path / "run")
    script = render_job_script(plan, _profile(tmp_path, **profile_changes), run)
    return [line.strip(" \\") for line in script.splitlines()]


def _steps(lines: list[str]) -> list[list[str]]:
    """Each srun command of a job script, its arguments one per item. Every one is followed
    by the lost-node check (``|| step_failed $?``), which is not listed."""
    steps: list[list[str]] = []
    checked = 0
    for line in lines:
        if line.startswith("srun"):
            steps.append([])
        elif not line or line.startswith("#") or line == "continue_if_unfinished":
            continue
        # A framework step runs in the background where a trap must run beside it
        # (continuation.waited): `srun ... &`, its pid kept, then `wait_step ...`.
        if line in ("|| step_failed $?", 'wait_step "$framework_step" || step_failed $?'):
            checked += 1
        elif line == "framework_step=$!":
            continue
        elif steps and line:
            steps[-1].append(line.removesuffix(" &"))
    assert checked == len(steps), "a step without the lost-node check"
    return steps


def test_per_gpu_script_preflights_every_node_then_starts_a_task_per_gpu(tmp_path: Path) -> None:
    lines = _script(tmp_path, "per-gpu", tracking=Tracking(mode="offline"))
    preflight, ranks, record = _steps(lines)
    assert preflight[-2:] == ["preflight", str(tmp_path / "run")]
    assert {"--nodes=3", "--ntasks=3", "--ntasks-per-node=1"} <= set(preflight)
    # Every node reports: a node's reason is not cut off by another node's exit.
    assert "--kill-on-bad-exit=1" not in preflight
    assert ranks[-2] == "entry-point"
    assert {"--nodes=3", "--ntasks=24", "--ntasks-per-node=8", "--kill-on-bad-exit=1"} <= set(ranks)
    assert record[-2] == "record" and {"--relative=0", "--ntasks=1", "--gres=none"} <= set(record)
    # Each step runs only once the one before ended well on every node.
    assert "set -euo pipefail" in lines and not any(line.startswith("exec") for line in lines)


def test_head_script_runs_the_entry_point_once_and_records_only_when_tracking(
    tmp_path: Path,
) -> None:
    preflight, head, finish = _steps(_script(tmp_path, "head"))
    assert preflight[-2] == "preflight" and "--ntasks=3" in preflight
    assert head[-2] == "entry-point" and {"--nodes=1", "--ntasks=1", "--relative=0"} <= set(head)
    # Tracking off, the last step still decides whether the stage is done or continues
    # (continuation.finish_attempt): dapo saves checkpoints, so it has a save deadline.
    assert finish[-2] == "record"
    assert len(_steps(_script(tmp_path, "head", tracking=Tracking(mode="online")))) == 3


def test_ray_script_preflights_every_node_then_runs_one_ray_step(tmp_path: Path) -> None:
    preflight, step = _steps(_script(tmp_path, "ray", tracking=Tracking(mode="online")))
    assert preflight[0] == "srun" and preflight[-2] == "preflight"
    assert "--kill-on-bad-exit=1" not in preflight
    assert step[0] == "srun" and step[-2] == "job-step" and "--ntasks-per-node=1" in step
    # A Ray worker that fails ends the step: the head would otherwise wait for it.
    assert "--kill-on-bad-exit=1" in step


VLLM_IMAGE = "docker.io/vllm/vllm-openai@sha256:" + "2" * 64


def _eval_profile(tmp_path: Path, image: str = VLLM_IMAGE, **changes: Any) -> ClusterProfile:
    """The GB200 cluster's profile for the eval stage: its vLLM image pinned by digest, its
    artifact store in ``tmp_path``."""
    init_store(tmp_path / "artifacts")
    (tmp_path / "runs").mkdir(exist_ok=True)
    fields: dict[str, Any] = {
        "container": Pyxis(image=image, mounts=(Mount(str(tmp_path), "/shared"),)),
        "runs_dir": str(tmp_path / "runs"),
        "artifact_store": ArtifactStore(path=str(tmp_path / "artifacts")),
        "tracking": Tracking(mode="off"),
    }
    return attrs.evolve(PROFILES["gb200-nvl72"], **{**fields, **changes})


def test_a_delegated_stage_is_handed_to_its_own_slurm_client_with_the_clusters_values(
    tmp_path: Path,
) -> None:
    plan = make_plan(evaluation)
    profile = _eval_profile(tmp_path, login_host="login1", account="acct")
    run = RunDir(tmp_path / "run")
    script = render_job_script(plan, profile, run)
    lines = [line.strip(" \\") for line in script.splitlines()]
    # No batch job of recipekit's: nothing for sbatch, no srun, no preflight.
    assert not [line for line in lines if line.startswith(("#SBATCH", "srun", "exec srun"))]
    start = lines.index("exec nemo-evaluator-launcher")
    assert lines[start + 1 : start + 4] == ["run", "--config", str(run.file("config.yaml"))]
    assert lines[start + 4 : start + 12 : 2] == ["-o"] * 4
    overrides = lines[start + 5 : start + 13 : 2]
    assert overrides == [
        "execution.hostname=login1",
        "execution.account=acct",
        "execution.partition=gb200nvl72",
        f"deployment.image={VLLM_IMAGE}",
    ]
    assert f"cd {run.path}" in lines


def test_a_delegated_stage_without_a_login_host_is_refused_and_nothing_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = make_plan(evaluation)
    profile = _eval_profile(tmp_path, login_host=None)
    script = render_job_script(plan, profile, RunDir(tmp_path / "run"))
    assert "# {login_host} unset in the profile: submit refuses until it is set." in script
    monkeypatch.setenv("PATH", str(tmp_path))  # and no nemo-evaluator-launcher here
    with pytest.raises(RecipeError) as refused:
        submit_delegated(plan, profile, print)
    assert [issue.path for issue in refused.value.issues] == [
        "profile gb200-nvl72",
        "nemo-evaluator-launcher",
    ]
    text = refused.value.render()
    assert "needs the host its Slurm client submits from (profile login_host)" in text
    assert "nemo-evaluator-launcher: not on this host's PATH" in text
    assert list((tmp_path / "runs").iterdir()) == []
    tagged = _eval_profile(tmp_path, image="vllm:v1", login_host="login1")
    with pytest.raises(RecipeError, match="names a tag, not a digest"):
        submit_delegated(plan, tagged, print)


def test_status_of_a_delegated_run_points_at_the_client_that_owns_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = make_plan(evaluation)
    run = RunDir.for_plan(str(tmp_path / "runs"), "eval", plan.hash)
    run.path.mkdir(parents=True)
    run.write_text("job.json", json.dumps({"delegated_to": "nemo-evaluator-launcher"}))
    runner = _launcher(monkeypatch, "evaluation")
    profile = _profile_file(tmp_path, "Tracking(mode='off')")
    for command in ("status", "logs", "cancel"):
        result = runner.invoke(stage_launcher.cli, [command, "--cluster", profile])
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.stderr
        assert "handed to nemo-evaluator-launcher, which owns its Slurm job" in result.stderr
        assert "`nemo-evaluator-launcher status`" in result.stderr


def test_an_interactive_cluster_needs_a_ray_stage(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="--interactive: keeps a Ray cluster up"):
        submit_plan(make_plan(per_gpu), _profile(tmp_path), interactive=True)
    assert list((tmp_path / "runs").iterdir()) == []


def test_torch_distributed_environment_comes_from_slurms_task_layout() -> None:
    plan = _plan_json(dapo_b200, "per-gpu")  # 3 nodes x 8 GPUs
    slurm = {"SLURM_NTASKS": "24", "SLURM_PROCID": "13", "SLURM_LOCALID": "5", "SLURM_NODEID": "1"}
    assert distributed_environment(slurm, plan, "10.0.0.1", 29500) == {
        "MASTER_ADDR": "10.0.0.1",
        "MASTER_PORT": "29500",
        "WORLD_SIZE": "24",
        "RANK": "13",
        "LOCAL_RANK": "5",
        "LOCAL_WORLD_SIZE": "8",
        "NODE_RANK": "1",
    }
    with pytest.raises(RendezvousError, match="the job step has 3 tasks, the plan 24 GPUs"):
        distributed_environment({**slurm, "SLURM_NTASKS": "3"}, plan, "10.0.0.1", 29500)
    with pytest.raises(RendezvousError, match="'SLURM_PROCID' is not set"):
        distributed_environment({"SLURM_NTASKS": "24"}, plan, "10.0.0.1", 29500)


def test_a_rank_refuses_another_jobs_rendezvous(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    with pytest.raises(RendezvousError, match="cannot read"):
        read_rendezvous(run, "41")
    write_rendezvous(run, "41", "127.0.1.1")
    assert read_rendezvous(run, "41") == "127.0.1.1"
    with pytest.raises(RendezvousError, match="is job 41's, this is job 42"):
        read_rendezvous(run, "42")


def test_master_port_must_stay_below_the_ephemeral_range(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="master_port=40000 must be in 1024..32767"):
        _profile(tmp_path, master_port=40000)


def _ctx(tmp_path: Path, launch: str, node_index: int, **changes: Any) -> NodeContext:
    return NodeContext(
        plan=_plan_json(dapo_b200, launch),
        profile=_profile(tmp_path, framework_root=str(tmp_path), **changes),
        node_index=node_index,
        node_name=f"n{node_index + 1}",
        node_address="127.0.0.1",
        run_path=str(tmp_path),
    )


def test_preflight_checks_the_ports_and_entry_point_of_the_launch_kind(
    tmp_path: Path, listening_port: Callable[[], int]
) -> None:
    gcs, master = listening_port(), listening_port()
    ports = {"ray_ports": RayPorts(gcs=gcs), "master_port": master}
    assert f"gcs {gcs}" in (ray_ports_free(_ctx(tmp_path, "ray", 0, **ports)) or "")
    assert ray_ports_free(_ctx(tmp_path, "per-gpu", 0, **ports)) is None  # no Ray
    assert master_port_free(_ctx(tmp_path, "per-gpu", 0, **ports)) == (
        f"MASTER_PORT {master} is already in use on 127.0.0.1 (profile.master_port)"
    )
    # Rank 0 listens on the first node; a head-only stage has no rank 0.
    assert master_port_free(_ctx(tmp_path, "per-gpu", 1, **ports)) is None
    assert master_port_free(_ctx(tmp_path, "head", 0, **ports)) is None
    # Every node runs the entry point per GPU; only the head does otherwise.
    assert "not found" in (framework_entry_point_present(_ctx(tmp_path, "per-gpu", 2)) or "")
    assert framework_entry_point_present(_ctx(tmp_path, "head", 2)) is None


def test_a_blocked_stage_plans_but_is_never_submitted(tmp_path: Path) -> None:
    plan = make_plan(blocked)
    assert plan.as_json()["lineage"]["blocked"] == NOT_PUBLIC
    with pytest.raises(RecipeError) as caught:
        check_submittable(plan, _profile(tmp_path))
    assert caught.value.render() == (
        f"teacher-agentic: cannot launch: lineage.blocked: {NOT_PUBLIC} "
        "(`plan` and `render` still show what it would run)"
    )


def test_online_tracking_needs_the_key_where_submit_runs(tmp_path: Path) -> None:
    online = _profile(tmp_path, tracking=Tracking(mode="online"))
    with pytest.raises(RecipeError, match="WANDB_API_KEY: is not set"):
        check_tracking(online, environ={})
    check_tracking(online, environ={"WANDB_API_KEY": "k" * 40})
    check_tracking(_profile(tmp_path, tracking=Tracking(mode="off")), environ={})
    assert PROFILES["b200"].tracking == Tracking(mode="online", entity="your-team")


def test_provenance_names_the_checkout_and_whether_it_had_changes(tmp_path: Path) -> None:
    assert checkout_state(tmp_path) == {"git_commit": None, "git_dirty": None}

    def git(*args: str) -> str:
        command = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
        return subprocess.run([*command, *args], capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    (tmp_path / "recipe.py").write_text("x = 1\n")
    git("add", "recipe.py")
    git("commit", "-qm", "recipe")
    commit = git("rev-parse", "HEAD")
    assert checkout_state(tmp_path) == {"git_commit": commit, "git_dirty": False}
    (tmp_path / "new_recipe.py").write_text("y = 2\n")
    assert checkout_state(tmp_path) == {"git_commit": commit, "git_dirty": True}
    digest = "nvcr.io/org/nemo-rl@sha256:" + "0" * 64
    pinned = attrs.evolve(PROFILES["b200"], container=Pyxis(image=digest, mounts=SHARED))
    provenance = json.loads(capture_provenance(make_plan(dapo_b200).as_json(), pinned, tmp_path))
    assert provenance["images"] == {"nemo-rl": digest}


def test_the_job_reads_the_lineage_back_from_the_plan() -> None:
    for name in ("rlvr", "pretrain", "mopd-phase1", "eval"):
        lineage = SUPER35.stage(name)
        again = lineage_from_json(name, lineage.as_json())
        assert again.as_json() == lineage.as_json()
        assert again.artifact_inputs() == lineage.artifact_inputs()
    outside = lineage_from_json("dapo-b200", None)
    assert outside.inputs == {} and outside.output is None


# --- the stage launcher's command line --------------------------------------------------------


def _launcher(monkeypatch: pytest.MonkeyPatch, stage: str) -> CliRunner:
    monkeypatch.setenv(stage_launcher.STAGE_VARIABLE, f"{__name__}:{stage}")
    return CliRunner()


def _profile_file(tmp_path: Path, tracking: str) -> str:
    (tmp_path / "runs").mkdir(exist_ok=True)
    path = tmp_path / "profile.py"
    path.write_text(
        "from recipekit.hardware import B200_NODE\n"
        "from recipekit.launch.profile import ClusterProfile, NoContainer, Tracking\n"
        f"profile = ClusterProfile(name='local', node=B200_NODE, partition='gpu', "
        f"container=NoContainer(), runs_dir={str(tmp_path / 'runs')!r}, tracking={tracking})\n"
    )
    return f"{path}:profile"


def test_submit_and_run_refuse_a_blocked_stage_and_change_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    runner = _launcher(monkeypatch, "blocked")
    profile = _profile_file(tmp_path, "Tracking(mode='off')")
    for command in ("submit", "run"):
        result = runner.invoke(stage_launcher.cli, [command, "--cluster", profile])
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.stderr
        assert f"teacher-agentic: cannot launch: lineage.blocked: {NOT_PUBLIC}" in result.stderr
    assert list((tmp_path / "runs").iterdir()) == []
    rendered = runner.invoke(stage_launcher.cli, ["render", str(tmp_path / "out")])
    assert rendered.exit_code == 0, rendered.stderr
    planned = runner.invoke(stage_launcher.cli, ["plan"])
    assert planned.exit_code == 0 and f"BLOCKED: {NOT_PUBLIC}" in planned.stdout


def test_submit_without_the_key_for_online_tracking_names_the_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("PEX", str(tmp_path / "launcher.pex"))
    (tmp_path / "launcher.pex").write_bytes(b"")
    runner = _launcher(monkeypatch, "per_gpu")
    profile = _profile_file(tmp_path, "Tracking(mode='online')")
    result = runner.invoke(stage_launcher.cli, ["submit", "--cluster", profile])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: tracking: WANDB_API_KEY: is not set")
    assert "export WANDB_API_KEY" in result.stderr and "Tracking(mode='off')" in result.stderr
    assert list((tmp_path / "runs").iterdir()) == []


def test_saved_steps_are_found_in_both_frameworks_layouts(tmp_path: Path) -> None:
    from recipekit.lineage.store import saved_steps

    assert saved_steps(tmp_path) == {}  # nothing saved yet
    for name in ("step_10", "step_120", "step_30", "logs", "step_x"):
        (tmp_path / name).mkdir()
    assert sorted(saved_steps(tmp_path)) == [10, 30, 120]
    megatron = tmp_path / "mb"
    (megatron / "iter_0000200").mkdir(parents=True)
    (megatron / "latest_checkpointed_iteration.txt").write_text("200")
    assert saved_steps(megatron) == {200: megatron / "iter_0000200"}
    # Iteration 300's shards are still being written: no train state, past the tracker.
    (megatron / "iter_0000300").mkdir()
    assert saved_steps(megatron) == {200: megatron / "iter_0000200"}
    (megatron / "iter_0000300" / "train_state.pt").write_bytes(b"state")  # finalized
    assert sorted(saved_steps(megatron)) == [200, 300]
    assert saved_steps(tmp_path / "absent") == {}


def _client(bin_dir: Path, body: str) -> None:
    """An executable ``nemo-evaluator-launcher`` on ``bin_dir``: the client's side of the
    boundary (the real launcher's rendering is launcher_oracle_test.py's)."""
    bin_dir.mkdir(exist_ok=True)
    client = bin_dir / "nemo-evaluator-launcher"
    client.write_text("#!/bin/sh\n" + body)
    client.chmod(0o755)


def test_a_delegated_submit_whose_client_fails_records_the_failure_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = make_plan(evaluation)
    profile = _eval_profile(tmp_path, login_host="login1", tracking=Tracking(mode="offline"))
    refused = 'echo "ssh: connect to host login1: Connection refused" >&2\nexit 255\n'
    _client(tmp_path / "bin", refused)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    seen: list[str] = []
    done = submit_delegated(plan, profile, seen.append)
    assert (done.client_status, done.record_status) == (255, None)
    assert seen == ["ssh: connect to host login1: Connection refused"]
    record = json.loads(done.run.file("job.json").read_text())
    assert record["exit_status"] == 255 and record["delegated_to"] == "nemo-evaluator-launcher"
    assert "Connection refused" in Path(record["log"]).read_text()
    assert not (done.run.path / "wandb").exists()  # nothing recorded for a run never submitted


def test_a_delegated_submit_whose_record_fails_after_the_client_submitted_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = make_plan(evaluation)
    profile = _eval_profile(tmp_path, login_host="login1", tracking=Tracking(mode="offline"))
    # The client submits, and leaves a file where W&B's offline run directory has to go.
    _client(tmp_path / "bin", 'echo "submitted batch job 4242"\n: > wandb\nexit 0\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("WANDB_SILENT", "true")
    seen: list[str] = []
    done = submit_delegated(plan, profile, seen.append)
    assert done.client_status == 0
    assert done.record_status == EXIT_NOT_RECORDED
    assert seen[0] == "submitted batch job 4242"
    assert [line for line in seen if line.startswith("tracking: the run is NOT recorded")]
    record = json.loads(done.run.file("job.json").read_text())
    assert record["exit_status"] == 0  # the job is the client's; it was submitted


def _as_nobody(check: Callable[[], str | None]) -> str | None:
    """``check()`` in a child process that has dropped to the unprivileged user (uid 65534), as
    a job runs on a cluster; here already when the test is not root."""
    if os.geteuid() != 0:
        return check()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child reports through the pipe)
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.write(write, json.dumps(check()).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        found = answer.read()
    os.waitpid(child, 0)
    result: str | None = json.loads(found)
    return result


def test_preflight_names_an_output_its_user_cannot_write(tmp_path: Path) -> None:
    # Under /tmp (not pytest's private folder), so that the unprivileged user can reach it.
    root = Path(tempfile.mkdtemp(prefix="recipekit-preflight-"))
    try:
        root.chmod(0o755)
        (root / "checkpoints").mkdir(mode=0o755)
        ctx = _ctx(tmp_path, "ray", 0)
        target = root / "checkpoints" / "dapo"
        ctx = attrs.evolve(ctx, plan={**ctx.plan, "outputs": {"checkpoints": str(target)}})
        assert outputs_writable(ctx) is None  # its owner can
        assert _as_nobody(lambda: outputs_writable(ctx)) == (
            f"checkpoints {target}: {root / 'checkpoints'} is not writable (Permission denied)"
        )
        (root / "checkpoints").chmod(0o777)
        assert _as_nobody(lambda: outputs_writable(ctx)) is None
    finally:
        shutil.rmtree(root)


@pytest.mark.parametrize("launch", ["ray", "per-gpu", "head"])
def test_every_script_is_valid_bash_and_tells_a_lost_node_from_a_crash(
    tmp_path: Path, launch: str
) -> None:
    plan, run = _plan(dapo_b200, launch), RunDir(tmp_path / "run")
    text = render_job_script(plan, _profile(tmp_path, tracking=Tracking(mode="offline")), run)
    lines = [line.strip(" \\") for line in text.splitlines()]
    script = tmp_path / "job.sbatch"
    script.write_text(text)
    checked = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    # One step asks every node at once (bringup_scale_test runs it); a silent one is recorded
    # for `status`, and the job waits for Slurm to requeue it rather than ending as a crash.
    probe = "--ntasks-per-node=1 --overlap --gres=none"
    assert any(probe in line for line in lines)
    assert not any("--nodelist=" in line for line in lines)
    assert any(line.endswith(f">> {tmp_path / 'run' / 'lost-nodes'}") for line in lines)
    assert 'scontrol requeue "$SLURM_JOB_ID"' in lines
