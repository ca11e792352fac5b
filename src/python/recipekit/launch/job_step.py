"""What the launcher does on each node inside the allocation.

``launcher.pex preflight RUN``, the job's first step, on every node: the checks of
``recipekit.launch.preflight``; a failing node prints its name and reasons and exits
``EXIT_PREFLIGHT``, and the job ends once every node has reported. For "per-gpu" the first node
also writes where rank 0 will listen.

``launcher.pex job-step RUN``, the next step of a "ray" stage, on every node:

1. Ray: head on the first node, a worker on each other node, the head waiting until every
   node and GPU has joined;
2. the framework's entry point with the rendered config, on the head; its exit status becomes
   the job's, once the head has recorded the run (the profile's tracking). Workers follow the
   head and leave when its Ray is gone. On any exit, including ``scancel``, this node's Ray is
   stopped and nothing is left.

A "per-gpu" or "head" stage's framework step is ``recipekit.launch.entry_point``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any

import attrs

from recipekit.launch import slurm
from recipekit.launch.continuation import attempt_key, finish_attempt, start_attempt
from recipekit.launch.entry_point import write_rendezvous
from recipekit.launch.framework_process import (
    Terminated,
    entry_point_command,
    raise_on_termination,
    run_framework,
)
from recipekit.launch.hostlist import expand_hostlist
from recipekit.launch.placement import ray_domain_resource
from recipekit.launch.preflight import NodeContext, run_preflight, stamp_checkpoint_directory
from recipekit.launch.profile import ClusterProfile, profile_from_json
from recipekit.launch.ray_cluster import (
    Log,
    RayNode,
    node_temp_dir,
    port_answers,
    ray_start_command,
    wait_for_cluster,
    wait_for_port,
    wait_until,
)
from recipekit.launch.run_dir import (
    INTERACTIVE_RECORD,
    PLAN_FILE,
    PROFILE_FILE,
    RAY_HEAD_FILE,
    RunDir,
)
from recipekit.launch.run_record import CheckpointPublisher, record_finished_run
from recipekit.lineage.conversions import (
    MEGATRON_CONVERSIONS_VARIABLE,
    job_conversion_environment,
    reuse_conversion,
)
from recipekit.lineage.refs import ARTIFACTS_ROOT

EXIT_PREFLIGHT = 3
EXIT_RAY = 4
# A worker treats the head as gone after this many missed GCS probes in a row.
HEAD_GONE_AFTER_MISSES = 3
# How long `ray start --block` gets to stop what it started after its SIGTERM.
RAY_STOP_GRACE_S = 3.0


def _address(node: str) -> str:
    addr = slurm.node_address(node)
    try:
        return socket.gethostbyname(addr)
    except OSError:
        return addr


@attrs.frozen
class _Node:
    """This task's place in the allocation, read from Slurm's environment."""

    run: RunDir
    plan: dict[str, Any]
    profile: ClusterProfile
    index: int
    name: str
    job_id: str
    nodes: tuple[str, ...]
    head_address: str
    address: str
    # Which attempt of the job this is (Slurm's restart count: 0, then 1 after a requeue).
    attempt: int = 0

    @classmethod
    def from_environment(cls, run_path: str) -> _Node:
        run = RunDir(Path(run_path))
        # Expanded here, not by `scontrol show hostnames`: a process per node and step.
        nodes = tuple(expand_hostlist(os.environ["SLURM_JOB_NODELIST"]))
        name = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
        job_id, attempt = attempt_key()
        return cls(
            run=run,
            plan=run.read_json(PLAN_FILE),
            profile=profile_from_json(run.read_json(PROFILE_FILE)),
            index=int(os.environ.get("SLURM_NODEID", "0")),
            name=name,
            job_id=job_id,
            nodes=nodes,
            head_address=_address(nodes[0]),
            address=_address(name),
            attempt=attempt,
        )

    def log(self, message: str) -> None:
        print(f"[{self.name} {self.address}] {message}", flush=True)

    def announce(self) -> None:
        role = "head" if self.index == 0 else f"worker {self.index}"
        self.log(
            f"{self.plan['stage']} plan {self.plan['hash'][:12]}: "
            f"node {self.index + 1}/{len(self.nodes)} ({role})"
        )


def run_node_preflight(run_path: str) -> int:
    node = _Node.from_environment(run_path)
    node.announce()
    ctx = NodeContext(
        plan=node.plan,
        profile=node.profile,
        node_index=node.index,
        node_name=node.name,
        node_address=node.address,
        run_path=str(node.run.path),
    )
    failures = run_preflight(ctx, node.log)
    if failures:
        node.log(f"PREFLIGHT FAILED on {node.name} ({node.address}): " + "; ".join(failures))
        return EXIT_PREFLIGHT
    if node.index == 0:
        try:
            stamped = stamp_checkpoint_directory(node.plan)
        except OSError as exc:
            node.log(f"PREFLIGHT FAILED: cannot stamp the checkpoint directory: {exc}")
            return EXIT_PREFLIGHT
        if stamped is not None:
            node.log(f"stamped {stamped} with this run's model and layout")
        start_attempt(node.run, node.plan, node.log)
    if ctx.launch == "per-gpu" and node.index == 0:
        write_rendezvous(node.run, node.job_id, node.head_address)
    node.log(f"preflight passed; the framework starts once every node has passed ({ctx.launch})")
    return 0


def run_job_step(run_path: str, *, interactive: bool = False) -> int:
    raise_on_termination()
    try:
        return _job_step(_Node.from_environment(run_path), interactive)
    except Terminated as why:
        print(f"[{os.environ.get('SLURMD_NODENAME', '?')}] received {why}: stopped", flush=True)
        return 128 + signal.SIGTERM


def _job_step(node: _Node, interactive: bool) -> int:
    run, plan, profile, log = node.run, node.plan, node.profile, node.log
    node_index, nodes, job_id = node.index, node.nodes, node.job_id
    head_address, my_address = node.head_address, node.address
    launch = plan["framework"]["launch"]
    if launch != "ray":
        log(f"job-step brings up Ray; this stage launches {launch!r} (its job script is stale?)")
        return EXIT_RAY
    node.announce()
    ports = profile.ray_ports
    gpus = plan["hardware"]["gpus_per_node"]
    # Bring-up's waits grow with the node count (launch.bringup), unless the profile sets one.
    timeout_s = profile.ray_start_timeout(len(nodes))
    if node_index > 0 and not _head_of_this_attempt(node, timeout_s):
        return EXIT_RAY
    if node_index > 0 and not wait_for_port(
        head_address, ports.gcs, timeout_s, what="the head's Ray GCS", log=log
    ):
        log(f"head's Ray GCS {head_address}:{ports.gcs} did not answer; giving up")
        return EXIT_RAY
    if node_index > 1 and profile.start_workers_one_at_a_time:
        previous = _address(nodes[node_index - 1])
        raylet = ports.fixed_ports(node_index - 1)["node_manager"]
        log(f"waiting for the raylet of node {node_index} ({previous}:{raylet})")
        raylet_of = f"node {node_index}'s raylet"
        if not wait_for_port(previous, raylet, timeout_s, what=raylet_of, log=log):
            log(f"node {node_index}'s raylet did not answer; giving up")
            return EXIT_RAY
    if node_index == 0 and not _gcs_port_free(my_address, ports.gcs, timeout_s, log):
        return EXIT_RAY
    temp_dir = node_temp_dir(job_id, node_index, plan["hash"], node.attempt)
    command = ray_start_command(
        profile,
        node_index=node_index,
        node_address=my_address,
        head_address=head_address,
        num_gpus=gpus,
        temp_dir=temp_dir,
    )
    command += ray_domain_resource(plan, node.run.path, node.name, log)
    ray_node = RayNode.start(command, temp_dir, log)
    head_gone = False
    try:
        if node_index == 0:
            address = f"{head_address}:{ports.gcs}"
            if not _cluster_complete(node, len(nodes)):
                return EXIT_RAY
            if interactive:
                return _hold_interactive(run, ray_node, address, nodes[0], job_id, log)
            status = run_driver(run, plan, profile, address, log)
            # Stopped at its save deadline short of its step budget: the job continues.
            verdict = finish_attempt(run, plan, status, log)
            if verdict is not None:
                return verdict
            return status or record_finished_run(run, plan, profile, log)
        status = _follow_head(ray_node, head_address, ports.gcs, log)
        head_gone = status == 0
        return status
    except Terminated as why:
        log(f"received {why}: stopping")
        return 128 + signal.SIGTERM
    finally:
        # A worker's Ray drains by reporting to the head's GCS: once that is gone, a SIGTERM
        # only waits out the grace before the kill, so the worker is killed at once.
        ray_node.stop(log, grace_s=0.0 if head_gone else RAY_STOP_GRACE_S)


def _gcs_port_free(address: str, port: int, timeout_s: float, log: Log) -> bool:
    """Whether the head may open its GCS port: free, or freed within ``timeout_s``. A requeued
    attempt can start on the node where the attempt before it is still stopping its Ray, which
    holds the port until Slurm's kill reaches it."""
    if not port_answers(address, port):
        return True
    log(f"port {port} on {address} is still open (the previous attempt's Ray stopping?): waiting")
    if wait_for_port(address, port, timeout_s, log=log, free=True):
        log(f"port {port} on {address} closed: starting the head")
        return True
    log(
        f"port {port} on {address} stayed open for {timeout_s:.0f} s: another process holds "
        "it; giving up"
    )
    return False


def _head_record(node: _Node) -> dict[str, Any]:
    return {"job_id": node.job_id, "attempt": node.attempt}


def _head_of_this_attempt(node: _Node, timeout_s: float) -> bool:
    """Whether the head of this job's attempt says its GCS is up (``RAY_HEAD_FILE``) within
    ``timeout_s``: before it does, a GCS answering at the head's port may be the previous
    attempt's, still stopping."""
    wanted = _head_record(node)

    def recorded() -> bool:
        with contextlib.suppress(OSError, ValueError):
            return bool(node.run.read_json(RAY_HEAD_FILE) == wanted)
        return False

    head = f"the head of attempt {node.attempt + 1}"
    if wait_until(recorded, timeout_s, f"{head} to start Ray", node.log):
        return True
    node.log(f"{head} did not start Ray; giving up")
    return False


def _cluster_complete(node: _Node, nodes: int) -> bool:
    plan, profile, head_address, log = node.plan, node.profile, node.head_address, node.log
    gcs_port, timeout_s = profile.ray_ports.gcs, profile.ray_start_timeout(nodes)
    address = f"{head_address}:{gcs_port}"
    if not wait_for_port(head_address, gcs_port, timeout_s, what="the Ray head's GCS", log=log):
        log(f"Ray head did not open {address}")
        return False
    node.run.write_text(RAY_HEAD_FILE, json.dumps(_head_record(node)) + "\n")
    started = time.monotonic()
    gpus = nodes * plan["hardware"]["gpus_per_node"]
    if not wait_for_cluster(profile.python, address, nodes, gpus, timeout_s, log):
        return False
    log(f"ray cluster complete: {nodes} nodes, {gpus} GPUs ({time.monotonic() - started:.1f} s)")
    return True


def _hold_interactive(
    run: RunDir, ray_node: RayNode, address: str, head_node: str, job_id: str, log: Log
) -> int:
    """Keep the cluster up for `attach` and `run` until `down` (scancel) or the time limit."""
    record = {"job_id": job_id, "head_node": head_node, "ray_address": address}
    run.write_text(INTERACTIVE_RECORD, json.dumps(record) + "\n")
    log(f"interactive Ray cluster up at {address}: use `attach`, `run`, then `down`")
    while ray_node.alive():
        time.sleep(2.0)
    log("the head's Ray exited on its own")
    return EXIT_RAY


def run_driver(
    run: RunDir, plan: dict[str, Any], profile: ClusterProfile, address: str, log: Log
) -> int:
    """The framework's entry point with the rendered config, against the Ray at ``address``."""
    command = entry_point_command(plan, profile, run)
    log(f"driver: cd {profile.framework_root} && " + " ".join(command))
    env = {**os.environ, "RAY_ADDRESS": address, "RECIPEKIT_RUN_DIR": str(run.path)}
    if MEGATRON_CONVERSIONS_VARIABLE not in env:  # a pipeline keyed it when it planned
        cache = job_conversion_environment(plan, Path(ARTIFACTS_ROOT))
        for name, where in cache.items():
            log(f"driver: {name}={where} (the conversion of its input version, by content)")
        env.update(cache)
    if env.get(MEGATRON_CONVERSIONS_VARIABLE):
        reuse_conversion(plan, Path(env[MEGATRON_CONVERSIONS_VARIABLE]), log)
    with CheckpointPublisher(plan, log, profile.publish_interval_s):
        status = run_framework(command, profile.framework_root, env)
    log(f"driver exited with status {status}")
    return status


def _follow_head(ray_node: RayNode, head_address: str, gcs_port: int, log: Log) -> int:
    misses = 0
    while True:
        if not ray_node.alive():
            log("this node's Ray exited on its own")
            return EXIT_RAY
        misses = 0 if port_answers(head_address, gcs_port) else misses + 1
        if misses >= HEAD_GONE_AFTER_MISSES:
            log("the head's Ray is gone: the run is over")
            return 0
        time.sleep(2.0)


def run_interactive_driver(run_path: str) -> int:
    """`run` on a live interactive cluster: the driver, on the head, against its Ray."""
    run = RunDir(Path(run_path))
    plan = run.read_json(PLAN_FILE)
    profile = profile_from_json(run.read_json(PROFILE_FILE))
    address = run.read_json(INTERACTIVE_RECORD)["ray_address"]

    def log(message: str) -> None:
        print(f"[driver] {message}", flush=True)

    raise_on_termination()
    try:
        return run_driver(run, plan, profile, address, log)
    except Terminated:
        return 128 + signal.SIGTERM
