"""The reaper stops what the launcher started when the launcher is SIGKILLed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

# The stand-in below imports it in a child process; imported here so the test depends on it.
from recipekit.launch.ray_cluster import start_reaper  # noqa: F401

# A launcher stand-in: starts a process group (as RayNode.start does `ray start`) that names the
# temp dir on its command line, with the reaper beside it, prints the group's PID once the group
# has forked both its children (the shell says so: reading its line waits on that event), then
# waits.
LAUNCHER = """
import subprocess, sys, time
from recipekit.launch.ray_cluster import start_reaper
temp_dir = sys.argv[1]
group = subprocess.Popen(
    ["sh", "-c", f"sleep 600 & sleep 600 & echo forked; wait # {temp_dir}"],
    start_new_session=True,
    stdout=subprocess.PIPE,
    text=True,
)
group.stdout.readline()
start_reaper(group.pid, temp_dir)
print(group.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"


def _group_members(group: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == group and _alive(int(entry.name)):
                    members.append(int(entry.name))
            except ProcessLookupError:
                continue
    return members


def test_a_killed_launcher_leaves_no_process_and_no_temp_dir(tmp_path: Path) -> None:
    temp_dir = tmp_path / "rk-ray-1-abc-0"
    temp_dir.mkdir()
    (temp_dir / "session.log").write_text("x")
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(temp_dir)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert launcher.stdout is not None
    group = int(launcher.stdout.readline())
    assert len(_group_members(group)) >= 3  # sh and its two sleeps
    os.kill(launcher.pid, signal.SIGKILL)
    launcher.wait()
    deadline = time.monotonic() + 10
    while (_group_members(group) or temp_dir.exists()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _group_members(group) == []
    assert not temp_dir.exists()
