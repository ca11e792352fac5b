"""`stage_launcher`: a pex_binary of the stage launcher that boots through `/bin/sh`.

Pants 2.17's pex_binary cannot pass Pex's `--sh-boot`. A venv-mode zipapp booted by Python
starts one interpreter to import Pex's bootstrap (from the zip, uncompiled) only to find its
venv, then starts the venv's: about 0.1 s of every `plan`. The sh boot finds the venv in a
few lines of `sh` and starts the venv's interpreter once.

The Pex is otherwise exactly the one pex_binary's rules would build from the same fields.
"""

import dataclasses
from dataclasses import dataclass

from pants.backend.python.goals.package_pex_binary import (
    PexBinaryFieldSet,
    PexFromTargetsRequestForBuiltPackage,
)
from pants.backend.python.target_types import PexEntryPointField, PexEnvField
from pants.backend.python.util_rules.interpreter_constraints import InterpreterConstraints
from pants.backend.python.util_rules.pex_environment import PythonExecutable
from pants.backend.python.util_rules.pex_from_targets import (
    InterpreterConstraintsRequest,
    PexFromTargetsRequest,
)
from pants.core.goals.package import BuiltPackage, PackageFieldSet
from pants.core.goals.run import RunFieldSet, RunInSandboxBehavior, RunRequest
from pants.engine.rules import Get, collect_rules, rule
from pants.engine.target import Target, WrappedTarget, WrappedTargetRequest
from pants.engine.unions import UnionRule
from pants.util.logging import LogLevel

from recipekit_images.target_types import STAGE_LAUNCHER_ENTRY_POINT, StageObjectField

STAGE_ENV_VAR = "RECIPEKIT_STAGE"


@dataclass(frozen=True)
class StageLauncherFieldSet(PackageFieldSet, RunFieldSet):
    required_fields = (StageObjectField,)
    run_in_sandbox_behavior = RunInSandboxBehavior.RUN_REQUEST_HERMETIC

    stage: StageObjectField


@dataclass(frozen=True)
class StageLauncherPex:
    """What the launcher's Pex is built from; `stage_artifacts` builds its stage.pex from it."""

    request: PexFromTargetsRequest


def pex_binary_field_set(target: Target, stage: str) -> PexBinaryFieldSet:
    """The target as the pex_binary it would be: the launcher's entry point, the stage's env."""
    fields = {name: target.get(field) for name, field in PexBinaryFieldSet.fields.items()}
    env = dict(target[PexEnvField].value or {})
    env[STAGE_ENV_VAR] = stage
    fields["entry_point"] = PexEntryPointField(STAGE_LAUNCHER_ENTRY_POINT, target.address)
    fields["env"] = PexEnvField(env, target.address)
    return PexBinaryFieldSet(address=target.address, **fields)


@rule
async def stage_launcher_pex(field_set: StageLauncherFieldSet) -> StageLauncherPex:
    wrapped = await Get(
        WrappedTarget,
        WrappedTargetRequest(field_set.address, description_of_origin="stage_launcher"),
    )
    pex_binary = pex_binary_field_set(wrapped.target, field_set.stage.value)
    request = (
        await Get(PexFromTargetsRequestForBuiltPackage, PexBinaryFieldSet, pex_binary)
    ).request
    # Pants drops interpreter constraints from a Pex built for platforms. Without them a venv
    # Pex keys its venv on the path of the interpreter that runs it, which the sh boot cannot
    # know when it is built; with them the venv's key is the Pex alone, which it can.
    constraints = await Get(
        InterpreterConstraints,
        InterpreterConstraintsRequest,
        request.to_interpreter_constraints_request(),
    )
    return StageLauncherPex(
        dataclasses.replace(
            request,
            additional_args=(
                *request.additional_args,
                *constraints.generate_pex_arg_list(),
                "--sh-boot",
            ),
        )
    )


@rule(desc="Package a stage launcher", level=LogLevel.DEBUG)
async def package_stage_launcher(field_set: StageLauncherFieldSet) -> BuiltPackage:
    launcher = await Get(StageLauncherPex, StageLauncherFieldSet, field_set)
    return await Get(BuiltPackage, PexFromTargetsRequestForBuiltPackage(launcher.request))


@rule(level=LogLevel.DEBUG)
async def run_stage_launcher(field_set: StageLauncherFieldSet) -> RunRequest:
    # As pex_binary's run rule does: the interpreter runs the zipapp, so `pants run` and
    # `pants package` share one built Pex.
    launcher = await Get(StageLauncherPex, StageLauncherFieldSet, field_set)
    built = await Get(BuiltPackage, PexFromTargetsRequestForBuiltPackage(launcher.request))
    python = await Get(
        PythonExecutable,
        InterpreterConstraintsRequest,
        launcher.request.to_interpreter_constraints_request(),
    )
    relpath = built.artifacts[0].relpath
    assert relpath is not None
    return RunRequest(digest=built.digest, args=[python.path, "{chroot}/" + relpath])


def rules():
    return [
        *collect_rules(),
        UnionRule(PackageFieldSet, StageLauncherFieldSet),
        *StageLauncherFieldSet.rules(),
    ]
