"""``recipekit pipeline submit`` on a real Slurm: a Super 3.5 chain hands checkpoints over.

The chain (``chain_stages.py``): pretrain-tiny -> sft-tiny (Megatron-Bridge, one process per
GPU) -> rlvr -> teacher-reasoning -> mopd-single-stage (NeMo-RL under Ray) -> hf-export
(Megatron-Bridge's converter, one process per GPU), each its own job after the jobs it reads
from, -> eval, handed to NeMo Evaluator's launcher on the submit host, whose own job waits for
the export's. The nodes mount the artifact store at ``/artifacts`` (a folder of this test,
bind-mounted in the slurmds' own mount namespace, as a real node mounts shared storage); the
submitting host sees it there too. The stand-ins (``fake_train.py``, ``fake_run_grpo.py``,
``fake_evaluator_launcher.py``) read their input checkpoints where the plan resolved them,
failing if they are absent, and save checkpoints at the configured cadence; RLVR keeps only its
newest, so the step the teacher and MOPD select survives only because the pipeline pins it. The
export's stand-in checks its options against Megatron-Bridge's verified export command (its
verification card). Runs are recorded with wandb offline and read back.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from recipekit.lineage import Pipeline
from recipekit.lineage.store import import_version, init_store, versions
from recipekit.lineage.tracking import lineage_edges, read_offline_run
from recipekit.megatron_bridge.export import (
    CONVERT_SH_OPTIONS,
    NEMO_RL_WEIGHTS,
    VERIFICATION_CARD,
    VERIFIED_EXPORT,
)
from tests.integration.support.local_slurm import LocalSlurm, local_slurm, mount_prefix
from tests.integration.support.stage_workspace import JOB_PROCESSES, nemo_rl_sources

HERE = Path(__file__).resolve().parent
CHAIN = HERE / "chain_stages.py"
CLI = Path("tests.integration.slurm/recipekit-cli.pex")
STORE_MOUNT = "/artifacts"
RL_MODEL = "super35-rl-rlvr-model"
MOPD_MODEL = "super35-rl-mopd-single-stage-model"
HF_MODEL = "super35-rl-mopd-single-stage-hf-model"
VLLM_IMAGE = "docker.io/vllm/vllm-openai@sha256:" + "3" * 64
IMPORTED_TEACHERS = ("vision", "rlhf-teacher1", "rlhf-teacher2")
STAGES = ["pretrain-tiny", "sft-tiny", "rlvr", "teacher-reasoning", "mopd-single-stage"]

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


def _chain_pipeline() -> Pipeline:
    """The chain's lineage, from chain_stages.py loaded by path as `recipekit pipeline` does."""
    spec = importlib.util.spec_from_file_location("chain_stages", CHAIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pipeline = module.PIPELINE
    assert isinstance(pipeline, Pipeline)
    return pipeline


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The artifact store with the data the chain imports (as `recipekit store import` does)."""
    root = tmp_path_factory.mktemp("store")
    init_store(root)
    data = tmp_path_factory.mktemp("data")
    for name in ("train.jsonl", "val.jsonl"):
        (data / name).write_text('{"prompt": "2+2?"}\n')
    # super35-sft-data is registered by the first test, with `recipekit data import sft`.
    for artifact in (
        "super35-rl-rlvr-data",
        "super35-rl-teacher-reasoning-data",
        "super35-rl-mopd-phase1-data",
    ):
        import_version(root, artifact, data, name="imported")
    # MOPD's teachers whose stages are not in the chain, as `model import` registers them.
    teacher = tmp_path_factory.mktemp("teacher")
    (teacher / "weights.bin").write_text("a teacher\n")
    for name in IMPORTED_TEACHERS:
        import_version(root, f"super35-rl-teacher-{name}-model", teacher, name="imported")
    return root


@pytest.fixture(scope="module")
def export_options(reference_dir: Path) -> list[str]:
    """The options of Megatron-Bridge's verified GPU export (its Nemotron 3 Super verification
    card), without convert.sh's own: what the export's stand-in must be handed."""
    card = yaml.safe_load((reference_dir / VERIFICATION_CARD).read_text())
    words = card["items"][VERIFIED_EXPORT]["command"].split()
    return sorted({w for w in words if w.startswith("--")} - CONVERT_SH_OPTIONS)


@pytest.fixture(scope="module")
def chain(
    tmp_path_factory: pytest.TempPathFactory,
    ray_python: Path,
    store: Path,
    export_options: list[str],
) -> Iterator[Chain]:
    mounts = {STORE_MOUNT: store}
    with local_slurm(
        tmp_path_factory.mktemp("slurm-chain"), nodes=2, gpus_per_node=4, node_mounts=mounts
    ) as cluster:
        root = tmp_path_factory.mktemp("chain")
        yield Chain(root, cluster, ray_python, store, export_options)
        cluster.cancel_all()


def test_the_chain_hands_checkpoints_over_through_the_store(chain: Chain) -> None:
    # The Quick Start's order: register the SFT data, then submit up to SFT, nothing between.
    # The data lies on the store's filesystem, as a hard link needs (here under the store's
    # own mount, since a link never crosses mount points).
    incoming = chain.store / ".incoming" / "sft"
    incoming.mkdir(parents=True)
    (incoming / "train.jsonl").write_text('{"messages": []}\n')
    (chain.root / "import-wandb").mkdir()
    chain.environment["WANDB_DIR"] = str(chain.root / "import-wandb")  # its offline W&B run
    try:
        imported = chain.recipekit(
            "data", "import", "sft", f"{STORE_MOUNT}/.incoming/sft",
            "--cluster", f"{chain.profile}:profile", "--mode", "offline",
        )  # fmt: skip
    finally:
        del chain.environment["WANDB_DIR"]
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert "super35-sft-data:v0 (latest)" in imported.stdout, imported.stdout
    first = chain.submit("--until", "sft-tiny")
    assert list(first) == ["pretrain-tiny", "sft-tiny"]
    for stage, job_id in first.items():
        state = chain.cluster.wait_for_job(job_id, timeout=420)
        assert state == "COMPLETED", f"{stage}: {state}\n{chain.log(stage, job_id)}"

    planned = chain.recipekit("pipeline", "plan", str(CHAIN))
    assert planned.returncode == 0, planned.stderr
    assert "keeps step-4: later stages select it" in planned.stdout

    # The rest of the chain: the two stages just run are up to date, and read at their versions.
    output_dir = f"eval:execution.output_dir={chain.evaluations}"
    rest = chain.submit("--set", output_dir)
    assert list(rest) == [*STAGES[2:], "hf-export"]
    for stage in ("pretrain-tiny", "sft-tiny"):
        assert re.search(rf"^{stage}\s+up to date: ", chain.submitted, re.M), chain.submitted
    jobs = {**first, **rest}
    # Eval is handed to its launcher here, told to wait for the export's job.
    handed = re.search(
        r"^eval\s+handed to nemo-evaluator-launcher after (\d+)", chain.submitted, re.M
    )
    assert handed and handed.group(1) == jobs["hf-export"], chain.submitted
    evaluation = re.search(r"\| submitted batch job (\d+)", chain.submitted)
    assert evaluation, chain.submitted
    for stage, job_id in jobs.items():
        state = chain.cluster.wait_for_job(job_id, timeout=420)
        assert state == "COMPLETED", f"{stage}: {state}\n{chain.log(stage, job_id)}"
    assert chain.cluster.wait_for_job(evaluation.group(1), timeout=120) == "COMPLETED"
    # Each job waited for the ones it reads from (afterok), so each started after they ended.
    ended = {r["JobId"]: r for r in chain.cluster.jobcomp_records()}
    order = [*jobs.values(), evaluation.group(1)]
    for before, after in zip(order, order[1:], strict=False):
        assert ended[after]["StartTime"] >= ended[before]["EndTime"]

    # Every checkpoint a stage saved is a version of its output, with its step and latest.
    def steps(artifact: str) -> list[int | None]:
        return [v.step for v in versions(chain.store, artifact)]

    assert steps("super35-pretrain-model-tiny") == [20]
    assert steps("super35-sft-model-tiny") == [20]
    assert steps(RL_MODEL) == [2, 4, 6]
    assert steps("super35-rl-teacher-reasoning-model") == [2, 4, 6]
    assert steps(MOPD_MODEL) == [2, 4, 6]
    rl = {v.step: v for v in versions(chain.store, RL_MODEL)}
    # RLVR kept only its newest checkpoint; the pinned step survives, hard-linked.
    [run_dir] = [p for p in (chain.store / RL_MODEL).iterdir() if p.name.startswith("rlvr-")]
    assert sorted(p.name for p in run_dir.glob("step_*")) == ["step_6"]
    assert rl[4].kept and not rl[2].kept
    weights = Path("policy/weights/iter_0000000/weights.bin")
    assert (chain.store / RL_MODEL / "step-4" / weights).is_file()
    assert not (chain.store / RL_MODEL / "step-2").exists()  # deleted, as NeMo-RL deletes it
    assert os.readlink(chain.store / RL_MODEL / "latest") == rl[6].path
    # The teacher and MOPD started from the selected step, where the plan resolved it; MOPD
    # found its four teachers and its self-anchor (the student's start).
    selected = f"starting from {STORE_MOUNT}/{RL_MODEL}/{rl[4].path}"
    for stage in ("teacher-reasoning", "mopd-single-stage"):
        assert selected in chain.log(stage, jobs[stage])
    mopd_log = chain.log("mopd-single-stage", jobs["mopd-single-stage"])
    assert "5 teacher checkpoints found" in mopd_log
    rlvr_log = chain.log("rlvr", jobs["rlvr"])
    assert "published super35-rl-rlvr-model" in rlvr_log
    # NeMo-RL's own model-path code (run by the stand-in) put RLVR's HF -> Megatron conversion
    # in the store, in the directory the pipeline keyed by the SFT version's content: not in
    # HF_HOME or ~/.cache, where NeMo-RL puts it when nothing sets NRL_MEGATRON_CHECKPOINT_DIR.
    converted = re.search(
        r"fake-grpo: converted \S+ into /artifacts/(\.conversions/hf-to-megatron-[0-9a-f]{24}/\S+)",
        rlvr_log,
    )
    assert converted, rlvr_log
    assert (chain.store / converted.group(1) / "iter_0000000").is_dir()
    # The export read MOPD's newest checkpoint and is one version: its whole run directory.
    [exported] = versions(chain.store, HF_MODEL)
    assert exported.step is None and exported.path.startswith("hf-export-")
    newest = versions(chain.store, MOPD_MODEL)[-1].path
    config = json.loads((chain.store / HF_MODEL / "latest" / "config.json").read_text())
    assert config["exported_from"] == f"{STORE_MOUNT}/{MOPD_MODEL}/{newest}/{NEMO_RL_WEIGHTS}"
    # Eval's job, started after the export ended, found the model it was told to serve.
    seen = json.loads((chain.evaluations / "seen.json").read_text())
    assert seen["told"]["deployment.checkpoint_path"] == f"{STORE_MOUNT}/{HF_MODEL}/latest"
    assert seen["checkpoint files"] == ["config.json", "model.safetensors"]

    # W&B (offline) recorded one run per stage, every version, and the recipe's lineage.
    recorded = {}
    for stage in [*jobs, "eval"]:
        [offline] = list(chain.runs.glob(f"{stage}-*/wandb/offline-run-*"))
        recorded[stage] = read_offline_run(offline)
    # Every version, step 2 too, which keep_top_k deleted before the end: recorded as gone.
    logged = {a.ref().selector: a for a in recorded["rlvr"].logged}
    assert sorted(logged) == ["step-2", "step-4", "step-6"]
    assert logged["step-2"].metadata.get("deleted") is True
    assert "deleted" not in logged["step-4"].metadata
    edges = lineage_edges(list(recorded.values()))
    # The lineage read back is the chain's: every input of every stage, as its table says. An
    # input in the store when the chain was planned is read at the exact version `pipeline
    # submit` pinned it to; one a stage of the same submission makes, through its selector.
    read = {(stage, role): artifact for artifact, stage, role in edges}
    for step in _chain_pipeline().steps():
        for role, ref in step.artifact_inputs().items():
            artifact = read.get((f"stage:{step.stage}", role), "")
            pinned = re.fullmatch(f"artifact:{re.escape(ref.name)}:v[0-9]+", artifact)
            assert pinned or artifact == f"artifact:{ref}", (step.stage, role, artifact)
    assert ("stage:rlvr", f"artifact:{RL_MODEL}:step-4", "output") in edges
    assert ("stage:hf-export", f"artifact:{HF_MODEL}:latest", "output") in edges
    assert chain.cluster.wait_for_no_node_processes(JOB_PROCESSES, timeout=30) == []


def _reasons(chain: Chain, *args: str) -> dict[str, str]:
    """Each stage's verdict in `pipeline plan --format json` over the store: "" when it is up
    to date, else why it runs."""
    cluster = ("--cluster", f"{chain.profile}:profile")
    done = chain.recipekit("pipeline", "plan", str(CHAIN), *cluster, "--format", "json", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(done.stdout)["stages"]
    return {row["stage"]: row["action"]["reason"] if row["action"]["runs"] else "" for row in rows}


def test_a_changed_rlvr_value_reruns_rlvr_onward_reading_the_kept_versions(chain: Chain) -> None:
    """After the whole chain ran: one changed RLVR value runs RLVR and what reads it, and the
    new jobs read the versions of the stages that did not run; a file removed from SFT's
    version makes SFT and everything after it run."""
    output_dir = ("--set", f"eval:execution.output_dir={chain.evaluations}")
    change = ("--set", "rlvr:grpo.seed=11", *output_dir)
    before = {"pretrain-tiny": "", "sft-tiny": ""}
    reasons = _reasons(chain, *change)
    assert {stage: reasons[stage] for stage in before} == before, reasons
    assert reasons["rlvr"] == "the recipe changed"
    for later in ("teacher-reasoning", "mopd-single-stage", "hf-export"):
        assert reasons[later] == "an input changed", (later, reasons)

    jobs = chain.submit(*change)
    assert list(jobs) == ["rlvr", "teacher-reasoning", "mopd-single-stage", "hf-export"]
    for stage, job_id in jobs.items():
        state = chain.cluster.wait_for_job(job_id, timeout=420)
        assert state == "COMPLETED", f"{stage}: {state}\n{chain.log(stage, job_id)}"
    # The drawing from the same records (issue 29): the stages the change does not reach are
    # up to date by their action keys, the ones it reran are done.
    drawn = _drawn_states(chain, *change)
    assert {stage: drawn[stage] for stage in before} == dict.fromkeys(before, "up-to-date"), drawn
    assert {stage: drawn[stage] for stage in jobs} == dict.fromkeys(jobs, "done"), drawn
    # The new RLVR job read the SFT version the first chain published, pinned at planning.
    [sft] = versions(chain.store, "super35-sft-model-tiny")
    rlvr_log = chain.log("rlvr", jobs["rlvr"])
    assert f"starting from {STORE_MOUNT}/super35-sft-model-tiny/{sft.path}" in rlvr_log, rlvr_log
    # The same SFT version, pinned by both RLVR runs (the first chain submitted SFT apart, so
    # its RLVR was pinned too): NeMo-RL's own code finds the first run's conversion in the
    # cache keyed by that version's content, and converts nothing. (A run that reached the
    # same bytes through another path has the conversion linked under its name:
    # lineage/conversions_test.py.)
    found = re.search(
        r"fake-grpo: conversion found in "
        r"/artifacts/(\.conversions/hf-to-megatron-[0-9a-f]{24})/(\S+)",
        rlvr_log,
    )
    assert found, rlvr_log
    cache = chain.store / found.group(1)
    assert [p.name for p in cache.iterdir()] == [found.group(2)]  # the first run's, and only it
    assert "fake-grpo: converted" not in rlvr_log, rlvr_log

    # A file of SFT's version removed: it is not whole, so it and everything after it run.
    version_dir = chain.store / "super35-sft-model-tiny" / sft.path
    removed = next(p for p in sorted(version_dir.rglob("*")) if p.is_file())
    kept = removed.read_bytes()
    removed.unlink()
    try:
        reasons = _reasons(chain, *change)
    finally:
        removed.write_bytes(kept)  # the next test resumes RLVR from this chain's store
    assert reasons["pretrain-tiny"] == ""
    assert reasons["sft-tiny"] == "no complete output", reasons
    for later in ("rlvr", "teacher-reasoning", "mopd-single-stage", "hf-export"):
        assert reasons[later], (later, reasons)
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
    only_rlvr = ("--from", "rlvr", "--until", "rlvr", "--set", "rlvr:grpo.seed=7")
    # Drawn from Slurm's records while it is back in the queue or running again: requeued
    # (the record of the submission names its job, though planning now gives it an attempt
    # of its own: its key has a saved version). Slurm counts the restart as it requeues.
    assert _drawn_states(chain, *only_rlvr)["rlvr"] == "requeued"
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
    svg = _status_svg(chain, *only_rlvr)
    assert _states_in(svg)["rlvr"] == "done"
    assert f"job {job_id}" in svg and "requeued 1x" in svg, svg
    # One W&B run for both attempts; nothing of the first attempt is left running.
    assert len(list(log_file.parent.parent.glob("wandb/offline-run-*"))) == 1
    assert chain.cluster.wait_for_no_node_processes(JOB_PROCESSES, timeout=30) == []


def _status_svg(chain: Chain, *args: str) -> str:
    """`pipeline status --svg` of the chain: the drawing read from Slurm's and the store's
    records, as a user draws it."""
    out = chain.runs / f"status-{time.monotonic_ns()}.svg"
    done = chain.recipekit(
        "pipeline", "status", str(CHAIN), "--cluster", f"{chain.profile}:profile",
        *args, "--svg", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return out.read_text()


def _states_in(svg: str) -> dict[str, str]:
    """Each stage's drawn state: its group's state-* class."""
    found = re.findall(r'<g id="stage:([^"]+)" class="[^"]*\bstate-([a-z-]+)', svg)
    return dict(found)


def _drawn_states(chain: Chain, *args: str) -> dict[str, str]:
    return _states_in(_status_svg(chain, *args))
