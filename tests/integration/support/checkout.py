"""A clean clone of the repository for tests that run ./pants in it, as a CI runner does."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

# The checkout under test (pants.toml sets it for every test; "." outside Pants).
CHECKOUT = Path(os.environ.get("RECIPEKIT_CHECKOUT", "."))


def clone_checkout(where: Path) -> Path:
    """``git clone`` of the checkout's HEAD into ``where``, ready for ./pants."""
    subprocess.run(["git", "clone", "-q", str(CHECKOUT), str(where)], check=True)
    # The pex CLI Pants runs is read from the build root (pants.toml), as ./pants left it there.
    shutil.copytree(CHECKOUT / ".pants-bootstrap", where / ".pants-bootstrap")
    return where


def run_pants(
    clone: Path, *arguments: str, env: Mapping[str, str] | None = None, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """``./pants --no-pantsd ARGUMENTS`` in ``clone``, with this user's Pants bootstrap."""
    home = pwd.getpwuid(os.getuid()).pw_dir  # where ./pants keeps its bootstrap and named caches
    return subprocess.run(
        ["./pants", "--no-pantsd", *arguments],
        cwd=clone,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
