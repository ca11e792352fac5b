"""What an upgrade changes in the keys upstream declares and the values its configs give.

Two readings of a pinned source, before and after: its config classes (TypedDict, pydantic,
dataclass fields, read with ``recipekit.upstream.classes``), and its example YAML configs
(flattened to dotted keys, the form a recipe's ``with_values`` and ``--set`` use). A key that
goes while another of the same type (or the same value) comes in the same place is reported as
a rename with that evidence; only a YAML rename is rewritten in recipes.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

import attrs
import yaml

from recipekit.review.keydiff import flatten
from recipekit.upstream.classes import ConfigClass, UpstreamSource

# A rename needs its new name at least this close to the old one (difflib's ratio), unless it
# is the only key to go and the only one to come in its place.
SIMILAR_NAME = 0.7
KINDS = (
    "added",
    "removed",
    "renamed",
    "type changed",
    "default changed",
    "class moved",
    "class added",
    "class removed",
)


@attrs.frozen
class KeyChange:
    kind: str = attrs.field(validator=attrs.validators.in_(KINDS))
    # "module:Class.key" for a declared key; "path/of/config.yaml: a.b.c" for a config's.
    where: str
    key: str
    old: str = ""
    new: str = ""
    evidence: str = ""
    # The dotted key (a config's) a recipe may set: what a migration rewrites.
    dotted: str = ""
    renamed_to: str = ""


def same_type(a: str, b: str) -> bool:
    """``Optional[X]`` is ``X | None``, ``Union[A, B]`` is ``A | B``: the same type written two
    ways is no change."""
    return _normalised(a) == _normalised(b)


def _normalised(annotation: str) -> str:
    try:
        node = ast.parse(annotation, mode="eval").body
    except SyntaxError:
        return annotation

    class Unions(ast.NodeTransformer):
        def visit_Subscript(self, sub: ast.Subscript) -> ast.AST:  # noqa: N802 (ast's naming)
            sub = self.generic_visit(sub)  # type: ignore[assignment]
            name = ast.unparse(sub.value).rsplit(".", 1)[-1]
            members = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
            if name == "Optional":
                members = [*members, ast.Constant(None)]
            elif name != "Union":
                return sub
            joined: ast.expr = members[0]
            for member in members[1:]:
                joined = ast.BinOp(joined, ast.BitOr(), member)
            return joined

    flat = ast.unparse(Unions().visit(node))
    return " | ".join(sorted(part.strip() for part in flat.split("|")))


def _moved_classes(
    old: Mapping[str, ConfigClass], new: Mapping[str, ConfigClass]
) -> dict[str, str]:
    gone = [q for q in old if q not in new]
    came = [q for q in new if q not in old]
    out = {}
    for qualified in gone:
        name = qualified.split(":")[1]
        matches = [q for q in came if q.split(":")[1] == name]
        if len(matches) == 1 and sum(q.split(":")[1] == name for q in gone) == 1:
            out[qualified] = matches[0]
    return out


def module_name(path: str) -> str:
    parts = PurePosixPath(path).with_suffix("").parts
    if parts and parts[0] == "src":
        parts = parts[1:]
    return ".".join(parts).removesuffix(".__init__")


def config_classes(files: Mapping[str, bytes]) -> dict[str, ConfigClass]:
    python = {}
    for path, data in files.items():
        if not path.endswith(".py"):
            continue
        try:
            text = data.decode()
            ast.parse(text)
        except (UnicodeDecodeError, SyntaxError, ValueError):
            continue  # a file this Python cannot read declares nothing it can compare
        python[module_name(path)] = text
    return UpstreamSource(python, packages_export=True).config_classes()


def class_changes(
    old: Mapping[str, ConfigClass], new: Mapping[str, ConfigClass]
) -> list[KeyChange]:
    changes: list[KeyChange] = []
    # A class only one side has, whose name only one class of the other side has: it moved.
    moved = _moved_classes(old, new)
    changes += [
        KeyChange("class moved", a, a.split(":")[1], renamed_to=b) for a, b in moved.items()
    ]
    changes += [
        KeyChange("class added", q, q.split(":")[1])
        for q in new
        if q not in old and q not in moved.values()
    ]
    changes += [
        KeyChange("class removed", q, q.split(":")[1])
        for q in old
        if q not in new and q not in moved
    ]
    pairs = [(q, q) for q in sorted(set(old) & set(new))]
    for qualified, later in [*pairs, *moved.items()]:
        before = old[qualified].fields if qualified in old else {}
        after = new[later].fields if later in new else {}
        removed = [k for k in before if k not in after]
        added = [k for k in after if k not in before]
        renames = _renames(
            removed,
            added,
            {k: _signature(before[k].annotation, before[k].default) for k in removed},
            {k: _signature(after[k].annotation, after[k].default) for k in added},
        )
        for old_key, (new_key, evidence) in renames.items():
            changes.append(
                KeyChange("renamed", qualified, old_key, evidence=evidence, renamed_to=new_key)
            )
        gone = set(renames)
        came = {new_key for new_key, _ in renames.values()}
        changes += [
            KeyChange("removed", qualified, k, old=before[k].annotation)
            for k in removed
            if k not in gone
        ]
        changes += [
            KeyChange("added", qualified, k, new=after[k].annotation)
            for k in added
            if k not in came
        ]
        for key in sorted(before.keys() & after.keys()):
            if same_type(before[key].annotation, after[key].annotation):
                pass
            else:
                changes.append(
                    KeyChange(
                        "type changed",
                        qualified,
                        key,
                        before[key].annotation,
                        after[key].annotation,
                    )
                )
            if before[key].default and before[key].default != after[key].default:
                # (A default where none was makes a required key optional: nothing breaks.)
                changes.append(
                    KeyChange(
                        "default changed",
                        qualified,
                        key,
                        before[key].default or "(none)",
                        after[key].default or "(none)",
                    )
                )
    return sorted(changes, key=lambda c: (c.where, c.key, c.kind))


def _load(data: bytes) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(data)
    except yaml.YAMLError:
        return {}
    return flatten(loaded) if isinstance(loaded, Mapping) else {}


def config_changes(old: Mapping[str, bytes], new: Mapping[str, bytes | None]) -> list[KeyChange]:
    """Each YAML config both commits have, key by key."""
    changes: list[KeyChange] = []
    for path in sorted(old):
        if not path.endswith((".yaml", ".yml")) or new.get(path) is None:
            continue
        after_bytes = new[path]
        assert after_bytes is not None
        before, after = _load(old[path]), _load(after_bytes)
        removed = [k for k in before if k not in after]
        added = [k for k in after if k not in before]
        # A rename keeps its parent: the two keys are siblings.
        renames: dict[str, tuple[str, str]] = {}
        for parent in {k.rpartition(".")[0] for k in removed}:
            renames |= _renames(
                [k for k in removed if k.rpartition(".")[0] == parent],
                [k for k in added if k.rpartition(".")[0] == parent],
                {k: f"value {before[k]!r}" for k in removed},
                {k: f"value {after[k]!r}" for k in added},
            )
        for old_key, (new_key, evidence) in renames.items():
            changes.append(
                KeyChange(
                    "renamed",
                    path,
                    old_key,
                    evidence=evidence,
                    dotted=old_key,
                    renamed_to=new_key,
                )
            )
        gone = set(renames)
        came = {n for n, _ in renames.values()}
        changes += [
            KeyChange("removed", path, k, old=repr(before[k]), dotted=k)
            for k in removed
            if k not in gone
        ]
        changes += [
            KeyChange("added", path, k, new=repr(after[k]), dotted=k)
            for k in added
            if k not in came
        ]
        changes += [
            KeyChange("default changed", path, k, repr(before[k]), repr(after[k]), dotted=k)
            for k in before.keys() & after.keys()
            if before[k] != after[k]
        ]
    return sorted(changes, key=lambda c: (c.where, c.key, c.kind))


def _signature(annotation: str, default: str) -> str:
    return f"type {annotation}" + (f", default {default}" if default else "")


def _renames(
    removed: list[str],
    added: list[str],
    old_sign: Mapping[str, str],
    new_sign: Mapping[str, str],
) -> dict[str, tuple[str, str]]:
    """old -> (new, evidence) for the removed keys an added one of the same signature (type and
    default, or value) replaces, best name match first."""
    found: dict[str, tuple[str, str]] = {}
    free = [k for k in added if k in new_sign]
    for old_key in removed:
        if old_key not in old_sign:
            continue
        short = old_key.rpartition(".")[2]
        scored = sorted(
            (
                (difflib.SequenceMatcher(None, short, k.rpartition(".")[2]).ratio(), k)
                for k in free
                if old_sign[old_key] == new_sign[k]
            ),
            reverse=True,
        )
        if not scored:
            continue
        ratio, new_key = scored[0]
        alone = len(removed) == 1 and len(added) == 1
        if ratio < SIMILAR_NAME and not alone:
            continue
        evidence = f"same {old_sign[old_key]}; names {ratio:.0%} alike"
        if alone:
            evidence += "; the only key to go and the only one to come in its place"
        found[old_key] = (new_key, evidence)
        free.remove(new_key)
    return found
