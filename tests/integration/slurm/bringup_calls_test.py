"""The Slurm calls of a bring-up do not grow with the node count (issue 42; NeMo-RL #3132): the
B200 GRPO stage brought up to "Ray up" on 2 and on 4 nodes of the local Slurm makes the same
calls in every phase -- submit, the batch script, preflight on every node, Ray on every node --
counted by wrappers around Slurm's clients (bench_bringup.bring_up, which also times it)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from tests.integration.slurm.bench_bringup import BringUpFailed, bring_up

LAUNCHER = Path("tests.integration.slurm/stage-launcher.pex")


# On a loaded 2-core host a Ray node's dashboard agent can take longer to start than the raylet
# waits for its port file (raylet: NodeManager::WaitForDashboardAgentPorts, then "The current
# node timed out during startup"; seen at load averages of 12 to 23): the agent gets 2 minutes.
SLOW_HOST = {"RAY_agent_register_timeout_ms": "120000"}


def _bring_up(root: Path, ray_python: Path, nodes: int) -> dict[str, Any]:
    """One bring-up, run again once if a Ray node still timed out starting."""
    try:
        return bring_up(
            root / "first", ray_python, LAUNCHER.resolve(), nodes, environment=SLOW_HOST
        )
    except BringUpFailed as failed:
        print(f"bring-up failed, once more: {failed}")
        return bring_up(
            root / "again", ray_python, LAUNCHER.resolve(), nodes, environment=SLOW_HOST
        )


def test_slurm_calls_per_phase_are_the_same_on_2_and_4_nodes(ray_python: Path) -> None:
    # A short root: slurmd's sockets under it must stay below the 108-byte Unix socket limit,
    # which pytest's tmp_path with this test's name and two more levels passed.
    with tempfile.TemporaryDirectory(prefix="rkbu", dir="/tmp") as short:
        two = _bring_up(Path(short) / "2", ray_python, 2)
        four = _bring_up(Path(short) / "4", ray_python, 4)
    assert two["slurm calls by phase"] == four["slurm calls by phase"], (two, four)
    # No step asks Slurm anything: the batch script reads the nodes' addresses once for all.
    phases = four["slurm calls by phase"]
    assert set(phases) == {"submit", "batch script"}, phases
    by_client = four["slurm calls by client"]
    assert by_client.get("scontrol show", 0) == 1 and by_client["srun"] == 2, by_client
    # slurmctld agrees: one node-information request at both sizes (a step retried while the
    # one before completes makes the step requests vary from run to run, not with the size).
    for run in (two, four):
        rpcs = run["controller RPCs (sdiag)"]
        node_info = rpcs.get("REQUEST_NODE_INFO", 0) + rpcs.get("REQUEST_NODE_INFO_SINGLE", 0)
        assert node_info == 1, run
