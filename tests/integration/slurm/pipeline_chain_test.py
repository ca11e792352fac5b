"""``recipekit pipeline submit`` on a real Slurm: a Super 3.5 chain hands checkpoints over.

The chain (``chain_stages.py``): pretrain-tiny -> sft-tiny (Megatron-Bridge, one process per
GPU) -> rlvr -> teacher-reasoning (NeMo-RL under Ray), each its own job after the jobs it reads
from. The nodes mount the artifact store at ``/artifacts`` (a folder of this test, bind-mounted
in the slurmds' own mount namespace, as a real node mounts shared storage); the submitting host
sees it there too. The stand-ins (``fake_train.py``, ``fake_run_grpo.py``) read their input
checkpoint where the plan resolved it, failing if it is absent, and save checkpoints at the
configured cadence; RLVR keeps only its newest, so the teacher's step survives only because the
pipeline pins it. Runs are recorded with wandb offline and read back.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from recipekit.lineage.store import import_version, init_store, versions
from recipekit.lineage.tracking import lineage_edges, read_offline_run
from tests.integration.support.local_slurm import LocalSlurm, local_slurm, mount_prefix
from tests.integration.support.stage_workspace import JOB_PROCESSES

HERE = Path(__file__).resolve().parent
CHAIN = HERE / "chain_stages.py"
CLI = Path("tests.integration.slurm/recipekit-cli.pex")
STORE_MOUNT = "/artifacts"
RL_MODEL = "super35-rl-rlvr-model"

PROFILE = """\
import sys

sys.path.insert(0, {here!r})
from fake_stages import FAKE_NODE
from recipekit.launch.profile import ArtifactStore, ClusterProfile, NoContainer, Tracking
from recipekit.launch.ray_ports import RayPorts

profile = ClusterProfile(
    name="local-chain",
    node=FAKE_NODE,
    partition="gpu",
    time_limit="00:10:00",
    container=NoContainer(python={python!r}),
    runs_dir={runs!r},
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

    def __init__(self, root: Path, cluster: LocalSlurm, ray_python: Path, store: Path) -> None:
        self.root, self.cluster, self.ray_python, self.store = root, cluster, ray_python, store
        framework = root / "framework"
        for fake, where in (
            ("fake_train.py", "scripts/training/run_recipe.py"),
            ("fake_run_grpo.py", "examples/nemo_gym/run_grpo_nemo_gym.py"),
        ):
            (framework / where).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(HERE / fake, framework / where)
        self.runs = root / "runs"
        self.runs.mkdir()  # on the shared storage: submit never creates it
        self.profile = root / "profile.py"
        self.profile.write_text(
            PROFILE.format(
                here=str(HERE),
                python=str(ray_python),
                runs=str(self.runs),
                framework_root=str(framework),
            )
        )
        # Pretraining reads its starting checkpoint and data from the environment (seed 004).
        self.environment = {
            "SUPER35_INIT_CHECKPOINT": str(root / "init-checkpoint"),
            "SUPER35_PRETRAIN_DATA": str(root / "pretrain-data"),
            "FAKE_GRPO_STEP_SECONDS": "1.5",
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
        jobs = dict(re.findall(r"^(\S+)\s+job (\d+)", done.stdout, re.MULTILINE))
        assert jobs, done.stdout
        return jobs

    def log(self, stage: str, job_id: str) -> str:
        [run] = self.runs.glob(f"{stage}-*/logs/slurm-{job_id}.out")
        return run.read_text(errors="replace")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The artifact store with the data the chain imports (as `recipekit store import` does)."""
    root = tmp_path_factory.mktemp("store")
    init_store(root)
    data = tmp_path_factory.mktemp("data")
    for name in ("train.jsonl", "val.jsonl"):
        (data / name).write_text('{"prompt": "2+2?"}\n')
    for artifact in (
        "super35-sft-data",
        "super35-rl-rlvr-data",
        "super35-rl-teacher-reasoning-data",
    ):
        import_version(root, artifact, data, name="imported")
    return root


@pytest.fixture(scope="module")
def chain(
    tmp_path_factory: pytest.TempPathFactory, ray_python: Path, store: Path
) -> Iterator[Chain]:
    mounts = {STORE_MOUNT: store}
    with local_slurm(
        tmp_path_factory.mktemp("slurm-chain"), nodes=2, gpus_per_node=4, node_mounts=mounts
    ) as cluster:
        yield Chain(tmp_path_factory.mktemp("chain"), cluster, ray_python, store)
        cluster.cancel_all()


def test_the_chain_hands_checkpoints_over_through_the_store(chain: Chain) -> None:
    planned = chain.recipekit("pipeline", "plan", str(CHAIN))
    assert planned.returncode == 0, planned.stderr
    assert "keeps step-4: later stages select it" in planned.stdout

    jobs = chain.submit()
    assert list(jobs) == ["pretrain-tiny", "sft-tiny", "rlvr", "teacher-reasoning"]
    for stage, job_id in jobs.items():
        state = chain.cluster.wait_for_job(job_id, timeout=420)
        assert state == "COMPLETED", f"{stage}: {state}\n{chain.log(stage, job_id)}"
    # Each job waited for the one it reads from (afterok), so each started after it ended.
    info = chain.cluster.jobcomp_records()
    ended = {r["JobId"]: r for r in info}
    order = list(jobs.values())
    for before, after in zip(order, order[1:], strict=False):
        assert ended[after]["StartTime"] >= ended[before]["EndTime"]

    # Every checkpoint a stage saved is a version of its output, with its step and latest.
    def steps(artifact: str) -> list[int | None]:
        return [v.step for v in versions(chain.store, artifact)]

    assert steps("super35-pretrain-model-tiny") == [20]
    assert steps("super35-sft-model-tiny") == [20]
    assert steps(RL_MODEL) == [2, 4, 6]
    assert steps("super35-rl-teacher-reasoning-model") == [2, 4, 6]
    rl = {v.step: v for v in versions(chain.store, RL_MODEL)}
    # RLVR kept only its newest checkpoint; the pinned step survives, hard-linked.
    [run_dir] = [p for p in (chain.store / RL_MODEL).iterdir() if p.name.startswith("rlvr-")]
    assert sorted(p.name for p in run_dir.glob("step_*")) == ["step_6"]
    assert rl[4].kept and not rl[2].kept
    assert (chain.store / RL_MODEL / "step-4" / "policy" / "weights.bin").is_file()
    assert not (chain.store / RL_MODEL / "step-2").exists()  # deleted, as NeMo-RL deletes it
    assert os.readlink(chain.store / RL_MODEL / "latest") == rl[6].path
    # The teacher started from the selected step, where the plan resolved it.
    teacher_log = chain.log("teacher-reasoning", jobs["teacher-reasoning"])
    assert f"starting from {STORE_MOUNT}/{RL_MODEL}/{rl[4].path}" in teacher_log
    assert "published super35-rl-rlvr-model" in chain.log("rlvr", jobs["rlvr"])

    # W&B (offline) recorded one run per stage, every version, and the seed's lineage.
    recorded = {}
    for stage in jobs:
        [offline] = list(chain.runs.glob(f"{stage}-*/wandb/offline-run-*"))
        recorded[stage] = read_offline_run(offline)
    # Every version still in the store; step 2 was deleted by keep_top_k before the end.
    rl_versions = sorted(a.ref().selector for a in recorded["rlvr"].logged)
    assert rl_versions == ["step-4", "step-6"]
    edges = lineage_edges([recorded[s] for s in jobs])
    assert ("artifact:super35-sft-model-tiny:latest", "stage:rlvr", "model") in edges
    assert ("stage:rlvr", f"artifact:{RL_MODEL}:step-4", "output") in edges
    assert (f"artifact:{RL_MODEL}:step-4", "stage:teacher-reasoning", "model") in edges
    assert chain.cluster.wait_for_no_node_processes(JOB_PROCESSES, timeout=30) == []


def test_a_requeued_rl_stage_resumes_from_its_newest_checkpoint(chain: Chain) -> None:
    # A new plan of RLVR (another seed), so a run of its own; its inputs exist from the chain.
    chain.environment["FAKE_GRPO_STEP_SECONDS"] = "3"
    jobs = chain.submit("--from", "rlvr", "--until", "rlvr", "--set", "rlvr:grpo.seed=7")
    job_id = jobs["rlvr"]
    pattern = f"rlvr-*/logs/slurm-{job_id}.out"
    deadline = time.monotonic() + 300
    def saved_once() -> bool:
        logs = chain.runs.glob(pattern)
        return any("fake-grpo: saved" in p.read_text(errors="replace") for p in logs)

    while not saved_once():
        assert time.monotonic() < deadline, "the RL stage saved no checkpoint in 300 s"
        time.sleep(0.5)
    [log_file] = chain.runs.glob(pattern)
    requeued = chain.cluster.run(["scontrol", "requeue", job_id], timeout=30)
    assert requeued.returncode == 0, requeued.stderr
    state = chain.cluster.wait_for_job(job_id, timeout=420)
    text = log_file.read_text(errors="replace")
    assert state == "COMPLETED", text
    # Two attempts in one run directory: preflight passed twice, and the second resumed.
    assert text.count("preflight passed") >= 4, text  # two nodes, two attempts
    assert re.search(r"fake-grpo: resuming from /artifacts/\S+/step_[246]", text), text
    status = chain.recipekit(
        "pipeline", "status", str(CHAIN), "--cluster", f"{chain.profile}:profile",
        "--from", "rlvr", "--until", "rlvr", "--set", "rlvr:grpo.seed=7",
    )
    assert f"job {job_id} COMPLETED (requeued and restarted 1 time(s))" in status.stdout, (
        status.stdout + status.stderr
    )
    # One W&B run for both attempts; nothing of the first attempt is left running.
    assert len(list(log_file.parent.parent.glob("wandb/offline-run-*"))) == 1
    assert chain.cluster.wait_for_no_node_processes(JOB_PROCESSES, timeout=30) == []
