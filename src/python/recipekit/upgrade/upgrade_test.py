"""`recipekit upgrade` between two recorded commits of a made-up framework (testdata/old and
testdata/new: the touched files only), in a checkout made for the test."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from recipekit.cli.recipekit_cli import cli
from recipekit.upgrade import report
from recipekit.upgrade.pins import git_blob_id
from recipekit.upstream import anchors

TESTDATA = Path(__file__).parent / "testdata"
LABEL = "demo/v1"
OLD_COMMIT = "a" * 40
NEW_COMMIT = "b" * 40
FILES = ("configs/base.yaml", "demo/algo.py")


def _anchor(line_text: str) -> str:
    source = (TESTDATA / "old/demo/algo.py").read_text()
    line = next(n for n, text in enumerate(source.splitlines(), 1) if line_text in text)
    site = anchors.site_at(anchors.rule_sites(source), line)
    assert site is not None
    return site.anchor


def _checkout(root: Path) -> Path:
    pinned = ",\n".join(
        f'  ["{path}", "{git_blob_id((TESTDATA / "old" / path).read_bytes())}"]' for path in FILES
    )
    manifest = root / "3rdparty/reference/manifest.toml"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(
        "# Made up for upgrade_test.\n"
        f'[sources."{LABEL}"]\nrepository = "example/demo"\ncommit = "{OLD_COMMIT}"\n'
        f"files = [\n{pinned},\n]\n"
    )
    for path in FILES:
        target = root / ".reference" / LABEL / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(TESTDATA / "old" / path, target)
    catalogue = root / "src/python/recipekit/rule_catalogue"
    catalogue.mkdir(parents=True)
    rules = {
        "demo.setup.steps-positive": "steps must be positive",
        "demo.setup.seed-not-negative": "seed must not be negative",
        "demo.setup.batch-size-even": "batch_size must be even",
    }
    catalogue.joinpath("demo.toml").write_text(
        "".join(
            f'[[rule]]\nid = "{rule}"\nsource = "{LABEL}"\nfile = "demo/algo.py"\n'
            f'anchor = "{_anchor(text)}"\n\n'
            for rule, text in rules.items()
        )
    )
    recipe = root / "recipes/demo.py"
    recipe.parent.mkdir()
    recipe.write_text(
        '# Starts from configs/base.yaml.\nOVERRIDES = {"algo.batch_size": 128, "algo.seed": 7}\n'
    )
    return root


def _upgrade(checkout: Path, monkeypatch: pytest.MonkeyPatch, *extra: str) -> Result:
    monkeypatch.chdir(checkout)
    return CliRunner().invoke(
        cli,
        [
            "upgrade",
            LABEL,
            "--to",
            NEW_COMMIT,
            "--source",
            str(TESTDATA / "new"),
            "--report",
            "report.md",
            "--html",
            "report.html",
            *extra,
        ],
    )


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Result, str]:
    checkout = _checkout(tmp_path_factory.mktemp("checkout"))
    with pytest.MonkeyPatch.context() as monkeypatch:
        result = _upgrade(checkout, monkeypatch)
    return checkout, result, (checkout / "report.md").read_text()


def test_the_report_lists_decisions_and_exits_1(upgraded: tuple[Path, Result, str]) -> None:
    _, result, text = upgraded
    assert result.exit_code == 1, result.output + result.stderr
    assert "decisions open" in result.stderr
    assert text.startswith(f"# Upgrade of `{LABEL}`: `{OLD_COMMIT[:12]}` -> `{NEW_COMMIT[:12]}`")


def test_the_report_is_also_a_page_of_the_html_report(upgraded: tuple[Path, Result, str]) -> None:
    checkout, _, _ = upgraded
    page = (checkout / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and f"Upgrade of {LABEL}" in page
    assert "rule vanished demo.setup.batch-size-even" in page and "open</td>" in page


def test_the_manifest_pins_the_new_commit_and_blobs(upgraded: tuple[Path, Result, str]) -> None:
    checkout, _, _ = upgraded
    manifest = tomllib.loads((checkout / "3rdparty/reference/manifest.toml").read_text())
    source = manifest["sources"][LABEL]
    assert source["commit"] == NEW_COMMIT
    assert dict(source["files"]) == {
        path: git_blob_id((TESTDATA / "new" / path).read_bytes()) for path in FILES
    }
    for path in FILES:
        fetched = checkout / ".reference" / LABEL / path
        assert fetched.read_bytes() == (TESTDATA / "new" / path).read_bytes()


def test_a_moved_assert_is_re_anchored(upgraded: tuple[Path, Result, str]) -> None:
    _, _, text = upgraded
    # Same statement, three lines down: its anchor holds, its line is derived.
    assert "| `demo.setup.steps-positive` | demo/algo.py | 12 | 15 |" in text
    assert "rule changed demo.setup.steps-positive" not in text


def test_a_changed_condition_and_a_new_raise_are_listed(upgraded: tuple[Path, Result, str]) -> None:
    _, _, text = upgraded
    assert "`rule changed demo.setup.seed-not-negative`" in text
    assert "if cfg['seed'] < 0: raise ValueError('seed must not be negative')" in text
    assert "if cfg['seed'] < 1: raise ValueError('seed must not be negative')" in text
    new_sites = text.split("### New failure sites")[1].split("###")[0]
    assert "demo/algo.py:19 | raise | `if total > 10 ** 9: raise ValueError(" in new_sites


def test_a_vanished_rule_is_reported(upgraded: tuple[Path, Result, str]) -> None:
    _, _, text = upgraded
    assert "`rule vanished demo.setup.batch-size-even`" in text


def test_a_renamed_key_is_migrated_in_a_recipe(upgraded: tuple[Path, Result, str]) -> None:
    checkout, _, text = upgraded
    recipe = (checkout / "recipes/demo.py").read_text()
    assert '"algo.global_batch_size": 128' in recipe and "algo.batch_size" not in recipe
    assert "| `algo.batch_size` | `algo.global_batch_size` | recipes/demo.py | yes |" in text
    # The declared key too, with the evidence for the rename.
    assert "demo.algo:AlgoConfig" in text and "same type int; names" in text
    # A changed default no recipe sets is listed, not asked about.
    assert "default changed | `configs/base.yaml` | `algo.steps` | 100 | 200 | none |" in text


def test_recorded_decisions_make_the_run_clean(
    upgraded: tuple[Path, Result, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, _, text = upgraded
    open_table = text.split("## Decisions open")[1].split("##")[0]
    subjects = [line.split("`")[1] for line in open_table.splitlines() if line.startswith("| `")]
    assert subjects
    checkout = _checkout(tmp_path)
    recorded = checkout / f"3rdparty/reference/upgrades/demo@v1@{NEW_COMMIT[:12]}.toml"
    recorded.parent.mkdir(parents=True)
    recorded.write_text(
        "".join(f'[[decision]]\nsubject = "{s}"\nnote = "reviewed"\n\n' for s in subjects)
    )
    result = _upgrade(checkout, monkeypatch)
    assert result.exit_code == 0, result.output + result.stderr
    assert "0 are open" in (checkout / "report.md").read_text()


def test_a_usage_error_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkout = _checkout(tmp_path)
    manifest = (checkout / "3rdparty/reference/manifest.toml").read_text()
    monkeypatch.chdir(checkout)
    result = CliRunner().invoke(
        cli, ["upgrade", "demo/v2", "--to", NEW_COMMIT, "--source", str(TESTDATA / "new")]
    )
    assert result.exit_code == 2
    assert "did you mean 'demo/v1'" in result.stderr
    manifest_path = checkout / "3rdparty/reference/manifest.toml"
    manifest_path.write_text(
        manifest + '[wheels."demo/1.0"]\nurl = "https://example.invalid/demo.whl"\n'
        'sha256 = "00"\nfiles = []\n'
    )
    wheel = CliRunner().invoke(cli, ["upgrade", "demo/1.0", "--to", NEW_COMMIT])
    assert wheel.exit_code == 2 and "a wheel pinned by URL and sha256" in wheel.stderr
    manifest_path.write_text(manifest)
    short = CliRunner().invoke(cli, ["upgrade", LABEL, "--to", "bbbb"])
    assert short.exit_code == 2 and "40 lowercase hex" in short.stderr
    assert (checkout / "3rdparty/reference/manifest.toml").read_text() == manifest
    assert not (checkout / "report.md").exists()


def test_decisions_may_name_a_family() -> None:
    from recipekit.upgrade.decisions import note_for

    recorded = {"rule vanished demo.*": "the check goes with it"}
    assert note_for(recorded, "rule vanished demo.setup.x") == "the check goes with it"
    assert note_for(recorded, "rule changed demo.setup.x") is None
    assert report.Decision("a", "b").subject == "a"
