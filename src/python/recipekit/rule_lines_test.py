"""No upstream line is written by hand in a framework package: a rule's line is derived from its
catalogue anchor (``generated/rule_sites.json``), so a pin move (``recipekit upgrade``) moves
every citation of it, in messages and in the tests that check them, with nothing to edit.

Each framework package's modules and tests are read (its ``generated/`` tables exempt, and
NeMo-RL's ``schema_*`` modules, which name where upstream declares a config class rather
than cite a rule) for a ``<file>.py:<line>`` of a file some pinned source holds, and for a
bare ``:<line>`` continuing one. A message cites through ``cite``/``where``/``line_of``, a
test expects what those derive, and a docstring or comment names the rule by its catalogue id
or the upstream function. ``KEPT`` lists the literals written on purpose, each with why.
"""

from __future__ import annotations

import io
import re
import tokenize
import tomllib
from pathlib import Path

from recipekit import rule_catalogue

# Read from the checkout (``$RECIPEKIT_CHECKOUT`` under Pants), not the sandbox: the tests of
# the framework packages are files no import brings in.
PACKAGE = rule_catalogue.checkout() / "src/python/recipekit"
FRAMEWORKS = ("nemo_rl", "megatron_core", "megatron_bridge", "vllm", "nemo_evaluator")
# A file's path (or its tail) and a line: nemo_rl/models/megatron/setup.py:1747.
CITED = re.compile(r"(?<![\w./])((?:[\w.-]+/)*([\w]+\.py)):(\d+)")
# A further line of the same file: "setup.py:1747 and :2057", "(:1715)".
CONTINUED = re.compile(r"(?<![\w:\]\)}])(:\d{2,})\b")

# path (from src/python/recipekit/) -> {literal: why it stays written by hand}
KEPT: dict[str, dict[str, str]] = {
    "nemo_rl/rules/sequence_budget.py": {
        "vllm_worker_async.py:890": (
            "super-v3's async engine returns an empty response there: an arithmetic line, no "
            "rule site to anchor (written once, in V3_WHERE)"
        ),
        "processors.py:422": (
            "math_hf_data_processor's cut of a long prompt is an if, no rule site (written "
            "once, in PROMPT_CUT; the tests read it from there)"
        ),
        "processors.py:427": "as processors.py:422, at super-v3.5-posttraining",
    },
    "megatron_bridge/checks.py": {
        "transformer_config.py:175": (
            "the provider's finalize() turns sequence parallelism off: an assignment, no rule "
            "site (written once, in FINALIZE_TURNS_SP_OFF; the test reads it from there)"
        ),
    },
    "nemo_rl/rules/model_support.py": {
        "parallelize.py:414": (
            "an issue-sourced rule (NVIDIA-NeMo/RL#1525) citing super-v3's _parallelize_nm5_h, "
            "which the catalogue anchors at super-v3.5-posttraining only"
        ),
    },
}


def _pinned_files() -> set[str]:
    """The names of the files the manifest's sources and wheels pin."""
    manifest = tomllib.loads((rule_catalogue.checkout() / rule_catalogue.MANIFEST).read_text())
    paths = [path for source in manifest["sources"].values() for path, _ in source["files"]]
    paths += [path for wheel in manifest["wheels"].values() for path in wheel["files"]]
    return {Path(path).name for path in paths}


def _scanned() -> list[Path]:
    return sorted(
        path
        for framework in FRAMEWORKS
        for path in (PACKAGE / framework).rglob("*.py")
        if "generated" not in path.parts
        and not (path.parent.name == "nemo_rl" and path.name.startswith("schema_"))
    )


def _texts(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string and comment of a module: where a citation can be."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return [
        (token.start[0], token.string)
        for token in tokens
        if token.type in (tokenize.STRING, tokenize.COMMENT)
    ]


def hand_written_lines(path: Path, pinned: set[str]) -> list[tuple[int, str]]:
    """(line, literal) of each upstream line ``path`` writes by hand."""
    found = []
    for line, text in _texts(path):
        found += [(line, m.group(0)) for m in CITED.finditer(text) if m.group(2) in pinned]
        found += [(line, m.group(1)) for m in CONTINUED.finditer(text)]
    return found


def test_no_module_or_test_writes_an_upstream_line_by_hand() -> None:
    pinned = _pinned_files()
    unkept = []
    for path in _scanned():
        kept = KEPT.get(str(path.relative_to(PACKAGE)), {})
        for line, literal in hand_written_lines(path, pinned):
            if not any(literal.endswith(allowed) for allowed in kept):
                unkept.append(f"{path.relative_to(PACKAGE)}:{line}: {literal}")
    assert not unkept, (
        "an upstream line written by hand goes stale at the next pin move: cite the rule "
        "(cite/where/line_of of its catalogue id), or name the upstream function:\n"
        + "\n".join(unkept)
    )


def test_every_kept_line_is_still_written() -> None:
    """An entry of KEPT whose literal is gone is left over: remove it."""
    pinned = _pinned_files()
    for relative, kept in KEPT.items():
        written = {literal for _, literal in hand_written_lines(PACKAGE / relative, pinned)}
        for allowed in kept:
            assert any(literal.endswith(allowed) for literal in written), (relative, allowed)


def test_the_scan_finds_what_it_is_for(tmp_path: Path) -> None:
    module = tmp_path / "rule.py"
    module.write_text(
        '"""setup.py:1747 and :2057 (reference model)."""\n'
        'MESSAGE = "(nemo_rl/algorithms/grpo.py:712 @ super-v3.5-posttraining)"\n'
        "# an unpinned file is no citation of a pinned one: somewhere.py:12\n"
        "RATIO = {1: 2}[1]  # code, not text: 3:45 is a time, host:8080 a port\n"
    )
    found = hand_written_lines(module, {"setup.py", "grpo.py"})
    assert [literal for _, literal in found] == [
        "setup.py:1747",
        ":2057",
        "nemo_rl/algorithms/grpo.py:712",
    ]
