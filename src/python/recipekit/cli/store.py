"""``recipekit store``: make, fill, list and verify the artifact store (``lineage.store``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from recipekit.cli.common import os_error_text, reports_recipe_errors

# What ``store verify`` exits with when a listed version is damaged (2 is a user's mistake).
EXIT_DAMAGED = 1
# The JSONL formats store import reads (recipekit.datacheck: FORMAT and chat.FORMATS; written out
# so the CLI imports no checker until it runs one; datacheck's chat_test checks they agree).
DATA_FORMATS = (
    "nemo-gym-jsonl",
    "nemo-rl-messages",
    "nemo-rl-response",
    "nemo-rl-preference",
    "nemo-rl-binary-preference",
)


@click.group()
def store() -> None:
    """The artifact store: where every stage's checkpoints land and inputs are read from.

    \b
      recipekit store init /lustre/your-team/shared/artifacts
      recipekit store import /lustre/.../artifacts super35-sft-data ./blend --name blend-v1
      recipekit store list /lustre/.../artifacts super35-rl-rlvr-model
      recipekit store verify /lustre/.../artifacts super35-rl-rlvr-model:v3
      recipekit store lineage super35-rl-rlvr-model:step-120 --cluster gb200-nvl72

    A cluster profile names it (ClusterProfile.artifact_store); every container sees it at
    /artifacts, as /artifacts/<artifact>/<latest|vN|step-N>.
    """


STORE_PATH = click.argument("path", type=click.Path(file_okay=False, path_type=Path))

# Where a command that is not given the store's path finds it: the cluster profile's, as
# `pipeline plan/submit --cluster` read it (the store the stages read is the one it names).
STORE_LOCATION = [
    click.option(
        "--cluster",
        metavar="NAME",
        help="The artifact store of this cluster profile (recipes/clusters.py, or "
        "MODULE:ATTR / FILE.py:ATTR): the one its stages read.",
    ),
    click.option(
        "--store",
        "store_path",
        metavar="PATH",
        type=click.Path(file_okay=False, path_type=Path),
        help="The artifact store at PATH, where no profile names it.",
    ),
]


def store_location(fn: Any) -> Any:
    for option in reversed(STORE_LOCATION):
        fn = option(fn)
    return fn


def store_root(cluster: str | None, store_path: Path | None) -> Path:
    """The store ``--cluster`` or ``--store`` names (exactly one), checked to be a store."""
    from recipekit.errors import Issue, RecipeError
    from recipekit.lineage.store import require_store

    if (cluster is None) == (store_path is None):
        said = "both" if cluster else "neither"
        raise RecipeError(
            [
                Issue(
                    "--cluster/--store",
                    f"{said} given: name the artifact store once",
                    hint="--cluster NAME (its profile's artifact_store) or --store PATH",
                )
            ]
        )
    if store_path is not None:
        return require_store(store_path)
    from recipekit.launch.profiles import find_profile

    profile = find_profile(str(cluster))
    if profile.artifact_store is None:
        raise RecipeError(
            [
                Issue(
                    f"--cluster {cluster}",
                    "the profile names no artifact store",
                    hint="artifact_store=ArtifactStore(path=<shared storage>) in its profile",
                )
            ]
        )
    return require_store(Path(profile.artifact_store.path))


@store.command(name="init")
@STORE_PATH
def store_init(path: Path) -> None:
    """Make PATH an artifact store (on shared storage every node mounts)."""
    from recipekit.lineage.store import init_store

    init_store(path)
    click.echo(f"artifact store at {path}")


@store.command(name="import")
@STORE_PATH
@click.argument("artifact")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option("--name", required=True, help="The folder the copy gets in the store (a name).")
@reports_recipe_errors
@click.option(
    "--tokenizer",
    type=click.Path(path_type=Path),
    help="A tokenizer.json (or a folder holding one) to count the rows' tokens with; for "
    "pre-tokenised data, the tokenizer that made it (required).",
)
@click.option(
    "--format",
    "data_format",
    type=click.Choice(["auto", *DATA_FORMATS]),
    default="auto",
    show_default=True,
    help="The rows' format: NeMo Gym rows (the RL stages'), or NeMo-RL's SFT (messages, "
    "input/output) or preference (context/completions, prompt/chosen/rejected) rows; auto "
    "finds it from each file's first row.",
)
@click.option(
    "--seq-length",
    type=click.IntRange(min=1),
    help="Pre-tokenised data (Megatron .bin/.idx): the sequence length it was packed or prepared "
    "for; a stage with a longer one refuses it at plan.",
)
def store_import(
    path: Path,
    artifact: str,
    source: Path,
    name: str,
    tokenizer: Path | None,
    data_format: str,
    seq_length: int | None,
) -> None:
    """Copy SOURCE into the store as the next version of ARTIFACT (and its latest).

    JSONL (SOURCE a .jsonl file, or a folder with .jsonl files at its top) is read first, as
    the pinned reader of its format reads it: a row it would fail on is refused, exit 2,
    nothing copied; rows and lengths go into the version's manifest. So is an Energon dataset
    (a folder holding .nv-meta), as `data import sft` reads it. Pre-tokenised data (Megatron
    .bin/.idx pairs) needs --tokenizer, the tokenizer that made it: the manifest records its
    sha256 (and --seq-length), and `pipeline plan` refuses a stage whose model has another.
    Which agents a NeMo Gym row may name is checked at plan (no stage is known here).
    """
    from recipekit.datacheck import check_energon_dataset, check_files, is_energon, jsonl_files
    from recipekit.datacheck.pretokenized import check_pretokenized, indexed_pairs
    from recipekit.lineage.store import import_version, require_store

    require_store(path)
    files = jsonl_files(source)
    meta: dict[str, Any] = {}
    if files:
        meta["content"] = check_files(
            files,
            fmt=None if data_format == "auto" else data_format,
            tokenizer=tokenizer,
            what=f"store import {name}: reading",
        )
    pairs = indexed_pairs(source)
    if pairs:
        meta.setdefault("content", {}).update(
            check_pretokenized(pairs, tokenizer=tokenizer, seq_length=seq_length)
        )
    if source.is_dir() and is_energon(source):
        meta.setdefault("content", {}).update(
            check_energon_dataset(source, what=f"store import {name}: reading")
        )
    version = import_version(path, artifact, source, name=name, meta=meta)
    click.echo(f"{artifact}:v{version.version} (latest) = {path / artifact / version.path}")


@store.command(name="list")
@STORE_PATH
@click.argument("artifact")
@reports_recipe_errors
def store_list(path: Path, artifact: str) -> None:
    """Every version of ARTIFACT, oldest first, each checked as submit checks it: MISSING
    beside a version whose folder is gone, DAMAGED beside one whose files differ from its
    manifest (naming the file; `recipekit store verify` reads every byte)."""
    from recipekit.errors import Issue, RecipeError, did_you_mean
    from recipekit.lineage.store import artifact_dir, artifact_names, check_version, versions

    names = artifact_names(path)
    if artifact not in names:
        if artifact_dir(path, artifact).is_dir():
            click.echo(f"{artifact}: no version published yet", err=True)
            return
        raise RecipeError(
            [
                Issue(
                    "ARTIFACT",
                    f"the artifact store {path} holds no artifact {artifact!r}",
                    hint=did_you_mean(artifact, names) if names else "it holds none yet",
                )
            ]
        )
    for version in versions(path, artifact):
        kept = "  (kept for a later stage)" if version.kept else ""
        state = check_version(path, artifact, version, content=False)
        if state.gone:
            policy = version.step is not None and not version.kept
            why = ", deleted by the framework's keep policy" if policy else ""
            mark = f"  MISSING ({path / artifact / version.path} is gone{why})"
        elif state.problems:
            more = f" (and {len(state.problems) - 1} more)" if len(state.problems) > 1 else ""
            mark = f"  DAMAGED: {state.problems[0]}{more}"
        else:
            mark = ""
        click.echo(f"{' '.join(version.aliases):<20} {version.path}{kept}{mark}")


@store.command(name="verify")
@STORE_PATH
@click.argument("ref", required=False, metavar="[NAME[:VERSION]]")
@click.option(
    "--content",
    is_flag=True,
    help="Also read the data as its framework reads it: the checks the import runs on JSONL "
    "(every .jsonl of the version) and on Energon datasets (every folder holding .nv-meta), "
    "against what the import recorded.",
)
@click.option(
    "--tokenizer",
    type=click.Path(path_type=Path),
    help="With --content: a tokenizer.json (or a folder holding one) to count tokens with.",
)
@reports_recipe_errors
def store_verify(path: Path, ref: str | None, content: bool, tokenizer: Path | None) -> None:
    """Check versions against their manifests: every file there, its size and its sha256.

    Without NAME, every artifact in the store. First finishes what an interrupted import or
    publish left (partial copies removed, aliases pointed from the index). Exits 1 when a
    version is damaged, naming each file; a step the framework's keep policy deleted is
    'deleted', not damaged.
    """
    from recipekit.errors import Issue, RecipeError
    from recipekit.lineage.refs import parse_ref
    from recipekit.lineage.store import (
        StoredVersion,
        check_version,
        link_problems,
        read_marker,
        record_stats,
        recover,
        require_store,
        resolve_selector,
        versions,
    )
    from recipekit.progress import progress

    root = require_store(path)
    wanted: list[tuple[str, str | None]]
    if ref is None:
        names = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
        wanted = [(name, None) for name in names]
    else:
        parsed = parse_ref(ref, path="NAME[:VERSION]")
        if not (root / parsed.name).is_dir():
            raise RecipeError([Issue("NAME", f"no artifact {parsed.name!r} in {root}")])
        wanted = [(parsed.name, parsed.selector if ":" in ref else None)]
    # Recovery and the choice first, then one pass that reads every byte (hours for a store
    # of checkpoints), shown as one progress over all of it.
    chosen: list[tuple[str, list[StoredVersion], list[StoredVersion]]] = []
    damaged = 0
    for artifact, selector in wanted:
        for line in recover(root, artifact):
            click.echo(f"{artifact}: {line}")
            # Repairs a read-only store could not make: what it lists is not consistent.
            damaged += line.startswith("not repaired")
        listed = versions(root, artifact)
        picked = listed if selector is None else [resolve_selector(listed, selector)]
        if None in picked:
            raise RecipeError([Issue("NAME[:VERSION]", "no such version", value=ref)])
        chosen.append((artifact, listed, [v for v in picked if v is not None]))
    total = sum(
        int(entry.get("size", 0))
        for artifact, _, picked in chosen
        for version in picked
        for entry in (read_marker(root / artifact, version.version) or {}).get("files", ())
    )
    with progress(f"store verify {ref or root}", total=total, counts_bytes=True) as hashed:
        for artifact, listed, picked in chosen:
            for problem in link_problems(root, artifact, listed):
                damaged += 1
                click.echo(f"{artifact}: {problem}")
            for version in picked:
                state = check_version(root, artifact, version, hashed=hashed)
                label = f"{artifact}:v{version.version}"
                if state.gone and not version.kept and version.step is not None:
                    click.echo(f"{label} deleted ({version.path}: the framework's keep policy)")
                elif state.whole:
                    # Read whole though their stat moved (a store copied elsewhere, a file
                    # touched): recorded now, so submit and preflight need not read them again.
                    try:
                        recorded = record_stats(root, artifact, state)
                    except OSError as exc:  # only a shortcut for later checks: not damage
                        recorded = 0
                        click.echo(f"{label}: the files' stat not recorded: {os_error_text(exc)}")
                    again = (
                        f" (the stat of {recorded} unchanged files recorded)" if recorded else ""
                    )
                    click.echo(f"{label} ok{again}")
                    if content:
                        damaged += _verify_content(root, artifact, version, label, tokenizer)
                else:
                    damaged += 1
                    gone = [f"{root / artifact / version.path} is gone"] if state.gone else []
                    for problem in [*state.problems, *gone]:
                        click.echo(f"{label} DAMAGED: {problem}")
    if damaged:
        sys.exit(EXIT_DAMAGED)


def _verify_content(
    root: Path, artifact: str, version: Any, label: str, tokenizer: Path | None
) -> int:
    """``store verify --content`` of one whole version: its JSONL read again with the import's
    checks, each file in the format the import recorded (else found from its first row), and
    each Energon dataset in it (a folder holding .nv-meta) as ``data import sft`` reads it; 1
    when something is refused (printed as the import prints it), else 0."""
    from recipekit.lineage.store import read_marker

    marker = read_marker(root / artifact, version.version) or {}
    where = root / artifact / version.path
    names = [str(entry.get("name", "")) for entry in marker.get("files", ())]
    files = {name: where / name for name in names if name.endswith(".jsonl")}
    energon = sorted({n.split(".nv-meta/")[0].rstrip("/") or "." for n in names if _in_nv_meta(n)})
    recorded = marker.get("meta", {}).get("content", {})
    if not files and not energon:
        click.echo(
            f"{label} content: no JSONL or Energon data to read (other formats are not checked)"
        )
        return 0
    refused = _verify_energon(where, energon, recorded, label) if energon else 0
    if files:
        refused = max(refused, _verify_jsonl(files, recorded, label, tokenizer))
    return refused


def _in_nv_meta(name: str) -> bool:
    return name.startswith(".nv-meta/") or "/.nv-meta/" in name


def _verify_energon(where: Path, roots: list[str], recorded: Any, label: str) -> int:
    """The Energon datasets of a version (their folders in it, ``.`` its top) read again as the
    import read them; 1 when one is refused, else 0."""
    from recipekit.datacheck import check_energon_dataset
    from recipekit.errors import RecipeError

    for name in roots:
        try:
            stats = check_energon_dataset(where / name, what=f"store verify --content {label}")["."]
        except RecipeError as exc:
            click.echo(f"{label} CONTENT: {exc.render()}")
            return 1
        before = recorded.get(name, {}).get("rows") if isinstance(recorded, dict) else None
        said = "" if before in (None, stats["rows"]) else f" (the import recorded {before})"
        splits = ", ".join(f"{n} {s['samples']}" for n, s in stats["splits"].items())
        click.echo(
            f"{label} content ok: Energon dataset {name}, {stats['shards']} shards, "
            f"{stats['rows']} samples ({splits}){said}"
        )
    return 0


def _verify_jsonl(files: dict[str, Path], recorded: Any, label: str, tokenizer: Path | None) -> int:
    from recipekit.datacheck import check_files
    from recipekit.errors import RecipeError

    try:
        found: dict[str, Any] = {}
        for name, file in files.items():
            stats = recorded.get(name) if isinstance(recorded, dict) else None
            fmt = stats.get("format") if isinstance(stats, dict) else None
            found |= check_files(
                {name: file},
                fmt=fmt if fmt in DATA_FORMATS else None,
                tokenizer=tokenizer,
                what=f"store verify --content {label}",
            )
    except RecipeError as exc:
        click.echo(f"{label} CONTENT: {exc.render()}")
        return 1
    for name, stats in found.items():
        before = recorded.get(name, {}).get("rows") if isinstance(recorded, dict) else None
        said = "" if before in (None, stats["rows"]) else f" (the import recorded {before})"
        click.echo(f"{label} content ok: {name}, {stats['rows']} rows{said}")
    return 0


@store.command(name="lineage")
@click.argument("ref", metavar="NAME:VERSION")
@store_location
@click.option("--json", "as_json", is_flag=True, help="The same tree as JSON, hashes in full.")
@reports_recipe_errors
def store_lineage(ref: str, cluster: str | None, store_path: Path | None, as_json: bool) -> None:
    """The exact versions NAME:VERSION was made from, back to the imported data and models.

    Each version a pipeline stage published records the action that made it: the stage's
    run, its plan's hash (`recipekit pipeline plan` shows it), its action key and the exact
    version of every input it read. Each import records where it came from. The tree follows
    those records from marker to marker; a version shown once is not expanded again.

    \b
      recipekit store lineage super35-rl-rlvr-model:step-120 --cluster gb200-nvl72
      recipekit store lineage super35-sft-model:v0 --store /lustre/.../artifacts --json

    VERSION is latest, vN or step-N. A version whose files no longer match its manifest is
    refused (`recipekit store verify` lists them); an input whose files the framework's keep
    policy deleted since is shown DELETED.
    """
    import json

    from recipekit.lineage.provenance import lineage_text, version_lineage
    from recipekit.lineage.refs import parse_ref

    tree = version_lineage(store_root(cluster, store_path), parse_ref(ref, path="NAME:VERSION"))
    if as_json:
        click.echo(json.dumps(tree.as_json(), indent=2))
        return
    click.echo("\n".join(lineage_text(tree)))
