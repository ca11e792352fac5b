"""The catalogue's own rules: valid entries, checks that run, cited lines that hold a rule."""

from __future__ import annotations

import ast
import importlib
import os
import re
import tomllib
from pathlib import Path

import pytest

from recipekit import job_rules, rule_catalogue
from recipekit.lineage.checkpoint_stamp import PLAN_RULES
from recipekit.nemo_evaluator.framework import NEMO_EVALUATOR
from recipekit.nemo_rl.framework import NEMO_RL_GRPO
from recipekit.nemo_rl.framework_super35 import NEMO_RL_SUPER35
from recipekit.parallelism import LAYOUT_RULES
from tools import rule_catalogue as generator

# pants.toml ([test] extra_env_vars) names the checkout and its .reference/.
CHECKOUT = Path(os.environ.get("RECIPEKIT_CHECKOUT") or Path(__file__).resolve().parents[4])
REFERENCE = Path(os.environ.get("RECIPEKIT_REFERENCE_DIR") or CHECKOUT / ".reference")
ENTRIES = rule_catalogue.load()


def _frameworks_running(source: str, framework: str) -> list[object]:
    """The framework objects whose checks may mirror a rule of ``source``."""
    if source == "nemo-rl/super-v3":
        return [NEMO_RL_GRPO]
    if source.startswith("nemo-rl/") or source.startswith("vllm/"):
        # GRPO's, and the other entry points' on super-v3.5-posttraining (xtoken distillation).
        from recipekit.nemo_rl import algorithms

        return [NEMO_RL_SUPER35] + [
            value
            for value in vars(algorithms).values()
            if isinstance(value, algorithms.NemoRLRun)
            and value.version == algorithms.SUPER35_VERSION
        ]
    if source == rule_catalogue.ISSUE_SOURCE and framework == "nemo-rl":
        return [NEMO_RL_GRPO, NEMO_RL_SUPER35]
    if source.startswith("nemo-evaluator/") or (
        source == rule_catalogue.ISSUE_SOURCE and framework == "nemo-evaluator"
    ):
        return [NEMO_EVALUATOR]
    # Megatron-Core / Megatron-Bridge rules run under every Megatron-Bridge framework object and
    # NeMo-RL's Megatron policy (any of its entry points).
    modules = ("recipekit.megatron_bridge.framework", "recipekit.nemo_rl.algorithms")
    return [
        value
        for module in modules
        for value in vars(importlib.import_module(module)).values()
        if hasattr(value, "error_checks")
        and hasattr(value, "warning_checks")
        and not isinstance(value, type)
    ]


def _resolve(dotted: str) -> object:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_the_catalogue_loads_with_unique_ids() -> None:
    assert {"nemo-rl", "vllm", "nemo-evaluator"} <= set(rule_catalogue.present())
    assert len({e.id for e in ENTRIES}) == len(ENTRIES)


def test_an_entry_needs_exactly_one_of_check_and_unchecked() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        rule_catalogue.RuleEntry(
            framework="vllm",
            id="vllm.x",
            source="vllm/v0.25.1",
            kind="raise",
            phase="setup",
            keys=(),
            condition="c",
            commit="v0.25.1",
            file="f.py",
            line=1,
        )


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.check], ids=lambda e: e.id)
def test_each_check_runs_in_a_framework_of_its_source(entry: rule_catalogue.RuleEntry) -> None:
    check = _resolve(entry.check)
    if check in PLAN_RULES or check in job_rules.PLAN_RULES:
        return  # the plan, submit and preflight run it for every stage
    runs = _frameworks_running(entry.source, entry.framework)
    if check in LAYOUT_RULES:
        # The layout rules run through each framework's one layout check.
        check = [
            c
            for f in runs
            for c in (*f.error_checks, *f.warning_checks)  # type: ignore[attr-defined]
            if c.__name__ == "parallel_layout_holds"
        ][:1] or [check]
        check = check[0]
    assert any(
        check in f.error_checks or check in f.warning_checks  # type: ignore[attr-defined]
        for f in runs
    ), f"{entry.check} is in no error or warning checks of {entry.source}"


def _warns(function: str) -> bool:
    # warnings.warn, logger.warning, and Megatron-Core's log_single_rank(logger, WARNING, ...).
    return "warn" in function or function == "log_single_rank"


def _rule_lines(path: Path) -> set[int]:
    lines = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assert | ast.Raise):
            lines.add(node.lineno)
        elif isinstance(node, ast.Call) and any(k.arg is None for k in node.keywords):
            # A call spreading **kwargs a config gives: a duplicate or unknown keyword
            # (kind "keyword").
            lines.add(node.lineno)
        elif isinstance(node, ast.Call) and _warns(ast.unparse(node.func).rsplit(".", 1)[-1]):
            lines.add(node.lineno)
        elif (
            isinstance(node, ast.Call)
            and ast.unparse(node.func).endswith("print_rank_0")
            and "warning" in ast.unparse(node).lower()
        ):
            # Megatron-Bridge's print_rank_0("WARNING: ...").
            lines.add(node.lineno)
        elif (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) == "print"
            and "WARN" in ast.unparse(node)
        ):
            # NeMo-RL's print(f"[WARN] ...") and print("WARNING: ...") (loss_functions.py:192,
            # nemo_gym.py:115 @ super-v3).
            lines.add(node.lineno)
    return lines


def _pinned() -> set[tuple[str, str]]:
    import tomllib

    manifest = tomllib.loads((CHECKOUT / "3rdparty/reference/manifest.toml").read_text())
    # A wheel's files are pinned by the wheel's sha256 (Megatron-Core's, under its version).
    unpacked = {
        (label, path)
        for label, wheel in manifest.get("wheels", {}).items()
        for path in wheel["files"]
    }
    return unpacked | {
        (label, path)
        for label, source in manifest["sources"].items()
        for path, _ in source.get("files", [])
    }


PINNED = _pinned()
# Cited files that CI cannot fetch: GitHub is out of its reach and the mirror it reads
# (../shared/reference) lacks them, so their entries' lines were read by hand at the commit;
# the manifest's unmirrored files are pinned, and their lines checked wherever they are fetched.
NOT_IN_THE_MIRROR = {
    ("nemo-rl/super-v3", "examples/run_grpo.py"),
    ("nemo-rl/super-v3.5-posttraining", "examples/nemo_gym/run_grpo_nemo_gym.py"),
} | {
    # The launcher's package, read from the PyPI wheel of the tag (nemo-evaluator.toml's header).
    (e.source, e.file)
    for e in ENTRIES
    if e.source == "nemo-evaluator/launcher-v0.2.6"
    and e.file.startswith("packages/nemo-evaluator-launcher/src/nemo_evaluator_launcher/")
} | {
    (label, path)
    for label, source in tomllib.loads(
        (CHECKOUT / "3rdparty/reference/manifest.toml").read_text()
    )["sources"].items()
    for path in source.get("unmirrored", [])
}
CITED = [e for e in ENTRIES if not e.from_issue and (e.source, e.file) in PINNED]


def test_every_cited_file_is_pinned_or_named_as_out_of_the_mirror() -> None:
    unpinned = {
        (e.source, e.file)
        for e in ENTRIES
        if not e.from_issue and not e.source.startswith(("megatron-core/", "megatron-bridge/"))
    } - PINNED
    assert unpinned <= NOT_IN_THE_MIRROR, sorted(unpinned - NOT_IN_THE_MIRROR)


@pytest.mark.parametrize("entry", CITED, ids=lambda e: e.id)
def test_each_cited_line_holds_a_rule(entry: rule_catalogue.RuleEntry) -> None:
    # An assert, a raise, a warning, or (kind keyword) a call spreading **kwargs.
    path = REFERENCE / entry.source / entry.file
    if not path.is_file() and (entry.source, entry.file) in NOT_IN_THE_MIRROR:
        pytest.skip(f"{entry.file} is unmirrored and not fetched here (no GitHub)")
    assert path.is_file(), f"{path} is pinned but not fetched: run tools/fetch-reference"
    assert entry.line in _rule_lines(path), f"{entry.file}:{entry.line} holds no rule"


def test_the_guide_generates_the_coverage_table() -> None:
    """The user's guide writes the table from coverage_table() on every build (docs/_ext/
    recipekit_pages.py) and includes it in its run-time rules page: nothing to keep in step."""
    page = (CHECKOUT / "docs" / "reference" / "rules.md").read_text(encoding="utf-8")
    assert "_generated/rule-coverage-part.md" in page
    table = generator.coverage_table()
    for framework in rule_catalogue.present():
        assert f"| {framework} | " in table


def _test_texts() -> str:
    """Every test file of the checkout but this one (which names no check)."""
    here = Path(__file__).resolve().name
    return "\n".join(
        path.read_text(encoding="utf-8")
        for root in ("src/python", "recipes")
        for path in sorted((CHECKOUT / root).rglob("*_test.py"))
        if path.name != here
    )


def test_every_catalogued_check_is_named_by_a_test_file() -> None:
    """A mirrored rule is tested: some test file names its check (breaking it, or listing it
    among the checks its tests break). A new catalogue entry without a test fails here."""
    text = _test_texts()
    untested = sorted(
        {
            e.check
            for e in ENTRIES
            if e.check and not re.search(rf"\b{re.escape(e.check.rsplit('.', 1)[1])}\b", text)
        }
    )
    assert not untested, f"no test file names these checks: {untested}"
