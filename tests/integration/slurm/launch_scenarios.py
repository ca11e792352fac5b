"""What the stage-launch tests on the local Slurm share: the packaged launchers, the NeMo-RL
stand-in, and the lost-node scenario both requeue tests run (one file each, so that Pants runs
them beside each other: each waits on Slurm's timeouts far more than it computes)."""

from __future__ import annotations

from pathlib import Path

from tests.integration.support.local_slurm import LocalSlurm, local_slurm
from tests.integration.support.stage_workspace import Workspace

HERE = Path(__file__).parent
# The stage launchers, as `./pants package` builds them (runtime_package_dependencies).
LAUNCHERS = {
    "dapo-b200": Path("recipes.super3/dapo-b200.pex"),
    "dapo-gb200": Path("recipes.super3/dapo-gb200.pex"),
}
FAKE_DRIVER = HERE / "fake_run_grpo.py"

# What the job script says when it requeues the job itself (job_script._LOST_NODE_CHECK).
FALLBACK_REQUEUE = "requeueing it with scontrol requeue"
WAITING_FOR_SLURM = "waiting for Slurm to requeue job"


def lose_a_node(
    tmp_path: Path, ray_python: Path, *, slurmd_timeout: int, env: dict[str, str]
) -> tuple[LocalSlurm, str, str, list[dict[str, str]]]:
    """Run a three-node plan on four nodes, kill one of its nodes mid-run (not the batch host),
    and wait for the job to complete on the others: (cluster, job id, log text, the job's
    jobcomp records, oldest first). Asserts what both ways of requeueing share."""
    with local_slurm(
        tmp_path / "slurm", nodes=4, gpus_per_node=8, extra_conf=f"SlurmdTimeout={slurmd_timeout}"
    ) as cluster:
        workspace = Workspace(
            tmp_path / "ws", cluster, ray_python, "dapo-b200", LAUNCHERS["dapo-b200"], FAKE_DRIVER
        )
        profile = workspace.write_profile(node="B200_NODE")
        job_id, log = workspace.submit(profile, env={"FAKE_GRPO_SLEEP": "60", **env})
        workspace.wait_for_log(log, "fake-grpo: training for 60 s")
        first = cluster.job_info(job_id)
        assert first is not None
        victim = sorted(set(hostnames(cluster, first["NodeList"])) - {first["BatchHost"]})[0]
        cluster.kill_node(victim)
        state = cluster.wait_for_job(job_id, timeout=600)
        text = log.read_text()
        assert state == "COMPLETED", text + cluster.describe()
        again = cluster.job_info(job_id)
        assert again is not None and int(again["Restarts"]) >= 1
        assert victim not in hostnames(cluster, again["NodeList"])
        assert f"lost node(s) {victim}" in text and WAITING_FOR_SLURM in text
        status = workspace.launcher(profile, "status")
        assert f"lost node {victim}" in status.stdout, status.stdout + status.stderr
        assert "restarted 1 time(s)" in status.stdout
        # Nothing of either attempt is left: every process in the cluster's namespace, by
        # where it runs, not by its name.
        assert cluster.wait_for_no_node_processes("", timeout=30) == []
        return cluster, job_id, text, cluster.jobcomp_records(job_id)


def hostnames(cluster: LocalSlurm, nodelist: str) -> list[str]:
    done = cluster.run(["scontrol", "show", "hostnames", nodelist], timeout=30)
    return done.stdout.split()
