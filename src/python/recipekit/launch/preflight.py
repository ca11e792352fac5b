"""Checks every node runs before the framework starts: a bad node stops the job in seconds, by
name.

Each check is a function named for what it guards, returning ``None`` or the reason it failed.
A profile may skip a check by name, with a reason, which the job log shows.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from recipekit.checkouts import CodeCheckout, checkout_problem
from recipekit.images.paths import PLAN_DIR as BAKED_PLAN_DIR
from recipekit.job_rules import preflight_rules
from recipekit.launch.framework_process import runs_with_python
from recipekit.launch.hostlist import expand_hostlist
from recipekit.launch.placement import (
    Domain,
    Placement,
    fabric_domain,
    inventory_file,
    placement_problem,
)
from recipekit.launch.profile import ClusterProfile
from recipekit.lineage.checkpoint_stamp import CheckpointStamp, planned_run_verdict, write_stamp
from recipekit.lineage.refs import ARTIFACTS_ROOT
from recipekit.lineage.store import (
    STORE_MARKER,
    input_problem,
    is_store,
    resolve_run,
    run_name,
    store_paths,
    stored_input,
)


@attrs.frozen(kw_only=True)
class NodeContext:
    plan: dict[str, Any]
    profile: ClusterProfile
    node_index: int
    node_name: str
    node_address: str
    run_path: str

    @property
    def is_head(self) -> bool:
        return self.node_index == 0

    @property
    def launch(self) -> str:
        """How the framework starts (``Framework.launch``): "ray", "per-gpu" or "head"."""
        return str(self.plan["framework"]["launch"])


Check = Callable[[NodeContext], str | None]


def gpus_visible(ctx: NodeContext) -> str | None:
    expected = ctx.plan["hardware"]["gpus_per_node"]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        count = len([d for d in visible.split(",") if d.strip()])
        source = f"CUDA_VISIBLE_DEVICES={visible!r}"
    else:
        try:
            listed = subprocess.run(
                ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=True
            ).stdout
        except (OSError, subprocess.SubprocessError) as exc:
            return f"no GPUs visible: CUDA_VISIBLE_DEVICES is unset and nvidia-smi failed ({exc})"
        count = len([line for line in listed.splitlines() if line.startswith("GPU ")])
        source = "nvidia-smi -L"
    if count != expected:
        return f"{count} GPUs visible ({source}), the plan needs {expected}"
    return None


def cpu_architecture_matches(ctx: NodeContext) -> str | None:
    planned = ctx.plan["hardware"]["cpu_arch"]
    here = platform.machine()
    if here != planned:
        node = ctx.plan["hardware"]["node"]
        return f"this node/container is {here}, the plan is for {planned} ({node})"
    return None


def _writable(path: Path) -> str | None:
    if not path.is_dir():
        return f"{path} is not mounted (no such directory)"
    try:
        with tempfile.NamedTemporaryFile(dir=path, prefix=".recipekit-preflight-"):
            pass
    except OSError as exc:
        return f"{path} is not writable ({exc.strerror})"
    return None


def shared_paths_writable(ctx: NodeContext) -> str | None:
    paths = {"run directory": ctx.run_path, **ctx.profile.shared_paths}
    for label, path in paths.items():
        problem = _writable(Path(path))
        if problem:
            return f"shared path {label!r}: {problem}"
    return None


def artifact_store_mounted(ctx: NodeContext) -> str | None:
    if not store_paths(ctx.plan):
        return None
    if not is_store(Path(ARTIFACTS_ROOT)):
        return (
            f"the artifact store is not mounted at {ARTIFACTS_ROOT} on this node (no "
            f"{STORE_MARKER}; profile.artifact_store)"
        )
    return None


def code_checkouts_pinned(ctx: NodeContext) -> str | None:
    """Each source checkout the stage mounts is there, at its pinned commit, on this node."""
    for entry in ctx.plan.get("code", ()):
        wanted = CodeCheckout(**entry)
        problem = checkout_problem(Path(wanted.mount), wanted)
        if problem is not None:
            return f"{wanted.name}: {problem} (profile.code_checkouts)"
    return None


def inputs_exist(ctx: NodeContext) -> str | None:
    """Every input is there; one from the artifact store is a whole version (every file of
    its manifest, at its size, and with its sha256 where its stat moved), so a stage never
    starts on a damaged checkpoint."""
    store = ctx.profile.artifact_store
    # The store's path as the user knows it (the container sees it at /artifacts), for the
    # command a message gives.
    shown = store.path if store is not None else ARTIFACTS_ROOT
    for role, path in ctx.plan.get("inputs", {}).items():
        stored = stored_input(path)
        if stored is not None:
            # An import or publish killed after its commit leaves the aliases behind the
            # index: the node finishes them (under the artifact's lock, as the next import
            # would) rather than refuse a version that is whole.
            problem = input_problem(Path(ARTIFACTS_ROOT), *stored, shown_root=shown, repair=True)
            if problem is not None:
                return f"{role} {path}: {problem}"
        elif path.startswith("/") and not Path(path).exists():
            return f"{role} {path} does not exist on this node"
    return None


def outputs_writable(ctx: NodeContext) -> str | None:
    run = run_name(str(ctx.plan["stage"]), str(ctx.plan["hash"]))
    for role, path in ctx.plan.get("outputs", {}).items():
        target = Path(resolve_run(path, run))
        parent = target if target.exists() else target.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        problem = _writable(parent)
        if problem:
            return f"{role} {path}: {problem}"
    return None


def imex_channel_present(ctx: NodeContext) -> str | None:
    if not ctx.plan["hardware"].get("needs_imex_channel"):
        return None
    gb200 = ctx.profile.gb200
    if gb200 is None:
        return "the plan needs an IMEX channel but the cluster profile has no gb200 settings"
    channel = Path(gb200.imex_device_dir) / f"channel{gb200.imex_channel}"
    if not channel.exists():
        return f"IMEX channel {channel} is missing (ask the admins for your channel)"
    return None


def nvlink_domains_hold_the_groups(ctx: NodeContext) -> str | None:
    """GB200: the groups the plan keeps inside one NVLink domain are, on the nodes Slurm gave
    (each node's ``nvidia-smi -q``, written by the job's inventory step: launch.placement).
    Without it a group across racks hangs NCCL until its 600 s watchdog fires (NeMo-RL #2986).
    The head checks every node; the others have nothing of their own to add."""
    found = ctx.plan.get("placement")
    if not ctx.is_head or found is None or "unplaced" in found:
        return None
    placement = Placement.from_json(found)
    nodes = expand_hostlist(os.environ.get("SLURM_JOB_NODELIST", ctx.node_name))
    domains: dict[str, Domain | str] = {}
    for node in nodes:
        path = Path(ctx.run_path) / inventory_file(node)
        try:
            domains[node] = fabric_domain(path.read_text(errors="replace"))
        except OSError as exc:
            domains[node] = f"no nvidia-smi -q at {path} ({exc.strerror})"
    return placement_problem(placement, nodes, domains)


def _taken_ports(address: str, ports: dict[str, int]) -> list[str]:
    taken = []
    for name, port in ports.items():
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            # As Ray and torch bind: a previous job's connections in TIME_WAIT do not make a
            # port busy, a process listening on it does.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((address, port))
            except OSError:
                taken.append(f"{name} {port}")
    return taken


def ray_ports_free(ctx: NodeContext) -> str | None:
    if ctx.launch != "ray":
        return None
    taken = _taken_ports(ctx.node_address, ctx.profile.ray_ports.fixed_ports(ctx.node_index))
    if taken:
        return f"Ray ports already in use on {ctx.node_address}: {', '.join(taken)}"
    return None


def master_port_free(ctx: NodeContext) -> str | None:
    """Rank 0 of a per-GPU stage binds torch.distributed's store on the first node."""
    if ctx.launch != "per-gpu" or not ctx.is_head:
        return None
    if _taken_ports(ctx.node_address, {"master_port": ctx.profile.master_port}):
        return (
            f"MASTER_PORT {ctx.profile.master_port} is already in use on {ctx.node_address} "
            "(profile.master_port)"
        )
    return None


def framework_entry_point_present(ctx: NodeContext) -> str | None:
    # Per GPU, every node runs the entry point; otherwise only the head does.
    if not ctx.is_head and ctx.launch != "per-gpu":
        return None
    entry_point = ctx.plan["framework"]["entry_point"]
    if not runs_with_python(entry_point):
        if shutil.which(entry_point) is None:
            return f"framework command {entry_point!r} is not on this node's PATH"
        return None
    entry = Path(ctx.profile.framework_root) / entry_point
    if not entry.is_file():
        return f"framework entry point {entry} not found (profile.framework_root)"
    return None


def baked_plan_matches(ctx: NodeContext) -> str | None:
    """A baked image carries the plan it was built from: it must be the plan being run."""
    if ctx.profile.shipping != "baked":
        return None
    baked = Path(BAKED_PLAN_DIR) / "plan.json"
    try:
        baked_hash = json.loads(baked.read_text())["hash"]
    except (OSError, ValueError, KeyError) as exc:
        return f"the image has no readable {baked} ({exc}): is it a stage image?"
    if baked_hash != ctx.plan["hash"]:
        return (
            f"the image was built for plan {baked_hash[:12]}, this run is plan "
            f"{ctx.plan['hash'][:12]}: publish this plan's image and put its digest in the profile"
        )
    return None


def checkpoints_match_the_run(ctx: NodeContext) -> str | None:
    """Every checkpoint the run resumes or starts from was written by this model, and one it
    resumes whole by this layout unless the plan allows a reshard (run.reshard=true): what the
    plan checked where it could see the checkpoint, checked here on the cluster's storage."""
    verdict = planned_run_verdict(ctx.plan, visible_only=False)
    return "; ".join(issue.render() for issue in verdict.errors) or None


def job_environment_holds(ctx: NodeContext) -> str | None:
    """``recipekit.job_rules`` on the environment the framework inherits on this node (the
    container's own included): caches and checkpoints on storage every node sees, and no
    expandable segments beside colocated vLLM."""
    shared = [*ctx.profile.shared_paths.values(), ctx.run_path, ARTIFACTS_ROOT]
    issues = preflight_rules(ctx.plan, shared)
    return "; ".join(issue.render() for issue in issues) or None


def stamp_checkpoint_directory(plan: dict[str, Any]) -> Path | None:
    """On the head node, once every check passed: stamp the directory the run saves its
    checkpoints to with this run's model and layout, before the framework writes any."""
    saves = plan.get("outputs", {}).get("checkpoints")
    if not isinstance(saves, str):
        return None
    directory = Path(resolve_run(saves, run_name(str(plan["stage"]), str(plan["hash"]))))
    write_stamp(directory, CheckpointStamp.of_plan(plan))
    return directory


CHECKS: dict[str, Check] = {
    "gpus": gpus_visible,
    "cpu-arch": cpu_architecture_matches,
    "shared-paths": shared_paths_writable,
    "artifact-store": artifact_store_mounted,
    "code": code_checkouts_pinned,
    "inputs": inputs_exist,
    "checkpoints": checkpoints_match_the_run,
    "job-environment": job_environment_holds,
    "outputs": outputs_writable,
    "imex-channel": imex_channel_present,
    "nvlink-domains": nvlink_domains_hold_the_groups,
    "ray-ports": ray_ports_free,
    "master-port": master_port_free,
    "entry-point": framework_entry_point_present,
    "baked-plan": baked_plan_matches,
}


def run_preflight(ctx: NodeContext, log: Callable[[str], None]) -> list[str]:
    """Every failure on this node, as ``check: reason``; logs each check's result."""
    failures = []
    for name, check in CHECKS.items():
        if name in ctx.profile.preflight_skip:
            log(f"preflight {name}: skipped ({ctx.profile.preflight_skip[name]})")
            continue
        problem = check(ctx)
        if problem:
            failures.append(f"{name}: {problem}")
        log(f"preflight {name}: {'FAILED: ' + problem if problem else 'ok'}")
    return failures
