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
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from recipekit.lineage import Pipeline
from recipekit.lineage.store import versions
from recipekit.lineage.tracking import lineage_edges, read_offline_run
from recipekit.megatron_bridge.export import (
    CONVERT_SH_OPTIONS,
    NEMO_RL_WEIGHTS,
    VERIFICATION_CARD,
    VERIFIED_EXPORT,
)
from tests.integration.slurm.chain_support import (
    CHAIN,
    STORE_MOUNT,
    Chain,
    chain_on_two_nodes,
    drawn_states,
    new_store,
)
from tests.integration.support.stage_workspace import JOB_PROCESSES

RL_MODEL = "super35-rl-rlvr-model"
MOPD_MODEL = "super35-rl-mopd-single-stage-model"
HF_MODEL = "super35-rl-mopd-single-stage-hf-model"
IMPORTED_TEACHERS = ("vision", "rlhf-teacher1", "rlhf-teacher2")
STAGES = ["pretrain-tiny", "sft-tiny", "rlvr", "teacher-reasoning", "mopd-single-stage"]
ENERGON_FIXTURE = Path("src/python/recipekit/datacheck/testdata/energon-chatml.tar")


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
    """The artifact store with the data the chain imports (as `recipekit store import` does) and
    MOPD's teachers whose stages are not in the chain (as `model import` registers them);
    super35-sft-data is registered by the first test, with `recipekit data import sft`."""
    teachers = [f"super35-rl-teacher-{name}-model" for name in IMPORTED_TEACHERS]
    return new_store(tmp_path_factory, models=teachers)


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
    with chain_on_two_nodes(tmp_path_factory, ray_python, store, export_options) as chain:
        yield chain


def test_the_chain_hands_checkpoints_over_through_the_store(chain: Chain) -> None:
    # The Quick Start's order: register the SFT data, then submit up to SFT, nothing between.
    # The data lies on the store's filesystem, as a hard link needs (here under the store's
    # own mount, since a link never crosses mount points).
    # The SFT stages read Energon data, and data import sft reads it whole first: a real
    # dataset energon prepare wrote (recipekit/datacheck/testdata).
    incoming = chain.store / ".incoming" / "sft"
    incoming.mkdir(parents=True)
    with tarfile.open(ENERGON_FIXTURE) as packed:
        packed.extractall(incoming, filter="data")
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
    drawn = drawn_states(chain, *change)
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
