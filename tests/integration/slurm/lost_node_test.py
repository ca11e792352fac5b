"""A node lost mid-run on the local Slurm: Slurm declares it down, ends the job NODE_FAIL and
requeues it (--requeue); the job completes on the other nodes."""

from __future__ import annotations

from pathlib import Path

from tests.integration.slurm.launch_scenarios import FALLBACK_REQUEUE, lose_a_node


def test_a_lost_node_is_requeued_by_slurm_and_completes_on_the_others(
    tmp_path: Path, ray_python: Path
) -> None:
    # The controller declares a silent node down after SlurmdTimeout: long enough here that the
    # step fails first (srun sees its task on the node killed within a second) and the script
    # finds the node silent before Slurm knows (as on a real cluster, where it is 300 s); then
    # Slurm ends the job NODE_FAIL and requeues it (--requeue), while the script still waits
    # (21 + 7 + 10 + 30 s) before its fallback.
    _, _, text, records = lose_a_node(tmp_path, ray_python, slurmd_timeout=21, env={})
    assert FALLBACK_REQUEUE not in text, text
    states = [r["JobState"] for r in records]
    assert states[:1] == ["NODE_FAIL"], states
