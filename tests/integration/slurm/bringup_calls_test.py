"""The Slurm calls of a bring-up do not grow with the node count (issue 42; NeMo-RL #3132): the
B200 GRPO stage brought up to "Ray up" on 2 and on 4 nodes of the local Slurm makes the same
calls in every phase -- submit, the batch script, preflight on every node, Ray on every node --
counted by wrappers around Slurm's clients (bench_bringup.bring_up, which also times it)."""

from __future__ import annotations

from pathlib import Path

from tests.integration.slurm.bench_bringup import bring_up

LAUNCHER = Path("tests.integration.slurm/stage-launcher.pex")


def test_slurm_calls_per_phase_are_the_same_on_2_and_4_nodes(
    tmp_path: Path, ray_python: Path
) -> None:
    two = bring_up(tmp_path / "two", ray_python, LAUNCHER.resolve(), 2)
    four = bring_up(tmp_path / "four", ray_python, LAUNCHER.resolve(), 4)
    assert two["slurm calls by phase"] == four["slurm calls by phase"], (two, four)
    # No step asks Slurm anything: the batch script reads the nodes' addresses once for all.
    phases = four["slurm calls by phase"]
    assert set(phases) == {"submit", "batch script"}, phases
    by_client = four["slurm calls by client"]
    assert by_client.get("scontrol show", 0) == 1 and by_client["srun"] == 2, by_client
    # slurmctld agrees: the node and step requests it served are the same at both sizes.
    assert two["controller RPCs (sdiag)"] == four["controller RPCs (sdiag)"], (two, four)
