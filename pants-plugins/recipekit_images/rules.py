import dataclasses
import hashlib
import json
from dataclasses import dataclass

from pants.backend.python.subsystems.setup import PythonSetup
from pants.backend.python.util_rules.interpreter_constraints import InterpreterConstraints
from pants.backend.python.util_rules.pex import Pex
from pants.backend.python.util_rules.pex_environment import PythonExecutable
from pants.backend.python.util_rules.pex_from_targets import PexFromTargetsRequest
from pants.backend.python.util_rules.python_sources import (
    PythonSourceFilesRequest,
    StrippedPythonSourceFiles,
)
from pants.build_graph.address import Address, AddressInput
from pants.core.goals.package import BuiltPackage, BuiltPackageArtifact, PackageFieldSet
from pants.core.goals.run import RunFieldSet, RunInSandboxBehavior, RunRequest
from pants.engine.fs import (
    EMPTY_DIGEST,
    AddPrefix,
    CreateDigest,
    Digest,
    DigestContents,
    DigestEntries,
    DigestSubset,
    FileEntry,
    GlobMatchErrorBehavior,
    MergeDigests,
    PathGlobs,
    RemovePrefix,
)
from pants.engine.process import Process, ProcessResult
from pants.engine.rules import Get, MultiGet, collect_rules, rule
from pants.engine.target import (
    FieldSet,
    InferDependenciesRequest,
    InferredDependencies,
    TransitiveTargets,
    TransitiveTargetsRequest,
    WrappedTarget,
    WrappedTargetRequest,
)
from pants.engine.unions import UnionRule
from pants.util.logging import LogLevel
from pants.vcs.git import GitWorktreeRequest, MaybeGitWorktree

from recipekit_images.launcher import StageLauncherFieldSet, StageLauncherPex
from recipekit_images.target_types import StageBaseLockField, StageLauncherField

MANIFEST = "artifacts.json"
PEX_FILE = "stage.pex"
DEPS_LAYER = "dependencies-layer.tar"
DEPS_RECORD = "dependencies-layer.json"
# The package of the `dependencies-layer` command (recipekit.cli.stage_images), run from sources.
TOOL_PACKAGE = "recipekit"


@dataclass(frozen=True)
class StageArtifactsFieldSet(PackageFieldSet, RunFieldSet):
    required_fields = (StageLauncherField,)
    run_in_sandbox_behavior = RunInSandboxBehavior.NOT_SUPPORTED

    launcher: StageLauncherField
    base_lock: StageBaseLockField


@dataclass(frozen=True)
class LauncherRequest:
    field_set: StageArtifactsFieldSet


@dataclass(frozen=True)
class StageLauncherInferenceFieldSet(FieldSet):
    required_fields = (StageLauncherField,)

    launcher: StageLauncherField


class InferStageLauncherDependency(InferDependenciesRequest):
    infer_from = StageLauncherInferenceFieldSet


def _launcher_address(launcher: StageLauncherField, declared_in: Address) -> AddressInput:
    """The `launcher` field's address, relative to the stage_artifacts target declaring it."""
    return AddressInput.parse(
        launcher.value,
        relative_to=declared_in.spec_path,
        description_of_origin=f"the `launcher` field of {declared_in}",
    )


@rule
async def infer_stage_launcher_dependency(
    request: InferStageLauncherDependency,
) -> InferredDependencies:
    field_set = request.field_set
    address = await Get(
        Address, AddressInput, _launcher_address(field_set.launcher, field_set.address)
    )
    return InferredDependencies([address])


@rule
async def launcher_field_set(request: LauncherRequest) -> StageLauncherFieldSet:
    launcher = _launcher_address(request.field_set.launcher, request.field_set.address)
    origin = launcher.description_of_origin
    address = await Get(Address, AddressInput, launcher)
    wrapped = await Get(WrappedTarget, WrappedTargetRequest(address, description_of_origin=origin))
    if not StageLauncherFieldSet.is_applicable(wrapped.target):
        raise ValueError(f"{origin}: {address} is not a stage_launcher")
    return StageLauncherFieldSet.create(wrapped.target)


def _file_entry(entries: DigestEntries, path: str) -> FileEntry:
    for entry in entries:
        if isinstance(entry, FileEntry) and entry.path == path:
            return entry
    raise ValueError(f"{path} is not in the digest")


@rule(desc="Package stage artifacts (Pex, launcher layer, OCI image)", level=LogLevel.DEBUG)
async def package_stage_artifacts(
    field_set: StageArtifactsFieldSet, python_setup: PythonSetup
) -> BuiltPackage:
    """The launcher Pex, its two layers and the image, so that a source change redoes little.

    - The Pex is the stage launcher's, with its zip entries stored rather than deflated
      (`--no-compress`): deflating its 170 MB of wheels for four platforms took about 8 s on
      every source change.
    - The dependencies layer is built from a Pex of the same requirements without the sources,
      by `dependencies-layer` run from recipekit's sources (PEX_EXTRA_SYS_PATH): neither input
      changes with a recipe, so Pants' cache answers it. `artifacts --dependencies-layer` checks
      that it matches the Pex (the zip directory's names, CRCs, sizes and modes).
    - The big files (the Pex as stage.pex, that layer and its blob) are placed from Pants' store
      by digest, not copied through the process.
    """
    launcher_field_set = await Get(StageLauncherFieldSet, LauncherRequest(field_set))
    launcher_request = (
        await Get(StageLauncherPex, StageLauncherFieldSet, launcher_field_set)
    ).request
    pex_request = dataclasses.replace(
        launcher_request, additional_args=(*launcher_request.additional_args, "--no-compress")
    )
    pex_path = pex_request.output_filename
    requirements_path = "__requirements/requirements.pex"
    requirements_request = dataclasses.replace(
        pex_request,
        output_filename=requirements_path,
        include_source_files=False,
        description=f"Building the requirements of {pex_path}",
    )
    transitive = await Get(
        TransitiveTargets, TransitiveTargetsRequest([launcher_field_set.address])
    )
    pex, requirements, sources = await MultiGet(
        Get(Pex, PexFromTargetsRequest, pex_request),
        Get(Pex, PexFromTargetsRequest, requirements_request),
        Get(StrippedPythonSourceFiles, PythonSourceFilesRequest(transitive.closure)),
    )
    tool_sources = await Get(
        Digest,
        DigestSubset(
            sources.stripped_source_files.snapshot.digest, PathGlobs([f"{TOOL_PACKAGE}/**"])
        ),
    )

    lock_args: tuple = ()
    lock_digest = EMPTY_DIGEST
    if field_set.base_lock.value:
        lock_digest = await Get(
            Digest,
            PathGlobs(
                [field_set.base_lock.value],
                glob_match_error_behavior=GlobMatchErrorBehavior.ignore,
            ),
        )
        if lock_digest != EMPTY_DIGEST:
            lock_args = ("--lock", field_set.base_lock.value)

    lockfile = python_setup.resolves[python_setup.default_resolve]
    lockfile_contents = await Get(DigestContents, PathGlobs([lockfile]))
    lockfile_sha256 = hashlib.sha256(
        b"".join(content.content for content in lockfile_contents)
    ).hexdigest()
    worktree = await Get(MaybeGitWorktree, GitWorktreeRequest())
    commit = worktree.git_worktree.commit_id if worktree.git_worktree else "unknown"

    python = await Get(
        PythonExecutable,
        InterpreterConstraints,
        InterpreterConstraints(python_setup.interpreter_constraints),
    )
    address = field_set.address
    out = f"{address.spec_path.replace('/', '.')}/{address.target_name}"
    dependencies = await Get(
        ProcessResult,
        Process(
            argv=(
                python.path,
                requirements_path,
                "-m",
                "recipekit.cli.stage_images",
                "__deps",
                "--pex",
                requirements_path,
            ),
            input_digest=await Get(
                Digest,
                MergeDigests(
                    [requirements.digest, await Get(Digest, AddPrefix(tool_sources, "__src"))]
                ),
            ),
            output_directories=("__deps",),
            env={
                "PEX_ROOT": ".cache/pex_root",
                "PEX_INTERPRETER": "1",
                "PEX_EXTRA_SYS_PATH": "__src",
                "SOURCE_DATE_EPOCH": "0",
            },
            append_only_caches={"recipekit_stage_pex_root": ".cache/pex_root"},
            description=f"Build the dependencies layer of {address}",
            level=LogLevel.DEBUG,
        ),
    )
    deps_record = await Get(
        Digest, DigestSubset(dependencies.output_digest, PathGlobs([f"__deps/{DEPS_RECORD}"]))
    )
    result = await Get(
        ProcessResult,
        Process(
            argv=(
                python.path,
                pex_path,
                "artifacts",
                "__out",
                "--pex",
                pex_path,
                *lock_args,
                "--git-commit",
                commit,
                "--lockfile-sha256",
                lockfile_sha256,
                "--dependencies-layer",
                f"__deps/{DEPS_RECORD}",
            ),
            input_digest=await Get(Digest, MergeDigests([pex.digest, lock_digest, deps_record])),
            output_directories=("__out",),
            env={"PEX_ROOT": ".cache/pex_root", "SOURCE_DATE_EPOCH": "0"},
            append_only_caches={"recipekit_stage_pex_root": ".cache/pex_root"},
            description=f"Build the launcher layer and image of {address}",
            level=LogLevel.DEBUG,
        ),
    )
    artifacts = await Get(
        Digest, AddPrefix(await Get(Digest, RemovePrefix(result.output_digest, "__out")), out)
    )
    manifest_contents = await Get(
        DigestContents, DigestSubset(artifacts, PathGlobs([f"{out}/{MANIFEST}"]))
    )
    manifest = json.loads(manifest_contents[0].content)
    pex_entry = _file_entry(await Get(DigestEntries, Digest, pex.digest), pex_path)
    layer_entry = _file_entry(
        await Get(DigestEntries, Digest, dependencies.output_digest), f"__deps/{DEPS_LAYER}"
    )
    placed = [
        FileEntry(f"{out}/{PEX_FILE}", pex_entry.file_digest, is_executable=True),
        FileEntry(f"{out}/{DEPS_LAYER}", layer_entry.file_digest),
    ]
    if manifest.get("image"):
        blob = f"{out}/{manifest['image']['layout']}/blobs/sha256/"
        placed.append(
            FileEntry(blob + layer_entry.file_digest.fingerprint, layer_entry.file_digest)
        )
    placed_digest = await Get(Digest, CreateDigest(placed))
    artifacts = await Get(Digest, MergeDigests([artifacts, placed_digest]))
    lines = [
        f"{entry['sha256']}  {entry['size']:>10}  {entry['path']}" for entry in manifest["files"]
    ]
    image = manifest.get("image")
    lines.append(
        f"image index {image['index_digest']} "
        f"(base {image['base']}, base blobs {image['base_blobs']})"
        if image
        else f"no image: {manifest.get('image_note')}"
    )
    # The stored Pex goes only into the stage's folder (stage.pex): dist/<folder>/<stage>.pex
    # stays the stage launcher's own, deflated, whichever target was packaged.
    return BuiltPackage(artifacts, (BuiltPackageArtifact(f"{out}/", extra_log_lines=tuple(lines)),))


@rule
async def run_stage(field_set: StageArtifactsFieldSet) -> RunRequest:
    launcher_field_set = await Get(StageLauncherFieldSet, LauncherRequest(field_set))
    return await Get(RunRequest, StageLauncherFieldSet, launcher_field_set)


def rules():
    return [
        *collect_rules(),
        UnionRule(PackageFieldSet, StageArtifactsFieldSet),
        UnionRule(InferDependenciesRequest, InferStageLauncherDependency),
        *StageArtifactsFieldSet.rules(),
    ]
