"""The artifact store: where every stage's checkpoints land and every input is read from.

The cluster profile names a directory on shared storage (``ClusterProfile.artifact_store``);
every container of every stage sees it at ``ARTIFACTS_ROOT`` (``/artifacts``). Inside it:

    <artifact>/<run>/step_120/          a checkpoint as the framework wrote it (run: the
                                        stage's run directory name, ``<stage>-<hash12>``)
    <artifact>/<run>/kept/step_120/     a hard-linked copy of a step a later stage pins, so that
                                        the framework's keep policy cannot delete it
    <artifact>/<name>/                  data or a model imported from outside (``store import``)
    <artifact>/v3 -> <run>/step_120     one version per saved checkpoint, numbered as W&B
    <artifact>/step-120 -> ...          numbers them, with W&B's aliases: ``step-N`` and
    <artifact>/latest -> ...            ``latest`` (the newest)
    <artifact>/.versions/v3.json        v3's completion marker: its manifest (every file's
                                        name, size and sha256), written once its files are
    <artifact>/versions.json            the index: every version, oldest first
    <artifact>/.partial/                an import being copied; removed by the next run

A stage reads ``/artifacts/<artifact>/<selector>`` (``refs.artifact_path``), so a pin
(``run.model=super35-rl-rlvr-model:step-120``) is a path that exists exactly when that version
was published. Links are relative, so the same store works at its host path and in containers.

A version is whole or absent. Every change happens under the artifact's lock (``flock``) in
one order: the files (an import's into ``.partial/``), the completion marker (temporary file,
fsync, rename), the aliases as temporary links, then the index (temporary file, fsync,
rename): that rename is the moment the version exists. Only renames follow it. Whatever is
killed or runs out of space before it leaves the previous state, plus debris that the next
import, publish or ``store verify`` removes first (``_recover``); after it, the same recovery
finishes the links.

A stage writes its checkpoints to ``/artifacts/<artifact>/${oc.env:RECIPEKIT_RUN}``: NeMo-RL and
Megatron-Bridge resolve OmegaConf's ``oc.env`` when they load the config, and the job exports
``RECIPEKIT_RUN``. A requeued job has the same run name, so it finds its own checkpoints and
resumes from the newest.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from recipekit.errors import Issue, RecipeError, os_error_reason
from recipekit.lineage.refs import ARTIFACTS_ROOT, LATEST, ArtifactRef, artifact_name_problem
from recipekit.progress import Tracker, progress, tree_bytes
from recipekit.shared_files import exclusive

RUN_VARIABLE = "RECIPEKIT_RUN"
RUN_PLACEHOLDER = "${oc.env:" + RUN_VARIABLE + "}"
VERSIONS_FILE = "versions.json"
# In the store's top directory: tells a mounted store from an empty mount point.
STORE_MARKER = ".recipekit-artifact-store"
KEPT = "kept"
# Completion markers (with their manifests), one per version, in each artifact's directory.
MARKERS = ".versions"
# Where an import is copied before it becomes a version; emptied by every recovery.
PARTIAL = ".partial"
# In PARTIAL while an import's directory is being moved in: what to undo if it never commits.
IMPORT_JOURNAL = "import.json"
# 2: the marker carries the sha256 of its own body (MARKER_DIGEST).
MARKER_FORMAT = 2
MARKER_DIGEST = "digest"
# Checkpoint directories by step: NeMo-RL writes step_<N>, Megatron-Bridge iter_<N, 7 digits>.
STEP_DIR = re.compile(r"^(?:step_|iter_)(\d+)$")
# Names the store gives itself inside an artifact: an import under one would shadow an alias.
_ALIAS_NAME = re.compile(r"^(?:v\d+|step-\d+|latest|kept)$")
# The folders an import without --name gets (import-vN; import-vN-K where that was taken): a
# user's import under one would take the name a later `data import` generates.
_GENERATED_NAME = re.compile(r"^import-v\d+(?:-\d+)?$")
_HASH_CHUNK = 1 << 20
# The lock every change of an artifact holds.
LOCK_FILE = ".lock"
# Names the store gives its own files in an artifact's directory: no version may take one.
RESERVED_NAMES = frozenset({VERSIONS_FILE, MARKERS, PARTIAL, LOCK_FILE, STORE_MARKER})


class StoreError(RecipeError):
    """The store cannot do what was asked (no store there, a bad name, a damaged index, no
    space): one line naming what and where, never a traceback."""

    def __init__(self, where: str, message: str, hint: str = "") -> None:
        super().__init__([Issue(where, message, hint=hint)])


def _phase(name: str) -> None:
    """Called as an import or publish passes each of its phases: where the fault-injection
    tests (``store_faults_test``) kill the process or fill the disk. Does nothing."""


def init_store(root: Path) -> None:
    """Make ``root`` an artifact store (its marker tells a mounted store from an empty
    mount point)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / STORE_MARKER).touch()


def is_store(root: Path) -> bool:
    return (root / STORE_MARKER).is_file()


def store_paths(plan: Mapping[str, Any]) -> dict[str, str]:
    """The plan's inputs and outputs (``role -> path``) that are in the artifact store."""
    found = {**plan.get("inputs", {}), **plan.get("outputs", {})}
    return {role: path for role, path in found.items() if stored_artifact(str(path))}


def run_name(stage: str, plan_hash: str) -> str:
    """A run's name: its run directory's, and the folder its checkpoints land in."""
    return f"{stage}-{plan_hash[:12]}"


def output_dir(artifact: str) -> str:
    """The checkpoint directory of a stage publishing ``artifact``, as its config says it."""
    return f"{ARTIFACTS_ROOT}/{artifact}/{RUN_PLACEHOLDER}"


def resolve_run(path: str, run: str) -> str:
    """``path`` with the job's run name where the config names ``RECIPEKIT_RUN``."""
    return path.replace(RUN_PLACEHOLDER, run)


def stored_artifact(path: str) -> str | None:
    """The artifact a path under ``ARTIFACTS_ROOT`` belongs to; None elsewhere."""
    prefix = ARTIFACTS_ROOT + "/"
    if not path.startswith(prefix):
        return None
    return path[len(prefix) :].split("/", 1)[0] or None


def store_output(plan: Mapping[str, Any]) -> tuple[str, str] | None:
    """(artifact, run) when a plan (``plan.json``) writes its checkpoints into the store."""
    # The framework's outputs by role; the first is the checkpoint the stage publishes.
    outputs = list(plan.get("outputs", {}).values())
    artifact = stored_artifact(outputs[0]) if outputs else None
    if artifact is None:
        return None
    return artifact, run_name(str(plan["stage"]), str(plan["hash"]))


# Megatron-Bridge writes a checkpoint's shards into iter_<N> where they land, then, once every
# shard is saved (after an async save's finalize too), iter_<N>/train_state.pt and the tracker
# (training/checkpointing.py:1482-1491 @ 067f987df). NeMo-RL saves into tmp_step_<N> and renames
# it step_<N> when whole (utils/checkpoint.py:289-306 @ super-v3.5-posttraining).
MEGATRON_SAVED = "train_state.pt"
MEGATRON_TRACKER = "latest_checkpointed_iteration.txt"


def _tracked_iteration(directory: Path) -> int:
    try:
        return int((directory / MEGATRON_TRACKER).read_text().strip())
    except (OSError, ValueError):
        return -1


def saved_steps(directory: Path) -> dict[int, Path]:
    """The checkpoints a framework has finished saving in ``directory``, by step: a Megatron
    ``iter_<N>`` still being written (no ``train_state.pt`` yet, beyond the tracker) is not one,
    so a publish while the run goes never records half a checkpoint as a version."""
    if not directory.is_dir():
        return {}
    found = {}
    tracked = None
    for entry in directory.iterdir():
        match = STEP_DIR.fullmatch(entry.name)
        if not match or not entry.is_dir():
            continue
        step = int(match.group(1))
        if entry.name.startswith("iter_") and not (entry / MEGATRON_SAVED).is_file():
            tracked = _tracked_iteration(directory) if tracked is None else tracked
            if step > tracked:
                continue
        found[step] = entry
    return found


@attrs.frozen
class StoredVersion:
    """One published version of an artifact."""

    version: int
    step: int | None
    run: str
    # Relative to the artifact's directory.
    path: str
    kept: bool = False

    @property
    def aliases(self) -> list[str]:
        return [f"v{self.version}", *([f"step-{self.step}"] if self.step is not None else [])]


def require_store(root: Path) -> Path:
    """``root`` as a Path, when an artifact store is there; a StoreError giving the command
    that makes one otherwise (a typo must not silently start a second store)."""
    if not isinstance(root, str | os.PathLike):
        raise StoreError("store", f"a store path is a path, not {type(root).__name__}")
    root = Path(root)
    if not is_store(root):
        what = "no artifact store" if root.exists() else "no such directory"
        raise StoreError(str(root), what, hint=f"make one with: recipekit store init {root}")
    return root


def artifact_names(root: Path) -> list[str]:
    """The artifacts the store at ``root`` holds: each directory with an index."""
    return sorted(p.name for p in require_store(root).iterdir() if (p / VERSIONS_FILE).is_file())


def artifact_dir(root: Path, artifact: str) -> Path:
    """The directory of ``artifact`` in the store at ``root`` (the name checked as a name)."""
    problem = artifact_name_problem(artifact)
    if problem:
        raise StoreError("ARTIFACT", f"{artifact!r}: {problem}")
    return require_store(root) / artifact


def version_name_problem(name: object) -> str:
    """Why ``name`` cannot name an imported version's folder, or "" when it can: a name, never
    a path, and none of the names the store gives itself."""
    if name in RESERVED_NAMES:
        return f"{name} is a name the store uses for itself (its index, markers or lock)"
    problem = _folder_name_problem(name)
    if problem:
        return problem
    if _ALIAS_NAME.fullmatch(str(name)):
        return "vN, step-N, latest and kept are the store's own names (its aliases)"
    if _GENERATED_NAME.fullmatch(str(name)):
        return "import-vN is the name the store gives an import without --name"
    return ""


def _folder_name_problem(name: object) -> str:
    """Why ``name`` cannot be a folder directly inside an artifact's directory ("" if it can)."""
    if isinstance(name, str) and ("/" in name or ":" in name or name in {".", ".."}):
        return "a version's name is a folder's name, never a path (no '/' or ':')"
    return artifact_name_problem(name).replace("an artifact name", "a version's name")


def versions(root: Path, artifact: str) -> list[StoredVersion]:
    """Every version of ``artifact`` in the store at ``root``, oldest first (none for an
    artifact nothing has published yet). A damaged index is a StoreError saying how to
    rebuild it."""
    directory = artifact_dir(root, artifact)
    listed = _read_index(directory)
    if listed is None:
        raise StoreError(
            str(directory / VERSIONS_FILE),
            "the index is damaged",
            hint=f"recipekit store verify {root} {artifact} rebuilds it from the versions' "
            "completion markers",
        )
    return listed


def _read_index(directory: Path) -> list[StoredVersion] | None:
    """The index's versions; [] without one, None when it cannot be read."""
    file = directory / VERSIONS_FILE
    try:
        text = file.read_text()
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError):
        return None
    try:
        listed = [_as_version(entry) for entry in json.loads(text)["versions"]]
    except (ValueError, TypeError, KeyError, RecursionError):
        return None
    # Numbered in order from v0, as every commit writes it: anything else is damage.
    if [v.version for v in listed] != list(range(len(listed))):
        return None
    return listed


def _as_version(entry: Any) -> StoredVersion:
    if not isinstance(entry, dict):
        raise TypeError("not a version")
    version = StoredVersion(
        entry["version"], entry["step"], entry["run"], entry["path"], entry.get("kept", False)
    )
    typed = (
        _whole_number(version.version)
        and (version.step is None or _whole_number(version.step))
        and isinstance(version.run, str)
        and isinstance(version.path, str)
        and isinstance(version.kept, bool)
    )
    if not typed:
        raise TypeError("not a version")
    parts = Path(version.path).parts
    if not parts or Path(version.path).is_absolute() or ".." in parts or "." in parts:
        raise ValueError("a version's path stays inside its artifact")
    if _ALIAS_NAME.fullmatch(parts[0]) or parts[0] in RESERVED_NAMES:
        raise ValueError("a version's path is not one of the store's own names")
    return version


def _whole_number(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# --- manifests and completion markers ------------------------------------------------------


def _marker(directory: Path, version: int) -> Path:
    return directory / MARKERS / f"v{version}.json"


def _marker_body(
    version: StoredVersion, files: list[dict[str, Any]], meta: Mapping[str, Any]
) -> dict[str, Any]:
    # ``meta`` is what the pipeline records of how a version was made (its action key, plan
    # hash, input versions: recipekit.pipeline.actions); the store keeps it and checks nothing
    # in it.
    return {"format": MARKER_FORMAT, **attrs.asdict(version), "meta": dict(meta), "files": files}


def _body_digest(body: Mapping[str, Any]) -> str:
    """sha256 of a marker's body without its own digest, in a canonical form."""
    rest = {k: v for k, v in body.items() if k != MARKER_DIGEST}
    blob = json.dumps(rest, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _write_marker(directory: Path, number: int, body: Mapping[str, Any]) -> None:
    """Version ``number``'s completion marker, sealed by the digest of everything in it: a
    manifest edited or damaged in any JSON-valid way no longer reads as one."""
    unsealed = {k: v for k, v in body.items() if k != MARKER_DIGEST}
    sealed = {**unsealed, "format": MARKER_FORMAT}
    sealed[MARKER_DIGEST] = _body_digest(sealed)
    _write_synced(_marker(directory, number), (json.dumps(sealed, indent=1) + "\n").encode())


def read_marker(directory: Path, version: int) -> dict[str, Any] | None:
    """A version's completion marker (its manifest under ``files``); None when it has none, it
    cannot be read, or its digest does not hold (checked on every read). A marker written
    before markers had digests (format 1) has none to check: ``store verify`` seals it once
    it has read every byte of its version."""
    try:
        body = json.loads(_marker(directory, version).read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(body, dict) or not isinstance(body.get("files"), list):
        return None
    if MARKER_DIGEST in body or body.get("format") != 1:
        if body.get(MARKER_DIGEST) != _body_digest(body):
            return None
    return body


def marker_unsealed(body: Mapping[str, Any]) -> bool:
    """Whether a marker is from before markers carried their own digest."""
    return MARKER_DIGEST not in body


def _markers(directory: Path) -> dict[int, StoredVersion]:
    found: dict[int, StoredVersion] = {}
    folder = directory / MARKERS
    if not folder.is_dir():
        return found
    for file in folder.iterdir():
        match = re.fullmatch(r"v(\d+)\.json", file.name)
        body = read_marker(directory, int(match.group(1))) if match else None
        if body is None:
            continue
        try:
            found[int(match.group(1))] = _as_version(body)  # type: ignore[union-attr]
        except (ValueError, TypeError, KeyError):
            continue
    return found


def _hash_file(path: Path, hashed: Tracker | None = None) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
            if hashed is not None:
                hashed.advance(len(chunk))
    return digest.hexdigest()


def _walk(top: Path) -> Iterator[Path]:
    """Every file and link under ``top`` (or ``top`` itself, a file), in a stable order."""
    if not top.is_dir() or top.is_symlink():
        yield top
        return
    for folder, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(files + [d for d in dirs if Path(folder, d).is_symlink()]):
            yield Path(folder, name)


def _entry(top: Path, path: Path, hashed: Tracker | None = None) -> dict[str, Any]:
    """The manifest entry of ``path`` in the folder ``top`` a framework wrote: a link is
    recorded as a link, and only when it stays inside ``top`` (a version holds its own bytes)."""
    name = path.relative_to(top).as_posix()
    if path.is_symlink():
        target = os.readlink(path)
        if not _link_stays_inside(top, name, target):
            raise StoreError(str(path), f"a link to {target}, outside the checkpoint it is in")
        return {"name": name, "link": target}
    if not path.is_file():
        raise StoreError(str(path), "neither a file, a folder nor a link")
    return {"name": name, **_stat_of(path), "sha256": _hash_file(path, hashed)}


# What a manifest entry records beside the bytes' sha256 so that a cheap check (every submit,
# every node's preflight, pipeline plan) notices a change without reading the file: a write
# moves mtime, a file replaced by another has another inode, and ctime moves on any change,
# even one that sets mtime back (touch -d). ctime is recorded only for a file with no other
# link: a hard link made or removed (store keep, a framework's keep policy deleting the
# step it was published from, data import's links) moves it with the bytes unchanged.
STAT_KEYS = ("mtime_ns", "ino", "ctime_ns")


def _stat_of(path: Path) -> dict[str, int]:
    return _stat_dict(path.stat())


def _stat_dict(found: os.stat_result) -> dict[str, int]:
    recorded = {"size": found.st_size, "mtime_ns": found.st_mtime_ns, "ino": found.st_ino}
    if found.st_nlink == 1:
        recorded["ctime_ns"] = found.st_ctime_ns
    return recorded


def _stat_changed(entry: Mapping[str, Any], found: os.stat_result) -> bool:
    """Whether ``found`` differs from what ``entry`` recorded of its file (a manifest from
    before these were recorded records none: only its size is compared)."""
    now = {"mtime_ns": found.st_mtime_ns, "ino": found.st_ino, "ctime_ns": found.st_ctime_ns}
    return any(entry[key] != now[key] for key in STAT_KEYS if key in entry)


def _manifest(version_dir: Path, what: str) -> list[dict[str, Any]]:
    """The manifest of a directory a framework wrote (read once, as it is published): every
    byte is hashed, minutes for a large checkpoint, so it shows its progress as ``what``."""
    with progress(what, total=tree_bytes(version_dir), counts_bytes=True) as hashed:
        return [_entry(version_dir, p, hashed) for p in _walk(version_dir)]


def _copy_hashing(
    sources: Mapping[str, Path], target: Path, copied: Tracker, *, link: bool = False
) -> list[dict[str, Any]]:
    """Copy each source (a file or a directory) into the new directory ``target``, under the
    entry it is keyed by ("": a directory's contents at the top, a file under its own name),
    hashing each file as it is written and syncing it to disk: its manifest. With ``link``,
    each file is hard-linked instead (no byte is copied; the source must be on the store's
    filesystem) and hashed where it is. A link is copied as a link when it stays inside its
    source; one leaving it is refused (it would read outside the store)."""
    target.mkdir()
    files: list[dict[str, Any]] = []
    for entry, given in sources.items():
        entry, source = _followed(entry, given)
        top = source if source.is_dir() else source.parent
        for path in _walk(source):
            name = path.relative_to(top).as_posix()
            if entry:
                name = entry if path == source else f"{entry}/{name}"
            files.append(_copy_entry(path, source, target / name, name, copied, link))
            _phase("copying")
    for folder in {target, *(p.parent for p in target.rglob("*"))}:
        _fsync_dir(folder)
    return files


def _followed(entry: str, source: Path) -> tuple[str, Path]:
    """A source the user named through a link, as the file or folder it leads to (what
    ``cp -rH`` copies): stored under the name the user gave it, never as the link itself,
    which would lead out of the store."""
    if not source.is_symlink():
        return entry, source
    real = Path(os.path.realpath(source))
    if not real.exists():
        raise StoreError(str(source), f"a link to {os.readlink(source)}, which does not exist")
    return (entry or ("" if real.is_dir() else source.name)), real


def _copy_entry(
    path: Path, source: Path, out: Path, name: str, copied: Tracker, link: bool
) -> dict[str, Any]:
    out.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink():
        target = os.readlink(path)
        top = source if source.is_dir() else source.parent
        if not _link_stays_inside(top, path.relative_to(top).as_posix(), target):
            raise StoreError(str(path), f"a link to {target}, outside what is imported")
        out.symlink_to(target)
        return {"name": name, "link": target}
    if not path.is_file():
        raise StoreError(str(path), "neither a file, a directory nor a link")
    if link:
        os.link(path, out)
        copied.advance(out.stat().st_size)
        return {"name": name, **_stat_of(out), "sha256": _hash_file(out)}
    digest = hashlib.sha256()
    with open(path, "rb") as read, open(out, "xb") as write:
        while chunk := read.read(_HASH_CHUNK):
            digest.update(chunk)
            write.write(chunk)
            copied.advance(len(chunk))
        write.flush()
        os.fsync(write.fileno())
    shutil.copystat(path, out)
    return {"name": name, **_stat_of(out), "sha256": digest.hexdigest()}


def manifest_digest(files: Any) -> str:
    """The identity of a version's content: sha256 over its manifest (every file's name, size
    and sha256, every link's target), in a canonical form. Two imports of the same bytes
    under the same names have the same digest: what the manifest records of the files' stat
    (STAT_KEYS, for the cheap check) is left out, as it was before it was recorded."""
    if isinstance(files, list):
        files = [
            {k: v for k, v in entry.items() if k not in STAT_KEYS}
            if isinstance(entry, dict)
            else entry
            for entry in files
        ]
    blob = json.dumps(files, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def link_problem(root: Path, source: Path) -> str:
    """Why ``source`` cannot be hard-linked into the store at ``root`` ("" when it can): a
    hard link never leaves its filesystem."""
    try:
        here, there = os.stat(source).st_dev, os.stat(root).st_dev
    except OSError as exc:
        return f"{source}: {exc.strerror or exc}"
    if here == there:
        return ""
    return f"{source} is not on the artifact store's filesystem ({root})"


def _fsync_dir(directory: Path) -> None:
    handle = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def _write_synced(target: Path, data: bytes) -> None:
    """``target`` whole or not at all, and on disk before it is renamed into place: a crash
    (of the host, not only the process) leaves the old file or the new one."""
    handle, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)


def _index_text(listed: list[StoredVersion]) -> bytes:
    return json.dumps({"versions": [attrs.asdict(v) for v in listed]}, indent=1).encode()


# --- changing the store: under the artifact's lock -------------------------------------------


@contextlib.contextmanager
def _locked(directory: Path, *, wait: bool = True) -> Iterator[None]:
    # Two jobs may publish to one artifact at once (a requeued job's last sweep and its
    # successor's first): the lock keeps version numbers unique.
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(exclusive(directory / LOCK_FILE, wait=wait))
        except BlockingIOError:
            raise
        except OSError as exc:
            raise StoreError(
                str(exc.filename or directory / LOCK_FILE),
                f"cannot lock {directory.name} to change it: {os_error_reason(exc)}; "
                "nothing was changed",
            ) from None
        yield


def _alias_targets(listed: list[StoredVersion]) -> dict[str, str]:
    """Every alias of ``listed`` (vN, step-N, latest) and the version path it points at."""
    wanted: dict[str, str] = {}
    for version in listed:
        wanted.update({alias: version.path for alias in version.aliases})
    if listed:
        wanted[LATEST] = listed[-1].path
    return wanted


def _temporary_links(directory: Path, listed: list[StoredVersion]) -> dict[str, Path]:
    """Each alias of ``listed`` that does not point where it should yet, made as a temporary
    link beside it (what a link costs on disk is spent here, before the commit)."""
    made: dict[str, Path] = {}
    for alias, target in _alias_targets(listed).items():
        link = directory / alias
        if link.is_symlink() and os.readlink(link) == target:
            continue
        tmp = directory / f".{alias}.link.tmp"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(target)
        made[alias] = tmp
    return made


def _move_links(directory: Path, links: dict[str, Path]) -> None:
    for alias, tmp in links.items():
        tmp.replace(directory / alias)
    if links:
        _fsync_dir(directory)


def _commit(directory: Path, listed: list[StoredVersion]) -> None:
    """Make ``listed`` the artifact's versions: the aliases first as temporary links, then the
    index (the commit), then the links renamed into place."""
    links = _temporary_links(directory, listed)
    _phase("links")
    _write_synced(directory / VERSIONS_FILE, _index_text(listed))
    _phase("index")
    _move_links(directory, links)


def _version_links(directory: Path) -> dict[int, str]:
    """Where each ``vN`` alias points (its link's text), by N."""
    found: dict[int, str] = {}
    for link in directory.glob("v*"):
        match = re.fullmatch(r"v(\d+)", link.name)
        if match and link.is_symlink():
            found[int(match.group(1))] = os.readlink(link)
    return found


def _unkept_path(version: StoredVersion) -> str:
    """Where a kept version was published before keep_version linked it under ``kept/``."""
    return f"{version.run}/{Path(version.path).name}" if version.kept else version.path


def committed_versions(
    directory: Path, markers: dict[int, StoredVersion] | None = None
) -> tuple[list[StoredVersion], list[str]]:
    """The versions the evidence shows were published, oldest first, and what the index says
    otherwise (one line each; none when it agrees). The index is not the evidence: an index
    restored from a backup is behind, a damaged one may say anything. A version was
    published when its completion marker is whole and either its ``vN`` link points at it
    (links are moved into place only after the index was written) or the index lists it as
    its marker does (killed between the index and the links); every version below a
    published one was published before it. A StoreError when a version below the newest
    published one has neither a marker nor an index entry to rebuild it from. ``markers``:
    the artifact's markers where the caller has read them already."""
    index = _read_index(directory)
    markers = _markers(directory) if markers is None else markers
    links = _version_links(directory)
    listed = index or []

    def indexed(number: int) -> StoredVersion | None:
        return listed[number] if number < len(listed) else None

    published = [
        n
        for n, found in markers.items()
        if links.get(n) in {found.path, _unkept_path(found)} or indexed(n) == found
    ]
    published += [
        n for n, entry in enumerate(listed) if n not in markers and links.get(n) == entry.path
    ]
    count = max(published) + 1 if published else 0
    evidence: list[StoredVersion] = []
    for number in range(count):
        found = markers.get(number) or indexed(number)
        if found is None or found.version != number:
            raise StoreError(
                str(directory / MARKERS),
                f"v{number} has no completion marker and the index does not list it, though "
                f"v{count - 1} was published after it",
                hint=f"restore {MARKERS}/v{number}.json or {VERSIONS_FILE} from a backup",
            )
        evidence.append(found)
    return evidence, _index_disagreement(directory, index, evidence)


def _index_disagreement(
    directory: Path, index: list[StoredVersion] | None, evidence: list[StoredVersion]
) -> list[str]:
    file = directory / VERSIONS_FILE
    if index == evidence:
        return []
    if index is None:
        return ["it could not be read"]
    if not file.exists():
        return ["it was missing"]
    said = [f"it listed {_span(index)}, the markers and links show {_span(evidence)}"]
    differing = [(a, b) for a, b in zip(index, evidence, strict=False) if a != b]
    # keep_version killed between the marker (naming the kept copy) and the index: finished.
    kept = [b for a, b in differing if b.kept and not a.kept and _unkept_path(b) == a.path]
    if len(kept) == len(differing) and len(index) == len(evidence):
        return [f"pointed v{v.version} at its kept copy {v.path}" for v in kept]
    if index == evidence[: len(index)]:
        said.append("it was behind (an older copy restored?)")
    if differing:
        said.append(
            "it disagreed with the markers of " + ", ".join(f"v{b.version}" for _, b in differing)
        )
    return said


def _span(listed: list[StoredVersion]) -> str:
    if not listed:
        return "no version"
    return f"v0..v{len(listed) - 1}" if len(listed) > 1 else "v0"


@attrs.frozen
class Repair:
    """One thing recovery does: what it says, and the change."""

    says: str
    change: Callable[[], object]


def _repairs(directory: Path) -> list[Repair]:
    """What would bring an artifact to a consistent state after an import or publish that
    was killed or failed, in order. Recovery only moves forward: a version published by the
    evidence (committed_versions) is never removed, and an index that disagrees with the
    evidence is rebuilt from it, never trimmed to match. What was never published (a marker
    without its index entry or link, a copy that never finished) is removed."""
    # Every marker is read (and its digest checked) once, for the evidence and the clean-up.
    markers = _markers(directory)
    evidence, disagreement = committed_versions(directory, markers)
    published = {v.version for v in evidence}
    repairs: list[Repair] = []
    if disagreement:
        text = _index_text(evidence)
        rebuilt = f"rebuilt {VERSIONS_FILE} from {len(evidence)} completion markers"
        finished = all(line.startswith("pointed ") for line in disagreement)
        says = "; ".join(disagreement) if finished else f"{rebuilt}: " + "; ".join(disagreement)
        repairs.append(
            Repair(says, functools.partial(_write_synced, directory / VERSIONS_FILE, text))
        )
    journal = directory / PARTIAL / IMPORT_JOURNAL
    try:
        pending = json.loads(journal.read_text())
    except (OSError, ValueError, RecursionError):
        pending = None
    if isinstance(pending, dict) and pending.get("version") not in published:
        name = str(pending.get("name", ""))
        # The journal names a folder the import made: a user's name or a generated one, never
        # a path, an alias or a folder a version holds (a damaged journal removes nothing else).
        named = not version_name_problem(name) or _GENERATED_NAME.fullmatch(name)
        held = {Path(v.path).parts[0] for v in evidence}
        if named and name not in held and (directory / name).exists():
            repairs.append(
                Repair(
                    f"removed {name}/, an import that never finished",
                    functools.partial(shutil.rmtree, directory / name, ignore_errors=True),
                )
            )
    for number in sorted(set(markers) - published):
        repairs.append(
            Repair(
                f"removed the marker of v{number}, which was never published",
                functools.partial(_marker(directory, number).unlink, missing_ok=True),
            )
        )
    partial = directory / PARTIAL
    if partial.is_dir() and any(partial.iterdir()):
        repairs.append(
            Repair(
                f"removed {PARTIAL}/ (a copy that never finished)",
                functools.partial(shutil.rmtree, partial),
            )
        )
    debris = [
        *(directory.glob(".*.tmp")),
        *((directory / MARKERS).glob(".*.tmp") if (directory / MARKERS).is_dir() else ()),
        *directory.glob(f"*/{KEPT}/*.tmp"),
    ]
    if debris:
        repairs.append(Repair("", functools.partial(_remove_all, debris)))
    pointed = _links_to_move(directory, evidence)
    if pointed:
        names = ", ".join(sorted(pointed))
        repairs.append(
            Repair(
                f"pointed {names} at their versions",
                functools.partial(_point_links, directory, evidence),
            )
        )
    return repairs


def _remove_all(paths: list[Path]) -> None:
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _links_to_move(directory: Path, listed: list[StoredVersion]) -> list[str]:
    return [
        alias
        for alias, target in _alias_targets(listed).items()
        if not (directory / alias).is_symlink() or os.readlink(directory / alias) != target
    ]


def _point_links(directory: Path, listed: list[StoredVersion]) -> None:
    _move_links(directory, _temporary_links(directory, listed))


def _recover(directory: Path) -> list[str]:
    """Bring an artifact back to a consistent state (under the lock): what it did, one line
    each."""
    directory.mkdir(exist_ok=True)
    done = []
    for repair in _repairs(directory):
        repair.change()
        if repair.says:
            done.append(repair.says)
    return done


def pending_repairs(root: Path, artifact: str) -> list[str]:
    """What the next recovery of ``artifact`` would do, changing nothing: for a store this
    process cannot write (a read-only mount for ``store verify``)."""
    directory = artifact_dir(root, artifact)
    if not directory.is_dir():
        return []
    return [r.says for r in _repairs(directory) if r.says]


def _failed(directory: Path, what: str, exc: OSError) -> StoreError:
    """An OSError while changing the store, as one line; the store is recovered first."""
    try:
        _recover(directory)
    except (OSError, RecipeError):
        pass  # the next import, publish or verify recovers it
    reason = os_error_reason(exc)
    where = exc.filename or directory
    return StoreError(str(where), f"{what} failed: {reason}; nothing of it was published")


def _keep(source: Path, target: Path, partial: Path) -> None:
    """A copy of ``source`` made of hard links: the framework deleting ``source`` (its keep
    policy) leaves the files, and the copy costs no space."""
    if target.exists():
        return
    partial.mkdir(exist_ok=True)
    tmp = partial / f"kept-{target.name}"
    shutil.copytree(source, tmp, copy_function=os.link, symlinks=True)
    target.parent.mkdir(exist_ok=True)
    tmp.replace(target)


def publish(
    root: Path,
    artifact: str,
    run: str,
    *,
    keep_steps: Collection[int] = (),
    finished: bool = False,
    meta: Mapping[str, Any] | None = None,
) -> list[StoredVersion]:
    """Make every checkpoint ``run`` saved of ``artifact`` a version, newest last, and move
    ``latest``. Steps in ``keep_steps`` are kept (hard-linked) before they are published.
    Publishing again finds what is new; returns the versions this call added. Each version's
    marker records ``meta`` (how it was made).

    A run that saves no checkpoints by step (an export writes one model) is one version, its
    whole directory, once it has ``finished`` well."""
    directory = artifact_dir(root, artifact)
    with _locked(directory):
        try:
            _recover(directory)
            return _publish(directory, run, keep_steps, finished, meta or {})
        except OSError as exc:
            raise _failed(directory, f"publishing {artifact} from {run}", exc) from None
        except BaseException:
            _recover(directory)
            raise


def _publish(
    directory: Path,
    run: str,
    keep_steps: Collection[int],
    finished: bool,
    meta: Mapping[str, Any],
) -> list[StoredVersion]:
    known = _read_index(directory) or []
    seen = {(v.run, v.step) for v in known}
    added: list[StoredVersion] = []
    steps = saved_steps(directory / run)
    written = directory / run
    if finished and not steps and (run, None) not in seen and _has_files(written):
        added.append(StoredVersion(len(known), None, run, run))
    for step, saved in sorted(steps.items()):
        if (run, step) in seen:
            continue
        path = f"{run}/{saved.name}"
        kept = step in keep_steps
        if kept:
            _keep(saved, directory / run / KEPT / saved.name, directory / PARTIAL)
            path = f"{run}/{KEPT}/{saved.name}"
        added.append(StoredVersion(len(known) + len(added), step, run, path, kept))
    if not added:
        return []
    _phase("files")
    (directory / MARKERS).mkdir(exist_ok=True)
    for version in added:
        what = f"store publish {directory.name}:v{version.version} (hashing {version.path})"
        files = _manifest(directory / version.path, what)
        _write_marker(directory, version.version, _marker_body(version, files, meta))
    _phase("marker")
    _commit(directory, [*known, *added])
    return added


def keep_version(root: Path, artifact: str, number: int, *, pinned_by: str) -> StoredVersion:
    """Make version ``number`` of ``artifact`` safe from the keep policy of the run that saved
    it, because a planned or running stage (``pinned_by``) reads it: its checkpoint is
    hard-linked under ``<run>/kept/`` (no space spent) and the version re-pointed there, so the
    framework deleting ``<run>/step_N`` (``keep_top_k``) leaves it whole. A version kept
    already, an import or a run's whole folder (no keep policy deletes those) is returned as
    it is; one whose files are already gone or damaged is a StoreError saying so."""
    directory = artifact_dir(root, artifact)
    with _locked(directory):
        try:
            _recover(directory)
            return _keep_version(directory, number, pinned_by)
        except OSError as exc:
            raise _failed(directory, f"keeping {artifact}:v{number} for {pinned_by}", exc) from None


def _keep_version(directory: Path, number: int, pinned_by: str) -> StoredVersion:
    listed = _read_index(directory) or []
    where = f"{directory.name}:v{number}"
    if number >= len(listed):
        raise StoreError(where, f"pinned by {pinned_by}, is not a version of the store")
    version = listed[number]
    if version.kept or version.step is None:
        return version
    state = check_version(directory.parent, directory.name, version, content=False)
    marker = read_marker(directory, number)
    if not state.whole or marker is None:
        why = (
            f"{directory / version.path} is gone (its run's keep policy deleted it first)"
            if state.gone
            else (state.problems or ("its completion marker cannot be read",))[0]
        )
        raise StoreError(
            where,
            f"pinned by {pinned_by}, cannot be kept: {why}",
            hint=f"pin another version of {directory.name} (recipekit store list shows them)",
        )
    saved = directory / version.path
    kept = attrs.evolve(version, path=f"{version.run}/{KEPT}/{saved.name}", kept=True)
    _keep(saved, directory / kept.path, directory / PARTIAL)
    _phase("files")
    # The marker first, as a publish writes it before the index: a crash between the two is
    # finished by _recover (the marker names the kept copy, the index still the original).
    # The version was whole just now (check_version read what had changed); linking it moved
    # its files' ctime and link count: the manifest records their stat as they are now.
    files = [
        {**_without_stat(entry), **_stat_of(directory / kept.path / str(entry["name"]))}
        if "sha256" in entry
        else entry
        for entry in marker["files"]
    ]
    body = {**marker, "path": kept.path, "kept": True, "files": files}
    _write_marker(directory, number, body)
    _phase("marker")
    _commit(directory, [*listed[:number], kept, *listed[number + 1 :]])
    return kept


def _without_stat(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k not in STAT_KEYS}


def _has_files(directory: Path) -> bool:
    return directory.is_dir() and any(directory.iterdir())


def import_version(
    root: Path,
    artifact: str,
    source: Path | Mapping[str, Path],
    *,
    name: str | None = None,
    link: bool = False,
    meta: Mapping[str, Any] | None = None,
) -> StoredVersion:
    """Register data or a checkpoint from outside the pipeline as the next version of
    ``artifact`` (what ``store import``, ``data import`` and ``model import`` do), under
    ``<name>/`` (default ``import-vN``). ``source`` is one path, or entries of the version
    (``{"train.jsonl": PATH}``, "" for a directory's contents at the top). ``link``: hard-link
    the files instead of copying them. The marker records ``meta`` and the manifest's digest
    (``manifest_digest``), the identity the pipeline keys the readers' actions by."""
    if name is not None:
        problem = version_name_problem(name)
        if problem:
            raise StoreError("--name", f"{name!r}: {problem}")
    sources = {"": Path(source)} if isinstance(source, str | os.PathLike) else dict(source)
    directory = artifact_dir(root, artifact)
    with _locked(directory):
        try:
            _recover(directory)
            return _import(directory, sources, name, link, meta or {})
        except OSError as exc:
            what = ", ".join(str(p) for p in sources.values())
            raise _failed(directory, f"importing {what} as {artifact}", exc) from None
        except BaseException:
            _recover(directory)
            raise


def _import(
    directory: Path,
    sources: Mapping[str, Path],
    name: str | None,
    link: bool,
    meta: Mapping[str, Any],
) -> StoredVersion:
    known = _read_index(directory) or []
    name = name or _free_name(directory, known)
    target = directory / name
    if target.exists() or target.is_symlink() or name in {v.path for v in known}:
        raise StoreError("--name", f"{target} exists", hint="import under another name")
    partial = directory / PARTIAL / name
    partial.parent.mkdir(exist_ok=True)
    total = sum(tree_bytes(path) for path in sources.values())
    with progress(f"store import {name}", total=total, counts_bytes=True) as bar:
        files = _copy_hashing(sources, partial, bar, link=link)
    version = StoredVersion(len(known), None, name, name)
    _phase("files")
    (directory / MARKERS).mkdir(exist_ok=True)
    journal = directory / PARTIAL / IMPORT_JOURNAL
    _write_synced(journal, json.dumps({"name": name, "version": version.version}).encode())
    partial.replace(target)
    _phase("moved")
    recorded = {**meta, "manifest_digest": manifest_digest(files)}
    _write_marker(directory, version.version, _marker_body(version, files, recorded))
    _phase("marker")
    _commit(directory, [*known, version])
    journal.unlink()
    return version


def _free_name(directory: Path, known: list[StoredVersion]) -> str:
    """``import-vN`` for version N, or ``import-vN-K`` where a folder has that name already
    (one a user named so before the name was reserved): a default that is taken would fail
    every later import."""
    base = f"import-v{len(known)}"
    taken = {v.path for v in known}
    for name in (base, *(f"{base}-{k}" for k in range(2, 1000))):
        if (
            name not in taken
            and not (directory / name).exists()
            and not (directory / name).is_symlink()
        ):
            return name
    return base  # 1000 folders of one version's name: the import says it exists


def recover(root: Path, artifact: str, *, wait: bool = True) -> list[str]:
    """Finish or undo what an interrupted import or publish of ``artifact`` left (under its
    lock): what was done, one line each. Without ``wait``, a lock another process holds (an
    import or publish under way) is a BlockingIOError at once."""
    directory = artifact_dir(root, artifact)
    if not directory.is_dir():
        return []
    if not writable(directory):
        return [
            f"not repaired (the store is read-only here): {line}"
            for line in pending_repairs(root, artifact)
        ]
    with _locked(directory, wait=wait):
        return _recover(directory)


def writable(directory: Path) -> bool:
    """Whether this process may change ``directory`` (not on a read-only mount, nor another
    user's): a store mounted read-only can still be listed and verified."""
    return os.access(directory, os.W_OK)


# --- checking versions against their manifests ---------------------------------------------


@attrs.frozen
class VersionState:
    """What ``check_version`` found: problems name the file, ``gone`` a deleted version."""

    version: StoredVersion
    problems: tuple[str, ...] = ()
    gone: bool = False
    # Files read because their stat moved that hold their manifest's bytes (a store copied or
    # restored elsewhere, a file touched): name -> the stat they were read with. record_stats
    # writes it into the manifest, or every cheap check would read them again.
    moved: Mapping[str, Mapping[str, int]] = attrs.field(factory=dict)

    @property
    def whole(self) -> bool:
        return not self.problems and not self.gone


def check_version(
    root: Path,
    artifact: str,
    version: StoredVersion,
    *,
    content: bool = True,
    hashed: Tracker | None = None,
) -> VersionState:
    """``version`` against its completion marker: every file there with its size, and with its
    sha256 when ``content`` (reading every byte: what ``store verify`` does, telling
    ``hashed`` the bytes as it reads them). Without ``content`` (``submit``, the job's
    preflight, ``pipeline plan``, ``store list``) only a file whose stat differs from what its
    manifest recorded (STAT_KEYS) is read and hashed: a same-size change is found, and a
    large checkpoint nobody touched costs one stat per file. Nothing is changed."""
    directory = root / artifact
    where = directory / version.path
    marker = read_marker(directory, version.version)
    if marker is None:
        missing = not _marker(directory, version.version).exists()
        what = "has no completion marker" if missing else "has a damaged completion marker"
        return VersionState(
            version, (f"v{version.version} {what} ({_marker(directory, version.version)})",)
        )
    problems: list[str] = []
    moved: dict[str, dict[str, int]] = {}
    recorded = {k: marker.get(k) for k in ("version", "step", "run", "path")}
    if recorded != {k: getattr(version, k) for k in recorded}:
        problems.append(f"{_marker(directory, version.version)} describes another version")
    escape = _escaping_component(directory, version.path)
    if escape:
        return VersionState(version, (*problems, escape))
    if not where.is_dir():
        return VersionState(version, tuple(problems), gone=True)
    expected: set[str] = set()
    folders: dict[Path, str] = {}
    for entry in marker["files"]:
        name = str(entry.get("name", ""))
        path = where / name
        expected.add(name)
        # Never through a link: a folder of the version swapped for a link to the same bytes
        # elsewhere is not the version (it reads outside the store).
        escape = _linked_folder(where, name, folders)
        if escape:
            problems.append(escape)
            continue
        if "link" in entry:
            target = str(entry["link"])
            if not path.is_symlink() or os.readlink(path) != target:
                problems.append(f"{path} is not the link to {target} its manifest lists")
            elif not _link_stays_inside(where, name, target):
                problems.append(f"{path} is a link to {target}, outside its version")
            continue
        try:
            found = path.lstat()
        except OSError:
            problems.append(f"{path} is missing")
            continue
        if not stat.S_ISREG(found.st_mode):
            what = "a link" if stat.S_ISLNK(found.st_mode) else "not a file"
            problems.append(f"{path} is {what}; its manifest lists a file")
            continue
        size = found.st_size
        if size != entry.get("size"):
            problems.append(f"{path} is {size} bytes, its manifest says {entry.get('size')}")
        elif content or _stat_changed(entry, found):
            if _hash_file(path, hashed) != entry.get("sha256"):
                problems.append(f"{path} does not hold what its manifest's sha256 says")
            elif _stat_changed(entry, found) or not set(STAT_KEYS[:2]) <= set(entry):
                moved[name] = _stat_dict(found)
    for path in _walk(where):
        name = path.relative_to(where).as_posix()
        if name not in expected:
            problems.append(f"{path} is not in the version's manifest")
    return VersionState(version, tuple(problems), moved=moved)


def _escaping_component(directory: Path, relative: str) -> str:
    """Why the folder ``relative`` (a version's path) is not a real folder of the artifact's
    directory all the way down ("" when it is, or when it is gone)."""
    path = directory
    for part in Path(relative).parts:
        path = path / part
        try:
            mode = path.lstat().st_mode
        except OSError:
            return ""
        if stat.S_ISLNK(mode):
            return f"{path} is a link to {os.readlink(path)}, not the version's own folder"
    return ""


def _linked_folder(where: Path, name: str, seen: dict[Path, str]) -> str:
    """Why a file ``name`` of the version at ``where`` is reached through a link ("" when
    every folder above it is a real folder; ``seen`` keeps each folder's answer)."""
    folder = where
    for part in Path(name).parts[:-1]:
        folder = folder / part
        if folder not in seen:
            seen[folder] = (
                f"{folder} is a link to {os.readlink(folder)}, not a folder of the version"
                if folder.is_symlink()
                else ""
            )
        if seen[folder]:
            return seen[folder]
    return ""


def _link_stays_inside(top: Path, name: str, target: str) -> bool:
    """Whether the link ``name`` in the folder ``top``, pointing at ``target``, leads to
    something inside ``top``: by its text (never absolute, never above ``top``, so it holds
    wherever the store is mounted) and as the kernel resolves it (``sub/..`` where ``sub`` is
    itself a link goes where that link goes)."""
    if os.path.isabs(target):
        return False
    joined = os.path.normpath(os.path.join(os.path.dirname(name), target))
    if joined == ".." or joined.startswith("../"):
        return False
    resolved = (top / name).parent.joinpath(target).resolve()
    return resolved.is_relative_to(top.resolve())


def record_stats(root: Path, artifact: str, state: VersionState) -> int:
    """Write into ``state``'s version's manifest the stat of the files ``check_version`` read
    whole though their stat had moved (or a manifest from before stats were recorded), so the
    cheap check reads them no more: each file whose stat is still what was read (under the
    artifact's lock; a file changed since keeps its old stat and is read again). ``store
    verify`` does it once it has read every byte. How many entries it wrote."""
    if not state.whole:
        return 0
    directory = artifact_dir(root, artifact)
    number = state.version.version
    unsealed = marker_unsealed(read_marker(directory, number) or {MARKER_DIGEST: ""})
    if (not state.moved and not unsealed) or not writable(directory):
        return 0
    with _locked(directory):
        marker = read_marker(directory, number)
        if marker is None or marker.get("path") != state.version.path:
            return 0
        where = directory / state.version.path
        changed = 0
        files = []
        for entry in marker["files"]:
            seen = state.moved.get(str(entry.get("name")))
            if seen is not None and "sha256" in entry:
                try:
                    now = _stat_dict((where / str(entry["name"])).lstat())
                except OSError:
                    now = {}
                if now == seen and now.get("size") == entry.get("size"):
                    entry = {**_without_stat(entry), **now}
                    changed += 1
            files.append(entry)
        if changed or marker_unsealed(marker):
            _write_marker(directory, number, {**marker, "files": files})
        return changed


def link_problems(root: Path, artifact: str, listed: list[StoredVersion]) -> list[str]:
    """Aliases that do not point at the version the index says (an interrupted publish)."""
    directory = root / artifact
    problems = []
    for alias, target in _alias_targets(listed).items():
        link = directory / alias
        if not link.is_symlink() or os.readlink(link) != target:
            problems.append(f"{link} does not point at {target}")
    return problems


def resolve_selector(listed: list[StoredVersion], selector: str) -> StoredVersion | None:
    """The version ``latest``, ``vN`` or ``step-N`` names, as the store's links point."""
    if not listed:
        return None
    if selector == LATEST:
        return listed[-1]
    if re.fullmatch(r"v\d+", selector):
        number = int(selector[1:])
        return listed[number] if number < len(listed) else None
    if re.fullmatch(r"step-\d+", selector):
        step = int(selector[5:])
        found = [v for v in listed if v.step == step]
        return found[-1] if found else None
    return None


def stored_input(path: str) -> tuple[str, str] | None:
    """(artifact, selector) of a path a plan reads from the store
    (``/artifacts/<artifact>/<selector>[/...]``); None for a path elsewhere."""
    artifact = stored_artifact(path)
    if artifact is None:
        return None
    parts = path[len(ARTIFACTS_ROOT) + 1 :].split("/")
    return artifact, parts[1] if len(parts) > 1 and parts[1] else LATEST


def input_problem(
    root: Path,
    artifact: str,
    selector: str,
    *,
    missing_ok: bool = False,
    shown_root: str | Path | None = None,
    repair: bool = False,
) -> str | None:
    """Why a stage must not read ``artifact:selector`` from the store at ``root`` (absent,
    incomplete, deleted or damaged, naming the file), or None when it is whole by its
    manifest (check_version's cheap check: sizes, and the bytes of a file whose stat moved).
    Cheap enough for every submit and every node's preflight. ``missing_ok``: a version not
    published yet is no problem (a pipeline's earlier stage will publish it before this one
    starts). ``shown_root``: the store's path for the commands a message gives, where
    ``root`` is not the user's (``/artifacts`` in a container). ``repair``: aliases behind
    the index (an import or publish killed after its commit) are pointed at their versions
    first, when no other import or publish holds the artifact's lock (which finishes them)."""
    ref = f"{artifact}:{selector}"
    try:
        listed = versions(root, artifact)
    except RecipeError as exc:
        return f"{ref}: {exc.render()}"
    if repair and link_problems(root, artifact, listed):
        listed = _repaired(root, artifact, listed)
    version = resolve_selector(listed, selector)
    if version is None:
        if missing_ok:
            return None
        return (
            f"{ref} has no such version in the artifact store (has its producing stage "
            "published it?)"
        )
    link = root / artifact / selector
    if not link.is_symlink() or os.readlink(link) != version.path:
        return (
            f"{ref}: {link} does not point at v{version.version} ({version.path}), an "
            f"interrupted import or publish (recipekit store verify {shown_root or root} "
            f"{artifact} repairs it)"
        )
    state = check_version(root, artifact, version, content=False)
    if state.gone:
        return f"{ref} (v{version.version}) was deleted: {root / artifact / version.path} is gone"
    if state.problems:
        more = f" (and {len(state.problems) - 1} more)" if len(state.problems) > 1 else ""
        return f"{ref} (v{version.version}) is damaged: {state.problems[0]}{more}"
    return None


# How long a node's preflight waits for the lock of an artifact whose aliases are behind its
# index: every node of the job repairs at once and one takes the lock (milliseconds), and an
# import or publish that holds it has already finished the links in its own recovery.
REPAIR_WAIT_S = 10.0


def _repaired(root: Path, artifact: str, listed: list[StoredVersion]) -> list[StoredVersion]:
    """``listed`` once the artifact's aliases point at them: recovered here when the lock is
    free, else by whoever holds it. As it was when neither happens in REPAIR_WAIT_S, or the
    store cannot be written (input_problem then names the alias)."""
    deadline = time.monotonic() + REPAIR_WAIT_S
    while True:
        try:
            recover(root, artifact, wait=False)
            return versions(root, artifact)
        except BlockingIOError:
            pass
        except (OSError, RecipeError):
            return listed
        time.sleep(0.2)
        try:
            listed = versions(root, artifact)
        except RecipeError:
            return listed
        if not link_problems(root, artifact, listed) or time.monotonic() > deadline:
            return listed


def completed_meta(action: Mapping[str, Any], root: Path) -> dict[str, Any]:
    """A plan's ``action`` as its versions record it, at publish time: an input made by a
    stage that ran first in the same submission gets the version the job read (what its
    selector names in the store now)."""
    meta: dict[str, Any] = json.loads(json.dumps(dict(action)))
    for entry in meta.get("inputs", {}).values():
        if entry.get("version") is None:
            ref = ArtifactRef(*str(entry["ref"]).split(":", 1))
            found = resolve_selector(versions(root, ref.name), ref.selector)
            entry["version"] = None if found is None else f"v{found.version}"
    return meta
