"""A requeued RL stage resumes from its newest checkpoint: ``recipekit pipeline submit`` of the
chain's RLVR stage alone (``chain_stages.py``, NeMo-RL under Ray on two nodes), requeued by Slurm
once it has saved, restarts in the same run directory, finds its checkpoint, and finishes; one
W&B run holds both attempts. Its input SFT model is imported into a store of its own, so this
runs beside the whole chain (pipeline_chain_test.py) instead of after it."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.slurm.chain_support import (
    CHAIN,
    Chain,
    chain_on_two_nodes,
    drawn_states,
    new_store,
    states_in,
    status_svg,
)
from tests.integration.support.stage_workspace import JOB_PROCESSES

# What RLVR reads from the store: the tiny SFT model (chain_stages.SFT_TINY_MODEL) and its data.
SFT_MODEL = "super35-sft-model-tiny"


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory, ray_python: Path) -> Iterator[Chain]:
    store = new_store(tmp_path_factory, models=[SFT_MODEL])
    with chain_on_two_nodes(tmp_path_factory, ray_python, store, export_options=[]) as chain:
        yield chain


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
    assert drawn_states(chain, *only_rlvr)["rlvr"] == "requeued"
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
    svg = status_svg(chain, *only_rlvr)
    assert states_in(svg)["rlvr"] == "done"
    assert f"job {job_id}" in svg and "requeued 1x" in svg, svg
    # One W&B run for both attempts; nothing of the first attempt is left running.
    assert len(list(log_file.parent.parent.glob("wandb/offline-run-*"))) == 1
    assert chain.cluster.wait_for_no_node_processes(JOB_PROCESSES, timeout=30) == []
