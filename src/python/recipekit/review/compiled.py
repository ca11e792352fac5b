"""A stage's compiled plan as a reviewer reads it: files on disk, and one nested document.

The files (``config.yaml``, ``plan.yaml``, ``job.sbatch``, ``images.yaml``) are what a pull
request's diff shows. The document is what the key-by-key comparison walks; it is built from
the files' text, so a snapshot read back from disk and a plan compiled now compare alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from recipekit.plan import make_plan
from recipekit.report import config_yaml
from recipekit.stage import Stage

CONFIG = "config.yaml"
PLAN = "plan.yaml"
JOB = "job.sbatch"
IMAGES = "images.yaml"
FILES = (CONFIG, PLAN, JOB, IMAGES)
# In place of the files when the stage does not plan (a diff shows the error as a key).
ERROR = "error"

NO_PROFILE = "# no cluster profile in recipes/clusters.py has this stage's nodes\n"


def compile_files(stage: Stage, overrides: tuple[str, ...] = ()) -> dict[str, str]:
    """The snapshot files of ``stage``: name -> text."""
    plan = make_plan(stage, overrides)
    summary = plan.as_json()
    summary.pop("config")
    try:
        from recipekit.launch.job_script import render_job_script
        from recipekit.launch.profiles import default_profile_for
        from recipekit.launch.run_dir import RunDir
    except ImportError:  # a revision from before the launcher existed
        profile = None
    else:
        profile = default_profile_for(stage.hardware.node.name)
        if profile is not None and hasattr(profile, "for_base"):
            profile = profile.for_base(stage.framework.image)
    images: dict[str, Any] = {"base": _base_image(stage.framework.image)}
    if profile is None:
        job = NO_PROFILE
        images["cluster_profile"] = None
    else:
        run = RunDir.for_plan(profile.runs_dir, plan.stage.name, plan.hash)
        job = render_job_script(plan.as_json(), profile, run)
        images["cluster_profile"] = {
            "name": profile.name,
            "container": getattr(profile.container, "image", None),
        }
    return {
        CONFIG: config_yaml(plan.framework_config),
        PLAN: _yaml(summary),
        JOB: job,
        IMAGES: _yaml(images),
    }


def compile_files_or_error(stage: Stage) -> dict[str, str]:
    """As ``compile_files``, but a stage that cannot be planned gives an ``error`` file instead."""
    from recipekit.errors import RecipeError

    try:
        return compile_files(stage)
    except RecipeError as exc:
        return {ERROR: exc.render() + "\n"}


def _base_image(framework: str) -> dict[str, Any] | None:
    """The base image declared for the stage's framework in containers/bases.py, if any."""
    from recipekit.errors import RecipeError
    from recipekit.loading import load_object

    try:
        # containers/bases.py is built on this; imported here so that it is packaged with us.
        from recipekit.images.lock import BaseImage
    except ImportError:  # a revision from before base images were declared
        return None
    try:
        bases = load_object("containers.bases:BASES")
    except RecipeError:
        return None
    base = bases.get(framework)
    if not isinstance(base, BaseImage):
        return None
    lock = Path("containers") / f"{base.name}.lock.json"
    return {"name": base.name, "reference": base.reference, "lock": str(lock)}


def _yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=100)


def document(files: Mapping[str, str]) -> dict[str, Any]:
    """The nested document the comparison walks, from the files' text."""
    return {
        "config": yaml.safe_load(files.get(CONFIG, "")) or {},
        "plan": yaml.safe_load(files.get(PLAN, "")) or {},
        "images": yaml.safe_load(files.get(IMAGES, "")) or {},
        "job": job_document(files.get(JOB, "")),
        **({"error": files[ERROR]} if ERROR in files else {}),
    }


_DIRECTIVE = re.compile(r"^#SBATCH\s+(--[\w-]+)(?:=(.*))?$")
_EXPORT = re.compile(r"^export\s+([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def job_document(script: str) -> dict[str, Any]:
    """A job script by meaning: its ``#SBATCH`` options, its exports, and the other lines."""
    directives: dict[str, Any] = {}
    exports: dict[str, str] = {}
    lines: list[str] = []
    for line in script.splitlines():
        if (m := _DIRECTIVE.match(line)) is not None:
            directives[m.group(1)] = m.group(2) if m.group(2) is not None else True
        elif (m := _EXPORT.match(line)) is not None:
            exports[m.group(1)] = m.group(2)
        elif line.strip():
            lines.append(line)
    return {"sbatch": directives, "export": exports, "script": lines}


def read_files(directory: Path) -> dict[str, str]:
    return {name: (directory / name).read_text() for name in FILES if (directory / name).is_file()}
