"""The framework's entry point as a child process: its command, its process group, its status.

Shared by every launch kind: the Ray driver on the head, each rank of a per-GPU stage and the
single process of a head-only stage all run the entry point with the framework's arguments
(``python ENTRY_POINT.py --config config.yaml``, or a command on the PATH) in the framework's
checkout, in a process group of their own, so that nothing they started outlives them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any

from recipekit.framework import CONFIG_PLACEHOLDER, FrameworkCall
from recipekit.launch.profile import ClusterProfile
from recipekit.launch.run_dir import CONFIG_FILE, RunDir
from recipekit.lineage.store import RUN_PLACEHOLDER, run_name

Log = Callable[[str], None]


class Terminated(Exception):
    """SIGTERM/SIGINT from Slurm (scancel, time limit, preemption, another task's failure)."""


def _on_signal(signum: int, _: FrameType | None) -> None:
    # Once: the clean-up that follows must not be interrupted by Slurm's next SIGTERM.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise Terminated(signal.Signals(signum).name)


def raise_on_termination() -> None:
    """From now on SIGTERM and SIGINT raise :class:`Terminated` in the main thread."""
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)


def runs_with_python(entry_point: str) -> bool:
    """A script of the framework's checkout, or (otherwise) a command on the PATH."""
    return entry_point.endswith(".py")


def entry_point_command(plan: Mapping[str, Any], profile: ClusterProfile, run: RunDir) -> list[str]:
    """The entry point and the framework's arguments of a plan as ``plan.json`` holds it (what
    a node reads), as ``framework_command`` makes them."""
    framework = plan["framework"]
    return framework_command(
        FrameworkCall(
            entry_point=framework["entry_point"],
            arguments=tuple(framework["arguments"]),
            image=str(framework["image"]),
            run=run_name(str(plan["stage"]), str(plan["hash"])),
        ),
        profile,
        run,
    )


def framework_command(call: FrameworkCall, profile: ClusterProfile, run: RunDir) -> list[str]:
    """The entry point and the framework's arguments, the rendered config file in for
    ``{config}`` (``Framework.arguments``) and the cluster's values (``site_values``) for a
    delegated stage's placeholders; a placeholder the profile has no value for stays.

    The run's name replaces ``${oc.env:RECIPEKIT_RUN}`` in the store paths of the arguments:
    an entry point that takes plain paths (the HF export's argparse) would otherwise write a
    folder of that name; one that resolves OmegaConf gets the value it would have resolved."""
    known = {CONFIG_PLACEHOLDER: str(run.file(CONFIG_FILE)), RUN_PLACEHOLDER: call.run}
    site = profile.site_values(call.image)
    known.update((k, v) for k, v in site.items() if v is not None)
    arguments = [_fill(a, known) for a in call.arguments]
    entry_point = call.entry_point
    program = [profile.python, entry_point] if runs_with_python(entry_point) else [entry_point]
    return [*program, *arguments]


def _fill(argument: str, values: Mapping[str, str]) -> str:
    for placeholder, value in values.items():
        argument = argument.replace(placeholder, value)
    return argument


def exit_status(returncode: int) -> int:
    """A shell's view of a child's end: its exit code, or 128 + the signal that killed it."""
    return returncode if returncode >= 0 else 128 - returncode


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def run_framework(
    command: list[str],
    cwd: str,
    env: Mapping[str, str],
    *,
    grace_s: float = 10.0,
    saving: Callable[[int], bool] | None = None,
    log: Log | None = None,
) -> int:
    """Run ``command`` in its own process group until it exits; its exit status.

    A SIGTERM or SIGINT meanwhile stops the group (SIGTERM, then SIGKILL after ``grace_s``) and,
    once the child is gone, raises :class:`Terminated`. So does a child killed by SIGTERM: Slurm
    signals every process of a job step, and the child may be reached first. Whatever is left
    in the child's group is killed. The handlers in place before the call come back after it
    (further signals ignored once stopped: the clean-up that follows must not be interrupted).

    ``saving(signum)`` true: the signal asks the framework to save and stop (the job script's
    time-limit trap, ``continuation``): the framework has it too (Slurm signals every process
    of the step), so it is let finish its save, and its status is returned as it is.
    """
    stopped: list[str] = []
    group: list[int] = []
    timers: list[threading.Timer] = []

    def stop_group() -> None:
        _signal_group(group[0], signal.SIGTERM)
        timer = threading.Timer(grace_s, _signal_group, (group[0], signal.SIGKILL))
        timer.daemon = True
        timer.start()
        timers.append(timer)

    def on_signal(signum: int, _: FrameType | None) -> None:
        if not stopped and saving is not None and saving(signum):
            if log is not None:
                log(f"{signal.Signals(signum).name}: the framework saves and stops; waiting for it")
            return
        if not stopped:
            stopped.append(signal.Signals(signum).name)
            if group:
                stop_group()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        child = subprocess.Popen(command, cwd=cwd, env=dict(env), start_new_session=True)
        group.append(child.pid)
        if stopped:
            stop_group()
        status = exit_status(child.wait())
    finally:
        for timer in timers:
            timer.cancel()
        if group:
            _signal_group(group[0], signal.SIGKILL)
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_IGN if stopped else handler)
    if stopped or status == 128 + signal.SIGTERM:
        raise Terminated(stopped[0] if stopped else "SIGTERM")
    return status
