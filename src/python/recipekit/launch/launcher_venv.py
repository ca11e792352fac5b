"""The launcher's own venv, kept from what the launcher starts.

The launcher Pex runs in a venv of its own and puts that venv's ``bin`` first on ``PATH`` (and
sets ``VIRTUAL_ENV``) for its process. Inherited by what it starts, ``python3
examples/run_grpo.py``, ``python3 -m ray`` or ``nemo-evaluator-launcher`` would find the
launcher's Python, which has none of the framework's packages, instead of the container's (or
the submit host's).
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping


def leave_launcher_venv(environ: MutableMapping[str, str]) -> None:
    """Take this process's venv back out of ``environ`` (``os.environ`` at start-up)."""
    if sys.prefix == sys.base_prefix:  # not run from a venv: nothing was put in
        return
    own_bin = os.path.join(sys.prefix, "bin")
    path = environ.get("PATH", "")
    environ["PATH"] = os.pathsep.join(p for p in path.split(os.pathsep) if p and p != own_bin)
    if environ.get("VIRTUAL_ENV") == sys.prefix:
        del environ["VIRTUAL_ENV"]
