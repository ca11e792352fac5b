"""A stage's compiled plan as a reviewer reads it: files on disk, and one nested document.

The files (``config.yaml``, ``plan.yaml``, ``job.sbatch``, ``images.yaml``) are what a pull
request's diff shows. The document is what the key-by-key comparison walks; it is built from
the files' text, so a snapshot read back from disk and a plan compiled now compare alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from recipekit.plan import make_plan
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
    """The snapshot files of ``stage``: name -> text.

    They are the run's files (``run_files``) on the first profile in recipes/clusters.py with
    the stage's nodes, as a reviewer reads them: the plan as YAML without the config it repeats,
    and the images the job runs on.
    """
    from recipekit.launch.profiles import default_profile_for
    from recipekit.launch.run_files import run_files

    plan = make_plan(stage, overrides)
    profile = default_profile_for(stage.hardware.node.name)
    if profile is not None:
        profile = profile.for_base(stage.framework.image)
    files = run_files(plan, profile)
    summary = json.loads(files.plan)
    summary.pop("config")
    images: dict[str, Any] = {"base": _base_image(stage.framework.image)}
    images["cluster_profile"] = (
        None if profile is None else {"name": profile.name, "container": files.container}
    )
    return {
        CONFIG: files.config,
        PLAN: _yaml(summary),
        JOB: NO_PROFILE if files.job_script is None else files.job_script,
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
    from recipekit.yaml_limits import file_source, load_yaml

    def read(name: str) -> Any:
        # Within the limits every YAML loader shares (a snapshot is a file anyone can edit).
        return load_yaml(files.get(name, ""), file_source(name)) or {}

    return {
        "config": read(CONFIG),
        "plan": read(PLAN),
        "images": read(IMAGES),
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
