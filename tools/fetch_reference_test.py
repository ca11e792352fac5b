from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tools.fetch_reference import MANIFEST, git_blob_id, main, nemo_rl_expand

PARENT = "a: 1\nb:\n  c: 2\n  d: ${mul:${a},3}\nsection:\n  x: 1\n  y: 2\n"
CHILD = "defaults: parent.yaml\na: 5\nsection:\n  _override_: true\n  z: 3\n"


def _repo(tmp_path: Path, mirror: Path, files: dict[str, bytes], derived: str = "") -> Path:
    """A checkout holding only a manifest that pins ``files`` (label "up/main")."""
    root = tmp_path / "repo"
    (root / MANIFEST).parent.mkdir(parents=True)
    rows = "\n".join(f'  ["{path}", "{git_blob_id(data)}"],' for path, data in files.items())
    (root / MANIFEST).write_text(
        f'[fetch]\nmirrors = []\n\n[sources."up/main"]\nrepository = "o/r"\ncommit = "{"0" * 40}"\n'
        f"files = [\n{rows}\n]\n{derived}"
    )
    for path, data in files.items():
        (mirror / "up/main" / path).parent.mkdir(parents=True, exist_ok=True)
        (mirror / "up/main" / path).write_bytes(data)
    return root


@pytest.fixture()
def no_github(monkeypatch: pytest.MonkeyPatch) -> None:
    # GitHub through a proxy on a closed loopback port: unreachable, without leaving loopback.
    for name in ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.delenv("RECIPEKIT_REFERENCE_MIRROR", raising=False)


def test_blob_id_is_gits(tmp_path: Path) -> None:
    data = b"policy:\n  model_name: x\n"
    (tmp_path / "f").write_bytes(data)
    want = subprocess.run(
        ["git", "hash-object", str(tmp_path / "f")], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert git_blob_id(data) == want


def test_mirror_fills_the_folder_and_a_second_run_only_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_github: None
) -> None:
    mirror = tmp_path / "mirror"
    root = _repo(tmp_path, mirror, {"configs/parent.yaml": PARENT.encode()})
    assert main(["--root", str(root), "--mirror", str(mirror)]) == 0
    assert (root / ".reference/up/main/configs/parent.yaml").read_text() == PARENT
    # Not a terminal: the fetch says what it does in timestamped lines on stderr, start and end.
    said = [
        line.split(": ", 2)[-1]
        for line in capsys.readouterr().err.splitlines()
        if ": files from " in line
    ]
    assert said[0] == "started (1)" and said[-1].startswith("done: 1 of 1 (100%)"), said
    assert main(["--root", str(root)]) == 0  # no source needed: everything is verified in place
    assert "is current (1 files verified)" in capsys.readouterr().out


def test_a_file_whose_blob_differs_is_refused_and_not_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_github: None
) -> None:
    mirror = tmp_path / "mirror"
    root = _repo(tmp_path, mirror, {"configs/parent.yaml": PARENT.encode()})
    (mirror / "up/main/configs/parent.yaml").write_text(PARENT + "# edited\n")
    assert main(["--root", str(root), "--mirror", str(mirror)]) == 1
    err = capsys.readouterr().err
    assert "up/main/configs/parent.yaml" in err and "the manifest pins" in err
    assert not (root / ".reference/up/main/configs/parent.yaml").exists()
    assert not (root / ".reference/.verified").exists()


def test_with_no_source_it_stops_in_one_line_naming_both_fixes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_github: None
) -> None:
    root = _repo(tmp_path, tmp_path / "mirror", {"configs/parent.yaml": PARENT.encode()})
    assert main(["--root", str(root), "--timeout", "2"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "GitHub" in err and "RECIPEKIT_REFERENCE_MIRROR" in err


def test_derived_files_follow_their_rule_and_pinned_hash(
    tmp_path: Path, no_github: None, capsys: pytest.CaptureFixture[str]
) -> None:
    cell = {"cell_type": "code", "source": ["%%writefile /x/child.yaml\n", "\n", CHILD]}
    notebook = json.dumps({"cells": [{"cell_type": "markdown", "source": []}, cell]}).encode()
    mirror = tmp_path / "mirror"
    expanded = {"a": 5, "b": {"c": 2, "d": 15}, "section": {"z": 3}}
    import hashlib

    content = hashlib.sha256(json.dumps(expanded, sort_keys=True).encode()).hexdigest()
    derived = (
        '\n[[derived]]\nlocal = "up/main/configs/child.yaml"\nrule = "notebook-cell"\n'
        f'source = "up/main/book.ipynb"\ncell = 1\nblob = "{git_blob_id(CHILD.encode())}"\n'
        '\n[[derived]]\nlocal = "expanded/child.yaml"\nrule = "nemo-rl-expand"\n'
        f'source = "up/main/configs/child.yaml"\ncontent_sha256 = "{content}"\n'
    )
    files = {"configs/parent.yaml": PARENT.encode(), "book.ipynb": notebook}
    root = _repo(tmp_path, mirror, files, derived)
    assert main(["--root", str(root), "--mirror", str(mirror)]) == 0
    out = root / ".reference"
    assert (out / "up/main/configs/child.yaml").read_text() == CHILD
    assert yaml.safe_load((out / "expanded/child.yaml").read_text()) == expanded

    # A pinned hash the expansion does not give is an error, not a silent rewrite.
    wrong = derived.replace(content, "0" * 64)
    (out / ".verified").unlink()
    (root / MANIFEST).write_text((root / MANIFEST).read_text().replace(derived, wrong))
    assert main(["--root", str(root), "--mirror", str(mirror)]) == 1
    assert "the manifest pins" in capsys.readouterr().err


def test_expansion_merges_parents_and_honours_override(tmp_path: Path) -> None:
    (tmp_path / "parent.yaml").write_text(PARENT)
    (tmp_path / "child.yaml").write_text(CHILD)
    assert nemo_rl_expand(tmp_path / "child.yaml") == {
        "a": 5,
        "b": {"c": 2, "d": 15},
        "section": {"z": 3},
    }


def test_a_pinned_wheel_is_unpacked_after_its_sha256_is_checked(
    tmp_path: Path, no_github: None, capsys: pytest.CaptureFixture[str]
) -> None:
    import hashlib
    import zipfile

    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pkg/config.py", "assert True\n")
        archive.writestr("pkg/other.py", "x = 1\n")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    section = (
        f'\n[wheels."pkg/1.0"]\nurl = "{wheel.as_uri()}"\nsha256 = "{digest}"\n'
        'files = ["pkg/config.py"]\n'
    )
    mirror = tmp_path / "mirror"
    root = _repo(tmp_path, mirror, {"configs/parent.yaml": PARENT.encode()}, section)
    assert main(["--root", str(root), "--mirror", str(mirror)]) == 0
    assert (root / ".reference/pkg/1.0/pkg/config.py").read_text() == "assert True\n"
    assert not (root / ".reference/pkg/1.0/pkg/other.py").exists()

    # A wheel whose bytes differ from the pinned sha256 is refused.
    (root / ".reference/pkg/1.0/pkg/config.py").unlink()
    (root / MANIFEST).write_text((root / MANIFEST).read_text().replace(digest, "0" * 64))
    assert main(["--root", str(root), "--mirror", str(mirror)]) == 1
    assert "the manifest pins" in capsys.readouterr().err


def test_an_unmirrored_file_the_mirror_lacks_is_skipped_and_others_still_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_github: None
) -> None:
    mirror = tmp_path / "mirror"
    files = {"configs/parent.yaml": PARENT.encode(), "src/rules.py": b"assert x\n"}
    root = _repo(tmp_path, mirror, files)
    manifest = root / MANIFEST
    manifest.write_text(manifest.read_text() + 'unmirrored = ["src/rules.py"]\n')
    (mirror / "up/main/src/rules.py").unlink()
    assert main(["--root", str(root), "--mirror", str(mirror)]) == 0
    assert "1 unmirrored files are not in" in capsys.readouterr().out
    assert (root / ".reference/up/main/configs/parent.yaml").is_file()
    assert not (root / ".reference/up/main/src/rules.py").exists()
    # A copy the mirror does hold is verified like any other.
    (mirror / "up/main/src/rules.py").write_bytes(b"assert y\n")
    assert main(["--root", str(root), "--mirror", str(mirror)]) == 1
    assert "up/main/src/rules.py" in capsys.readouterr().err
    # A file not named unmirrored still fails when the mirror lacks it.
    (mirror / "up/main/src/rules.py").unlink()
    (mirror / "up/main/configs/parent.yaml").unlink()
    (root / ".reference/up/main/configs/parent.yaml").unlink()
    assert main(["--root", str(root), "--mirror", str(mirror)]) == 1
    assert "configs/parent.yaml is not in the mirror" in capsys.readouterr().err
