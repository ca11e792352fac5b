"""Provenance: the exact versions a version of the artifact store was made from.

Every version a pipeline stage publishes records, in its completion marker's ``meta``, the
action that made it: its key, its plan's hash and the exact input versions it read
(``pipeline.actions.version_meta``, filled in at publish time by ``store.completed_meta``).
An import records where it came from and the digest of its manifest. Following the inputs
from marker to marker gives the tree ``recipekit store lineage NAME:VERSION`` prints, back to
the imported data and models. Nothing here writes to the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from recipekit.errors import did_you_mean
from recipekit.lineage.refs import ArtifactRef
from recipekit.lineage.store import (
    VERSIONS_FILE,
    StoreError,
    artifact_names,
    check_version,
    manifest_digest,
    read_marker,
    resolve_selector,
    versions,
)

WHOLE = "whole"
DELETED = "deleted"
DAMAGED = "damaged"


@attrs.frozen
class MissingInput:
    """An input a version records that the store cannot show (never recorded, or gone)."""

    ref: str
    why: str

    def as_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "missing": self.why}


@attrs.frozen
class Provenance:
    """One version and, recursively, the versions it was made from."""

    artifact: str
    version: int
    step: int | None
    run: str
    # WHOLE, DELETED (the framework's keep policy removed its files; its marker remains) or
    # DAMAGED (for an input only: the version asked about is refused when damaged).
    state: str
    manifest_digest: str
    # The action that published it (a stage's run); None for an import or a version
    # published before versions recorded how they were made.
    key: str | None = None
    plan_hash: str | None = None
    # An import's record: the command and the paths it registered.
    imported: Mapping[str, Any] | None = None
    inputs: tuple[tuple[str, Provenance | MissingInput], ...] = ()

    @property
    def ref(self) -> str:
        return f"{self.artifact}:v{self.version}"

    def as_json(self) -> dict[str, Any]:
        return {
            "ref": self.ref,
            "step": self.step,
            "run": self.run,
            "state": self.state,
            "manifest_digest": self.manifest_digest,
            "key": self.key,
            "plan_hash": self.plan_hash,
            **({"imported": dict(self.imported)} if self.imported is not None else {}),
            "inputs": {role: node.as_json() for role, node in self.inputs},
        }


def version_lineage(root: Path, ref: ArtifactRef) -> Provenance:
    """The tree of ``ref``'s version (``latest`` and ``step-N`` resolved as the store's links
    are). An artifact the store does not hold, a version it does not have, or a version whose
    files do not match its manifest is a StoreError naming it."""
    names = artifact_names(root)
    if ref.name not in names:
        raise StoreError(
            "NAME:VERSION",
            f"the artifact store {root} holds no artifact {ref.name!r}",
            hint=did_you_mean(ref.name, names) or "recipekit store list shows what it holds",
        )
    listed = versions(root, ref.name)
    found = resolve_selector(listed, ref.selector)
    if found is None:
        held = ", ".join(" ".join(v.aliases) for v in listed) or "none"
        raise StoreError("NAME:VERSION", f"{ref} is not a version of the store (it has: {held})")
    state = check_version(root, ref.name, found, content=False)
    if state.problems:
        more = f" (and {len(state.problems) - 1} more)" if len(state.problems) > 1 else ""
        raise StoreError(
            f"{ref.name}:v{found.version}",
            f"is damaged: {state.problems[0]}{more}",
            hint=f"recipekit store verify {root} {ref.name}:v{found.version} lists every file",
        )
    return _node(root, ref.name, found.version, {}, ())


def _node(
    root: Path,
    artifact: str,
    number: int,
    seen: dict[tuple[str, int], Provenance],
    below: tuple[tuple[str, int], ...],
) -> Provenance:
    if (artifact, number) in seen:
        return seen[(artifact, number)]
    version = versions(root, artifact)[number]
    checked = check_version(root, artifact, version, content=False)
    state = DELETED if checked.gone else (WHOLE if checked.whole else DAMAGED)
    marker = read_marker(root / artifact, number) or {}
    meta = marker.get("meta") if isinstance(marker.get("meta"), dict) else {}
    assert isinstance(meta, dict)
    files = marker.get("files")
    digest = str(meta.get("manifest_digest") or (manifest_digest(files) if files else ""))
    inputs: list[tuple[str, Provenance | MissingInput]] = []
    recorded = meta.get("inputs") if isinstance(meta.get("inputs"), dict) else {}
    assert isinstance(recorded, dict)
    for role, entry in recorded.items():
        inputs.append((str(role), _input(root, entry, seen, (*below, (artifact, number)))))
    imported = meta.get("imported")
    node = Provenance(
        artifact,
        number,
        version.step,
        version.run,
        state,
        digest,
        key=meta.get("key"),
        plan_hash=meta.get("plan_hash"),
        imported=imported if isinstance(imported, dict) else None,
        inputs=tuple(inputs),
    )
    seen[(artifact, number)] = node
    return node


def _input(
    root: Path,
    entry: Any,
    seen: dict[tuple[str, int], Provenance],
    below: tuple[tuple[str, int], ...],
) -> Provenance | MissingInput:
    entry = entry if isinstance(entry, dict) else {}
    ref, version = str(entry.get("ref", "?")), entry.get("version")
    if not isinstance(version, str) or not version[1:].isdigit():
        return MissingInput(ref, "the version it read was not recorded")
    name, number = ref.split(":", 1)[0], int(version[1:])
    if not (root / name / VERSIONS_FILE).is_file():
        return MissingInput(f"{name}:{version}", "the store holds no such artifact")
    if number >= len(versions(root, name)):
        return MissingInput(f"{name}:{version}", "the store holds no such version")
    if (name, number) in below:
        # A marker edited by hand could name its own descendant: stop rather than loop.
        return MissingInput(f"{name}:{version}", "names a version it was made into (a cycle)")
    return _node(root, name, number, seen, below)


def lineage_text(tree: Provenance) -> list[str]:
    """The tree as lines: each version with its run, plan hash and key (or where it was
    imported from), its inputs indented below it; a version shown once already is not
    expanded again."""
    lines = [_label(tree)]
    shown: set[str] = {tree.ref}
    _children(tree, "", lines, shown)
    return lines


def _children(node: Provenance, indent: str, lines: list[str], shown: set[str]) -> None:
    for index, (role, child) in enumerate(node.inputs):
        last = index == len(node.inputs) - 1
        branch, deeper = ("└─ ", "   ") if last else ("├─ ", "│  ")
        if isinstance(child, MissingInput):
            lines.append(f"{indent}{branch}{role}: {child.ref}  ({child.why})")
            continue
        again = child.ref in shown
        label = f"{child.ref}  (shown above)" if again else _label(child)
        lines.append(f"{indent}{branch}{role}: {label}")
        if not again:
            shown.add(child.ref)
            _children(child, indent + deeper, lines, shown)


def _label(node: Provenance) -> str:
    parts = [node.ref + (f" step-{node.step}" if node.step is not None else "")]
    if node.key is not None:
        parts += [f"run {node.run}", f"plan {str(node.plan_hash)[:12]}", f"key {node.key[:12]}"]
    elif node.imported is not None:
        sources = ", ".join(str(p) for p in dict(node.imported.get("sources", {})).values())
        parts.append(f"imported from {sources}" if sources else "imported")
    else:
        parts.append("imported (no action recorded)")
    parts.append(f"manifest {node.manifest_digest[:12]}")
    if node.state != WHOLE:
        parts.append(node.state.upper())
    return "  ".join(parts)
