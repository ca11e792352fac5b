"""One set of limits for every YAML and JSON text recipekit reads, checked before a value is built.

PyYAML and OmegaConf build a value recursively and expand every alias: 10,000 levels of
nesting end in a RecursionError, a few hundred bytes of aliases (``&a [*b, *b, ...]``) expand
to gigabytes, an alias inside its own anchor (``&a [*a]``) is a loop, and explicit tags give
values JSON cannot hold (``!!binary``, ``!!set``, ``!!timestamp``). So the text is first read
as a stream of parse events, which costs little and holds nothing, and refused at the first
limit it passes, with its line. The loaders that use it: ``--set`` (``keypaths.read_value``),
``expand`` (``nemo_rl.yaml_loader``), ``import-yaml`` (``importers.yaml_comments``, the same
loader) and the compiled files ``diff`` reads (``review.compiled``); ``defaults:`` chains are
checked for cycles by ``parent_chain``, shared by ``yaml_loader`` and ``yaml_comments``.

NeMo-RL's own configs use anchors (``distillation_math.yaml``, two aliases), so a file may
hold a bounded number of them; an override (``--set``) is one value and holds none.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import attrs
import yaml

from recipekit.errors import Issue, RecipeError

# Upstream configs are at most 9 levels deep and 37 KB (.reference/, 224 files); each limit
# leaves room for several times that and stays far below what exhausts Python's stack or
# memory.
MAX_DEPTH = 32
MAX_BYTES = 1 << 20
MAX_ALIASES = 100
# Values (scalars, lists, maps) after every alias is expanded: what a loader builds.
MAX_NODES = 100_000

# Explicit tags whose values JSON holds. A plain scalar has no tag until it is resolved.
_JSON_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "map", "seq")
) | {"!"}


@attrs.frozen
class Source:
    """Where a text comes from, for the message: a file (``line`` numbers are shown), or the
    value of an override (``key``: the key it sets; the text is shown, it has no lines)."""

    name: str
    is_override: bool = False
    text: str = ""

    def issue(self, message: str, line: int | None = None, hint: str = "") -> Issue:
        if self.is_override:
            shown = self.text if len(self.text) <= 80 else self.text[:77] + "..."
            return Issue(self.name, message, value=shown, hint=hint)
        where = self.name if line is None else f"{self.name}:{line + 1}"
        return Issue(where, message, hint=hint)

    def error(self, message: str, line: int | None = None, hint: str = "") -> RecipeError:
        return RecipeError([self.issue(message, line, hint)])


def file_source(path: Path | str) -> Source:
    return Source(str(path))


def override_source(key: str, text: str) -> Source:
    return Source(key, is_override=True, text=text)


@attrs.define
class _Open:
    """A list or map being read: its anchor, and what it holds so far."""

    anchor: str | None
    depth: int
    nodes_before: int
    deepest: int


def check_yaml(text: str, source: Source) -> None:
    """Refuse ``text`` at the first limit it passes (size, depth, aliases, expanded size, a
    tag JSON cannot hold, an alias inside its own anchor) or at its first syntax error."""
    _check_size(text, source)
    anchors: dict[str, tuple[int, int]] = {}  # name -> (values, levels) it expands to
    stack: list[_Open] = []
    nodes = aliases = 0
    try:
        for event in yaml.parse(text, Loader=_PARSER):
            line = event.start_mark.line if event.start_mark is not None else None
            tag = getattr(event, "tag", None)
            if tag is not None and tag not in _JSON_TAGS:
                raise source.error(
                    f"the tag {tag.replace('tag:yaml.org,2002:', '!!')} makes a value JSON "
                    "cannot hold",
                    line,
                    hint="write it as a string, number, list or map",
                )
            anchor = getattr(event, "anchor", None)
            if anchor is not None and not isinstance(event, yaml.AliasEvent):
                if source.is_override:
                    raise _no_anchors(source)
            if isinstance(event, yaml.CollectionStartEvent):
                nodes += 1
                stack.append(_Open(anchor, len(stack) + 1, nodes - 1, len(stack) + 1))
                if len(stack) > MAX_DEPTH:
                    raise source.error(f"nested more than {MAX_DEPTH} lists or maps deep", line)
            elif isinstance(event, yaml.CollectionEndEvent):
                done = stack.pop()
                if stack:
                    stack[-1].deepest = max(stack[-1].deepest, done.deepest)
                if done.anchor is not None:
                    levels = done.deepest - done.depth + 1
                    anchors[done.anchor] = (nodes - done.nodes_before, levels)
            elif isinstance(event, yaml.ScalarEvent):
                nodes += 1
                if anchor is not None:
                    anchors[anchor] = (1, 0)
            elif isinstance(event, yaml.AliasEvent):
                if source.is_override:
                    raise _no_anchors(source)
                aliases += 1
                if aliases > MAX_ALIASES:
                    raise source.error(f"more than {MAX_ALIASES} aliases (*name)", line)
                if any(o.anchor == event.anchor for o in stack):
                    raise source.error(f"the alias *{event.anchor} is inside its own anchor", line)
                size, levels = anchors.get(event.anchor or "", (1, 0))
                nodes += size
                if stack:
                    stack[-1].deepest = max(stack[-1].deepest, len(stack) + levels)
                if len(stack) + levels > MAX_DEPTH:
                    raise source.error(
                        f"the alias *{event.anchor} nests more than {MAX_DEPTH} lists or maps "
                        "deep",
                        line,
                    )
            if nodes > MAX_NODES:
                raise source.error(
                    f"expands to more than {MAX_NODES} values (aliases are copied where used)",
                    line,
                )
    except yaml.YAMLError as exc:
        # The loaders' own parser, so the loader would stop at the same place.
        raise yaml_error(exc, source) from None


def _no_anchors(source: Source) -> RecipeError:
    return source.error(
        "YAML anchors and aliases (&name, *name) are not read in --set",
        hint="write the value out in full",
    )


def _check_size(text: str, source: Source) -> None:
    if len(text) > MAX_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise source.error(f"longer than {MAX_BYTES} bytes")


class _JsonValueLoader(yaml.SafeLoader):
    """YAML 1.1's safe loader without its timestamp rule: ``2024-01-01`` is the text, as
    OmegaConf (and so every framework) reads it, not a date JSON cannot hold."""


_JsonValueLoader.yaml_implicit_resolvers = {
    first: [(tag, rule) for tag, rule in rules if tag != "tag:yaml.org,2002:timestamp"]
    for first, rules in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
# OmegaConf also reads an exponent without a dot or a sign (``1e-6``, ``2.5e3``) as a float,
# where YAML 1.1 reads text; ``--set policy.optimizer.kwargs.lr=1e-6`` would otherwise reach
# the config as the string '1e-6'. Tried after YAML 1.1's own rules, as OmegaConf adds its rule
# after them; yaml_limits_test holds this loader to OmegaConf's on such scalars.
_JsonValueLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9]+(?:_[0-9]+)*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)
_LOADER = _JsonValueLoader
# The scan reads with PyYAML's own parser, which OmegaConf uses too: libyaml's (faster) scans
# far ahead and stops at its own depth limit, where the loaders' would not.
_PARSER = yaml.SafeLoader


def load_yaml(text: str, source: Source) -> Any:
    """``text`` as a value JSON holds (strings, numbers, booleans, null, lists, maps), or a
    RecipeError naming ``source``, the line and the reason."""
    check_yaml(text, source)
    try:
        value = yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader, timestamps off
    except yaml.YAMLError as exc:
        raise yaml_error(exc, source) from None
    except ValueError as exc:  # an integer past Python's 4300-digit limit
        raise source.error(f"cannot read value: {str(exc).split(';')[0]}") from None
    bad = _not_json(value)
    if bad is not None:
        raise source.error(f"holds a {bad}, which JSON cannot hold")
    return value


def read_checked(path: Path) -> str:
    """The text of the YAML file ``path``, checked (``check_yaml``): what a loader that builds
    its own value (OmegaConf, PyYAML's nodes) reads."""
    source = file_source(path)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise source.error(f"longer than {MAX_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise source.error(f"not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise source.error(f"cannot read: {exc.strerror or exc}") from None
    check_yaml(text, source)
    return text


def yaml_error(exc: yaml.YAMLError, source: Source) -> RecipeError:
    """A YAML syntax error as one line: the problem and where."""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    mark = getattr(exc, "problem_mark", None)
    if source.is_override and mark is not None:
        return source.error(f"cannot read value: {problem} (column {mark.column + 1})")
    return source.error(f"not readable as YAML: {problem}", mark.line if mark else None)


def _not_json(value: Any) -> str | None:
    """The kind of the first value JSON cannot hold, or None."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending += item.values()
            pending += [k for k in item if not isinstance(k, str | int | float | bool)]
        elif isinstance(item, list):
            pending += item
        elif item is not None and not isinstance(item, str | int | float | bool):
            return type(item).__name__
    return None


# --- defaults: chains ----------------------------------------------------------------------


def parent_chain(chain: tuple[Path, ...], parent: Path) -> tuple[Path, ...]:
    """``chain`` (the files whose ``defaults:`` led here, outermost first) with ``parent``
    added; a RecipeError when ``parent`` is already in it (a file that names itself, or
    ``a -> b -> a``) or the chain is deeper than any config nests."""
    if parent in chain:
        loop = " -> ".join(p.name for p in (*chain[chain.index(parent) :], parent))
        raise RecipeError(
            [Issue(str(chain[-1]), f"defaults: is a cycle ({loop})", hint="a file is read once")]
        )
    if len(chain) >= MAX_DEPTH:
        raise RecipeError(
            [Issue(str(chain[-1]), f"defaults: chains more than {MAX_DEPTH} files deep")]
        )
    return (*chain, parent)


# --- JSON ----------------------------------------------------------------------------------

# Strings (escapes included) and the brackets outside them: how deep a JSON text nests.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def load_json(text: str | bytes, source: Source) -> Any:
    """A JSON text within the same limits (size, depth), or a RecipeError naming ``source``."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise source.error(f"not UTF-8 text (byte {exc.start})") from None
    _check_size(text, source)
    deepest = _json_too_deep(text)
    if deepest is not None:
        line = text.count("\n", 0, deepest)
        raise source.error(f"nested more than {MAX_DEPTH} lists or maps deep", line)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise source.error(f"not JSON: {exc.msg}", exc.lineno - 1) from None
    except (ValueError, RecursionError) as exc:
        raise source.error(f"not JSON: {str(exc).split(';')[0]}") from None


def _json_too_deep(text: str) -> int | None:
    """Where ``text`` first opens a list or map past ``MAX_DEPTH``; None when it never does."""
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > MAX_DEPTH:
                return match.start()
        elif token in ("]", "}"):
            depth -= 1
    return None
