"""The user's guide (issue 45): it builds with no warning; what it tells the reader to run exists.

- ``sphinx-build -W`` (the ``docs:build`` Pex, Sphinx from the locked ``docs`` resolve) into a
  temporary folder: a dangling cross-reference, a page in no toctree, a docstring autodoc cannot
  read or a broken directive fails here. The built site has its search index and its pictures.
- Every ``recipekit ...`` command and every stage launcher command in the guide's code blocks
  (and inline code) names a command and options that the click commands have, and every
  ``./pants run recipes/<folder>:<stage>`` a stage target that exists.
- Every shell example is run, and what it quotes checked, by ``examples_test.py``.
- The built site opens in Debian's headless Chromium with the network off: its search finds
  "layout", and screenshots of the start page and of one guide go to dist/docs/screenshots/.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from recipekit.cli.recipekit_cli import cli as recipekit_cli
from recipekit.cli.stage_launcher import cli as stage_cli

ROOT = Path.cwd()
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "_generated" not in p.parts)
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")


def _blocks(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def _command_lines(language: str, block: str) -> list[str]:
    """The shell commands of a block: continuation lines joined, comments and output dropped."""
    if language not in ("bash", "sh", "console", ""):
        return []
    joined = re.sub(r"\\\n\s*", " ", block)
    lines = []
    for line in joined.splitlines():
        line = line.strip()
        if language == "console" or line.startswith("$ "):
            if not line.startswith("$ "):
                continue
            line = line[2:]
        lines.append(line.split("  #")[0].split(" # ")[0].strip())
    return [line for line in lines if line]


def _cli_invocations(line: str) -> list[tuple[click.Command, str, list[str]]]:
    """(root command, how it was named, the words after it) for each CLI call in a line."""
    found: list[tuple[click.Command, str, list[str]]] = []
    for part in re.split(r"&&|\|\||;|\|", line):
        words = part.split()
        if not words:
            continue
        if words[0] == "recipekit":
            found.append((recipekit_cli, "recipekit", words[1:]))
        elif words[:3] == ["./pants", "run", "src/python/recipekit:cli"] and "--" in words:
            found.append((recipekit_cli, "recipekit", words[words.index("--") + 1 :]))
        elif words[:2] == ["./pants", "run"] and len(words) > 2 and words[2].startswith("recipes/"):
            rest = words[words.index("--") + 1 :] if "--" in words else []
            found.append((stage_cli, words[2], rest))
    return found


def _resolve(root: click.Command, words: list[str]) -> tuple[click.Command, list[str]]:
    """Walk the command tree along the words; return the command reached and its options."""
    command: click.Command = root
    options: list[str] = []
    for word in words:
        if isinstance(command, click.Group) and not word.startswith("-"):
            sub = command.commands.get(word)
            if sub is None:
                if word.isupper() or not word.isidentifier():
                    break  # a placeholder (TARGET) or an argument: the group takes it
                raise AssertionError(f"{word!r} is no command of {command.name!r}")
            command = sub
            continue
        options += re.findall(r"^--?[a-zA-Z][\w-]*", word)
    return command, options


def _option_names(command: click.Command) -> set[str]:
    names = {"--help", "-h"}
    for param in command.params:
        names.update(getattr(param, "opts", ()))
        names.update(getattr(param, "secondary_opts", ()))
    return names


def _commands_named() -> list[tuple[str, str]]:
    """(page, command text) for every CLI call in a code block or inline code span."""
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for language, block in _blocks(text):
            out += [(page.name, line) for line in _command_lines(language, block)]
        prose = FENCE.sub("", text)
        out += [
            (page.name, span)
            for span in INLINE.findall(prose)
            if span.startswith(("recipekit ", "./pants run "))
        ]
    return out


def test_the_guide_names_only_commands_and_options_that_exist() -> None:
    problems = []
    checked = 0
    for page, line in _commands_named():
        for root, named, words in _cli_invocations(line):
            # Placeholders in syntax summaries ([--a | --b], PATH=VALUE) are words, not options.
            words = [w.strip("[]") for w in words if w not in ("|", "...")]
            try:
                command, options = _resolve(root, words)
            except AssertionError as exc:
                problems.append(f"{page}: {line}: {exc}")
                continue
            checked += 1
            unknown = sorted(set(options) - _option_names(command))
            if unknown:
                problems.append(f"{page}: {line}: {command.name} has no option {unknown}")
            if named.startswith("recipes/") and "<" not in named:  # not recipes/<folder>:<stage>
                # Every stage target has its compiled plan checked in (snapshots_test).
                folder, _, stage = named.partition(":")
                stage = stage.removesuffix("-launcher")
                if not (ROOT / folder / "snapshots" / stage / "plan.yaml").is_file():
                    problems.append(f"{page}: {line}: no stage target {named}")
    assert checked > 40, f"only {checked} commands found in the guide"
    assert not problems, "\n".join(problems)


def _build(out: Path) -> subprocess.CompletedProcess[str]:
    pex = ROOT / "docs" / "build.pex"
    program = (
        [sys.executable, str(pex)] if pex.exists() else [sys.executable, str(DOCS / "build.py")]
    )
    env = {**os.environ, "RECIPEKIT_DOCS_ROOT": str(ROOT)}
    return subprocess.run(
        [*program, str(out)], capture_output=True, text=True, env=env, timeout=540, check=False
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs") / "html"
    built = _build(out)
    assert built.returncode == 0, f"sphinx-build -W failed:\n{built.stdout}\n{built.stderr}"
    return out


def test_the_guide_builds_with_warnings_as_errors(site: Path) -> None:
    for page in PAGES:
        relative = page.relative_to(DOCS).with_suffix(".html")
        assert (site / relative).is_file(), f"{relative} was not built"
    generated = ["stages", "memory-terms", "lineage", "rules-nemo-rl", "rules-megatron-core"]
    for name in generated:
        assert (site / "reference" / "_generated" / f"{name}.html").is_file(), name


def test_its_search_finds_layout(site: Path) -> None:
    index = (site / "searchindex.js").read_text(encoding="utf-8")
    assert '"layout"' in index
    assert "guides/will-it-fit" in index


def test_each_guide_page_renders_its_pictures(site: Path) -> None:
    for page in PAGES:
        pictures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page.read_text(encoding="utf-8"))
        html = (site / page.relative_to(DOCS).with_suffix(".html")).read_text(encoding="utf-8")
        for picture in pictures:
            name = Path(picture).name
            assert f"_images/{name}" in html, f"{page.name} does not show {name}"
            assert (site / "_images" / name).is_file()


def test_the_reference_is_generated_from_the_code(site: Path) -> None:
    cli = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    for name, command in recipekit_cli.commands.items():  # each command has its section
        assert command.hidden or f"recipekit {name}" in cli, name
    rules = (site / "reference" / "_generated" / "rules-vllm.html").read_text(encoding="utf-8")
    assert "vllm/config/model.py:1213" in rules  # each rule with its upstream line
    stages = (site / "reference" / "_generated" / "stages.html").read_text(encoding="utf-8")
    assert "rlvr" in stages and "dapo-gb200" in stages


def _chromium(url: str, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Debian's headless Chromium with the network off (``unshare -n``), as the report's test."""
    browser = shutil.which("chromium")
    if browser is None or shutil.which("unshare") is None:
        pytest.fail("needs Debian's chromium and unshare: run tools/install-system-deps")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"]
    command = ["unshare", "-n", browser, *flags, f"--user-data-dir={profile}", *extra, url]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_the_site_opens_in_a_browser_and_its_search_finds_layout(
    site: Path, tmp_path: Path
) -> None:
    search = _chromium(
        (site / "search.html").as_uri() + "?q=layout",
        tmp_path / "profile-search",
        "--virtual-time-budget=5000",
        "--dump-dom",
    )
    assert search.returncode == 0, search.stderr
    assert "will-it-fit.html" in search.stdout, "the search for 'layout' finds no guide page"
    # Screenshots of the start page and of one guide, kept with the checkout's build output.
    shots = Path(os.environ.get("RECIPEKIT_CHECKOUT", tmp_path)) / "dist" / "docs" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    for name, page in (("start", "index.html"), ("will-it-fit", "guides/will-it-fit.html")):
        png = shots / f"{name}.png"
        png.unlink(missing_ok=True)
        shot = _chromium(
            (site / page).as_uri(),
            tmp_path / f"profile-{name}",
            f"--screenshot={png}",
            "--window-size=1400,1800",
        )
        assert shot.returncode == 0, shot.stderr
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.stat().st_size > 20_000, f"{png} looks blank"
