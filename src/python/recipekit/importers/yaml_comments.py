"""What a NeMo-RL YAML's text says beyond its values: comments and ``${...}`` expressions.

Both are read along the ``defaults:`` chain, by the key they belong to. ``import-yaml`` carries
the comments into the Python module beside the values, and turns the expressions into
derivations (or comments) where the resolved config has only their values.

A comment explains a key
when it ends the key's line (``max_rollout_turns: 1  # for multi-turn rollouts``) or fills the
lines directly above it at the key's own indentation (a comment indented deeper closes the
block before it, often a commented-out option). Banner lines (``# =====``) are dropped.

Along the chain a value's comment (and expression) is the one in the file that set the value:
a child that sets a key again replaces the parent's (with its own, or with none), except on a
mapping, which it merges into (unless it holds ``_override_: true``) and whose comment stays
unless the child has one.

Comments are read from the text with PyYAML's node positions: PyYAML itself drops them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import yaml

from recipekit.nemo_rl.yaml_loader import OVERRIDE_MARK
from recipekit.yaml_limits import parent_chain, read_checked

_BANNER = re.compile(r"^[#=\-*~_\s]*$")


@attrs.frozen
class FileComments:
    """What one file says: comments and ``${...}`` expressions by dotted key path (list items
    by index), the keys it sets (``True`` where the value is a mapping merged into the
    parent's rather than replacing it), its header and its parents."""

    by_key: dict[str, tuple[str, ...]]
    expressions: dict[str, str]
    sets: dict[str, bool]
    header: tuple[str, ...]
    parents: tuple[str, ...]


@attrs.frozen
class YamlSource:
    comments: dict[str, tuple[str, ...]]  # the comments that explain each effective value
    expressions: dict[str, str]  # the ${...} each effective value was computed with
    header: tuple[str, ...]  # the opening comment of the file itself


def chain_source(path: Path) -> YamlSource:
    """The comments and expressions of ``path``'s effective values (merged along its
    ``defaults:``), and its header comment."""
    comments: dict[str, tuple[str, ...]] = {}
    expressions: dict[str, str] = {}
    own = read_comments(path)
    for file in _merge_order(path, own, (path.resolve(),)):
        for key, merges in file.sets.items():
            note = file.by_key.get(key, ())
            if not merges:
                for stale in [k for k in comments if k.startswith(key + ".")]:
                    del comments[stale]
                for stale in [k for k in expressions if k.startswith(key + ".")]:
                    del expressions[stale]
                comments.pop(key, None)
                expressions.pop(key, None)
                if key in file.expressions:
                    expressions[key] = file.expressions[key]
            if note:
                comments[key] = note
    return YamlSource(comments, expressions, own.header)


def _merge_order(
    path: Path, own: FileComments, chain: tuple[Path, ...]
) -> Iterator[FileComments]:
    """Parents depth first, in order, then the file: the order NeMo-RL merges them.
    ``chain``: the files whose ``defaults:`` led here, ``path`` last (a cycle is refused)."""
    for parent in own.parents:
        parent_path = (path.parent / parent).resolve()
        if parent_path.is_file():
            yield from _merge_order(
                parent_path, read_comments(parent_path), parent_chain(chain, parent_path)
            )
    yield own


def read_comments(path: Path) -> FileComments:
    # Within the limits every YAML loader shares, before PyYAML composes its nodes.
    text = read_checked(path)
    lines = text.splitlines()
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        root = yaml.compose(text, Loader=loader)
    except yaml.YAMLError:
        return FileComments({}, {}, {}, (), ())
    by_key: dict[str, tuple[str, ...]] = {}
    expressions: dict[str, str] = {}
    sets: dict[str, bool] = {}
    parents: tuple[str, ...] = ()
    if isinstance(root, yaml.MappingNode):
        for key_node, value_node in root.value:
            if key_node.value == "defaults":
                parents = _defaults(value_node)
        _walk(root, "", lines, by_key, expressions, sets)
        sets.pop("defaults", None)
        by_key.pop("defaults", None)
    return FileComments(by_key, expressions, sets, _header(lines), parents)


def _defaults(node: yaml.Node) -> tuple[str, ...]:
    if isinstance(node, yaml.ScalarNode):
        return (str(node.value),)
    if isinstance(node, yaml.SequenceNode):
        return tuple(str(item.value) for item in node.value if isinstance(item, yaml.ScalarNode))
    return ()


def _walk(
    node: yaml.Node,
    prefix: str,
    lines: list[str],
    by_key: dict[str, tuple[str, ...]],
    expressions: dict[str, str],
    sets: dict[str, bool],
) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if key_node.value == OVERRIDE_MARK:
                continue
            key = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
            sets[key] = isinstance(value_node, yaml.MappingNode) and not _overrides(value_node)
            note = _above(lines, key_node.start_mark) + _after(lines, key_node, value_node)
            if note:
                by_key[key] = note
            _walk(value_node, key, lines, by_key, expressions, sets)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            key = f"{prefix}.{index}"
            note = _above(lines, item.start_mark)
            if note:
                by_key[key] = note
            _walk(item, key, lines, by_key, expressions, sets)
    elif isinstance(node, yaml.ScalarNode) and "${" in str(node.value):
        expressions[prefix] = str(node.value)


def _overrides(node: yaml.MappingNode) -> bool:
    """A mapping holding ``_override_: true`` replaces the parent's instead of merging."""
    return any(k.value == OVERRIDE_MARK and str(v.value).lower() == "true" for k, v in node.value)


def _above(lines: list[str], mark: Any) -> tuple[str, ...]:
    found: list[str] = []
    row = mark.line - 1
    while row >= 0:
        stripped = lines[row].strip()
        if not stripped.startswith("#") or len(lines[row]) - len(lines[row].lstrip()) != (
            mark.column
        ):
            break
        found.append(stripped)
        row -= 1
    return _clean(reversed(found))


def _after(lines: list[str], key_node: yaml.Node, value_node: yaml.Node) -> tuple[str, ...]:
    """The comment at the end of the key's line (after a one-line value, or after the colon
    of a mapping or list that starts on the next line)."""
    row = key_node.start_mark.line
    if isinstance(value_node, yaml.ScalarNode) and value_node.style in ("|", ">"):
        return ()
    if value_node.end_mark.line == row:
        rest = lines[row][value_node.end_mark.column :]
    elif value_node.start_mark.line > row or isinstance(value_node, yaml.ScalarNode):
        rest = lines[row][key_node.end_mark.column :].lstrip().removeprefix(":")
    else:
        return ()
    if not rest.strip().startswith("#"):
        return ()
    # A comment continued on the lines below, at the same column, is the same comment.
    column = len(lines[row]) - len(rest.lstrip())
    found = [rest.strip()]
    for line in lines[row + 1 :]:
        if not line.strip().startswith("#") or len(line) - len(line.lstrip()) != column:
            break
        found.append(line.strip())
    return _clean(found)


def _header(lines: list[str]) -> tuple[str, ...]:
    """The comment block that opens the file."""
    found = []
    for line in lines:
        if not line.strip().startswith("#"):
            break
        found.append(line.strip())
    return _clean(found)


def _clean(comments: Any) -> tuple[str, ...]:
    """The comments' text, banners dropped, indentation inside the comment kept."""
    out = []
    for comment in comments:
        if _BANNER.match(comment):
            continue
        text = comment.lstrip("#")
        out.append(text.removeprefix(" ").rstrip())
    return tuple(out)
