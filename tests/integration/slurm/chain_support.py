"""What the chain tests on the local Slurm share: the profile the chain runs under, the store
with its imported data, the `recipekit` Pex that submits, and the chain's status as a user draws
it (``pipeline status --svg``). pipeline_chain_test.py runs the whole chain; rl_requeue_test.py
runs its RL stage alone on a store of its own, so that Pants runs the two side by side."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from recipekit.lineage.store import import_version, init_store
from tests.integration.support.local_slurm import LocalSlurm, local_slurm, mount_prefix
from tests.integration.support.stage_workspace import nemo_rl_sources

HERE = Path(__file__).resolve().parent
CHAIN = HERE / "chain_stages.py"
CLI = Path("tests.integration.slurm/recipekit-cli.pex")
STORE_MOUNT = "/artifacts"
VLLM_IMAGE = "docker.io/vllm/vllm-openai@sha256:" + "3" * 64
# The data the chain's RL stages read, as `recipekit store import` registers it.
RL_DATA = (
    "super35-rl-rlvr-data",
    "super35-rl-teacher-reasoning-data",
    "super35-rl-mopd-phase1-data",
)

PROFILE = """\
import sys

sys.path.insert(0, {here!r})
from fake_stages import FAKE_NODE
from recipekit.launch.profile import (
    ArtifactStore, BaseContainer, ClusterProfile, NoContainer, Tracking
)
from recipekit.launch.ray_ports import RayPorts

profile = ClusterProfile(
    name="local-chain",
    node=FAKE_NODE,
    partition="gpu",
    account="chain-team",
    # Where NeMo Evaluator's launcher submits from, and the vLLM image it is told to run.
    login_host="localhost",
    bases={{"vllm": BaseContainer(image={vllm!r}, framework_root="/unused")}},
    time_limit="00:10:00",
    container=NoContainer(python={python!r}),
    runs_dir={runs!r},
    # The local cluster's nodes are one host: the test's whole folder is storage they all see.
    shared_paths={{"workspace": {root!r}}},
    framework_root={framework_root!r},
    artifact_store=ArtifactStore(path="/artifacts"),
    publish_interval_s=0.5,
    ray_ports=RayPorts(node_offset=1000),
    ray_start_timeout_s=180,
    start_workers_one_at_a_time=True,
    master_port=29731,
    tracking=Tracking(mode="offline", project="rk-chain"),
)
"""


class Chain:
    """The test's store, framework checkout, profile and the `recipekit` Pex that submits."""

    def __init__(
        self,
        root: Path,
        cluster: LocalSlurm,
        ray_python: Path,
        store: Path,
        export_options: list[str],
    ) -> None:
        self.root, self.cluster, self.ray_python, self.store = root, cluster, ray_python, store
        framework = root / "framework"
        for fake, where in (
            ("fake_train.py", "scripts/training/run_recipe.py"),
            ("fake_train.py", "examples/conversion/convert_checkpoints_multi_gpu.py"),
            ("fake_run_grpo.py", "examples/nemo_gym/run_grpo_nemo_gym.py"),
        ):
            (framework / where).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(HERE / fake, framework / where)
        # NeMo Evaluator's console script on the submit host's PATH.
        self.bin = root / "bin"
        self.bin.mkdir()
        shutil.copy(HERE / "fake_evaluator_launcher.py", self.bin / "nemo-evaluator-launcher")
        os.chmod(self.bin / "nemo-evaluator-launcher", 0o755)
        self.evaluations = root / "evaluations"
        self.runs = root / "runs"
        self.runs.mkdir()  # on the shared storage: submit never creates it
        self.profile = root / "profile.py"
        self.profile.write_text(
            PROFILE.format(
                here=str(HERE),
                python=str(ray_python),
                runs=str(self.runs),
                root=str(root),
                framework_root=str(framework),
                vllm=VLLM_IMAGE,
            )
        )
        # Pretraining reads its starting checkpoint and data from the environment (the recipe).
        self.environment = {
            "SUPER35_INIT_CHECKPOINT": str(root / "init-checkpoint"),
            "SUPER35_PRETRAIN_DATA": str(root / "pretrain-data"),
            "FAKE_GRPO_STEP_SECONDS": "1.5",
            "FAKE_GRPO_NEMO_RL_SOURCE": str(nemo_rl_sources()),
            "FAKE_EXPORT_OPTIONS": ",".join(export_options),
            "PATH": f"{self.bin}:{cluster.env()['PATH']}",
        }
        for name in ("init-checkpoint", "pretrain-data"):
            (root / name).mkdir()

    def recipekit(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """`recipekit ARGS` on the submit host, which mounts the store where the nodes do."""
        argv = [str(self.ray_python), str(CLI.resolve()), *args]
        env = {**self.cluster.env(), **self.environment}
        prefix = mount_prefix({STORE_MOUNT: self.store})
        return self.cluster.run([*prefix, *argv], env=env, timeout=timeout, cwd=Path.cwd())

    def submit(self, *args: str) -> dict[str, str]:
        done = self.recipekit(
            "pipeline", "submit", str(CHAIN), "--cluster", f"{self.profile}:profile", *args
        )
        assert done.returncode == 0, done.stdout + done.stderr
        self.submitted = done.stdout
        jobs = dict(re.findall(r"^(\S+)\s+job (\d+)", done.stdout, re.MULTILINE))
        assert jobs, done.stdout
        return jobs

    def log(self, stage: str, job_id: str) -> str:
        [run] = self.runs.glob(f"{stage}-*/logs/slurm-{job_id}.out")
        return run.read_text(errors="replace")


def new_store(
    tmp_path_factory: pytest.TempPathFactory, models: Iterable[str] = ()
) -> Path:
    """An artifact store holding the chain's RL data and, imported as `model import` registers
    them, the ``models`` named (each a one-file checkpoint)."""
    root = tmp_path_factory.mktemp("store")
    init_store(root)
    data = tmp_path_factory.mktemp("data")
    for name in ("train.jsonl", "val.jsonl"):
        (data / name).write_text('{"prompt": "2+2?"}\n')
    for artifact in RL_DATA:
        import_version(root, artifact, data, name="imported")
    model = tmp_path_factory.mktemp("model")
    (model / "weights.bin").write_text("a model\n")
    for artifact in models:
        import_version(root, artifact, model, name="imported")
    return root


@contextlib.contextmanager
def chain_on_two_nodes(
    tmp_path_factory: pytest.TempPathFactory,
    ray_python: Path,
    store: Path,
    export_options: list[str],
) -> Iterator[Chain]:
    """A two-node cluster of four fake GPUs each, mounting ``store`` at /artifacts, and the
    chain's profile and framework checkout on it; every job cancelled at the end."""
    mounts = {STORE_MOUNT: store}
    with local_slurm(
        tmp_path_factory.mktemp("slurm-chain"), nodes=2, gpus_per_node=4, node_mounts=mounts
    ) as cluster:
        root = tmp_path_factory.mktemp("chain")
        yield Chain(root, cluster, ray_python, store, export_options)
        cluster.cancel_all()


def status_svg(chain: Chain, *args: str) -> str:
    """`pipeline status --svg` of the chain: the drawing read from Slurm's and the store's
    records, as a user draws it."""
    out = chain.runs / f"status-{time.monotonic_ns()}.svg"
    done = chain.recipekit(
        "pipeline", "status", str(CHAIN), "--cluster", f"{chain.profile}:profile",
        *args, "--svg", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return out.read_text()


def states_in(svg: str) -> dict[str, str]:
    """Each stage's drawn state: its group's state-* class."""
    found = re.findall(r'<g id="stage:([^"]+)" class="[^"]*\bstate-([a-z-]+)', svg)
    return dict(found)


def drawn_states(chain: Chain, *args: str) -> dict[str, str]:
    return states_in(status_svg(chain, *args))
