"""The review report in a real browser: Debian's headless Chromium opens the file with the
network off (``unshare -n``), takes a screenshot, and the page shows every section with no
console error."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from recipekit.lineage.status import StageState, StageStatus
from recipekit.loading import load_object
from recipekit.plan import make_plan
from recipekit.review import html_report
from recipekit.review.plandiff import diff_stages

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    # Console messages reach stderr as "INFO:CONSOLE(...)" lines.
    "--enable-logging=stderr",
    "--v=0",
]
SECTIONS = ("plan", "memory", "layout", "lineage", "diff")


def _chromium(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    browser = shutil.which("chromium")
    if browser is None or shutil.which("unshare") is None:
        pytest.fail("needs Debian's chromium and unshare: run tools/install-system-deps")
    command = ["unshare", "-n", browser, *FLAGS, f"--user-data-dir={profile}", *extra]
    return subprocess.run(
        [*command, page.as_uri()], capture_output=True, text=True, timeout=120, check=False
    )


def console_messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if re.search(r":CONSOLE[:(]", line)]


def _report(tmp_path: Path) -> Path:
    from recipekit.lineage.drawing import draw_svg
    from recipes.super35.lineage import SUPER35

    plan = make_plan(load_object("recipes.super35.rl:rlvr"))
    running = StageStatus(state=StageState.RUNNING, job="12", elapsed="00:03:10", step=4)
    changes = {
        "dapo_gb200 -> dapo_b200": diff_stages(
            load_object("recipes.super3.dapo:dapo_gb200"),
            load_object("recipes.super3.dapo:dapo_b200"),
        )
    }
    sections = [
        *html_report.stage_sections(plan),
        html_report.lineage_section(draw_svg(SUPER35, status={"rlvr": running}), with_status=True),
        html_report.diff_section("dapo_gb200 -> dapo_b200", changes),
    ]
    page = tmp_path / "report.html"
    page.write_text(html_report.page("stage rlvr", sections))
    return page


def test_the_report_renders_offline_with_no_console_error(tmp_path: Path) -> None:
    page = _report(tmp_path)
    screenshot = tmp_path / "report.png"
    shot = _chromium(
        page, tmp_path / "profile-1", f"--screenshot={screenshot}", "--window-size=1400,3000"
    )
    assert shot.returncode == 0, shot.stderr
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # A blank 1400 x 3000 page compresses to a few KB; this one holds text, bars and a graph.
    assert screenshot.stat().st_size > 50_000
    assert console_messages(shot.stderr) == []
    dom = _chromium(page, tmp_path / "profile-2", "--dump-dom")
    assert dom.returncode == 0, dom.stderr
    assert console_messages(dom.stderr) == []
    for section in SECTIONS:
        assert f'<section id="{section}">' in dom.stdout, section
    assert 'id="stage:rlvr"' in dom.stdout and "state-running" in dom.stdout
    assert dom.stdout.count('class="memory-bar"') == 2  # generation and training
    assert "<td>config.cluster.num_nodes</td>" in dom.stdout  # one of the diff's rows
    # Nothing the page loads comes from elsewhere.
    assert not re.search(r'(src|href)="(https?:)?//', dom.stdout)


def test_a_page_that_logs_an_error_is_caught(tmp_path: Path) -> None:
    # The check above can fail: a script error reaches the console lines it reads.
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><script>notDefined();</script></body></html>")
    run = _chromium(page, tmp_path / "profile", "--dump-dom")
    messages = console_messages(run.stderr)
    assert any("notDefined is not defined" in m for m in messages), run.stderr


def test_a_long_plan_line_wraps_in_the_page(tmp_path: Path) -> None:
    # A plan's longest lines (a path, a list of keys) wrap: nothing to scroll sideways to.
    long = "run.model <- /artifacts/" + "super35-sft-model/" * 40 + "v0 " + "x" * 300
    page = tmp_path / "wide.html"
    measure = (
        "<script>const pre = document.querySelector('pre');"
        "document.body.dataset.fits = String(pre.scrollWidth <= pre.clientWidth"
        " && document.documentElement.scrollWidth <= window.innerWidth);</script>"
    )
    text = html_report.page("wide", [html_report.text_section("plan", "Plan", long)])
    page.write_text(text.replace("</body>", measure + "</body>"))
    dom = _chromium(page, tmp_path / "profile", "--window-size=800,600", "--dump-dom")
    assert dom.returncode == 0, dom.stderr
    assert 'data-fits="true"' in dom.stdout, dom.stdout[-2000:]
