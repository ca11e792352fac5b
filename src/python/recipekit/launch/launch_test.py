"""The launch pieces that need no cluster: port plan, job script, preflight checks, secrets."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

from recipekit.errors import RecipeError
from recipekit.hardware import B200_NODE
from recipekit.launch.job_script import render_job_script
from recipekit.launch.preflight import (
    NodeContext,
    cpu_architecture_matches,
    gpus_visible,
    imex_channel_present,
    inputs_exist,
    ray_ports_free,
    run_preflight,
    shared_paths_writable,
)
from recipekit.launch.profile import (
    ClusterProfile,
    Gb200Settings,
    Mount,
    NoContainer,
    Pyxis,
    profile_from_json,
    profile_to_json,
)
from recipekit.launch.ray_ports import RayPorts
from recipekit.launch.run_dir import RunDir
from recipekit.launch.submit import check_submittable
from recipekit.plan import make_plan
from recipes.clusters import PROFILES, SHARED
from recipes.super3.dapo import dapo_b200, dapo_gb200


def _profile(tmp_path: Path, **changes: Any) -> ClusterProfile:
    (tmp_path / "runs").mkdir(exist_ok=True)
    base = ClusterProfile(
        name="local",
        node=B200_NODE,
        partition="gpu",
        container=NoContainer(python="/usr/bin/python3"),
        runs_dir=str(tmp_path / "runs"),
        shared_paths={"checkpoints": str(tmp_path)},
        ray_ports=RayPorts(node_offset=1000),
    )
    return attrs.evolve(base, **changes)


def test_ray_ports_stay_below_the_ephemeral_range() -> None:
    with pytest.raises(ValueError, match="ephemeral"):
        RayPorts(min_worker=40000, max_worker=41000)


def test_ray_ports_must_not_overlap_the_worker_range() -> None:
    with pytest.raises(ValueError, match="inside the worker port range"):
        RayPorts(node_manager=20500)


def test_node_offset_shifts_every_per_node_port() -> None:
    ports = RayPorts(node_offset=1000)
    assert ports.fixed_ports(2)["node_manager"] == 22001
    assert "gcs" in ports.fixed_ports(0) and "gcs" not in ports.fixed_ports(1)
    assert "--min-worker-port=22100" in ports.start_arguments(2)
    with pytest.raises(ValueError, match="smaller than one node's port block"):
        RayPorts(node_offset=10)


def test_job_script_asks_for_the_plans_nodes_and_gpus(tmp_path: Path) -> None:
    plan = make_plan(dapo_gb200)
    profile = PROFILES["gb200-nvl72"]
    script = render_job_script(
        plan, profile, RunDir.for_plan(profile.runs_dir, "dapo-gb200", plan.hash)
    )
    for directive in (
        "--nodes=5",
        "--gres=gpu:4",
        "--exclusive",
        "--dependency=singleton",
        "--requeue",
    ):
        assert f"#SBATCH {directive}" in script
    assert "export NCCL_MNNVL_ENABLE=1" in script and "export NVIDIA_IMEX_CHANNELS=0" in script
    assert "--container-image=" in script and "job-step" in script
    b200 = make_plan(dapo_b200)
    b200_profile = PROFILES["b200"]
    b200_run = RunDir.for_plan(b200_profile.runs_dir, "dapo-b200", b200.hash)
    assert "#SBATCH --gres=gpu:8" in render_job_script(b200, b200_profile, b200_run)


def test_a_run_directory_outside_the_container_mounts_is_refused() -> None:
    with pytest.raises(RecipeError, match="/elsewhere/runs is not under any mount"):
        attrs.evolve(PROFILES["b200"], runs_dir="/elsewhere/runs")


def test_a_profile_that_inlines_a_secret_is_refused(tmp_path: Path) -> None:
    profile = _profile(tmp_path, extra_env={"WANDB_API_KEY": "abc", "MY_HF_TOKEN": "x"})
    with pytest.raises(RecipeError) as exc:
        check_submittable(make_plan(dapo_b200), profile)
    paths = {i.path for i in exc.value.issues}
    assert paths == {
        "profile local: extra_env.WANDB_API_KEY",
        "profile local: extra_env.MY_HF_TOKEN",
    }


def test_an_image_given_by_tag_alone_is_refused(tmp_path: Path) -> None:
    # The B200 profile with a runs_dir this host has, mounted into the container.
    mounts = (Mount(str(tmp_path), "/runs"),)
    b200 = PROFILES["b200"]
    assert isinstance(b200.container, Pyxis)
    tagged = Pyxis(image=b200.container.image, mounts=mounts)
    here = attrs.evolve(b200, runs_dir=str(tmp_path), container=tagged)
    with pytest.raises(RecipeError, match="names a tag, not a digest"):
        check_submittable(make_plan(dapo_b200), here)
    digest = "nvcr.io/org/nemo-rl@sha256:" + "0" * 64
    pinned = attrs.evolve(here, container=Pyxis(image=digest, mounts=mounts))
    check_submittable(make_plan(dapo_b200), pinned)


def test_baked_shipping_runs_the_launcher_inside_the_image(tmp_path: Path) -> None:
    digest = "registry.example/org/dapo-b200@sha256:" + "1" * 64
    baked = attrs.evolve(
        PROFILES["b200"], container=Pyxis(image=digest, mounts=SHARED), shipping="baked"
    )
    plan = make_plan(dapo_b200)
    run = RunDir.for_plan(baked.runs_dir, "dapo-b200", plan.hash)
    script = render_job_script(plan, baked, run)
    assert "python3 \\\n    /opt/recipekit/launcher \\\n    job-step" in script
    assert f"--container-image={digest}" in script
    mounted = render_job_script(plan, PROFILES["b200"], run)
    assert "/shared/recipekit-runs/dapo-b200-" in mounted and "launcher.pex" in mounted
    with pytest.raises(RecipeError, match="baked needs a container image"):
        _profile(tmp_path, shipping="baked")


def test_a_baked_image_must_carry_the_plan_being_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recipekit.launch import preflight

    digest = "registry.example/org/dapo-b200@sha256:" + "1" * 64
    baked = attrs.evolve(
        PROFILES["b200"], container=Pyxis(image=digest, mounts=SHARED), shipping="baked"
    )
    plan = make_plan(dapo_b200).as_json()
    monkeypatch.setattr(preflight, "BAKED_PLAN_DIR", str(tmp_path))
    ctx = _ctx(tmp_path, plan, baked)
    assert "is it a stage image?" in (preflight.baked_plan_matches(ctx) or "")
    (tmp_path / "plan.json").write_text(json.dumps({"hash": "0" * 64}))
    assert "built for plan 000000000000" in (preflight.baked_plan_matches(ctx) or "")
    (tmp_path / "plan.json").write_text(json.dumps({"hash": plan["hash"]}))
    assert preflight.baked_plan_matches(ctx) is None


def test_a_plan_for_other_hardware_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="the plan is for GB200 nodes"):
        check_submittable(make_plan(dapo_gb200), _profile(tmp_path))


def test_profile_round_trips_through_json(tmp_path: Path) -> None:
    profile = _profile(tmp_path, gb200=Gb200Settings(imex_channel=7))
    assert profile_from_json(json.loads(json.dumps(profile_to_json(profile)))) == profile
    assert profile_from_json(profile_to_json(PROFILES["gb200-nvl72"])) == PROFILES["gb200-nvl72"]


def _ctx(tmp_path: Path, plan: dict, profile: ClusterProfile) -> NodeContext:
    return NodeContext(
        plan=plan,
        profile=profile,
        node_index=0,
        node_name="n1",
        node_address="127.0.0.1",
        run_path=str(tmp_path),
    )


def test_preflight_counts_gpus_from_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = _ctx(tmp_path, make_plan(dapo_b200).as_json(), _profile(tmp_path))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    assert gpus_visible(ctx) == "4 GPUs visible (CUDA_VISIBLE_DEVICES='0,1,2,3'), the plan needs 8"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7")
    assert gpus_visible(ctx) is None


def test_preflight_names_a_missing_mount(tmp_path: Path) -> None:
    profile = _profile(tmp_path, shared_paths={"checkpoints": str(tmp_path / "not-mounted")})
    problem = shared_paths_writable(_ctx(tmp_path, make_plan(dapo_b200).as_json(), profile))
    assert (
        problem
        == f"shared path 'checkpoints': {tmp_path}/not-mounted is not mounted (no such directory)"
    )


def test_preflight_checks_model_path_and_arch(tmp_path: Path) -> None:
    plan = make_plan(dapo_gb200).as_json()
    ctx = _ctx(tmp_path, plan, _profile(tmp_path))
    assert "does not exist on this node" in (inputs_exist(ctx) or "")
    assert "the plan is for aarch64" in (cpu_architecture_matches(ctx) or "")


def test_preflight_needs_the_imex_channel_on_gb200(tmp_path: Path) -> None:
    plan = make_plan(dapo_gb200).as_json()
    no_settings = _ctx(tmp_path, plan, _profile(tmp_path))
    assert "no gb200 settings" in (imex_channel_present(no_settings) or "")
    channels = tmp_path / "imex"
    channels.mkdir()
    profile = _profile(tmp_path, gb200=Gb200Settings(imex_channel=5, imex_device_dir=str(channels)))
    assert "channel5 is missing" in (imex_channel_present(_ctx(tmp_path, plan, profile)) or "")
    (channels / "channel5").touch()
    assert imex_channel_present(_ctx(tmp_path, plan, profile)) is None


def test_preflight_finds_a_taken_ray_port(
    tmp_path: Path, listening_port: Callable[[], int]
) -> None:
    ports = RayPorts(
        gcs=27379,
        node_manager=21001,
        object_manager=21002,
        runtime_env_agent=21003,
        dashboard_agent_grpc=21004,
        dashboard_agent_listen=21005,
        metrics_export=21006,
        min_worker=21100,
        max_worker=21200,
        dashboard=18265,
    )
    plan = make_plan(dapo_b200).as_json()
    assert ray_ports_free(_ctx(tmp_path, plan, _profile(tmp_path, ray_ports=ports))) is None
    # A port some process listens on (this test holds it): preflight names it, and only it.
    gcs = listening_port()
    ctx = _ctx(tmp_path, plan, _profile(tmp_path, ray_ports=attrs.evolve(ports, gcs=gcs)))
    assert ray_ports_free(ctx) == f"Ray ports already in use on 127.0.0.1: gcs {gcs}"


def test_skipped_checks_are_logged_with_their_reason(tmp_path: Path) -> None:
    profile = _profile(tmp_path, preflight_skip={"cpu-arch": "tests run arm64 plans on x86_64"})
    lines: list[str] = []
    run_preflight(_ctx(tmp_path, make_plan(dapo_gb200).as_json(), profile), lines.append)
    assert "preflight cpu-arch: skipped (tests run arm64 plans on x86_64)" in lines
