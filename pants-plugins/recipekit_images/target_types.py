from pants.backend.python.target_types import PexBinary, PexEntryPointField, PexScriptField
from pants.engine.target import COMMON_TARGET_FIELDS, Dependencies, StringField, Target
from pants.util.strutil import help_text

# Every stage launcher runs the same program; the stage it plans is named by RECIPEKIT_STAGE.
STAGE_LAUNCHER_ENTRY_POINT = "recipekit.cli.stage_launcher:main"


class StageObjectField(StringField):
    alias = "stage"
    required = True
    help = help_text(
        """
        The stage the launcher plans and runs, as `module:name` (e.g.
        `recipes.super35.rl:rlvr`); the Pex sets it as `RECIPEKIT_STAGE`.
        """
    )


class StageLauncherTarget(Target):
    alias = "stage_launcher"
    # A pex_binary's fields, less the entry point and script: the entry point is always the
    # stage launcher's. Without PexEntryPointField, pex_binary's own package rule does not
    # also claim the target.
    core_fields = (
        *(
            field
            for field in PexBinary.core_fields
            if field not in (PexEntryPointField, PexScriptField)
        ),
        StageObjectField,
    )
    help = help_text(
        f"""
        One training stage's launcher: a Pex running `{STAGE_LAUNCHER_ENTRY_POINT}` for the
        `stage` named, with every `pex_binary` field but `entry_point` and `script`
        (`recipe_stage` sets `execution_mode="venv"`). It boots through `/bin/sh` (Pex's
        `--sh-boot`): once its venv exists, running the Pex starts one interpreter, in that
        venv, instead of a first one that finds the venv and re-executes.
        """
    )


class StageLauncherField(StringField):
    alias = "launcher"
    required = True
    help = help_text(
        """
        The address of the stage's `stage_launcher` (built for every platform the stage
        runs on). `run` runs it; `package` ships it, with its launcher layer and image.
        """
    )


class StageBaseLockField(StringField):
    alias = "base_lock"
    help = help_text(
        """
        The lock file of the stage's base image (e.g. `containers/nemo-rl.lock.json`, written by
        the launcher's `lock` command). While it does not exist, `package` writes the Pex and the
        launcher layer but no image.
        """
    )


class StageArtifactsDependencies(Dependencies):
    """The launcher is added by inference, so `dependencies` and `--changed-since` see it."""


class StageArtifactsTarget(Target):
    alias = "stage_artifacts"
    core_fields = (
        *COMMON_TARGET_FIELDS,
        StageArtifactsDependencies,
        StageLauncherField,
        StageBaseLockField,
    )
    help = help_text(
        """
        One training stage's artifacts. `pants package` writes, under `dist/<dir>/<name>/`: the
        launcher Pex, the launcher layer (a deterministic tar of the Pex and the rendered plan)
        and, when the base is locked, a two-architecture OCI image layout; and `artifacts.json`,
        the paths, sha256 digests and sizes, which it also prints. The launcher Pex itself lands
        at the launcher's own output path. `pants run` runs the launcher.
        """
    )
