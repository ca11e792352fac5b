"""``recipekit upgrade``: move one pinned source to a new commit, as a change to review.

It reads the source's pinned files at both commits, sorts what changed into the decisions a
reviewer makes (``report``), then edits the working tree so that ``git diff`` is the change:
the manifest (commit, blob ids, the content hash of configs expanded from it), the fetched
files under ``.reference/``, every generated module and typed base read from them (the
checkout's own ``tools/generate_*.py`` and ``import-yaml --base``), and recipes that set a
renamed key. Each stage is compiled before and after, in a fresh interpreter.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml

from recipekit.errors import Issue, RecipeError
from recipekit.review import compiled, keydiff
from recipekit.upgrade import decisions, keys, pins, rules
from recipekit.upgrade.keys import KeyChange
from recipekit.upgrade.rules import RuleChanges

RECIPES = Path("recipes")
TYPED_BASES = RECIPES / "upstream"


@attrs.frozen
class StageChange:
    target: str
    stage: str
    config: tuple[keydiff.Change, ...]
    errors_before: str
    errors_after: str
    warnings_added: tuple[str, ...]
    warnings_gone: tuple[str, ...]
    memory: tuple[keydiff.Change, ...]


@attrs.frozen
class Migration:
    old_key: str
    new_key: str
    files: tuple[str, ...]
    applied: bool
    why: str = ""


@attrs.frozen
class Outcome:
    label: str
    old_commit: str
    new_commit: str
    files_changed: tuple[str, ...]
    files_gone: tuple[str, ...]
    keys: tuple[KeyChange, ...]
    rules: RuleChanges
    stages: tuple[StageChange, ...]
    migrations: tuple[Migration, ...]
    key_users: Mapping[str, tuple[str, ...]]
    recorded: Mapping[str, str]
    regenerated: tuple[str, ...]
    # The upstream config classes recipekit's generated tables model (a change to one of them
    # needs a decision; to another, it is listed).
    modelled: frozenset[str] = frozenset()
    # Why the stages do not compile after the upgrade ("" when they do).
    compile_error: str = ""
    # A generator that failed on the new files: "<tool>: <its last lines>".
    failed: tuple[str, ...] = ()
    # The pinned configs a recipe or typed base names (by path): a change to another is listed,
    # not asked about.
    used_configs: frozenset[str] = frozenset()


def upgrade(
    checkout: Path,
    label: str,
    commit: str,
    source_dir: Path | None,
    *,
    say: Callable[[str], None] = lambda _: None,
) -> Outcome:
    if not pins.COMMIT.fullmatch(commit):
        raise RecipeError([Issue(commit, "not a full commit id (40 lowercase hex digits)")])
    if source_dir is not None and not source_dir.is_dir():
        raise RecipeError([Issue(str(source_dir), "no such folder (--source)")])
    source = pins.read_source(checkout, label)
    say(f"reading {label} at {source.commit[:12]} (.reference) and {commit[:12]}")
    old = pins.old_files(checkout, source)
    reader = (
        pins.from_directory(source_dir)
        if source_dir is not None
        else pins.from_github(source, commit)
    )
    new: dict[str, bytes | None] = dict(pins.new_files(source, reader))
    moved_into = pins.moved_modules(source, old, new, reader)
    new.update(moved_into)
    present = {p: d for p, d in new.items() if d is not None}
    changed = tuple(p for p in old if p in present and present[p] != old[p]) + tuple(moved_into)
    gone = tuple(p for p, d in new.items() if d is None and p in old)

    say("comparing declared keys, configs and rules")
    key_changes = keys.class_changes(keys.config_classes(old), keys.config_classes(present))
    key_changes += keys.config_changes(old, new)
    rule_changes = rules.compare_rules(rules.cited_rules(checkout, label, old), old, new)

    modelled = _modelled_classes(checkout)
    # Read once, before any edit: who set a key is who named it before a migration renamed it.
    recipe_texts = _recipe_texts(checkout)
    # Stages compile with the checkout's own recipekit (a checkout without one has none).
    has_recipes = (checkout / RECIPES).is_dir() and (
        checkout / "src/python/recipekit/__init__.py"
    ).is_file()
    before = _compile(checkout, "before", say) if has_recipes else {}
    regenerated: list[str] = []
    failed: list[str] = []
    migrations: list[Migration] = []
    if commit != source.commit:
        say("editing the working tree")
        _write_pins(checkout, source, commit, new)
        # Before the generators run: they import the sections that name the moved classes.
        migrations = _migrate_qualified(checkout, key_changes)
        regenerated, failed = _regenerate(checkout, say)
        # The overlays next (the new tables say what upstream declares now), then the typed
        # bases, which import the sections.
        migrations += _migrate_overlays(checkout, say)
        _rewrite_bases(checkout, label, say, regenerated, failed)
        migrations += _migrate(checkout, key_changes)
        rules.reanchor(checkout, rule_changes)
    compile_error = ""
    try:
        after = _compile(checkout, "after", say) if has_recipes else {}
    except RecipeError as exc:
        # The recipes no longer import at the new commit (a section names a class upstream
        # moved or removed): the report shows why, and the tree stays as edited for the fix.
        after, compile_error = {}, exc.render()
    return Outcome(
        label,
        source.commit,
        commit,
        changed,
        gone,
        tuple(key_changes),
        rule_changes,
        () if compile_error else _stage_changes(before, after),
        tuple(migrations),
        _key_users(recipe_texts, key_changes, before),
        decisions.recorded(checkout, label, commit),
        tuple(regenerated),
        modelled,
        compile_error,
        tuple(failed),
        _used_configs(recipe_texts, source),
    )


def _recipe_texts(checkout: Path) -> dict[str, str]:
    """Each recipe module (typed bases included) by its path in the checkout."""
    recipes = checkout / RECIPES
    if not recipes.is_dir():
        return {}
    paths = sorted(recipes.rglob("*.py"))
    return {path.relative_to(checkout).as_posix(): path.read_text() for path in paths}


def _used_configs(recipe_texts: Mapping[str, str], source: pins.PinnedSource) -> frozenset[str]:
    text = "\n".join(recipe_texts.values())
    return frozenset(p for p in source.files if p.endswith((".yaml", ".yml")) and p in text)


def _modelled_classes(checkout: Path) -> frozenset[str]:
    import json

    tables = checkout / "src/python/recipekit/upstream/declared"
    found: set[str] = set()
    for table in sorted(tables.glob("*.json")) if tables.is_dir() else []:
        found.update(json.loads(table.read_text()).get("classes", {}))
    return frozenset(found)


def _compile(checkout: Path, when: str, say: Callable[[str], None]) -> dict[str, dict[str, Any]]:
    from recipekit.review.revision import compile_tree

    say(f"compiling every stage ({when})")
    return compile_tree(checkout, label=f"the working tree ({when} the upgrade)")


def _write_pins(
    checkout: Path, source: pins.PinnedSource, commit: str, new: Mapping[str, bytes | None]
) -> None:
    manifest = checkout / pins.MANIFEST
    blobs = {p: (None if d is None else pins.git_blob_id(d)) for p, d in new.items()}
    text = pins.rewrite_manifest(manifest.read_text(), source.label, commit, blobs)
    folder = checkout / pins.REFERENCE / source.label
    for path, data in new.items():
        target = folder / path
        if data is None:
            target.unlink(missing_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    text = _rehash_expanded(checkout, source.label, text)
    pins.replace_text(manifest, text)


def _rehash_expanded(checkout: Path, label: str, text: str) -> str:
    """Each file the manifest derives from a file of ``label`` (a copy, a notebook's cell, a
    config expanded with its defaults) pins what it derives: recomputed from the new files by
    the checkout's own tools/fetch_reference."""
    tool = _checkout_tool(checkout, "fetch_reference")
    if tool is None:
        return text
    reference = checkout / pins.REFERENCE
    blocks = text.split("[[derived]]")
    for index, block in enumerate(blocks[1:], 1):
        source = re.search(r'^source = "([^"]+)"', block, re.MULTILINE)
        rule = re.search(r'^rule = "([^"]+)"', block, re.MULTILINE)
        cell = re.search(r"^cell = (\d+)", block, re.MULTILINE)
        if not source or not rule or not source.group(1).startswith(label + "/"):
            continue
        path = reference / source.group(1)
        if not path.is_file():
            continue
        if rule.group(1) == "nemo-rl-expand":
            digest = tool.canonical_sha256(tool.nemo_rl_expand(path))
            block = re.sub(
                r'^content_sha256 = "[0-9a-f]+"', f'content_sha256 = "{digest}"', block, flags=re.M
            )
        elif rule.group(1) in ("copy", "notebook-cell"):
            data = path.read_bytes()
            if rule.group(1) == "notebook-cell" and cell:
                data = tool.notebook_cell(data, int(cell.group(1)))
            blob = pins.git_blob_id(data)
            block = re.sub(r'^blob = "[0-9a-f]+"', f'blob = "{blob}"', block, flags=re.M)
        blocks[index] = block
    return "[[derived]]".join(blocks)


def _checkout_tool(checkout: Path, name: str) -> Any:
    if not (checkout / "tools" / f"{name}.py").is_file():
        return None
    if str(checkout) not in sys.path:
        sys.path.insert(0, str(checkout))
    return importlib.import_module(f"tools.{name}")


def _regenerate(checkout: Path, say: Callable[[str], None]) -> tuple[list[str], list[str]]:
    """Every module generated from the pinned sources, rewritten by the checkout's own tools.
    Returns what ran, and what failed (with why): a generator that cannot read the new files
    is a decision, not the end of the run."""
    run: list[str] = []
    failed: list[str] = []
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(checkout / "src/python"), str(checkout)]),
    }
    fetcher = checkout / "tools/fetch_reference.py"
    if fetcher.is_file():
        # Every pinned file is in place now (the new ones written above): only the derived
        # files are made again, so .reference/ itself serves as the mirror it reads.
        say("tools/fetch_reference.py (the derived files)")
        reference = str(checkout / pins.REFERENCE)
        _tool([sys.executable, str(fetcher), "--mirror", reference], checkout, env, run, failed)
    for generator in sorted((checkout / "tools").glob("generate_*.py")):
        say(f"tools/{generator.name}")
        _tool([sys.executable, str(generator)], checkout, env, run, failed)
    return run, failed


def _rewrite_bases(
    checkout: Path, label: str, say: Callable[[str], None], run: list[str], failed: list[str]
) -> None:
    """Every typed base read from a file of ``label``, written again from the new file."""
    for base in sorted((checkout / TYPED_BASES).rglob("*.py")):
        upstream = re.search(r"^UPSTREAM = [\"']([^\"']+)[\"']", base.read_text(), re.MULTILINE)
        if upstream and upstream.group(1).startswith(label + "/"):
            say(f"import-yaml --base {upstream.group(1)}")
            name = f"import-yaml --base {upstream.group(1)}"
            try:
                _rewrite_base(checkout, base, upstream.group(1))
            except Exception as exc:  # noqa: BLE001 (any failure of the importer is reported)
                failed.append(f"{name}: {type(exc).__name__}: {exc}")
            else:
                run.append(name)


def _tool(
    command: list[str], checkout: Path, env: Mapping[str, str], run: list[str], failed: list[str]
) -> None:
    name = "tools/" + Path(command[1]).name
    done = subprocess.run(command, cwd=checkout, env=dict(env), capture_output=True, text=True)
    if done.returncode == 0:
        run.append(name)
    else:
        why = (done.stderr or done.stdout).strip().splitlines()[-3:]
        failed.append(f"{name} (exit {done.returncode}): {' / '.join(why)}")


def _rewrite_base(checkout: Path, base: Path, upstream: str) -> None:
    from recipekit.importers.nemo_rl_yaml import import_yaml
    from recipekit.importers.upstream import upstream_of

    schema = re.search(r"^SCHEMA = [\"']([^\"']+)[\"']", base.read_text(), re.MULTILINE)
    # Named from the checkout's root in what the importer says (the report keeps it).
    pinned = (
        pins.REFERENCE / upstream
        if Path.cwd() == checkout
        else checkout / pins.REFERENCE / upstream
    )
    written = import_yaml(
        pinned,
        schema=schema.group(1) if schema else "auto",
        upstream=upstream_of(pinned, checkout),
    )
    pins.replace_text(base, written.source)


def _migrate(checkout: Path, changes: list[KeyChange]) -> list[Migration]:
    """A key a config renamed, rewritten where a recipe names it whole (``"a.b.c"``)."""
    out: list[Migration] = []
    seen: set[tuple[str, str]] = set()
    recipes = sorted(
        p for p in (checkout / RECIPES).rglob("*.py") if TYPED_BASES.name not in p.parts
    )
    for change in changes:
        if change.kind != "renamed" or not change.dotted:
            continue
        pair = (change.dotted, change.renamed_to)
        if pair in seen:
            continue
        seen.add(pair)
        quoted = re.compile(rf"([\"']){re.escape(change.dotted)}\1")
        touched = []
        for path in recipes:
            text = path.read_text()
            if quoted.search(text):
                replacement = change.renamed_to.replace("\\", "\\\\")
                pins.replace_text(path, quoted.sub(rf"\g<1>{replacement}\g<1>", text))
                touched.append(path.relative_to(checkout).as_posix())
        leaf = change.dotted.rpartition(".")[2]
        typed = [
            path.relative_to(checkout).as_posix()
            for path in recipes
            if re.search(rf"\b{re.escape(leaf)}\s*=", path.read_text())
        ]
        if touched:
            out.append(Migration(change.dotted, change.renamed_to, tuple(touched), True))
        if typed:
            out.append(
                Migration(
                    change.dotted,
                    change.renamed_to,
                    tuple(typed),
                    False,
                    f"set as a typed field ({leaf}=): rename it by hand",
                )
            )
    return out


def _migrate_qualified(checkout: Path, changes: list[KeyChange]) -> list[Migration]:
    """A config class that moved module: recipekit's code names it by ``module:Class`` (a
    section's ``upstream``), rewritten wherever it is quoted whole."""
    out: list[Migration] = []
    sources = sorted((checkout / "src/python").rglob("*.py")) if (checkout / "src").is_dir() else []
    for change in changes:
        if change.kind != "class moved":
            continue
        quoted = re.compile(rf"([\"']){re.escape(change.where)}\1")
        touched = []
        for path in sources:
            text = path.read_text()
            if quoted.search(text):
                pins.replace_text(path, quoted.sub(rf"\g<1>{change.renamed_to}\g<1>", text))
                touched.append(path.relative_to(checkout).as_posix())
        if touched:
            out.append(Migration(change.where, change.renamed_to, tuple(touched), True))
    return out


# Run in a child with the checkout's recipekit: import every module, the sections recording
# (not refusing) overlay keys upstream now declares; print them as JSON.
_STALE_CHILD = r"""
import importlib, inspect, json, os, pkgutil, sys
sys.path[:0] = [sys.argv[1]]
os.environ[sys.argv[2]] = "1"
import recipekit, recipekit.sections as sections
for info in pkgutil.walk_packages(recipekit.__path__, "recipekit."):
    if not info.name.endswith("_test") and ".conftest" not in info.name:
        try:
            importlib.import_module(info.name)
        except Exception:
            pass
out = [
    [inspect.getsourcefile(cls), inspect.getsourcelines(cls)[1], cls.__name__, list(keys)]
    for cls, keys in sections.STALE_OVERLAYS
]
json.dump(out, sys.stdout)
"""


def _migrate_overlays(checkout: Path, say: Callable[[str], None]) -> list[Migration]:
    """A key a section's overlay (``undeclared_keys``) explains that upstream now declares:
    dropped from the overlay, since the generated table now gives it."""
    import ast
    import json

    from recipekit import sections

    source_root = checkout / "src/python"
    if not (source_root / "recipekit/sections.py").is_file():
        return []
    say("sections whose overlay upstream now declares")
    done = subprocess.run(
        [sys.executable, "-c", _STALE_CHILD, str(source_root), sections.RECORD_STALE_ENV],
        cwd=checkout,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        return []
    by_file: dict[str, list[tuple[int, str, list[str]]]] = {}
    for file, line, name, stale in json.loads(done.stdout or "[]"):
        by_file.setdefault(file, []).append((line, name, stale))
    out: list[Migration] = []
    for file, classes in sorted(by_file.items()):
        path = Path(file)
        text = path.read_text()
        tree = ast.parse(text)
        spans: list[tuple[int, int, int]] = []
        for line, name, stale in classes:
            # inspect gives the first line of the class's decorators.
            cls = next(
                (
                    node
                    for node in ast.walk(tree)
                    if isinstance(node, ast.ClassDef)
                    and node.name == name
                    and min([node.lineno, *(d.lineno for d in node.decorator_list)]) == line
                ),
                None,
            )
            if cls is None:
                continue
            spans += [
                (constant.lineno, constant.col_offset, constant.end_col_offset or 0)
                for statement in cls.body
                if isinstance(statement, ast.Assign)
                and any(ast.unparse(t) == sections.UNDECLARED_KEYS for t in statement.targets)
                for constant in ast.walk(statement.value)
                if isinstance(constant, ast.Constant) and constant.value in stale
            ]
            out.append(
                Migration(
                    f"{name}.{sections.UNDECLARED_KEYS}: {', '.join(stale)}",
                    "(declared upstream now)",
                    (path.relative_to(checkout).as_posix(),),
                    True,
                )
            )
        # From the last span up, so that each edit leaves the others' places as they were.
        lines = text.splitlines(keepends=True)
        for lineno, start, end in sorted(spans, reverse=True):
            row = lines[lineno - 1]
            rest = row[end:]
            rest = rest[1:] if rest.startswith(",") else rest
            edited = row[:start] + rest.lstrip(" ") if row[:start].strip() else row[:start] + rest
            lines[lineno - 1] = "" if not edited.strip() else edited
        pins.replace_text(path, "".join(lines))
    return out


def _stage_changes(
    before: Mapping[str, dict[str, Any]], after: Mapping[str, dict[str, Any]]
) -> tuple[StageChange, ...]:
    out = []
    for target in sorted(set(before) | set(after)):
        old = before.get(target, {"stage": target, "files": {}})
        new = after.get(target, {"stage": target, "files": {}})
        if old["files"] == new["files"]:
            continue
        old_plan, new_plan = _plan(old["files"]), _plan(new["files"])
        # The whole compiled plan (config, plan, job script, images), key by key; warnings and
        # memory are shown apart as well.
        config = keydiff.diff(compiled.document(old["files"]), compiled.document(new["files"]))
        old_warnings, new_warnings = _warnings(old_plan), _warnings(new_plan)
        change = StageChange(
            target,
            new.get("stage") or old.get("stage", target),
            tuple(config),
            old["files"].get(compiled.ERROR, ""),
            new["files"].get(compiled.ERROR, ""),
            tuple(w for w in new_warnings if w not in old_warnings),
            tuple(w for w in old_warnings if w not in new_warnings),
            tuple(keydiff.diff(_memory_totals(old_plan), _memory_totals(new_plan))),
        )
        # Files that differ only in the order of their keys are the same plan.
        if change.config or change.errors_before != change.errors_after:
            out.append(change)
    return tuple(out)


def _plan(files: Mapping[str, str]) -> dict[str, Any]:
    loaded = yaml.safe_load(files.get(compiled.PLAN, "")) if compiled.PLAN in files else None
    return loaded if isinstance(loaded, dict) else {}


def _config(files: Mapping[str, str]) -> Any:
    return yaml.safe_load(files[compiled.CONFIG]) if compiled.CONFIG in files else {}


def _warnings(plan: Mapping[str, Any]) -> list[str]:
    return [f"{w.get('path', '')}: {w.get('message', '')}" for w in plan.get("warnings") or []]


def _memory_totals(plan: Mapping[str, Any]) -> dict[str, Any]:
    memory = plan.get("memory") or {}
    return {
        str(phase.get("phase")): phase.get("total_gib")
        for phase in memory.get("phases") or []
        if isinstance(phase, Mapping)
    }


def _key_users(
    recipe_texts: Mapping[str, str],
    changes: list[KeyChange],
    before: Mapping[str, dict[str, Any]],
) -> dict[str, tuple[str, ...]]:
    """dotted key -> the stages that set it (their recipe names it) or inherit it (their
    compiled config has it), for the keys a config changed."""
    configs = {
        ref["stage"]: set(keydiff.flatten(_config(ref["files"])))
        for ref in before.values()
        if compiled.CONFIG in ref["files"]
    }
    bases = TYPED_BASES.as_posix() + "/"
    recipes = {path: text for path, text in recipe_texts.items() if not path.startswith(bases)}
    out: dict[str, tuple[str, ...]] = {}
    for change in changes:
        if not change.dotted or change.dotted in out:
            continue
        users = [f"{stage} (inherits)" for stage, flat in configs.items() if change.dotted in flat]
        users += [
            f"{path} (sets)" for path, text in recipes.items() if f'"{change.dotted}"' in text
        ]
        out[change.dotted] = tuple(users)
    return out
