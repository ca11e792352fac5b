from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import attrs
import pytest

from recipekit.checkouts import CodeCheckout, checkout_problem, head_commit
from recipekit.errors import FieldError, RecipeError
from recipekit.launch.job_script import render_job_script
from recipekit.launch.preflight import NodeContext, code_checkouts_pinned
from recipekit.launch.profile import ClusterProfile, Mount, Pyxis
from recipekit.launch.run_dir import RunDir
from recipekit.launch.submit import check_submittable
from recipekit.plan import make_plan
from recipes.clusters import PROFILES
from recipes.super35.sft import MEGATRON_BRIDGE_H100, sft


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _repo(path: Path) -> str:
    """A real git checkout with one commit; returns the commit."""
    path.mkdir(parents=True)
    _git(path, "init", "-q")
    (path / "README.md").write_text("x\n")
    _git(path, "add", ".")
    _git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    return _git(path, "rev-parse", "HEAD")


def test_the_head_commit_is_read_as_git_would(tmp_path: Path) -> None:
    commit = _repo(tmp_path / "repo")
    assert head_commit(tmp_path / "repo") == commit
    _git(tmp_path / "repo", "pack-refs", "--all")  # the branch only in packed-refs now
    assert head_commit(tmp_path / "repo") == commit
    _git(tmp_path / "repo", "checkout", "-q", "--detach")
    assert head_commit(tmp_path / "repo") == commit
    assert head_commit(tmp_path) is None


def test_a_checkout_at_another_commit_is_named(tmp_path: Path) -> None:
    commit = _repo(tmp_path / "mb")
    pinned = attrs.evolve(MEGATRON_BRIDGE_H100, commit=commit[:8])
    assert checkout_problem(tmp_path / "mb", pinned) is None
    problem = checkout_problem(tmp_path / "mb", MEGATRON_BRIDGE_H100)
    assert problem == (
        f"{tmp_path / 'mb'} is at {commit[:12]}, not at the pinned 7eafb558 of "
        "NVIDIA-NeMo/Megatron-Bridge"
    )
    assert "does not exist" in (checkout_problem(tmp_path / "none", pinned) or "")
    with pytest.raises(FieldError, match="7 to 40 lower-case hex digits"):
        CodeCheckout(name="x", repository="o/r", commit="main", mount="/opt/x")


def _profile(tmp_path: Path, **changes: Any) -> ClusterProfile:
    digest = "nvcr.io/nvidia/nemo@sha256:" + "0" * 64
    runs = tmp_path / "runs"
    runs.mkdir(exist_ok=True)
    container = Pyxis(image=digest, mounts=(Mount(str(tmp_path), "/shared"),))
    base = attrs.evolve(
        PROFILES["h100"],
        container=container,
        runs_dir=str(runs),
        bases={},
        default_base="nemo",
        artifact_store=None,
        code_checkouts={},
    )
    return attrs.evolve(base, **changes)


def test_the_job_mounts_the_checkout_and_submit_checks_its_commit(tmp_path: Path) -> None:
    plan = make_plan(sft)
    checkout = tmp_path / "code" / "Megatron-Bridge"
    profile = _profile(tmp_path, code_checkouts={"megatron-bridge": str(checkout)})
    script = render_job_script(plan, profile, RunDir(tmp_path / "runs" / "x"))
    assert f"{checkout}:/opt/Megatron-Bridge" in script

    def refused(profile: ClusterProfile) -> str:
        with pytest.raises(RecipeError) as caught:
            check_submittable(plan, profile)
        return caught.value.render()

    text = refused(_profile(tmp_path))
    assert "code_checkouts: no checkout of megatron-bridge" in text
    assert "git checkout 7eafb558" in text
    assert "does not exist" in refused(profile)
    _repo(checkout)
    assert "not at the pinned 7eafb558" in refused(profile)


def test_preflight_finds_a_checkout_at_the_wrong_commit(tmp_path: Path) -> None:
    commit = _repo(tmp_path / "mb")
    plan = make_plan(sft).as_json()
    here = dict(MEGATRON_BRIDGE_H100.as_json(), mount=str(tmp_path / "mb"))
    ctx = NodeContext(
        plan={**plan, "code": [here]},
        profile=_profile(tmp_path),
        node_index=0,
        node_name="n1",
        node_address="127.0.0.1",
        run_path=str(tmp_path),
    )
    assert "not at the pinned 7eafb558" in (code_checkouts_pinned(ctx) or "")
    pinned = {**plan, "code": [dict(here, commit=commit[:10])]}
    assert code_checkouts_pinned(attrs.evolve(ctx, plan=pinned)) is None
