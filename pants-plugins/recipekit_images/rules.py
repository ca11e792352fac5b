import hashlib
import json
from dataclasses import dataclass

from pants.backend.python.goals.package_pex_binary import PexBinaryFieldSet
from pants.backend.python.subsystems.setup import PythonSetup
from pants.backend.python.util_rules.interpreter_constraints import InterpreterConstraints
from pants.backend.python.util_rules.pex_environment import PythonExecutable
from pants.build_graph.address import Address, AddressInput
from pants.core.goals.package import BuiltPackage, BuiltPackageArtifact, PackageFieldSet
from pants.core.goals.run import RunFieldSet, RunInSandboxBehavior, RunRequest
from pants.engine.fs import (
    EMPTY_DIGEST,
    AddPrefix,
    Digest,
    DigestContents,
    DigestSubset,
    GlobMatchErrorBehavior,
    MergeDigests,
    PathGlobs,
    RemovePrefix,
)
from pants.engine.process import Process, ProcessResult
from pants.engine.rules import Get, collect_rules, rule
from pants.engine.target import (
    FieldSet,
    InferDependenciesRequest,
    InferredDependencies,
    WrappedTarget,
    WrappedTargetRequest,
)
from pants.engine.unions import UnionRule
from pants.util.logging import LogLevel
from pants.vcs.git import GitWorktreeRequest, MaybeGitWorktree

from recipekit_images.target_types import StageBaseLockField, StageLauncherField

MANIFEST = "artifacts.json"


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


@rule
async def infer_stage_launcher_dependency(
    request: InferStageLauncherDependency,
) -> InferredDependencies:
    field_set = request.field_set
    address = await Get(
        Address,
        AddressInput,
        AddressInput.parse(
            field_set.launcher.value,
            relative_to=field_set.address.spec_path,
            description_of_origin=f"the `launcher` field of {field_set.address}",
        ),
    )
    return InferredDependencies([address])


@rule
async def launcher_field_set(request: LauncherRequest) -> PexBinaryFieldSet:
    field_set = request.field_set
    origin = f"the `launcher` field of {field_set.address}"
    address = await Get(
        Address,
        AddressInput,
        AddressInput.parse(
            field_set.launcher.value,
            relative_to=field_set.address.spec_path,
            description_of_origin=origin,
        ),
    )
    wrapped = await Get(WrappedTarget, WrappedTargetRequest(address, description_of_origin=origin))
    if not PexBinaryFieldSet.is_applicable(wrapped.target):
        raise ValueError(f"{origin}: {address} is not a pex_binary")
    return PexBinaryFieldSet.create(wrapped.target)


@rule(desc="Package stage artifacts (Pex, launcher layer, OCI image)", level=LogLevel.DEBUG)
async def package_stage_artifacts(
    field_set: StageArtifactsFieldSet, python_setup: PythonSetup
) -> BuiltPackage:
    pex_field_set = await Get(PexBinaryFieldSet, LauncherRequest(field_set))
    pex = await Get(BuiltPackage, PackageFieldSet, pex_field_set)
    pex_path = pex.artifacts[0].relpath
    assert pex_path is not None

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
            ),
            input_digest=await Get(Digest, MergeDigests([pex.digest, lock_digest])),
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
    lines = [f"{entry['sha256']}  {entry['size']:>10}  {entry['path']}" for entry in manifest["files"]]
    image = manifest.get("image")
    lines.append(
        f"image index {image['index_digest']} (base {image['base']}, base blobs {image['base_blobs']})"
        if image
        else f"no image: {manifest.get('image_note')}"
    )
    return BuiltPackage(
        await Get(Digest, MergeDigests([pex.digest, artifacts])),
        (
            BuiltPackageArtifact(pex_path),
            BuiltPackageArtifact(f"{out}/", extra_log_lines=tuple(lines)),
        ),
    )


@rule
async def run_stage(field_set: StageArtifactsFieldSet) -> RunRequest:
    pex_field_set = await Get(PexBinaryFieldSet, LauncherRequest(field_set))
    return await Get(RunRequest, PexBinaryFieldSet, pex_field_set)


def rules():
    return [
        *collect_rules(),
        UnionRule(PackageFieldSet, StageArtifactsFieldSet),
        UnionRule(InferDependenciesRequest, InferStageLauncherDependency),
        *StageArtifactsFieldSet.rules(),
    ]
