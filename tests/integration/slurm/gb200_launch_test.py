"""A GB200 plan (4 GPUs a node, IMEX channel, NVL72 settings) on five nodes of the local Slurm,
through the packaged dapo-gb200 launcher."""

from __future__ import annotations

import os
from pathlib import Path

from tests.integration.slurm.launch_scenarios import FAKE_DRIVER, LAUNCHERS
from tests.integration.support.local_slurm import local_slurm
from tests.integration.support.stage_workspace import JOB_PROCESSES, Workspace


def test_gb200_plan_on_five_nodes(tmp_path: Path, ray_python: Path) -> None:
    with local_slurm(tmp_path / "slurm", nodes=5, gpus_per_node=4) as cluster:
        workspace = Workspace(
            tmp_path / "ws", cluster, ray_python, "dapo-gb200", LAUNCHERS["dapo-gb200"], FAKE_DRIVER
        )
        channels = tmp_path / "imex"
        channels.mkdir()
        os.mknod(channels / "channel3")
        profile = workspace.write_profile(
            node="GB200_NODE",
            # The local Slurm (Debian's 22.05) predates sbatch --segment (24.05).
            gb200=f"Gb200Settings(imex_channel=3, imex_device_dir={str(channels)!r}, "
            "gloo_socket_ifname='lo', slurm_segment=False)",
            skip={
                "cpu-arch": "the GB200 plan is for aarch64; this test host is x86_64",
                # No nvidia-smi here; placement_test.py checks racks from nvidia-smi -q files.
                "nvlink-domains": "no NVLink fabric on this test host",
            },
        )
        job_id, log = workspace.submit(profile)
        state = cluster.wait_for_job(job_id, timeout=420)
        text = log.read_text()
        assert state == "COMPLETED", text
        assert "ray cluster complete: 5 nodes, 20 GPUs" in text
        assert "preflight imex-channel: ok" in text
        assert "preflight cpu-arch: skipped (the GB200 plan is for aarch64" in text
        script = (log.parent.parent / "job.sbatch").read_text()
        assert "#SBATCH --gres=gpu:4" in script and "export NCCL_MNNVL_ENABLE=1" in script
        assert cluster.wait_for_no_node_processes(JOB_PROCESSES, timeout=30) == []
