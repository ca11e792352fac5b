"""W&B in offline mode, for real: runs are written by ``wandb`` and read back from its files."""

from pathlib import Path

import pytest

from recipekit.errors import RecipeError
from recipekit.lineage import ArtifactRef, StageLineage
from recipekit.lineage.tracking import (
    OutputVersion,
    check_credentials,
    lineage_edges,
    read_offline_run,
    record_run,
)

RLVR = StageLineage(
    stage="rlvr",
    inputs={"model": ArtifactRef("sft-model"), "data": ArtifactRef("rlvr-data")},
    output="rlvr-model",
)
TEACHER = StageLineage(
    stage="teacher-vision",
    inputs={"model": ArtifactRef.at_step("rlvr-model", 120), "data": ArtifactRef("vision-data")},
    output="teacher-vision-model",
)


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # Everything wandb writes stays in tmp_path; no key, no network.
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    for var, sub in (("WANDB_CONFIG_DIR", "config"), ("WANDB_CACHE_DIR", "cache"),
                     ("WANDB_DATA_DIR", "data"), ("WANDB_ARTIFACT_DIR", "artifacts")):  # fmt: skip
        monkeypatch.setenv(var, str(tmp_path / sub))
    return tmp_path


def _plan(stage: str, digest: str) -> dict[str, object]:
    return {
        "stage": stage,
        "hash": digest,
        "config": {"grpo": {"max_num_steps": 500}},
        "job_script": "#!/bin/bash\n#SBATCH --nodes=4\n",
        "images": {"nemo-rl": "sha256:" + "a" * 64},
        "git_commit": "0" * 40,
        "git_dirty": True,
    }


def test_runs_record_plan_and_lineage_and_read_back_as_a_graph(offline: Path) -> None:
    earlier, checkpoint = offline / "ckpt" / "step_110", offline / "ckpt" / "step_120"
    gone = offline / "ckpt" / "step_100"  # published, then deleted by the keep policy
    for saved in (earlier, checkpoint):
        saved.mkdir(parents=True)
        (saved / "weights.safetensors").write_bytes(saved.name.encode())
    first = record_run(
        _plan("rlvr", "1" * 64),
        RLVR,
        directory=offline / "runs",
        project="recipekit-test",
        outputs=[
            OutputVersion(gone.as_uri(), 100, deleted=True),
            OutputVersion(earlier.as_uri(), 110),
            OutputVersion(checkpoint.as_uri(), 120),
        ],
    )
    second = record_run(
        _plan("teacher-vision", "2" * 64),
        TEACHER,
        directory=offline / "runs",
        project="recipekit-test",
        outputs=[OutputVersion((offline / "ckpt").as_uri(), None)],
    )
    rlvr, teacher = read_offline_run(first), read_offline_run(second)
    assert rlvr.job_type == "rlvr" and rlvr.stage == "rlvr"
    assert rlvr.config["plan"] == {
        "stage": "rlvr",
        "hash": "1" * 64,
        "git_commit": "0" * 40,
        "git_dirty": True,
        "images": {"nemo-rl": "sha256:" + "a" * 64},
    }
    assert {"config.json", "job.sbatch", "lineage.json"} <= set(rlvr.files)
    assert (first / "files" / "job.sbatch").read_text().startswith("#!/bin/bash")
    # Every saved checkpoint is a version with its step (W&B moves `latest` to the newest); one
    # the keep policy deleted is recorded all the same, marked gone.
    deleted, before, out = rlvr.logged
    assert "step-100" in deleted.aliases and deleted.metadata["deleted"] is True
    assert "step-110" in before.aliases and "step-120" not in before.aliases
    assert "deleted" not in before.metadata
    # W&B does not keep the order aliases were given in.
    assert (out.name, out.type) == ("rlvr-model", "model")
    assert sorted(out.aliases) == ["latest", "step-120"]
    # A reference artifact: W&B lists the checkpoint's files by URI and copies nothing.
    assert out.references == (checkpoint.as_uri() + "/weights.safetensors",)
    assert out.metadata["plan_hash"] == "1" * 64

    # The teacher's input names the step the RLVR run published: the graph connects.
    edges = lineage_edges([rlvr, teacher])
    assert edges == [
        ("artifact:sft-model:latest", "stage:rlvr", "model"),
        ("artifact:rlvr-data:latest", "stage:rlvr", "data"),
        ("stage:rlvr", "artifact:rlvr-model:step-100", "output"),
        ("stage:rlvr", "artifact:rlvr-model:step-110", "output"),
        ("stage:rlvr", "artifact:rlvr-model:step-120", "output"),
        ("artifact:rlvr-model:step-120", "stage:teacher-vision", "model"),
        ("artifact:vision-data:latest", "stage:teacher-vision", "data"),
        ("stage:teacher-vision", "artifact:teacher-vision-model:latest", "output"),
    ]


def test_online_without_a_key_names_the_fix() -> None:
    with pytest.raises(RecipeError) as caught:
        check_credentials("online", environ={})
    text = str(caught.value)
    assert text.startswith("tracking: WANDB_API_KEY: is not set")
    assert "export WANDB_API_KEY" in text and "turn tracking off" in text
    check_credentials("online", environ={"WANDB_API_KEY": "x" * 40})
    check_credentials("offline", environ={})
    with pytest.raises(RecipeError, match="tracking.mode = 'offlin'"):
        check_credentials("offlin", environ={})


def test_importing_tracking_does_not_import_wandb() -> None:
    import subprocess
    import sys

    code = "import recipekit.lineage.tracking, sys; print('wandb' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_pipeline_runs_record_carries_its_action_key_and_input_versions(offline: Path) -> None:
    action = {
        "key": "k" * 64,
        "plan_hash": "3" * 64,
        "inputs": {"model": {"ref": "sft-model:latest", "version": "v2", "key": "s" * 64}},
    }
    recorded = record_run(
        {**_plan("rlvr", "3" * 64), "action": action},
        RLVR,
        directory=offline / "runs",
        project="recipekit-test",
        outputs=[],
    )
    assert read_offline_run(recorded).config["plan"]["action"] == action
