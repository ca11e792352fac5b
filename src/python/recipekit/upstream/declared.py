"""What a pinned framework version declares of its config, as data recipekit can read.

Generated tables (``recipekit/upstream/declared/<label>.json``, written by
``tools/generate_declared.py`` from the pinned sources, never edited by hand) hold one
:class:`Declared` per upstream config class: every key with its type (as Python source text,
evaluated when first needed), whether upstream marks it required, and the config classes a
mapping under it is checked against. A typed section names the upstream class it models
(``upstream: ClassVar[Declared]``); ``recipekit.sections`` then gives it every key upstream
declares that it does not state itself, typed and checked, so a key the framework accepts is
never refused because no one wrote it down.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import attrs

from recipekit.errors import Issue, did_you_mean, join_path
from recipekit.upstream.bounds import Bounds, unbounded

TABLES = Path(__file__).parent / "declared"
# The names a type's source text may use.
_TYPE_NAMES: dict[str, Any] = {
    "Any": Any,
    "Literal": Literal,
    "Annotated": Annotated,
    "Bounds": Bounds,
}


@functools.cache
def evaluated(text: str) -> Any:
    """A type from its source text (``int | None``, ``Literal['a', 'b']``, ``tuple[str, ...]``)."""
    return eval(
        text,
        {
            "__builtins__": {
                "int": int,
                "float": float,
                "str": str,
                "bool": bool,
                "tuple": tuple,
                "dict": dict,
            },
            **_TYPE_NAMES,
        },
    )  # noqa: S307 - our own generated text


@attrs.frozen
class Key:
    """One key of an upstream config class."""

    type_text: str
    required: bool = False
    # The config classes (qualified names in the same table) a mapping value is checked
    # against: any one of them may take it.
    nested: tuple[str, ...] = ()
    line: int = 0

    @property
    def type(self) -> Any:
        return evaluated(self.type_text)

    def breaks_bound(self, value: Any) -> bool:
        """Whether ``value`` is of the key's type but outside a bound pydantic enforces on it
        (``recipekit.upstream.bounds``): a refusal that names the class declaring the bound."""
        from recipekit.sections import type_check  # the checks every section key gets

        if "Bounds(" not in self.type_text:
            return False
        plain_ok, _ = type_check(unbounded(self.type))
        full_ok, _ = type_check(self.type)
        return plain_ok(value) and not full_ok(value)


@attrs.frozen
class Declared:
    """An upstream config class: ``module:Name``, its keys, and whether it takes keys it does
    not declare (pydantic ``extra="allow"``)."""

    qualified: str
    keys: Mapping[str, Key]
    allows_extra: bool = False
    # The label of the pinned source (``nemo-rl/super-v3.5-posttraining``) and its file.
    source: str = ""
    path: str = ""
    table: DeclaredTable | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def name(self) -> str:
        return " | ".join(q.split(":")[1] for q in self.qualified.split(" | "))

    @property
    def classes(self) -> tuple[str, ...]:
        """The qualified names of the classes it stands for (several for a family)."""
        return tuple(self.qualified.split(" | "))

    def cited(self) -> str:
        # A class of another pinned source than the table's names it in its path.
        where = self.path if " @ " in self.path else f"{self.path} @ {self.source}"
        return f"{self.name} ({where})"


@attrs.frozen
class DeclaredTable:
    """Every config class of one pinned source, by qualified name."""

    source: str
    commit: str
    classes: Mapping[str, Declared]

    def __getitem__(self, qualified: str) -> Declared:
        return self.classes[qualified]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DeclaredTable:
        table = cls(str(data["source"]), str(data["commit"]), {})
        classes: dict[str, Declared] = {}
        for qualified, entry in data["classes"].items():
            keys = {
                name: Key(
                    k["type"],
                    k.get("required", False),
                    tuple(k.get("nested", ())),
                    k.get("line", 0),
                )
                for name, k in entry["keys"].items()
            }
            classes[qualified] = Declared(
                qualified,
                keys,
                entry.get("allows_extra", False),
                table.source,
                entry.get("path", ""),
                table,
            )
        object.__setattr__(table, "classes", classes)
        return table

    def as_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "commit": self.commit,
            "classes": {
                q: {
                    "path": d.path,
                    **({"allows_extra": True} if d.allows_extra else {}),
                    "keys": {
                        n: {
                            "type": k.type_text,
                            **({"required": True} if k.required else {}),
                            **({"nested": list(k.nested)} if k.nested else {}),
                            "line": k.line,
                        }
                        for n, k in d.keys.items()
                    },
                }
                for q, d in self.classes.items()
            },
        }

    def mapping_issues(self, value: Any, candidates: tuple[str, ...], path: str) -> list[Issue]:
        """Why the mapping ``value`` at ``path`` is none of the config classes ``candidates``
        (the fewest problems of any of them); [] when one takes it."""
        found: list[list[Issue]] = []
        for qualified in candidates:
            declared = self.classes.get(qualified)
            if declared is None:
                return []  # a class outside the table: nothing to tell
            found.append(list(self._issues(value, declared, path)))
            if not found[-1]:
                return []
        return min(found, key=len) if found else []

    def _issues(self, value: Any, declared: Declared, path: str) -> Iterator[Issue]:
        from recipekit.sections import type_check  # the checks every section key gets

        if not isinstance(value, dict):
            return
        for key, given in value.items():
            where = join_path(path, str(key))
            spec = declared.keys.get(str(key))
            if spec is None:
                if not declared.allows_extra:
                    yield Issue(
                        where,
                        f"unknown key: {declared.cited()} declares no such key",
                        hint=did_you_mean(str(key), declared.keys),
                    )
                continue
            ok, expected = type_check(spec.type)
            if not ok(given):
                # A value of the right type that breaks a bound pydantic enforces says whose.
                whose = f", as {declared.cited()} declares it" if spec.breaks_bound(given) else ""
                yield Issue(where, f"expected {expected}{whose}", value=given)
            elif isinstance(given, dict) and spec.nested:
                yield from self.mapping_issues(given, spec.nested, where)
        # A key upstream marks required but the mapping leaves out is not refused: a
        # TypedDict's requiredness is not enforced, and the code may never read it.


@functools.cache
def table(label: str) -> DeclaredTable:
    """The generated table of the pinned source ``label`` (``nemo-rl/super-v3``)."""
    path = TABLES / f"{label.replace('/', '@')}.json"
    return DeclaredTable.from_json(json.loads(path.read_text()))


def declared(label: str, *qualified: str) -> Declared:
    """The upstream config class ``qualified`` of ``label``'s table: what a section's
    ``upstream`` names. Several classes (a family NeMo-RL picks from at run time, such as
    ``GenerationConfig`` and the back-ends' configs derived from it) are one ``Declared`` with
    every key of each, the first class's wherever two declare one key. A key of the family is
    required only where every class of it requires it: the class that runs may be any."""
    found = [table(label)[q] for q in qualified]
    if len(found) == 1:
        return found[0]
    keys: dict[str, Key] = {}
    for one in reversed(found):
        keys.update(one.keys)
    for name, key in keys.items():
        if key.required and not all(name in d.keys and d.keys[name].required for d in found):
            keys[name] = attrs.evolve(key, required=False)
    first = found[0]
    return attrs.evolve(
        first,
        qualified=" | ".join(d.qualified for d in found),
        keys={k: keys[k] for k in dict.fromkeys(k for d in found for k in d.keys)},
        allows_extra=any(d.allows_extra for d in found),
    )


def members(upstream: Declared | tuple[Declared, ...]) -> tuple[Declared, ...]:
    """The classes a section's ``upstream`` names: one, or one per version sharing it."""
    return upstream if isinstance(upstream, tuple) else (upstream,)


# Why a section states a key its upstream class does not declare (``undeclared_keys``).
READ = "NeMo-RL reads it (cfg.get or cfg[...]) though no config class declares it"
CONFIGS = "set by the upstream example configs recipekit ports; NeMo-RL does not read it"


OWN = "recipekit's own: the runner's command line, never a key of the framework's config"
UNPINNED = "declared by {}, a class of the framework's union no pinned file holds"


def undeclared(
    read: tuple[str, ...] = (),
    configs: tuple[str, ...] = (),
    own: tuple[str, ...] = (),
    unpinned: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """A section's ``undeclared_keys``: the keys the framework ``read``s without declaring
    them, those only its example ``configs`` set (each kept so that a port compiles key for
    key), recipekit's ``own`` (rendered on the command line), and those a class no pinned file
    holds declares (``unpinned``: key -> the class). The completeness tests check each reason
    against the pinned sources."""
    return {
        **{k: READ for k in read},
        **{k: CONFIGS for k in configs},
        **{k: OWN for k in own},
        **{k: UNPINNED.format(c) for k, c in (unpinned or {}).items()},
    }
