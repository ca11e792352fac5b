"""Every shell example in the guide runs (issue 45): a doc that lies fails here.

An example is a line of a ``bash``/``sh`` block, or a ``$ ...`` line of a ``console`` or plain
block with the lines it quotes under it (up to the next ``$``). Each one is either run or
excused by name below, with why:

- a ``recipekit`` command (``recipekit ...``, ``./pants run src/python/recipekit:cli -- ...``)
  or a stage launcher command (``./pants run recipes/<folder>:<stage> [-- ...]``, the stage
  named by its target) runs in this process through the click commands, as a user's would,
  in the checkout (committed to a temporary git repository, so that ``diff HEAD`` has a HEAD;
  a file it writes goes to a temporary folder). It exits 0, or 2 where the page presents it
  as a refusal (the quoted output starts with ``error:``, or its comment says it refuses);
  never with a traceback. A command the guide shows on several pages runs once.
- what an example quotes is what it prints (whitespace aside; a line ``...`` skips lines, and
  a duration in parentheses, ``(3.45 s)``, is the run's own).
- a command that needs a cluster, a registry, a store holding data, or that rewrites the
  checkout is in ``NOT_RUN``; a program other than recipekit (Pants, tools/, git) in
  ``OTHER_PROGRAMS``. A new example is run, or its command is added there with a reason; an
  entry no example uses fails too.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import click
import pytest
from click.testing import CliRunner

from recipekit.cli.recipekit_cli import cli as recipekit_cli
from recipekit.cli.stage_context import STAGE_VARIABLE
from recipekit.cli.stage_launcher import cli as stage_cli

ROOT = Path.cwd()
PAGES = sorted(p for p in (ROOT / "docs").rglob("*.md") if "_generated" not in p.parts)
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```", re.S | re.M)  # as docs_test reads blocks

# recipekit and stage launcher commands the guide shows but this test does not run.
NOT_RUN = {
    "stage submit": "submits a job to a Slurm cluster (tests/integration/slurm runs it on one)",
    "stage status": "reads the job a submit made on a cluster",
    "stage logs": "reads the job a submit made on a cluster",
    "stage cancel": "cancels the job a submit made on a cluster",
    "stage lock": "reads the base image's manifest from a registry (network, credentials)",
    "recipekit pipeline submit": "submits the chain's jobs to a Slurm cluster",
    "recipekit pipeline status": "reads the chain's jobs and store on a cluster",
    "recipekit store init": "makes a store at the site's shared path (/lustre/...)",
    "recipekit store import": "copies the user's data (./sft-blend) into a store",
    "recipekit upgrade": "rewrites the checkout (pin, tables, recipes) from an upstream checkout "
    "at another commit (upgrade/upgrade_test.py runs it in a checkout made for the test)",
    "recipekit snapshots --update": "rewrites the checked-in snapshots (the check runs)",
}

# Programs other than recipekit, by how their command line starts.
OTHER_PROGRAMS = {
    "./pants package": "builds Pex files and images (minutes); CI's package job builds them",
    "./pants test": "runs a test suite: CI runs it",
    "./pants --pants-config-files=": "Pants against a remote cache or BuildGrid server "
    "(tests/integration/cache runs it)",
    "tools/install-system-deps": "installs Debian packages as root",
    "tools/fetch-reference": "downloads the pinned upstream reference data",
    "tools/remote-cache": "starts a cache server (tests/integration/cache runs it)",
    "python3 -m tests.integration.slurm.bench_bringup": "starts a local Slurm cluster",
    "git add": "stages a file in the reader's checkout",
    "export ": "sets a variable for the commands after it",
    "skopeo login": "a registry login (network, credentials)",
    "python3 -m pip download": "downloads a wheel from PyPI (for a device run)",
    "python3 tools/bench_": "a measurement: what it printed that day on that machine is the "
    "record (design/measurements), not a promise",
    "python3 tools/calibrate_memory": "a GPU measurement and its comparison "
    "(calibrate_memory.py, calibrate_memory_loss.py); tools/calibrate_memory_test.py holds the "
    "kept files to the estimate",
}

DURATION = re.compile(r"\(\d+(\.\d+)? s\)")


class Example(NamedTuple):
    page: str
    line: int  # of the command in the page
    command: str  # continuation lines joined, the comment cut off
    comment: str
    quoted: tuple[str, ...]  # the lines printed under a `$ ` command


def _examples() -> list[Example]:
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        name = str(page.relative_to(ROOT / "docs"))
        for fence in FENCE.finditer(text):
            language, block = fence.group(1), fence.group(2)
            if language in ("bash", "sh", "console", ""):
                first = text.count("\n", 0, fence.start(2)) + 1
                out += _block_examples(name, first, language, block.splitlines())
    return out


def _block_examples(page: str, first: int, language: str, lines: list[str]) -> list[Example]:
    shell = language in ("bash", "sh")
    found: list[Example] = []
    i = 0
    while i < len(lines):
        start, line = i, lines[i].strip()
        i += 1
        if not shell and not line.startswith("$ "):
            continue
        while line.endswith("\\") and i < len(lines):
            line = line[:-1] + " " + lines[i].strip()
            i += 1
        quoted: list[str] = []
        while not shell and i < len(lines) and not lines[i].startswith("$ "):
            quoted.append(lines[i])
            i += 1
        command, _, comment = line.removeprefix("$ ").partition(" #")
        if command.strip() and not command.startswith("#"):
            found.append(Example(page, first + start, command.strip(), comment, tuple(quoted)))
    return found


def _placeholders(command: str) -> list[str]:
    """``<stage>``, ``...``, ``TARGET``: the words a reader would have to fill in."""
    return [
        word
        for word in command.split()
        if "<" in word or "..." in word or (word.isalpha() and word.isupper() and word != "HEAD")
    ]


class Run(NamedTuple):
    root: click.Command
    args: list[str]
    stage: str | None  # MODULE:ATTR the stage launcher is built for


def _invocations(command: str) -> list[str]:
    """The commands of one line: ``a && b`` is two; a trailing ``&`` does not matter."""
    return [part.strip().rstrip("&").strip() for part in re.split(r"&&|;", command)]


def _cli_run(command: str) -> Run | None:
    words = shlex.split(command)
    after = words[words.index("--") + 1 :] if "--" in words else []
    if words[0] == "recipekit":
        return Run(recipekit_cli, words[1:], None)
    if words[:3] == ["./pants", "run", "src/python/recipekit:cli"]:
        return Run(recipekit_cli, after, None)
    if words[:2] == ["./pants", "run"] and words[2].startswith("recipes/"):
        # With no sub-command the stage's launcher prints the plan (stage_launcher.main).
        return Run(stage_cli, after or ["plan"], _stage_of(words[2]))
    return None


@functools.cache
def _stages() -> dict[str, str]:
    from recipekit.review.discover import discover_stages

    return {ref.stage.name: ref.target for ref in discover_stages(ROOT)}


def _stage_of(address: str) -> str:
    folder, _, name = address.partition(":")
    target = _stages().get(name, "")
    assert target.startswith(folder.replace("/", ".") + "."), f"no stage target {address}"
    return target


def _command_name(run: Run) -> str:
    """``recipekit pipeline plan``, ``stage submit``: the root and its sub-commands named."""
    names = ["recipekit" if run.root is recipekit_cli else "stage"]
    command = run.root
    for word in run.args:
        if not isinstance(command, click.Group) or word not in command.commands:
            break
        command = command.commands[word]
        names.append(word)
    return " ".join(names)


def _not_run(command: str) -> str | None:
    """The key of NOT_RUN or OTHER_PROGRAMS that excuses this command; None for a command
    that runs, "" for a program this test does not know."""
    run = _cli_run(command)
    if run is None:
        program = re.sub(r"^(\w+=\S* )+", "", command)  # PYTHONPATH=... python3 ...
        return next((p for p in OTHER_PROGRAMS if program.startswith(p)), "")
    name = _command_name(run)
    for key in NOT_RUN:
        excused, _, option = key.partition(" --")
        if name == excused and (not option or f"--{option}" in run.args):
            return key
    return None


def _to_run() -> list[Example]:
    return [
        example
        for example in _examples()
        if any(_not_run(part) is None for part in _invocations(example.command))
    ]


def test_every_shell_example_is_run_or_excused() -> None:
    problems, used = [], set()
    for example in _examples():
        for part in _invocations(example.command):
            why = _not_run(part)
            if why == "":
                problems.append(
                    f"{example.page}:{example.line}: `{part}` is no recipekit or stage "
                    "command: run it here, or add its program to OTHER_PROGRAMS with why"
                )
            elif why is None and _placeholders(part):
                problems.append(
                    f"{example.page}:{example.line}: `{part}` has a placeholder: write the "
                    "example whole, or the syntax in prose"
                )
            used.add(why)
    stale = set(NOT_RUN) | set(OTHER_PROGRAMS)
    problems += [f"excused, but no example runs it: {key}" for key in sorted(stale - used)]
    assert not problems, "\n".join(problems)
    assert len(_to_run()) >= 15, "the guide's examples were not found"


@pytest.fixture(scope="module")
def head(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A git repository whose HEAD is the checkout's recipes and code as they are here, so that
    ``diff HEAD`` has a HEAD (a Pants sandbox has no .git): the variables that point git at it."""
    git_dir = tmp_path_factory.mktemp("head") / ".git"
    env = {"GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(ROOT)}
    trees = [tree for tree in ("recipes", "containers", "src/python") if (ROOT / tree).is_dir()]
    for args in (["init", "-q"], ["add", "--", *trees], ["commit", "-qm", "the checkout"]):
        git = ["git", "-c", "user.name=docs", "-c", "user.email=docs@localhost", *args]
        subprocess.run(git, env={**os.environ, **env}, check=True, capture_output=True)
    return env


# What a command printed, by its words: the guide names some commands on several pages
# (the snapshot check, a plan), and each runs once.
_RESULTS: dict[str, Any] = {}


def _invoke(run: Run, part: str) -> Any:
    if part not in _RESULTS:
        _RESULTS[part] = CliRunner().invoke(run.root, run.args)
    return _RESULTS[part]


def _normalized(text: str) -> str:
    return DURATION.sub("(... s)", " ".join(text.split()))


def _refuses(example: Example) -> bool:
    said = [line for line in example.quoted if line.strip()]
    return bool(said and said[0].startswith("error:")) or bool(
        re.search(r"refuse|exit (status )?2", example.comment)
    )


@pytest.mark.parametrize(
    "example", _to_run(), ids=lambda e: f"{e.page}:{e.line}" if isinstance(e, Example) else ""
)
def test_each_shell_example_runs(
    example: Example, head: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The recipekit CLI puts the current directory on sys.path (recipe modules are imported
    # from the checkout): keep that to this example.
    monkeypatch.setattr(sys, "path", list(sys.path))
    for part in _invocations(example.command):
        run = _cli_run(part)
        if run is None or _not_run(part) is not None:
            continue  # excused (test_every_shell_example_is_run_or_excused)
        # A command that writes files (lineage --out lineage.svg, render DIR) writes them in a
        # temporary folder; the others run in the checkout, as the guide says.
        writes = {"--out", "render"} & set(run.args)
        monkeypatch.chdir(tmp_path if writes else ROOT)
        for name, value in head.items():
            monkeypatch.setenv(name, value)
        if run.stage:
            monkeypatch.setenv(STAGE_VARIABLE, run.stage)
        result = _invoke(run, part)
        where = f"{example.page}:{example.line}: `{part}`"
        _check(where, result, expected_exit=2 if _refuses(example) else 0)
        _check_quoted(where, result.output, example.quoted)


def _check(where: str, result: Any, expected_exit: int) -> None:
    crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
    assert (
        not crashed and "Traceback" not in result.output
    ), f"{where} crashed:\n{result.output}\n{result.exception!r}"
    assert (
        result.exit_code == expected_exit
    ), f"{where} exits {result.exit_code}, the guide shows {expected_exit}:\n{result.output}"


def _check_quoted(where: str, output: str, quoted: tuple[str, ...]) -> None:
    printed = _normalized(output)
    position = 0
    chunks: list[list[str]] = [[]]
    for line in quoted:  # a line of "..." skips lines
        if line.strip() == "...":
            chunks.append([])
        else:
            chunks[-1].append(line)
    for chunk in chunks:
        wanted = _normalized("\n".join(chunk))
        if not wanted:
            continue
        found = printed.find(wanted, position)
        assert found >= 0, f"{where} does not print:\n{wanted}\n\nit printed:\n{printed}"
        position = found + len(wanted)
