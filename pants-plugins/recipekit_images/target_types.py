from pants.engine.target import COMMON_TARGET_FIELDS, Dependencies, StringField, Target
from pants.util.strutil import help_text


class StageLauncherField(StringField):
    alias = "launcher"
    required = True
    help = help_text(
        """
        The address of the stage's launcher `pex_binary` (built for every platform the stage
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
