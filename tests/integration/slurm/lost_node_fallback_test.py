"""A node lost mid-run that Slurm does not requeue (--no-kill): the job script's own fallback
requeues the job after the controller's own bound (SlurmdTimeout, a third of it between
pings, MessageTimeout, 30 s), and it completes on the other nodes."""

from __future__ import annotations

from pathlib import Path

from tests.integration.slurm.launch_scenarios import FALLBACK_REQUEUE, lose_a_node


def test_a_lost_node_slurm_does_not_requeue_is_requeued_by_the_job_script(
    tmp_path: Path, ray_python: Path
) -> None:
    # --no-kill (sbatch reads SBATCH_NO_KILL over the script's directives): Slurm marks the node
    # down but keeps the job running on the others, so it never ends NODE_FAIL and never
    # requeues it. The script's own wait runs out and it requeues the job itself. A short
    # SlurmdTimeout keeps that wait (15 + 5 + 10 + 30 s) short.
    _, job_id, text, records = lose_a_node(
        tmp_path, ray_python, slurmd_timeout=15, env={"SBATCH_NO_KILL": "set"}
    )
    assert f"Slurm has not requeued job {job_id}" in text and FALLBACK_REQUEUE in text, text
    # Slurm shrinks the job off the lost node (RESIZING) and keeps it; the script's scontrol
    # requeue ends that attempt as PENDING (queued again), never NODE_FAIL; the next completes.
    states = [r["JobState"] for r in records]
    assert states == ["RESIZING", "PENDING", "COMPLETED"], states
