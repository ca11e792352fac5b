"""A test's shared storage, framework checkout and cluster profile for one stage launcher.

Used by the launcher tests and the bring-up benchmark: the profile is a Python file (as a user's
would be), the framework checkout holds the fake entry point, and ``launcher`` runs the packaged
stage launcher inside the cluster's network namespace.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from tests.integration.support.local_slurm import LocalSlurm

# Processes of a job that must all be gone once it ends.
JOB_PROCESSES = (
    r"rk-ray-|raylet|gcs_server|launcher\.pex|run_grpo\.py|ray\.scripts|run_recipe\.py"
    r"|convert_checkpoints"
)



def nemo_rl_sources() -> Path:
    """NeMo-RL's pinned sources (tools/fetch-reference), per version: fake_run_grpo.py runs
    NeMo-RL's own model-path functions from them."""
    checkout = Path(__file__).resolve().parents[3]
    configured = os.environ.get("RECIPEKIT_REFERENCE_DIR")
    return (Path(configured) if configured else checkout / ".reference") / "nemo-rl"


PROFILE_TEMPLATE = """\
from recipekit.hardware import {node}
from recipekit.launch.profile import ClusterProfile, Gb200Settings, NoContainer, Tracking
from recipekit.launch.ray_ports import RayPorts

profile = ClusterProfile(
    name="local-test",
    node={node},
    partition="gpu",
    time_limit={time_limit!r},{startup_allowance}{signal_lead}
    container=NoContainer(python={python!r}),
    runs_dir={runs!r},
    # The local cluster's nodes are one host: the test's whole folder is storage they all see.
    shared_paths={{
        "checkpoints": {checkpoints!r}, "hf_home": {hf_home!r}, "workspace": {workspace!r}
    }},
    hf_home={hf_home!r},
    gb200={gb200},
    ray_ports=RayPorts(node_offset=1000),
    ray_start_timeout_s=180,
    start_workers_one_at_a_time=True,
    framework_root={framework_root!r},
    preflight_skip={skip!r},
    tracking={tracking},
)
"""


class Workspace:
    """One test's shared storage, framework checkout and cluster profile."""

    def __init__(
        self,
        root: Path,
        cluster: LocalSlurm,
        ray_python: Path,
        stage: str,
        launcher: Path,
        fake_driver: Path,
    ) -> None:
        self.root, self.cluster, self.stage, self.launcher_pex = root, cluster, stage, launcher
        self.shared = root / "shared"
        self.model = self.shared / "models" / "NVIDIA-Nemotron-3-Super-120B-A12B-Base-BF16"
        self.model.mkdir(parents=True)
        (self.shared / "checkpoints").mkdir()
        (self.shared / "HF_HOME").mkdir()
        framework = root / "nemo-rl"
        (framework / "examples").mkdir(parents=True)
        shutil.copy(fake_driver, framework / "examples" / "run_grpo.py")
        self.ray_python = ray_python
        self.framework_root = framework
        self.runs = root / "runs"
        self.runs.mkdir()  # on the shared storage: submit never creates it
        # Set for every launcher call (a subclass's RECIPEKIT_STAGE, PATH, ...).
        self.environment: dict[str, str] = {"FAKE_GRPO_NEMO_RL_SOURCE": str(nemo_rl_sources())}
        self.overrides = [
            f"policy.model_name={self.model}",
            f"checkpointing.checkpoint_dir={self.shared}/checkpoints/{stage}",
        ]

    def write_profile(
        self,
        *,
        node: str,
        gb200: str = "None",
        skip: dict[str, str] | None = None,
        checkpoints: Path | None = None,
        tracking: str = "Tracking(mode='off')",
        time_limit: str = "00:20:00",
        startup_allowance_s: int | None = None,
        time_limit_signal_s: int | None = None,
    ) -> str:
        path = self.root / f"profile_{len(list(self.root.glob('profile_*.py')))}.py"
        path.write_text(
            PROFILE_TEMPLATE.format(
                node=node,
                python=str(self.ray_python),
                runs=str(self.runs),
                checkpoints=str(checkpoints or self.shared / "checkpoints"),
                hf_home=str(self.shared / "HF_HOME"),
                workspace=str(self.root),
                gb200=gb200,
                framework_root=str(self.framework_root),
                skip=skip or {},
                tracking=tracking,
                time_limit=time_limit,
                startup_allowance=(
                    ""
                    if startup_allowance_s is None
                    else f"\n    startup_allowance_s={startup_allowance_s},"
                ),
                signal_lead=(
                    ""
                    if time_limit_signal_s is None
                    else f"\n    time_limit_signal_s={time_limit_signal_s},"
                ),
            )
        )
        return f"{path}:profile"

    def launcher(
        self,
        profile: str,
        command: str,
        *args: str,
        env: dict[str, str] | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        sets = [a for o in self.overrides for a in ("--set", o)]
        argv = [str(self.ray_python), str(self.launcher_pex.resolve()), command, *args, *sets]
        if command != "job-step":
            argv += ["--cluster", profile]
        full_env = {**self.cluster.env(), **self.environment, **(env or {})}
        return self.cluster.run(argv, env=full_env, timeout=timeout)

    def submit(self, profile: str, env: dict[str, str] | None = None) -> tuple[str, Path]:
        done = self.launcher(profile, "submit", env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        job_id = re.search(r"as Slurm job (\d+)", done.stdout)
        log = re.search(r"^log: (\S+)$", done.stdout, re.MULTILINE)
        assert job_id and log, done.stdout
        return job_id.group(1), Path(log.group(1))

    def wait_for_log(self, log: Path, text: str, timeout: float = 240) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            content = log.read_text(errors="replace") if log.exists() else ""
            if text in content:
                return content
            time.sleep(0.5)
        raise AssertionError(f"{text!r} not in {log} after {timeout} s:\n{content}")
