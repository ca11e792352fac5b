#!/usr/bin/env python3
"""Pin every module of NeMo-RL's package that the stages' entry points reach, so the rule
catalogue's sweep covers them (issue 40).

For each NeMo-RL source label the stages run, the entry points are the framework objects' own
(``recipekit.nemo_rl.framework``: super-v3's ``examples/run_grpo.py``;
``framework_super35``: Super 3.5's NeMo Gym GRPO runner). ``recipekit.upstream.reach`` follows
their imports (relative ones, ones inside functions, Ray actors named by a dotted string) through
the package; the package's tree at the pinned commit (every ``.py`` path under ``nemo_rl/`` and
``examples/``) is written to ``3rdparty/reference/trees.toml`` so that a test can tell a module
from a class name without the mirror.

    python3 tools/sweep_reach.py          # the reach per label: reached, pinned, to pin
    python3 tools/sweep_reach.py --pin    # add the missing modules to the manifest, from the
                                          # mirror (path + git blob id), and write trees.toml
    python3 tools/sweep_reach.py --check  # exit 1 where the manifest or trees.toml lag

A reached module the mirror lacks cannot be pinned from here: it is printed, and the catalogue's
reach test (rule_catalogue/reach_test.py) names it until someone pins it from GitHub. One held
back (``HELD_BACK``, with why) is left out on purpose. Then run
tools/fetch-reference, and catalogue each config-reading rule site of the new modules
(reach_test fails naming the ones without an entry).
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from collections.abc import Collection
from pathlib import Path

from recipekit.nemo_rl.framework import NEMO_RL_GRPO
from recipekit.nemo_rl.framework_super35 import NEMO_RL_SUPER35
from recipekit.upstream.reach import Reach, reach
from tools.fetch_reference import git_blob_id
from tools.generated_modules import CHECKOUT, MANIFEST

TREES = CHECKOUT / "3rdparty/reference/trees.toml"
# The folders of the upstream repository whose modules the reach follows and the tree lists.
TREE_ROOTS = ("nemo_rl", "examples")
# label -> the entry points recipekit's stages run at it (Super 3.5 first).
ENTRY_POINTS = {
    "nemo-rl/super-v3.5-posttraining": (NEMO_RL_SUPER35.entry_point,),
    "nemo-rl/super-v3": (NEMO_RL_GRPO.entry_point,),
}
# (label, path) -> why a reached module stays unpinned for now; --pin leaves it out and
# rule_catalogue/reach_test.py accepts it (it holds no rule site).
HELD_BACK = {
    (
        "nemo-rl/super-v3.5-posttraining",
        "nemo_rl/models/value/__init__.py",
    ): "pinned, it lets tools/generate_declared.py type PPO's value section as ValueConfig, which"
    " recipekit's ValuePolicy (a policy section) does not match yet: lacks"
    " dequantize_base_checkpoint, states generation, draft, quant_* and others ValueConfig does"
    " not declare",
}
PIN_COMMENT = (
    "  # Reached from the entry points of recipekit's stages (tools/sweep_reach.py): each\n"
    "  # config-reading rule site in them is catalogued (rule_catalogue/reach_test.py).\n"
)


def manifest() -> dict[str, object]:
    return tomllib.loads(MANIFEST.read_text())


def pinned(label: str) -> set[str]:
    return {path for path, _ in manifest()["sources"][label]["files"]}  # type: ignore[index]


def mirror() -> Path:
    folders: list[str] = manifest()["fetch"]["mirrors"]  # type: ignore[index]
    for folder in folders:
        if (CHECKOUT / folder).is_dir():
            return CHECKOUT / folder
    raise SystemExit(f"no mirror folder of {MANIFEST.name} [fetch] mirrors is here: {folders}")


def mirror_tree(root: Path) -> list[str]:
    return sorted(
        str(path.relative_to(root))
        for top in TREE_ROOTS
        for path in (root / top).rglob("*.py")
        if "__pycache__" not in path.parts
    )


def trees() -> dict[str, tuple[str, ...]]:
    """The package tree of each label, as trees.toml records it."""
    if not TREES.is_file():
        return {}
    return {label: tuple(t["paths"]) for label, t in tomllib.loads(TREES.read_text()).items()}


def trees_text(found: dict[str, list[str]]) -> str:
    lines = [
        "# Every .py path under nemo_rl/ and examples/ of the NeMo-RL sources whose entry points",
        "# recipekit runs, at the manifest's commit (tools/sweep_reach.py --pin writes it from the",
        "# mirror): which dotted names are modules, for rule_catalogue/reach_test.py.",
        "",
    ]
    for label, paths in found.items():
        lines += [f'["{label}"]', "paths = ["]
        lines += [f'  "{path}",' for path in paths]
        lines += ["]", ""]
    return "\n".join(lines)


def reach_pinned(label: str, root: Path, files: Collection[str]) -> Reach:
    """What the label's entry points reach, reading only the pinned ``files`` under
    ``root/label``: an unpinned module is reached but not followed (``unread``)."""
    return reach_from(label, root, files, ENTRY_POINTS[label])


def reach_from(
    label: str, root: Path, files: Collection[str], entry_points: Collection[str]
) -> Reach:
    """``reach_pinned`` from other ``entry_points`` of the label's tree."""

    def read(path: str) -> str | None:
        file = root / label / path
        return file.read_text(encoding="utf-8") if path in files and file.is_file() else None

    return reach(entry_points, set(trees().get(label, ())), read)


def reach_in(label: str, root: Path, tree: tuple[str, ...] | list[str]) -> Reach:
    def read(path: str) -> str | None:
        file = root / label / path
        return file.read_text(encoding="utf-8") if file.is_file() else None

    return reach(ENTRY_POINTS[label], set(tree), read)


def pin(label: str, paths: list[str], root: Path) -> None:
    """Add ``paths`` (with their blob ids, read from the mirror) to the label's ``files``."""
    text = MANIFEST.read_text()
    start = text.index(f'[sources."{label}"]')
    files = text.index("files = [\n", start)
    end = text.index("\n]\n", files) + 1
    rows = "".join(
        f'  ["{path}", "{git_blob_id((root / label / path).read_bytes())}"],\n' for path in paths
    )
    MANIFEST.write_text(text[:end] + PIN_COMMENT + rows + text[end:])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--pin", action="store_true", help="pin what is missing, write trees.toml")
    mode.add_argument("--check", action="store_true", help="exit 1 where something lags")
    args = parser.parse_args()
    root = mirror()
    found = {label: mirror_tree(root / label) for label in ENTRY_POINTS}
    lagging = []
    if trees() != {label: tuple(paths) for label, paths in found.items()}:
        lagging.append(str(TREES.relative_to(CHECKOUT)))
        if args.pin:
            TREES.write_text(trees_text(found))
    for label, tree in found.items():
        reached = reach_in(label, root, tree)
        have = pinned(label)
        held = [path for path in reached.modules if (label, path) in HELD_BACK]
        missing = [
            path
            for path in reached.modules
            if path not in have and path not in reached.unread and path not in held
        ]
        unpinned = len(missing) + len(held) + len(reached.unread)
        print(
            f"{label}: {len(reached.modules)} modules reached from "
            f"{', '.join(ENTRY_POINTS[label])}; {len(reached.modules) - unpinned} pinned, "
            f"{len(missing)} to pin"
        )
        for path in reached.unread:
            print(f"  not in the mirror (pin it from GitHub): {path}")
        for path in held:
            print(f"  held back: {path}: {HELD_BACK[(label, path)]}")
        if missing:
            lagging.append(f"{label} ({len(missing)} modules)")
            if args.pin:
                pin(label, missing, root)
                print(f"  pinned {len(missing)}: run tools/fetch-reference")
    if args.check and lagging:
        print("lagging: " + ", ".join(lagging) + ": run python3 tools/sweep_reach.py --pin")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
