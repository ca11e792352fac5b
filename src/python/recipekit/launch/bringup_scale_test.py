"""Bring-up that scales (issue 42): Ray's GCS settings in the job script, the node addresses
read once for every step, and the lost-node check as one step over the allocation, run here by
bash against stand-ins for srun and scontrol that count their calls."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from recipekit.launch import slurm
from recipekit.launch.job_script import render_job_script
from recipekit.launch.launch_kinds_test import _plan, _profile
from recipekit.launch.ray_gcs import GCS_SETTINGS, gcs_script_lines, gcs_settings
from recipekit.launch.run_dir import RunDir
from recipes.super3.dapo import dapo_b200

# ray.sub @ 7ea279ab on a 128-core node (CPUS_PER_WORKER=128), by its own arithmetic.
UPSTREAM_AT_128 = {
    "RAY_gcs_server_rpc_server_thread_num": "128",
    "RAY_num_server_call_thread": "64",
    "RAY_gcs_server_rpc_client_thread_num": "128",
    "RAY_gcs_max_active_rpcs_per_handler": "25600",
    "RAY_worker_register_timeout_seconds": "120",
    "RAY_gcs_rpc_server_connect_timeout_s": "120",
    "RAY_gcs_rpc_server_reconnect_timeout_s": "120",
    "RAY_gcs_server_request_timeout_seconds": "120",
    "RAY_raylet_report_resources_period_milliseconds": "500",
    "RAY_task_events_report_interval_ms": "5000",
    "RAY_num_workers_soft_limit": "16",
    "RAY_grpc_keepalive_time_ms": "60000",
    "RAY_grpc_keepalive_timeout_ms": "60000",
    "RAY_enable_timeline": "false",
    "RAY_event_stats": "false",
    "RAY_ray_syncer_message_refresh_interval_ms": "10000",
    "RAY_core_worker_internal_heartbeat_ms": "5000",
    "RAY_health_check_period_ms": "10000",
}


def test_gcs_settings_are_nemo_rls_at_every_node_count_and_follow_the_cpus() -> None:
    for nodes in (1, 2, 16, 144):
        assert gcs_settings(nodes, 128) == UPSTREAM_AT_128
    grace = gcs_settings(144, 144)  # GB200's Grace: 144 cores
    assert grace["RAY_gcs_server_rpc_server_thread_num"] == "144"
    assert grace["RAY_num_server_call_thread"] == "72"
    assert gcs_settings(2, 1)["RAY_num_server_call_thread"] == "1"  # never 0 threads
    with pytest.raises(ValueError, match="at least 1"):
        gcs_settings(0, 8)


def _exported(lines: list[str], environ: dict[str, str]) -> dict[str, str]:
    """What bash exports from ``lines`` under ``environ`` (RAY_* only)."""
    script = "\n".join([*lines, "env"])
    done = subprocess.run(
        ["bash", "-euc", script], capture_output=True, text=True, env=environ, check=True
    )
    pairs = (line.partition("=") for line in done.stdout.splitlines())
    return {k: v for k, _, v in pairs if k.startswith("RAY_")}


@pytest.mark.parametrize("cpus", [1, 3, 128, 144])
def test_the_script_computes_what_the_function_does(cpus: int) -> None:
    environ = {"PATH": os.environ["PATH"], "SLURM_CPUS_ON_NODE": str(cpus)}
    assert _exported(gcs_script_lines(16), environ) == gcs_settings(16, cpus)


def test_a_value_set_before_the_script_wins() -> None:
    environ = {
        "PATH": os.environ["PATH"],
        "SLURM_CPUS_ON_NODE": "64",
        "RAY_worker_register_timeout_seconds": "300",
    }
    exported = _exported(gcs_script_lines(4), environ)
    assert exported["RAY_worker_register_timeout_seconds"] == "300"
    assert exported["RAY_gcs_server_rpc_server_thread_num"] == "64"


def _script(tmp_path: Path, launch: str, **profile: Any) -> str:
    return render_job_script(
        _plan(dapo_b200, launch), _profile(tmp_path, **profile), RunDir(tmp_path / "run")
    )


def test_ray_stages_set_the_gcs_settings_before_any_step_and_others_do_not(
    tmp_path: Path,
) -> None:
    ray = _script(tmp_path, "ray")
    first_step = ray.index("\nsrun ")
    for setting in GCS_SETTINGS:
        assert 0 < ray.index(f"export {setting.variable}=") < first_step
    # The profile's extra_env is exported first, so a site's own value wins.
    tuned = _script(tmp_path, "ray", extra_env={"RAY_health_check_period_ms": "3000"})
    assert tuned.index("export RAY_health_check_period_ms=3000") < tuned.index(
        'export RAY_health_check_period_ms="${RAY_health_check_period_ms:-'
    )
    assert "RAY_gcs" not in _script(tmp_path, "per-gpu")


def test_node_addresses_come_from_one_call_for_every_step(tmp_path: Path) -> None:
    text = _script(tmp_path, "per-gpu")
    assert text.count("scontrol show node") == 1
    block = text[text.index("RECIPEKIT_NODE_ADDRESSES=") : text.index("\n# 1. Preflight")]
    fake = _fake_slurm(tmp_path, answering=[])
    (fake / "scontrol").write_text(
        '#!/bin/bash\necho "$*" >> "$CALLS"\n'
        "echo 'NodeName=gpu1 Arch=x86_64 NodeAddr=10.0.0.1 NodeHostName=gpu1 Port=0'\n"
        "echo 'NodeName=gpu2 Arch=x86_64 NodeAddr=10.0.0.2 NodeHostName=gpu2 Port=0'\n"
    )
    calls = tmp_path / "calls"
    environ = {
        "PATH": f"{fake}:{os.environ['PATH']}",
        "CALLS": str(calls),
        "SLURM_JOB_NODELIST": "gpu[1-2]",
    }
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block + "\nprintenv RECIPEKIT_NODE_ADDRESSES"],
        capture_output=True,
        text=True,
        env=environ,
        check=True,
    )
    exported = {slurm.NODE_ADDRESSES_VARIABLE: done.stdout.strip()}
    assert slurm.node_addresses(exported) == {"gpu1": "10.0.0.1", "gpu2": "10.0.0.2"}
    assert calls.read_text().splitlines() == ["show node --oneliner gpu[1-2]"]
    # A step reads its address from there, asking Slurm nothing (no scontrol on this PATH).
    assert slurm.node_address("gpu2", exported) == "10.0.0.2"


def test_a_node_the_variable_lacks_is_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slurm.shutil, "which", lambda _: None)
    assert slurm.node_address("gpu3", {slurm.NODE_ADDRESSES_VARIABLE: "gpu1=10.0.0.1"}) == "gpu3"
    assert slurm.node_addresses({slurm.NODE_ADDRESSES_VARIABLE: "junk =x y= gpu1=a"}) == {
        "gpu1": "a"
    }


# -- the lost-node check, run by bash ----------------------------------------------------------


def _fake_slurm(tmp_path: Path, answering: list[str]) -> Path:
    """srun printing the names of ``answering`` (the nodes whose slurmd answers), scontrol
    expanding ``n[1-N]`` and telling a short SlurmdTimeout, sleep returning at once; each
    appends its command line to $CALLS."""
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    names = "\\n".join(answering)
    scripts = {
        "srun": f'echo "srun $*" >> "$CALLS"\nprintf "{names}\\n"\nexit 1\n',
        "scontrol": (
            'echo "scontrol $*" >> "$CALLS"\n'
            'case "$1 $2" in\n'
            '  "show hostnames") n=${3##*-}; seq -f "n%g" 1 "${n%]}" ;;\n'
            '  "show config") echo "SlurmdTimeout = 3 sec"; echo "MessageTimeout = 1 sec" ;;\n'
            "esac\n"
        ),
        "sleep": 'echo "sleep $*" >> "$CALLS"\n',
    }
    for name, body in scripts.items():
        path = fake / name
        path.write_text("#!/bin/bash\n" + body)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return fake


def _step_failed(tmp_path: Path, nodes: int, answering: list[str]) -> tuple[int, list[str], str]:
    """The job script's step_failed, as the batch script on n1 runs it after a step ended 7:
    (its exit status, the Slurm calls it made, what it recorded as lost)."""
    run = RunDir(tmp_path / "run")
    run.path.mkdir(exist_ok=True)
    text = _script(tmp_path, "ray")
    function = re.search(r"^step_failed\(\) \{\n.*?^\}\n", text, re.DOTALL | re.MULTILINE)
    assert function is not None
    calls = tmp_path / "calls"
    calls.unlink(missing_ok=True)
    environ = {
        "PATH": f"{_fake_slurm(tmp_path, answering)}:{os.environ['PATH']}",
        "CALLS": str(calls),
        "SLURM_JOB_ID": "42",
        "SLURM_JOB_NUM_NODES": str(nodes),
        "SLURM_JOB_NODELIST": f"n[1-{nodes}]",
        "SLURMD_NODENAME": "n1",
    }
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", function.group(0) + "step_failed 7"],
        capture_output=True,
        text=True,
        env=environ,
        timeout=60,
    )
    record = run.file("lost-nodes")
    lost = (
        " ".join(line.split()[2] for line in record.read_text().splitlines())
        if record.exists()
        else ""
    )
    record.unlink(missing_ok=True)
    return done.returncode, calls.read_text().splitlines(), lost


@pytest.mark.parametrize("nodes", [4, 144])
def test_the_lost_node_check_is_one_srun_whatever_the_node_count(
    tmp_path: Path, nodes: int
) -> None:
    every = [f"n{i}" for i in range(1, nodes + 1)]
    status, calls, lost = _step_failed(tmp_path, nodes, [n for n in every if n != "n3"])
    srun = [c for c in calls if c.startswith("srun")]
    assert srun == [
        f"srun --nodes={nodes} --ntasks={nodes} --ntasks-per-node=1 --overlap --gres=none "
        "printenv SLURMD_NODENAME"
    ]
    assert lost == "n3"
    # hostnames (expanded by scontrol itself, no RPC), config, requeue: the same at any size.
    scontrol = [c.split()[1] for c in calls if c.startswith("scontrol")]
    assert scontrol == ["show", "show", "requeue"]
    assert status == 7


def test_a_crash_with_every_node_answering_ends_with_its_status(tmp_path: Path) -> None:
    status, calls, lost = _step_failed(tmp_path, 3, ["n1", "n2", "n3"])
    assert (status, lost) == (7, "")
    assert not any(c.startswith(("sleep", "scontrol requeue")) for c in calls)


def test_a_check_that_gets_no_answer_at_all_tells_nothing(tmp_path: Path) -> None:
    # Not even n1, where the script runs: the step over the allocation failed, not the nodes.
    status, calls, lost = _step_failed(tmp_path, 3, [])
    assert (status, lost) == (7, "")
    assert len([c for c in calls if c.startswith("srun")]) == 2  # tried once more


def test_the_block_names_the_plans_node_count(tmp_path: Path) -> None:
    nodes = _plan(dapo_b200, "ray").stage.hardware.num_nodes
    assert f"# Ray's GCS for {nodes} node(s)" in _script(tmp_path, "ray")
