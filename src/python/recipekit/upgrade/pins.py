"""One pinned source of the manifest, before and after an upgrade: its files' bytes and blob ids.

The manifest (``3rdparty/reference/manifest.toml``) is the only place a source's commit is
written. An upgrade reads the old files from ``.reference/<label>/`` (each checked against the
blob id the manifest pins) and the new ones from a checkout of the new commit, GitHub, or the
team's mirror, then rewrites the source's section in place: the commit line and each file's
blob id, the rest of the file byte for byte.
"""

from __future__ import annotations

import ast
import hashlib
import re
import tomllib
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs

from recipekit.errors import Issue, RecipeError, did_you_mean

MANIFEST = Path("3rdparty/reference/manifest.toml")
REFERENCE = Path(".reference")
GITHUB_RAW = "https://raw.githubusercontent.com/{repository}/{commit}/{path}"
COMMIT = re.compile(r"[0-9a-f]{40}")


def git_blob_id(data: bytes) -> str:
    """The id git gives a file's content: sha1 over ``blob <size>\\0<content>``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def replace_text(path: Path, text: str) -> None:
    """A checkout file rewritten whole: a crash leaves the old file or the new, never half."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


@attrs.frozen
class PinnedSource:
    label: str
    repository: str
    commit: str
    # path -> blob id, in the manifest's order
    files: Mapping[str, str]
    unmirrored: tuple[str, ...] = ()


def read_source(checkout: Path, label: str) -> PinnedSource:
    manifest = checkout / MANIFEST
    if not manifest.is_file():
        raise RecipeError(
            [Issue(str(checkout), "not a recipekit checkout", hint=f"no {MANIFEST} here")]
        )
    data = tomllib.loads(manifest.read_text())
    sources = data["sources"]
    if label in data.get("wheels", {}):
        raise RecipeError(
            [
                Issue(
                    label,
                    "a wheel pinned by URL and sha256, not a repository at a commit",
                    hint=f'move it by editing [wheels."{label}"] (url, sha256) in {MANIFEST}',
                )
            ]
        )
    if label not in sources:
        raise RecipeError(
            [
                Issue(
                    label,
                    "no such source in the manifest",
                    hint=did_you_mean(label, list(sources)) or f"one of {', '.join(sources)}",
                )
            ]
        )
    entry = sources[label]
    return PinnedSource(
        label,
        entry["repository"],
        entry["commit"],
        {path: blob for path, blob in entry["files"]},
        tuple(entry.get("unmirrored", ())),
    )


def old_files(checkout: Path, source: PinnedSource) -> dict[str, bytes]:
    """The pinned files as ``.reference`` holds them, each checked against its blob id (an
    unmirrored file not fetched here is left out)."""
    out: dict[str, bytes] = {}
    for path, blob in source.files.items():
        local = checkout / REFERENCE / source.label / path
        if not local.is_file():
            if path in source.unmirrored:
                continue
            raise RecipeError(
                [Issue(f"{source.label}/{path}", "not fetched", hint="run tools/fetch-reference")]
            )
        data = local.read_bytes()
        if git_blob_id(data) != blob:
            raise RecipeError(
                [
                    Issue(
                        f"{source.label}/{path}",
                        "differs from the blob the manifest pins",
                        hint="run tools/fetch-reference",
                    )
                ]
            )
        out[path] = data
    return out


Reader = Callable[[str], bytes | None]


def from_directory(directory: Path) -> Reader:
    """Files of a checkout (or an unpacked tree) of the new commit; None where it has none."""

    def read(path: str) -> bytes | None:
        found = directory / path
        return found.read_bytes() if found.is_file() else None

    return read


def from_github(source: PinnedSource, commit: str, timeout: float = 20.0) -> Reader:
    def read(path: str) -> bytes | None:
        url = GITHUB_RAW.format(repository=source.repository, commit=commit, path=path)
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                return bytes(response.read())
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise RecipeError([Issue(url, f"GitHub answered {exc.code}")]) from exc
        except (urllib.error.URLError, OSError) as exc:
            raise RecipeError(
                [Issue(url, f"cannot fetch: {exc}", hint="give a checkout with --source DIR")]
            ) from exc

    return read


def new_files(source: PinnedSource, read: Reader) -> dict[str, bytes | None]:
    """Each pinned path at the new commit: its bytes, or None where the commit has no such file."""
    return {path: read(path) for path in source.files}


def rewrite_manifest(text: str, label: str, commit: str, blobs: Mapping[str, str | None]) -> str:
    """The manifest with ``label``'s section at ``commit``: each file's new blob id, a file the
    commit lacks removed (and from ``unmirrored``), a file not pinned before added in path
    order; every other byte as it was."""
    header = f'[sources."{label}"]\n'
    start = text.index(header)
    following = re.search(r"^\[", text[start + len(header) :], re.MULTILINE)
    end = len(text) if following is None else start + len(header) + following.start()
    section = text[start:end]
    section = re.sub(r'^commit = "[0-9a-f]+"$', f'commit = "{commit}"', section, flags=re.M)
    for path, blob in blobs.items():
        line = re.compile(rf'^  \["{re.escape(path)}", "[0-9a-f]+"\],\n', re.MULTILINE)
        if blob is None:
            section = line.sub("", section)
            section = re.sub(rf'\s*"{re.escape(path)}",?', "", section)
        else:
            section = line.sub(f'  ["{path}", "{blob}"],\n', section)
    section = re.sub(r"^unmirrored = \[\s*\]\n", "", section, flags=re.MULTILINE)
    listed = set(re.findall(r'^  \["([^"]+)", "[0-9a-f]+"\],$', section, re.MULTILINE))
    for path, blob in sorted(blobs.items()):
        if blob is None or path in listed:
            continue
        later = sorted(p for p in listed if p > path)
        entry = f'  ["{path}", "{blob}"],\n'
        if later:
            at = section.index(f'  ["{later[0]}", ')
        else:
            at = section.index("]\n", section.index("files = ["))
        section = section[:at] + entry + section[at:]
        listed.add(path)
    return text[:start] + section + text[end:]


def moved_modules(
    source: PinnedSource,
    old: Mapping[str, bytes],
    new: Mapping[str, bytes | None],
    read: Reader,
) -> dict[str, bytes]:
    """Files the new commit moved pinned definitions into: a pinned module that imported a name
    from a pinned module now imports it from one the manifest does not pin (followed through
    re-exports). Returns path -> bytes of each, to pin beside the others."""
    pinned = {_module(p) for p in source.files if p.endswith(".py")}
    roots = {m.split(".")[0] for m in pinned}
    added: dict[str, bytes] = {}
    # The names followed into each added module (they may come from several importers).
    followed: dict[str, set[str]] = {}
    # (path, text, the names to follow from it: None for a pinned file, any it took before)
    todo: list[tuple[str, bytes, set[str] | None]] = [
        (path, data, None)
        for path, data in new.items()
        if data is not None and path.endswith(".py") and path in old
    ]
    while todo:
        path, data, wanted = todo.pop()
        before = _imports(path, old[path]) if path in old else {}
        by_module: dict[str, set[str]] = {}
        for name, target in _imports(path, data).items():
            by_module.setdefault(target, set()).add(name)
        for target, names in sorted(by_module.items()):
            if target.split(".")[0] not in roots or target in pinned:
                continue
            if wanted is None:
                moved = {n for n in names if before.get(n) in pinned}
            else:
                moved = names & wanted
            moved -= followed.get(target, set())
            if not moved:
                continue
            followed.setdefault(target, set()).update(moved)
            for candidate in _paths(target, _prefix(path)):
                found = added.get(candidate) or read(candidate)
                if found is not None:
                    added[candidate] = found
                    todo.append((candidate, found, moved))
                    break
    return added


def _prefix(path: str) -> str:
    """What comes before the package in a repository path (``src/`` for Megatron-Bridge)."""
    return "src/" if path.startswith("src/") else ""


def _module(path: str) -> str:
    relative = path.removeprefix(_prefix(path))
    return relative.removesuffix(".py").replace("/", ".").removesuffix(".__init__")


def _paths(module: str, prefix: str) -> list[str]:
    stem = prefix + module.replace(".", "/")
    return [f"{stem}.py", f"{stem}/__init__.py"]


def _imports(path: str, data: bytes) -> dict[str, str]:
    """name -> the module a file imports it from (``from X import name``)."""
    try:
        tree = ast.parse(data.decode())
    except (SyntaxError, UnicodeDecodeError):
        return {}
    parts = _module(path).split(".")
    package = parts if path.endswith("__init__.py") else parts[:-1]
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package[: len(package) - (node.level - 1)]
            target = ".".join([*base, *([node.module] if node.module else [])])
        else:
            target = node.module or ""
        for alias in node.names:
            out[alias.asname or alias.name] = target
    return out
