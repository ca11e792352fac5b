#!/usr/bin/env python3
"""Stands in for a framework's entry point in the launch-kind tests (``fake_stages.py``).

Installed where the real one would be (Megatron-Bridge's ``scripts/training/run_recipe.py`` in
the profile's framework root, ``nemo-evaluator-launcher`` on PATH) and run by the job exactly
as the real one is, it writes what it saw to ``<run>/seen/<node>-<rank>.json``: its arguments
against the plan's, the torch.distributed environment, the node and its GPUs. With
``WORLD_SIZE`` set it also meets every other rank over TCP at ``MASTER_ADDR:MASTER_PORT``, as
torch.distributed's store does, so a wrong address or port fails the run.

Rank 0 (or the one head process) reads what Megatron-Bridge is handed, its Hydra-style
overrides: the starting checkpoint (``checkpoint.pretrained_checkpoint``) and the data
(``dataset.path``) must exist, or it fails as Megatron-Bridge would when it loads them; then it
saves ``iter_<N, 7 digits>`` every ``checkpoint.save_interval`` iterations and at
``train.train_iters`` under ``checkpoint.save`` (``${oc.env:VAR}`` resolved as OmegaConf does).
Installed as Megatron-Bridge's ``examples/conversion/convert_checkpoints_multi_gpu.py`` and
called with ``export ...``, rank 0 stands in for the HF export instead (``export_model``).

FAKE_FAIL_RANK and FAKE_FAIL_STATUS make one rank exit with that status after the rendezvous;
FAKE_SLEEP (seconds) keeps the others training meanwhile. FAKE_STEP_SECONDS makes every rank
train instead, an iteration that long (``train``): resuming from the newest saved iteration, and
saving and stopping at ``train.exit_duration_in_mins`` or, with ``train.exit_signal_handler``,
at SIGTERM, as Megatron-Bridge does (the time-limit test). They come from the submitting shell
through Slurm's --export, like any user environment. Standard library only: it runs with
whichever Python the entry point is started with.
"""

import json
import os
import re
import signal
import socket
import sys
import time
from pathlib import Path

# Megatron's exit_duration_in_mins counts from the program's start (_TRAIN_START_TIME).
STARTED = time.monotonic()

SEEN = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "NODE_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "SLURMD_NODENAME",
    "CUDA_VISIBLE_DEVICES",
    "RAY_ADDRESS",
)
RENDEZVOUS_TIMEOUT_S = 120
OUTPUT_FILE = "output.bin"  # in each saved iter_<N> directory


def rendezvous(rank: int, world: int, address: str, port: int) -> list[int]:
    """Rank 0 listens and hears from every other rank; each rank learns who joined."""
    deadline = time.monotonic() + RENDEZVOUS_TIMEOUT_S
    if rank == 0:
        joined, peers = [0], []
        with socket.create_server((address, port)) as server:
            server.settimeout(RENDEZVOUS_TIMEOUT_S)
            while len(joined) < world:
                conn, _ = server.accept()
                joined.append(int(conn.makefile().readline()))
                peers.append(conn)
            answer = json.dumps(sorted(joined)) + "\n"
            for conn in peers:
                with conn:
                    conn.sendall(answer.encode())
        return sorted(joined)
    while True:
        try:
            with socket.create_connection((address, port), timeout=5) as conn:
                conn.sendall(f"{rank}\n".encode())
                conn.settimeout(RENDEZVOUS_TIMEOUT_S)
                return list(json.loads(conn.makefile().readline()))
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def resolve_env(value: str) -> str:
    """``${oc.env:VAR}`` as OmegaConf resolves it (an unset variable is an error there too)."""
    return re.sub(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: os.environ[m.group(1)], value)


def overrides(argv: list[str]) -> dict[str, str]:
    """``key=value`` arguments (Hydra-style), values unquoted as Hydra reads them."""
    found = {}
    for argument in argv:
        key, sep, value = argument.partition("=")
        if sep and not key.startswith("-"):
            found[key] = resolve_env(value.strip('"'))
    return found


def save_checkpoints(given: dict[str, str]) -> str | None:
    """What rank 0 does: check the inputs exist, then save at the configured cadence."""
    for key in ("checkpoint.pretrained_checkpoint", "dataset.path"):
        if key in given and given[key] != "null" and not Path(given[key]).exists():
            return f"{key}={given[key]} does not exist"
    if "checkpoint.save" not in given:
        return None
    every = int(given.get("checkpoint.save_interval", "1"))
    last = int(given.get("train.train_iters", "1"))
    directory = Path(given["checkpoint.save"])
    for step in [*range(every, last, every), last]:
        saved = directory / f"iter_{step:07d}"
        saved.mkdir(parents=True, exist_ok=True)
        (saved / OUTPUT_FILE).write_bytes(b"not really weights")
        # As Megatron-Bridge finishes a save: the train state, then the tracker.
        (saved / "train_state.pt").write_bytes(b"not really a train state")
        (directory / "latest_checkpointed_iteration.txt").write_text(str(step))
    return None


def save_iteration(directory: Path, step: int) -> None:
    saved = directory / f"iter_{step:07d}"
    saved.mkdir(parents=True, exist_ok=True)
    (saved / OUTPUT_FILE).write_bytes(b"not really weights")
    # As Megatron-Bridge finishes a save: the train state, then the tracker.
    (saved / "train_state.pt").write_bytes(b"not really a train state")
    (directory / "latest_checkpointed_iteration.txt").write_text(str(step))
    print(f"fake-train: saved iteration {step}", flush=True)


def step_seconds() -> float:
    """FAKE_STEP_SECONDS: an iteration's seconds, or one value an attempt ("1,0.1": the first
    attempt's iterations take 1 s, a requeued attempt's 0.1 s; the last value goes on)."""
    values = [float(v) for v in os.environ["FAKE_STEP_SECONDS"].split(",")]
    attempt = int(os.environ.get("SLURM_RESTART_COUNT", "0") or "0")
    return values[min(attempt, len(values) - 1)]


def train(given: dict[str, str], rank: int, step_seconds: float) -> str | None:
    """Train as Megatron-Bridge's loop does, ``step_seconds`` an iteration, every rank alike
    (rank 0 saves): from the newest iteration in ``checkpoint.save`` (its tracker file) to
    ``train.train_iters``, saving every ``checkpoint.save_interval`` and at the end. After an
    iteration it saves and stops, exit 0, once ``train.exit_duration_in_mins`` has passed since
    the program started, or, with ``train.exit_signal_handler``, once SIGTERM came (Megatron's
    exit signal handler, checked after each iteration)."""
    problem = next(
        (
            f"{key}={given[key]} does not exist"
            for key in ("checkpoint.pretrained_checkpoint", "dataset.path")
            if key in given and given[key] != "null" and not Path(given[key]).exists()
        ),
        None,
    )
    if problem:
        return problem
    signalled: list[int] = []
    if given.get("train.exit_signal_handler") == "true":
        signal.signal(signal.SIGTERM, lambda signum, _: signalled.append(signum))
    directory = Path(given["checkpoint.save"])
    tracker = directory / "latest_checkpointed_iteration.txt"
    start = int(tracker.read_text()) if tracker.is_file() else 0
    if start and rank == 0:
        print(f"fake-train: resuming from iteration {start}", flush=True)
    every = int(given.get("checkpoint.save_interval", "1"))
    last = int(given["train.train_iters"])
    exit_after_s = float(given.get("train.exit_duration_in_mins", "inf")) * 60
    for step in range(start + 1, last + 1):
        time.sleep(step_seconds)
        if rank == 0:
            print(f"fake-train: iteration {step} done", flush=True)
        out_of_time = time.monotonic() - STARTED >= exit_after_s
        stop = (signalled or out_of_time) and step != last
        if rank == 0 and (step % every == 0 or step == last or stop):
            save_iteration(directory, step)
        if stop:
            why = "exit signal received" if signalled else "exiting program after"
            if rank == 0:
                print(f"fake-train: {why}: saved and stopping at iteration {step}", flush=True)
            return None
    return None


def export_options(argv: list[str]) -> dict[str, str | None]:
    """``--flag value`` and bare ``--flag`` options of the export's command line."""
    found: dict[str, str | None] = {}
    for index, word in enumerate(argv):
        if word.startswith("--"):
            following = argv[index + 1] if index + 1 < len(argv) else "--"
            found[word] = None if following.startswith("--") else following
    return found


def export_model(argv: list[str]) -> str | None:
    """What rank 0 of Megatron-Bridge's ``convert_checkpoints_multi_gpu.py export`` does here:
    check its options are the ones Megatron-Bridge's verified export passes
    (``FAKE_EXPORT_OPTIONS``, read by the test from its verification card), that the Megatron
    checkpoint exists, and that the layout divides the ranks; then write a Hugging Face folder."""
    options = export_options(argv[1:])
    verified = set(os.environ["FAKE_EXPORT_OPTIONS"].split(","))
    if set(options) != verified:
        return f"export options {sorted(options)} are not Megatron-Bridge's {sorted(verified)}"
    source, target = Path(str(options["--megatron-path"])), Path(str(options["--hf-path"]))
    if not source.is_dir() or source.name != "iter_0000000":
        return f"--megatron-path {source} is no Megatron checkpoint iteration directory"
    world = int(os.environ.get("WORLD_SIZE", "1"))
    model_parallel = int(str(options["--tp"])) * int(str(options["--pp"]))
    if world % model_parallel or world % (int(str(options["--ep"])) * int(str(options["--pp"]))):
        return f"the layout {options} does not divide {world} ranks"
    target.mkdir(parents=True, exist_ok=True)
    (target / "config.json").write_text(json.dumps({"exported_from": str(source.resolve())}))
    (target / "model.safetensors").write_bytes((source / "weights.bin").read_bytes())
    print(f"fake-export: wrote {target} from {source.resolve()}", flush=True)
    return None


def main() -> int:
    run = Path(os.environ["RECIPEKIT_RUN_DIR"])
    plan = json.loads((run / "plan.json").read_text())
    config = str(run / "config.yaml")
    # The launcher names the run where the config says ${oc.env:RECIPEKIT_RUN}, as OmegaConf
    # would resolve it.
    run_name = os.environ.get("RECIPEKIT_RUN", "")
    expected = [
        a.replace("{config}", config).replace("${oc.env:RECIPEKIT_RUN}", run_name)
        for a in plan["framework"]["arguments"]
    ]
    seen: dict[str, object] = {name: os.environ.get(name) for name in SEEN}
    seen["arguments_match_plan"] = sys.argv[1:] == expected
    rank = int(os.environ.get("RANK", "0"))
    if "WORLD_SIZE" in os.environ:
        world, port = int(os.environ["WORLD_SIZE"]), int(os.environ["MASTER_PORT"])
        seen["joined"] = rendezvous(rank, world, os.environ["MASTER_ADDR"], port)
    node = os.environ.get("SLURMD_NODENAME", "?")
    out = run / "seen"
    out.mkdir(exist_ok=True)
    (out / f"{node}-{rank}.json").write_text(json.dumps(seen))
    if "FAKE_STEP_SECONDS" in os.environ and sys.argv[1:2] != ["export"]:
        problem = train(overrides(sys.argv[1:]), rank, step_seconds())
        if problem:
            print(f"fake-train: {problem}", flush=True)
            return 93
        return 0
    if rank == 0:
        if sys.argv[1:2] == ["export"]:
            problem = export_model(sys.argv[1:])
        else:
            problem = save_checkpoints(overrides(sys.argv[1:]))
        if problem:
            print(f"fake-train: {problem}", flush=True)
            return 93
    if str(rank) == os.environ.get("FAKE_FAIL_RANK"):
        status = int(os.environ.get("FAKE_FAIL_STATUS", "1"))
        print(f"fake-train: rank {rank} fails with {status}", flush=True)
        return status
    time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
