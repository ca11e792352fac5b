"""``diff``: compiled plans between a git revision and the working tree, and between stages."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import recipes
from recipekit.review import keydiff, plandiff

ROOT = Path(recipes.__file__).resolve().parent.parent
COPIED = (
    "recipes/__init__.py",
    "recipes/clusters.py",
    "recipes/super3/__init__.py",
    "recipes/super3/dapo.py",
    "recipes/upstream/__init__.py",
    "recipes/upstream/nemo_rl_super_v3/__init__.py",
    "recipes/upstream/nemo_rl_super_v3/grpo_math_1b.py",
    "containers/__init__.py",
    "containers/bases.py",
)


def _repo(tmp_path: Path) -> Path:
    """A git checkout holding the Super V3 recipes and this recipekit, committed once."""
    repo = tmp_path / "repo"
    for rel in COPIED:
        if not (ROOT / rel).is_file():
            continue  # an __init__.py Pants left out of the sandbox: namespace packages do
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, repo / rel)
    shutil.copytree(
        ROOT / "src/python/recipekit",
        repo / "src/python/recipekit",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "recipes"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True
        )
    return repo


def test_diff_against_a_revision_names_each_changed_key(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    dapo = repo / "recipes/super3/dapo.py"
    text = dapo.read_text()
    assert '"policy.max_total_sequence_length": 1024,' in text
    dapo.write_text(
        text.replace(
            '"policy.max_total_sequence_length": 1024,', '"policy.max_total_sequence_length": 2048,'
        )
    )

    changes = plandiff.diff_revision(repo, "HEAD")
    assert set(changes) == {
        "recipes.super3.dapo:dapo_gb200",
        "recipes.super3.dapo:dapo_b200",
        "recipes.super3.dapo:dapo_h100",
    }
    by_key = {c.key: c for c in changes["recipes.super3.dapo:dapo_h100"]}
    seq = by_key["config.policy.max_total_sequence_length"]
    assert (seq.kind, seq.old, seq.new) == ("changed", 1024, 2048)
    assert by_key["config.policy.generation.max_new_tokens"].new == 2048
    assert "config.grpo.num_prompts_per_step" not in by_key

    only = plandiff.diff_revision(repo, "HEAD", ["dapo-b200"])
    assert list(only) == ["recipes.super3.dapo:dapo_b200"]
    text_report = keydiff.report_text(only)
    assert "~ config.policy.max_total_sequence_length: 1024 -> 2048" in text_report

    # A stage added in the working tree: every key is "added".
    dapo.write_text(dapo.read_text() + "\nextra = dapo_b200.with_values({}, name='extra')\n")
    added = plandiff.diff_revision(repo, "HEAD", ["extra"])
    assert {c.kind for c in added["recipes.super3.dapo:extra"]} == {"added"}


def test_unchanged_revision_has_no_changes_and_each_compile_says_how_far(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo(tmp_path)
    assert all(not c for c in plandiff.diff_revision(repo, "HEAD", show_progress=True).values())
    # stderr is no terminal here: timestamped lines, each stage the child compiled counted.
    err = capsys.readouterr().err
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
    assert re.search(rf"^{stamp} reading HEAD \(git archive\): done", err, re.M), err
    for label in ("HEAD", "working tree"):
        found = re.search(
            rf"^{stamp} compiling the stages at {label}: done: (\d+) of (\d+)", err, re.M
        )
        assert found and found[1] == found[2] and int(found[1]) >= 3, err


def test_diff_between_two_stages() -> None:
    from recipes.super3.dapo import dapo_b200, dapo_gb200

    by_key = {c.key: c for c in plandiff.diff_stages(dapo_gb200, dapo_b200)}
    tp = by_key["config.policy.generation.vllm_cfg.tensor_parallel_size"]
    assert (tp.old, tp.new) == (4, 8)
    assert by_key["job.sbatch.--gres"].new == "gpu:8"
    assert by_key["job.export.NCCL_MNNVL_ENABLE"].kind == "removed"
    # Untouched keys stay out of the diff.
    assert "config.policy.max_total_sequence_length" not in by_key
