"""tools/ci: what the CI jobs built, compared across architectures; the workflow's steps."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml

from tools.ci_artifacts import collect, differences, main, native_arch

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github/workflows/ci.yml"


def _built(dist: Path, stage: str, layer: str, index: str | None) -> None:
    folder = dist / stage
    folder.mkdir(parents=True)
    image = {"index_digest": index, "base": "r/x@sha256:" + "1" * 64} if index else None
    files = [
        {"path": "stage.pex", "sha256": "a" * 64},
        {"path": "launcher-layer.tar", "sha256": layer},
    ]
    (folder / "artifacts.json").write_text(json.dumps({"files": files, "image": image}))


def test_two_builds_of_the_same_bytes_compare_equal_and_a_changed_layer_is_named(
    tmp_path: Path,
) -> None:
    for arch, layer in (("amd64", "b" * 64), ("arm64", "b" * 64), ("odd", "c" * 64)):
        _built(tmp_path / arch, "recipes.super3/dapo-b200", layer, "sha256:" + "d" * 64)
        _built(tmp_path / arch, "recipes.super35/rlvr", "e" * 64, None)
    amd64, arm64, odd = (collect(tmp_path / a) for a in ("amd64", "arm64", "odd"))
    assert sorted(amd64) == ["recipes.super3/dapo-b200", "recipes.super35/rlvr"]
    assert amd64["recipes.super35/rlvr"]["index_digest"] is None
    assert differences(amd64, arm64, ("amd64", "arm64")) == []
    assert differences(amd64, odd, ("amd64", "odd")) == [
        f"recipes.super3/dapo-b200/launcher-layer.tar: {'b' * 64} != {'c' * 64}"
    ]
    del odd["recipes.super35/rlvr"]
    assert "recipes.super35/rlvr: built by amd64 only" in differences(amd64, odd, ("amd64", "odd"))


def test_compare_fails_naming_what_differs(tmp_path: Path) -> None:
    a, b = tmp_path / "amd64.json", tmp_path / "arm64.json"
    a.write_text(json.dumps({"s": {"files": {"x": "1"}, "index_digest": None}}))
    b.write_text(json.dumps({"s": {"files": {"x": "2"}, "index_digest": None}}))
    assert main(["compare", str(a), str(b)]) == 1
    assert main(["compare", str(a), str(a)]) == 0


def test_a_job_refuses_an_architecture_its_runner_is_not() -> None:
    foreign = {"amd64": "arm64", "arm64": "amd64"}[native_arch()]
    done = subprocess.run(
        ["bash", str(ROOT / "tools/ci/build"), foreign, "/nonexistent"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert f"{foreign} asked for on a {native_arch()} runner" in done.stderr


def test_the_workflow_is_a_thin_shell_over_the_scripts() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    jobs = workflow["jobs"]
    runners = {m["arch"]: m["runner"] for m in jobs["build"]["strategy"]["matrix"]["include"]}
    # Native runners, one per architecture: nothing is emulated.
    assert runners == {"amd64": ["ubuntu-22.04"], "arm64": ["self-hosted", "linux", "arm64"]}
    assert jobs["publish"]["needs"] == "build"
    runs = [s["run"] for job in jobs.values() for s in job["steps"] if "run" in s]
    scripts = {word for run in runs for word in run.split() if word.startswith("tools/ci/")}
    assert scripts == {"tools/ci/build", "tools/ci/assemble", "tools/ci/review"}
    for script in scripts:
        assert (ROOT / script).stat().st_mode & 0o111, f"{script} is not executable"
    # Secrets reach the jobs as environment only.
    assert "secrets.RECIPEKIT_CACHE_TOKEN" in jobs["build"]["env"]["CACHE_TOKEN"]


def test_each_job_installs_the_debian_packages_it_needs_on_debian() -> None:
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    # The lists name Debian packages (Ubuntu 22.04's `chromium` is a stub for the snap): a job
    # that installs any runs in Debian, the distribution `bash .ci/run` uses.
    for name in ("build", "review"):
        assert jobs[name]["container"]["image"] == "debian:bookworm", name
    assert "--privileged" in jobs["build"]["container"]["options"]  # netns for Slurm, Chromium
    runs = {name: [s.get("run", "") for s in job["steps"]] for name, job in jobs.items()}
    # The review job installs only what drawing the report needs; the build job every list
    # (tools/ci/build runs tools/install-system-deps with none named).
    assert any(run == "tools/install-system-deps review" for run in runs["review"])
    assert "tools/install-system-deps\n" in (ROOT / "tools/ci/build").read_text()
    assert not any("install-system-deps" in run for run in runs["publish"])
    review = (ROOT / "tools/system-packages/review.list").read_text()
    assert "graphviz" in review and "chromium" not in review
