"""A stage imports the NeMo-RL schema versions it runs, and no other.

Building a section class is most of a ``plan`` process's start-up; main's schema and the
examples' widenings are about a third of the sections in the tree. A Super 3 stage (super-v3)
that pulled them in through a check's ``isinstance`` would plan that much slower, and nothing
else would notice.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from recipekit.plan import make_plan

MAIN = "recipekit.nemo_rl.schema_main"
EXAMPLES = "recipekit.nemo_rl.schema_common"


def _loaded_after_planning(stage: str) -> set[str]:
    module, attr = stage.split(":")
    program = (
        "import sys\n"
        f"from {make_plan.__module__} import make_plan\n"
        f"from {module} import {attr} as stage\n"
        "make_plan(stage, ())\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('recipekit.nemo_rl'))))\n"
    )
    # A fresh interpreter, with this one's import path (Pants runs tests from a sandbox).
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False, env=env
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


@pytest.mark.parametrize(
    ("stage", "loaded", "not_loaded"),
    [
        ("recipes.super3.dapo:dapo_gb200", set(), {MAIN, EXAMPLES}),
        ("recipes.super35.rl:rlvr", {MAIN}, {EXAMPLES}),
    ],
)
def test_a_stage_loads_only_its_own_schema(
    stage: str, loaded: set[str], not_loaded: set[str]
) -> None:
    modules = _loaded_after_planning(stage)
    assert loaded <= modules
    assert not (not_loaded & modules), f"{stage} imported {sorted(not_loaded & modules)}"
