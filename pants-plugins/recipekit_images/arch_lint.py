"""`./pants lint` runs src/python/recipekit/images/arch_check.py over recipes/ and containers/.

A files linter (like regex-lint): it sees BUILD files and data files too, not only sources.
"""

from typing import Any

from pants.backend.python.subsystems.setup import PythonSetup
from pants.backend.python.util_rules.interpreter_constraints import InterpreterConstraints
from pants.backend.python.util_rules.pex_environment import PythonExecutable
from pants.core.goals.lint import LintFilesRequest, LintResult, Partitions
from pants.engine.fs import Digest, PathGlobs
from pants.engine.process import FallibleProcessResult, Process
from pants.engine.rules import Get, collect_rules, rule
from pants.option.option_types import SkipOption, StrListOption
from pants.option.subsystem import Subsystem
from pants.util.logging import LogLevel

CHECKER = "src/python/recipekit/images/arch_check.py"
TEXT_SUFFIXES = (".py", ".json", ".yaml", ".yml", ".toml", ".txt", ".sh", ".sub", ".list", "BUILD")


class ArchLintSubsystem(Subsystem):
    options_scope = "arch-lint"
    name = "arch-lint"
    help = (
        "Fail when a recipe or container points at a one-architecture artifact (an x86_64 wheel "
        "URL, an amd64-only .deb, a --platform pin) without its twin: stages run on amd64 and "
        "arm64."
    )

    skip = SkipOption("lint")
    roots = StrListOption(
        default=["recipes/", "containers/"],
        help="Checked folders (paths relative to the build root, ending in /).",
    )


class ArchLintRequest(LintFilesRequest):
    tool_subsystem = ArchLintSubsystem


@rule
async def partition_arch_lint(
    request: ArchLintRequest.PartitionRequest, subsystem: ArchLintSubsystem
) -> Partitions[str, Any]:
    if subsystem.skip:
        return Partitions()
    files = [
        path
        for path in request.files
        if path.startswith(tuple(subsystem.roots)) and path.endswith(TEXT_SUFFIXES)
    ]
    return Partitions.single_partition(sorted(files))


@rule(desc="Lint for one-architecture artifacts", level=LogLevel.DEBUG)
async def run_arch_lint(
    request: ArchLintRequest.Batch[str, Any], python_setup: PythonSetup
) -> LintResult:
    python = await Get(
        PythonExecutable,
        InterpreterConstraints,
        InterpreterConstraints(python_setup.interpreter_constraints),
    )
    files = tuple(request.elements)
    inputs = await Get(Digest, PathGlobs([CHECKER, *files]))
    result = await Get(
        FallibleProcessResult,
        Process(
            argv=(python.path, CHECKER, *files),
            input_digest=inputs,
            description=f"arch-lint on {len(files)} files",
            level=LogLevel.DEBUG,
        ),
    )
    return LintResult.create(request, result)


def rules():
    return [*collect_rules(), *ArchLintRequest.rules()]
