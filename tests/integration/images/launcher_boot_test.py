"""The stage launcher as `./pants package` builds it boots through /bin/sh into its venv.

The sh boot finds the venv at a path Pex computed when it built the Pex; the Pex's own bootstrap
computes it again at run time. If the two ever disagree (a Pex without interpreter constraints
keys its venv on the interpreter that runs it), every run silently takes the slow path: a first
interpreter that imports Pex's bootstrap, then the venv's. This checks the fast path is taken.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# What Pex's sh boot prints under PEX_VERBOSE when it does not find its venv.
SLOW_PATH_MARKERS = ("used /bin/sh boot to select python", "Running zipapp pex")


def _run(
    pex: Path, cwd: Path, *arguments: str, **extra_env: str
) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PEX_ROOT": str(cwd / ".pex-root"),
        "HOME": str(cwd),
        "PEX_VERBOSE": "1",
        **extra_env,
    }
    return subprocess.run(
        [str(pex), *arguments], capture_output=True, text=True, env=env, cwd=cwd, check=False
    )


def test_second_run_execs_the_venv_directly(launcher: Path, tmp_path: Path) -> None:
    assert launcher.read_bytes()[:10] == b"#!/bin/sh\n"
    first = _run(launcher, tmp_path, "plan", "--format", "json")
    assert first.returncode == 0, first.stderr
    # The first run has no venv yet: the sh boot hands over to the zipapp, which makes one.
    assert SLOW_PATH_MARKERS[1] in first.stderr
    venvs = list((tmp_path / ".pex-root" / "venvs").glob("*/*/pex"))
    assert len(venvs) == 1, venvs

    second = _run(launcher, tmp_path, "plan", "--format", "json")
    assert second.returncode == 0, second.stderr
    assert not [marker for marker in SLOW_PATH_MARKERS if marker in second.stderr], second.stderr
    assert second.stdout == first.stdout
    # It ran in the venv the zipapp made, and PEX names the Pex (`submit` copies it from there).
    probe = _run(
        launcher,
        tmp_path,
        "-c",
        "import os, sys; print(sys.prefix); print(os.environ['PEX'])",
        PEX_INTERPRETER="1",
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.splitlines() == [str(venvs[0].parent), str(launcher)]
