"""Stages that launch without Ray ("per-gpu", "head", "delegated"), by the packaged launcher.

The production path end to end -- the stage launcher Pex submits, the job script runs preflight
on every node, then the framework step, then the W&B record -- for Super 3.5 stages with their
real frameworks (Megatron-Bridge per GPU) on the test cluster's nodes (``fake_stages.py``). The
evaluation stage is delegated: submit hands it to NeMo Evaluator's launcher on the submit host,
which submits its own job to the same Slurm. Only the entry points are stand-ins
(``fake_train.py``, ``fake_evaluator_launcher.py``), installed where the real ones would be;
they write down what each process saw.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recipekit.lineage.checkpoint_stamp import STAMP_FILE, CheckpointStamp, read_stamp
from recipekit.lineage.tracking import read_offline_run
from tests.integration.support.local_slurm import LocalSlurm
from tests.integration.support.log_markers import RANK_LINE, RAY_LINE, preflight_passed
from tests.integration.support.stage_workspace import Workspace

HERE = Path(__file__).resolve().parent
STAGES = HERE / "fake_stages.py"
FAKE_ENTRY = HERE / "fake_train.py"
FAKE_EVALUATOR = HERE / "fake_evaluator_launcher.py"
# A stage launcher with no stage of its own (RECIPEKIT_STAGE names it): see BUILD.
LAUNCHER = Path("tests.integration.slurm/stage-launcher.pex")
PROCESSES = r"launcher\.pex|run_recipe\.py|nemo-evaluator-launcher"
SECRET = "sentinel-wandb-key-93c2e1"
MASTER_PORT = 29411
OUTPUT_FILE = "iter_0000020/output.bin"  # fake_train.py saves sft-tiny at train_iters=20

PROFILE = """\
import sys

sys.path.insert(0, {stages_dir!r})
from fake_stages import FAKE_NODE
from recipekit.launch.profile import ClusterProfile, NoContainer, Tracking

profile = ClusterProfile(
    name="local-kinds",
    node=FAKE_NODE,
    partition="gpu",
    time_limit="00:10:00",
    container=NoContainer(python={python!r}),
    runs_dir={runs!r},
    # The local cluster's nodes are one host: the test's whole folder is storage they all see.
    shared_paths={{"checkpoints": {checkpoints!r}, "workspace": {workspace!r}}},
    framework_root={framework_root!r},
    master_port={master_port},
    tracking={tracking},
)
"""


VLLM_IMAGE = "docker.io/vllm/vllm-openai@sha256:" + "3" * 64
DELEGATED_PROFILE = """\
import sys

sys.path.insert(0, {stages_dir!r})
from fake_stages import FAKE_NODE
from recipekit.launch.profile import ClusterProfile, Mount, Pyxis, Tracking

profile = ClusterProfile(
    name="local-eval",
    node=FAKE_NODE,
    partition="gpu",
    account="eval-team",
    login_host={login_host!r},
    container=Pyxis(image={image!r}, mounts=(Mount({root!r}, "/shared"),)),
    default_base="vllm",
    runs_dir={runs!r},
    # NeMo Evaluator's launcher runs on this host and writes its results under the test's folder.
    shared_paths={{"workspace": {root!r}}},
    tracking=Tracking(mode="offline", project="rk-test"),
)
"""


class KindsWorkspace(Workspace):
    """A Workspace for a stage of fake_stages.py: its inputs, outputs and entry points."""

    def __init__(self, root: Path, cluster: LocalSlurm, ray_python: Path, stage: str) -> None:
        super().__init__(root, cluster, ray_python, stage, LAUNCHER, FAKE_ENTRY)
        # Megatron-Bridge's runner in its checkout; NeMo Evaluator's console script on PATH.
        runner = self.framework_root / "scripts" / "training" / "run_recipe.py"
        runner.parent.mkdir(parents=True)
        shutil.copy(FAKE_ENTRY, runner)
        self.bin = root / "bin"
        self.bin.mkdir()
        shutil.copy(FAKE_EVALUATOR, self.bin / "nemo-evaluator-launcher")
        os.chmod(self.bin / "nemo-evaluator-launcher", 0o755)
        inputs, outputs = self.shared / "artifacts", self.shared / "checkpoints" / stage
        for path in ("model", "data"):
            (inputs / path).mkdir(parents=True)
        if stage == "delegated":
            self.overrides = [
                f"deployment.checkpoint_path={inputs / 'model'}",
                f"execution.output_dir={outputs}",
            ]
        else:
            self.overrides = [
                f"checkpoint.pretrained_checkpoint={inputs / 'model'}",
                f"dataset.path={inputs / 'data'}",
                f"checkpoint.save={outputs}",
            ]
        self.output = outputs / OUTPUT_FILE
        self.environment = {
            "RECIPEKIT_STAGE": f"{STAGES}:{stage}",
            "PATH": f"{self.bin}:{cluster.env()['PATH']}",
        }

    def _new_profile_path(self) -> Path:
        return self.root / f"profile_{len(list(self.root.glob('profile_*.py')))}.py"

    def write_kinds_profile(
        self, *, tracking: str = "Tracking(mode='off')", checkpoints: Path | None = None
    ) -> str:
        path = self._new_profile_path()
        path.write_text(
            PROFILE.format(
                stages_dir=str(HERE),
                python=str(self.ray_python),
                runs=str(self.runs),
                checkpoints=str(checkpoints or self.shared / "checkpoints"),
                workspace=str(self.root),
                framework_root=str(self.framework_root),
                master_port=MASTER_PORT,
                tracking=tracking,
            )
        )
        return f"{path}:profile"

    def write_delegated_profile(self, *, login_host: str | None) -> str:
        """A profile for the evaluation stage: the vLLM image pinned by digest, as submit
        requires; it reaches only the evaluator's arguments (no step of ours runs in it)."""
        path = self._new_profile_path()
        path.write_text(
            DELEGATED_PROFILE.format(
                stages_dir=str(HERE),
                root=str(self.root),
                runs=str(self.runs),
                image=VLLM_IMAGE,
                login_host=login_host,
            )
        )
        return f"{path}:profile"

    def wandb_env(self) -> dict[str, str]:
        """Everything wandb writes on the nodes stays under the workspace."""
        dirs = ("CONFIG", "CACHE", "DATA", "ARTIFACT")
        return {f"WANDB_{d}_DIR": str(self.root / "wandb-home" / d.lower()) for d in dirs}


@pytest.fixture()
def kinds(tmp_path: Path, local_slurm_cluster: LocalSlurm, ray_python: Path) -> Iterator[Any]:
    def make(stage: str) -> KindsWorkspace:
        return KindsWorkspace(tmp_path / stage, local_slurm_cluster, ray_python, stage)

    yield make
    local_slurm_cluster.cancel_all()
    local_slurm_cluster.wait_for_no_node_processes(PROCESSES, timeout=30)


def _seen(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((run_dir / "seen").glob("*.json"))]


def _git(checkout: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(checkout), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _make_dirty_checkout(checkout: Path) -> str:
    """The directory submit runs in (LocalSlurm.run's cwd) as a git checkout with a change."""
    _git(checkout, "init", "-q")
    (checkout / "recipe.py").write_text("stage = 1\n")
    _git(checkout, "add", "recipe.py")
    _git(checkout, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "recipe")
    (checkout / "recipe.py").write_text("stage = 2\n")
    return _git(checkout, "rev-parse", "HEAD")


def _preflight_passed(text: str, nodes: tuple[str, ...]) -> bool:
    return all(preflight_passed(n, f"127.0.1.{n[1]}") in text for n in nodes)


def test_per_gpu_runs_one_process_per_gpu_and_records_the_run(kinds: Any) -> None:
    ws = kinds("per_gpu")
    commit = _make_dirty_checkout(ws.cluster.job_dir)
    profile = ws.write_kinds_profile(tracking="Tracking(mode='offline', project='rk-test')")
    job_id, log = ws.submit(profile, env={"WANDB_API_KEY": SECRET, **ws.wandb_env()})
    state = ws.cluster.wait_for_job(job_id, timeout=300)
    text = log.read_text()
    assert state == "COMPLETED", text
    run_dir = log.parent.parent
    assert _preflight_passed(text, ("n1", "n2")), text
    assert RAY_LINE not in text  # no Ray anywhere (launcher_test sees RAY_LINE when Ray runs)
    assert RANK_LINE in text  # the positive side of test_no_rank_starts_beside_...

    # Megatron-Bridge's runner, once per GPU of the two nodes, with the plan's arguments.
    seen = _seen(run_dir)
    assert sorted(int(s["RANK"]) for s in seen) == list(range(8))  # every rank, once
    for s in seen:
        node_rank = ("n1", "n2").index(s["SLURMD_NODENAME"])
        assert s["NODE_RANK"] == str(node_rank)
        assert int(s["RANK"]) == node_rank * 4 + int(s["LOCAL_RANK"])
        assert (s["WORLD_SIZE"], s["LOCAL_WORLD_SIZE"]) == ("8", "4")
        assert (s["MASTER_ADDR"], s["MASTER_PORT"]) == ("127.0.1.1", str(MASTER_PORT))
        assert s["joined"] == list(range(8))  # they met at MASTER_ADDR:MASTER_PORT
        assert s["CUDA_VISIBLE_DEVICES"] == "0,1,2,3" and s["RAY_ADDRESS"] is None
        assert s["arguments_match_plan"]
    assert ws.cluster.wait_for_no_node_processes(PROCESSES, timeout=30) == []

    # The first node recorded the run offline; the key reached the job as environment only.
    assert "tracking: recorded the run in W&B project rk-test (offline)" in text
    [offline] = sorted((run_dir / "wandb").glob("offline-run-*"))
    recorded = read_offline_run(offline)
    plan = json.loads((run_dir / "plan.json").read_text())
    assert recorded.config["plan"] == {
        "stage": "sft-tiny",
        "hash": plan["hash"],
        "git_commit": commit,
        "git_dirty": True,
        "images": {},
    }
    assert recorded.inputs == {
        "model": "super35-pretrain-model-tiny:latest",
        "data": "super35-sft-data:latest",
    }
    assert (offline / "files" / "job.sbatch").read_text() == (run_dir / "job.sbatch").read_text()
    assert json.loads((offline / "files" / "config.json").read_text()) == plan["config"]
    [artifact] = recorded.logged
    assert (artifact.name, artifact.type) == ("super35-sft-model-tiny", "model")
    # fake_train.py saved iteration 20: the artifact can be pinned by step.
    assert set(artifact.aliases) == {"latest", "step-20"}  # in whatever order W&B keeps
    # The head node stamped the checkpoint directory with the run's model and layout before
    # the framework started (lineage.checkpoint_stamp); the stamp is part of what it published.
    saves = ws.output.parent.parent  # the run's checkpoint directory, above iter_0000020/
    stamp = saves / STAMP_FILE
    # With what the stand-in writes as Megatron-Bridge finishes a save: the train state, the
    # tracker (recipekit.lineage.store.saved_steps reads them).
    published = {ws.output, ws.output.parent / "train_state.pt", stamp}
    published.add(saves / "latest_checkpointed_iteration.txt")
    assert set(artifact.references) == {p.as_uri() for p in published}
    assert read_stamp(stamp.parent) == CheckpointStamp.of_plan(plan)
    written = [p for p in ws.root.rglob("*") if p.is_file() and not p.is_symlink()]
    assert [p for p in written if SECRET.encode() in p.read_bytes()] == []


def test_a_failing_rank_fails_the_job_with_its_status(kinds: Any) -> None:
    ws = kinds("per_gpu")
    profile = ws.write_kinds_profile(tracking="Tracking(mode='offline', project='rk-test')")
    env = {"FAKE_FAIL_RANK": "5", "FAKE_FAIL_STATUS": "7", "FAKE_SLEEP": "300", **ws.wandb_env()}
    job_id, log = ws.submit(profile, env=env)
    state = ws.cluster.wait_for_job(job_id, timeout=300)
    text = log.read_text()
    assert state == "FAILED", text
    # The failing rank's status, not that of the ranks Slurm stopped because of it.
    assert ws.cluster.jobcomp_records(job_id)[-1]["ExitCode"] == "7:0", text
    assert "[n2 rank 5/8] entry point exited with status 7" in text
    assert "[n1 rank 0/8] stopped (SIGTERM)" in text
    assert not (log.parent.parent / "wandb").exists()  # a failed run is not recorded
    assert ws.cluster.wait_for_no_node_processes(PROCESSES, timeout=30) == []


def test_no_rank_starts_beside_a_node_that_failed_preflight(kinds: Any) -> None:
    ws = kinds("per_gpu")
    profile = ws.write_kinds_profile(checkpoints=ws.root / "not-mounted")
    job_id, log = ws.submit(profile)
    state = ws.cluster.wait_for_job(job_id, timeout=120)
    text = log.read_text()
    assert state == "FAILED", text
    # Both nodes lack the mount, and both say so: preflight lets every node finish its checks.
    failed = re.findall(r"PREFLIGHT FAILED on (n\d) .*not-mounted is not mounted", text)
    assert sorted(failed) == ["n1", "n2"], text
    assert RANK_LINE not in text and not (log.parent.parent / "seen").exists()


def test_evaluation_is_handed_to_its_launcher_which_submits_its_own_job(kinds: Any) -> None:
    ws = kinds("delegated")
    env = {"WANDB_API_KEY": SECRET, "HF_TOKEN": SECRET, **ws.wandb_env()}
    refused = ws.launcher(ws.write_delegated_profile(login_host=None), "submit", env=env)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr
    assert "needs the host its Slurm client submits from (profile login_host)" in refused.stderr
    assert list(ws.runs.iterdir()) == []  # refused before anything was written

    profile = ws.write_delegated_profile(login_host="localhost")
    done = ws.launcher(profile, "submit", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "eval: handing plan " in done.stdout and "to nemo-evaluator-launcher" in done.stdout
    found = re.search(r"^submitted batch job (\d+)$", done.stdout, re.MULTILINE)
    assert found, done.stdout
    # The launcher's job, not one of recipekit's, ran on the cluster: as it was told to.
    assert ws.cluster.wait_for_job(found.group(1), timeout=120) == "COMPLETED"
    results = ws.shared / "checkpoints" / "delegated"  # the plan's execution.output_dir
    seen = json.loads((results / "seen.json").read_text())
    assert (seen["node"], seen["partition"], seen["account"]) == ("n1", "gpu", "eval-team")
    told = seen["told"]
    assert told["execution.hostname"] == "localhost"
    assert told["deployment.image"] == VLLM_IMAGE  # the profile's digest, not the recipe's tag
    assert told["deployment.checkpoint_path"] == str(ws.shared / "artifacts" / "model")
    assert len(told["tasks"]) == 5 and told["HF_TOKEN set"]

    [run_dir] = ws.runs.iterdir()
    assert not list((run_dir / "logs").glob("slurm-*.out"))  # recipekit submitted no job
    record = json.loads((run_dir / "job.json").read_text())
    assert record["delegated_to"] == "nemo-evaluator-launcher" and record["exit_status"] == 0
    assert "submitted batch job" in Path(record["log"]).read_text()
    # Recorded from the submit host, with its input; evaluation results are no artifact.
    [offline] = sorted((run_dir / "wandb").glob("offline-run-*"))
    recorded = read_offline_run(offline)
    assert recorded.inputs == {"model": "super35-rl-mopd-phase2-hf-model:latest"}
    assert recorded.logged == ()
    status = ws.launcher(profile, "status")
    assert status.returncode == 2 and "which owns its Slurm job" in status.stderr
    written = [p for p in ws.root.rglob("*") if p.is_file() and not p.is_symlink()]
    assert [p for p in written if SECRET.encode() in p.read_bytes()] == []


def test_head_runs_the_entry_point_once_on_the_first_node(kinds: Any) -> None:
    ws = kinds("head_of_two")
    profile = ws.write_kinds_profile(tracking="Tracking(mode='off')")
    job_id, log = ws.submit(profile)
    state = ws.cluster.wait_for_job(job_id, timeout=300)
    text = log.read_text()
    assert state == "COMPLETED", text
    assert _preflight_passed(text, ("n1", "n2")), text
    run_dir = log.parent.parent
    [seen] = _seen(run_dir)
    assert seen["SLURMD_NODENAME"] == "n1" and seen["RANK"] is None
    # Tracking off: the head's last step only decides whether the stage continues (the
    # profile's time limit gives it a save deadline, launch.continuation); nothing goes to W&B.
    script = (run_dir / "job.sbatch").read_text()
    assert "record the run in W&B" not in script
    assert "# 3. Whether the stage is done or continues" in script
    assert not (run_dir / "wandb").exists()
    assert ws.cluster.wait_for_no_node_processes(PROCESSES, timeout=30) == []
