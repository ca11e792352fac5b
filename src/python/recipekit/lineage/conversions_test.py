"""A conversion made under one path of a store version is found under another, by NeMo-RL's
own code.

NeMo-RL names its HF -> Megatron conversion after the path it is handed, and only when that
path exists, so the scenario runs where the store really is ``/artifacts``: in a mount
namespace of its own (``unshare --mount``, as root, as the store fault tests do), with a
temporary folder bound there. NeMo-RL's ``validate_model_paths`` and
``get_megatron_checkpoint_dir`` are executed from the pinned sources of each version (they use
only ``os``, ``json`` and ``hashlib``), so the name a run looks for is NeMo-RL's, not
recipekit's idea of it.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from recipekit.lineage.conversions import MEGATRON_CONVERSIONS_VARIABLE, reuse_conversion
from recipekit.lineage.refs import ARTIFACTS_ROOT

CHECKOUT = Path(__file__).resolve().parents[4]
REFERENCE = Path(os.environ.get("RECIPEKIT_REFERENCE_DIR") or CHECKOUT / ".reference")
VERSIONS = ("super-v3", "super-v3.5-posttraining")
SFT = f"{ARTIFACTS_ROOT}/super35-sft-model"


def _nemo_rl(version: str) -> dict[str, Any]:
    """NeMo-RL's model-path functions at ``version``, from the pinned sources."""
    wanted = {
        "models/megatron/setup.py": (
            "_canonicalize_hf_config_overrides",
            "_get_hf_config_overrides_hash",
            "_resolve_iter_dir_from_root",
            "validate_model_paths",
        ),
        "models/policy/utils.py": ("get_megatron_checkpoint_dir",),
    }
    namespace: dict[str, Any] = {"os": os, "json": json, "hashlib": hashlib}
    namespace.update(dict.fromkeys(("Any", "PolicyConfig", "Optional"), object))
    for module, names in wanted.items():
        tree = ast.parse((REFERENCE / "nemo-rl" / version / "nemo_rl" / module).read_text())
        found: list[ast.stmt] = [
            n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names
        ]
        exec(compile(ast.Module(body=found, type_ignores=[]), module, "exec"), namespace)
    return namespace


def _plan(model_name: str, overrides: dict[str, Any]) -> dict[str, Any]:
    policy = {
        "model_name": model_name,
        "megatron_cfg": {"enabled": True},
        "hf_config_overrides": overrides,
    }
    return {"framework": {"name": "nemo-rl", "version": "x"}, "config": {"policy": policy}}


def scenario(version: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """In the namespace, with an empty store at /artifacts: SFT's version reached as ``latest``
    (the run that made it) and as ``v0`` (a pipeline's pin)."""
    nemo_rl = _nemo_rl(version)
    saved = Path(SFT) / "sft-1" / "step_4"
    saved.mkdir(parents=True)
    (saved / "model.safetensors").write_bytes(b"weights")
    for alias in ("latest", "v0"):
        (Path(SFT) / alias).symlink_to("sft-1/step_4")
    cache = Path(ARTIFACTS_ROOT) / ".conversions" / "hf-to-megatron-0123"
    os.environ[MEGATRON_CONVERSIONS_VARIABLE] = str(cache)
    logged: list[str] = []
    first, pinned = _plan(f"{SFT}/latest", overrides), _plan(f"{SFT}/v0", overrides)

    reuse_conversion(first, cache, logged.append)  # no directory yet: nothing to reuse
    _, converted, exists = nemo_rl["validate_model_paths"](first["config"]["policy"])
    assert not exists
    (Path(converted) / "iter_0000000").mkdir(parents=True)  # what the conversion leaves
    before = nemo_rl["validate_model_paths"](pinned["config"]["policy"])[2]
    reuse_conversion(pinned, cache, logged.append)
    _, found, after = nemo_rl["validate_model_paths"](pinned["config"]["policy"])
    reuse_conversion(pinned, cache, logged.append)  # found already: nothing more
    return {
        "before": before,
        "after": after,
        "same": os.path.realpath(found) == os.path.realpath(converted),
        "names": sorted(p.name for p in cache.iterdir()),
        "logged": logged,
    }


needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="a mount namespace needs root and unshare(1) (tests run as root here and in CI)",
)


@needs_root
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("overrides", [{}, {"rope_theta": 1000000.0}])
def test_a_conversion_under_another_path_of_the_same_version_is_found(
    version: str, overrides: dict[str, Any]
) -> None:
    with tempfile.TemporaryDirectory() as store:
        script = 'mkdir -p "$1" && mount --bind "$2" "$1" && shift 2 && exec "$@"'
        done = subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh"]
            + [ARTIFACTS_ROOT, store, sys.executable, __file__, version, json.dumps(overrides)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
        )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["before"] is False  # NeMo-RL alone would convert the same bytes again
    assert result["after"] is True and result["same"] is True
    assert len(result["names"]) == 2 and len(result["logged"]) == 1, result


def test_a_stage_that_converts_nothing_links_nothing(tmp_path: Path) -> None:
    plan = _plan(f"{SFT}/v0", {})
    plan["config"]["policy"]["megatron_cfg"]["enabled"] = False  # the DTensor backend
    (tmp_path / "model_x" / "iter_0000000").mkdir(parents=True)
    reuse_conversion(plan, tmp_path, print)
    assert [p.name for p in tmp_path.iterdir()] == ["model_x"]


if __name__ == "__main__":
    print(json.dumps(scenario(sys.argv[1], json.loads(sys.argv[2]))))
