"""Fault injection on the artifact store: kill -9 and a full disk at every phase of import and
publish, concurrent publishers, a damaged index and damaged files.

Each scenario runs in a mount namespace of its own (``unshare --mount``, as root: tests run
as root here and in CI) on an 8 MiB tmpfs, so a full disk is the kernel's own ENOSPC and fills
nothing else. This file is both the test and, run as a script inside the namespace, the
scenarios: an operation runs in a forked child whose phase hook (``store._phase``) kills it
or fills the disk; the parent then checks what the store lists. After every fault the store
is the state before, or the state after (once the index was committed), never anything
between: every listed version is whole by its manifest, nothing else is left, and the same
import or publish run again succeeds.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

IMPORT_PHASES = ("copying", "files", "moved", "marker", "links", "index")
PUBLISH_PHASES = ("files", "marker", "links", "index")
FIRST_PHASES = {"import": IMPORT_PHASES, "publish": PUBLISH_PHASES}
# After the index is renamed into place the version exists: only renames follow.
COMMITTED = "index"
DATA, MODEL, RUN = "super35-sft-data", "super35-rl-rlvr-model", "rlvr-66b782458180"
TMPFS_SIZE = "8m"


def _in_namespace(scenario: str) -> dict[str, Any]:
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, __file__, scenario],
        capture_output=True,
        text=True,
        timeout=55,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def _without_namespaces() -> None:
    """Skip a test that needs a mount namespace where none can be made, or fail it in CI (the
    CI variable set): there it would otherwise pass as a skip and prove nothing."""
    if os.geteuid() == 0 and shutil.which("unshare") is not None:
        return
    reason = "a mount namespace needs root and unshare(1) (tests run as root here and in CI)"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI is set, so not skipped")
    pytest.skip(reason)


@pytest.fixture()
def mount_namespaces() -> None:
    _without_namespaces()


needs_root = pytest.mark.usefixtures("mount_namespaces")


def test_without_namespaces_a_fault_test_fails_in_ci_and_skips_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set, so not skipped"):
        _without_namespaces()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="needs root"):
        _without_namespaces()


@needs_root
@pytest.mark.parametrize("fault", ["kill", "fill"])
def test_an_import_killed_or_out_of_space_at_any_phase_leaves_a_whole_store(fault: str) -> None:
    results = _in_namespace(f"import-{fault}")
    assert set(results) == set(IMPORT_PHASES)
    for phase, found in results.items():
        assert found["problems"] == [], (phase, found)
        committed = phase == COMMITTED
        assert found["listed"] == ["blend-1", *(["blend-2"] if committed else [])], phase
        if fault == "kill":
            assert found["status"] == -signal.SIGKILL, phase
        elif not committed:
            # One line, exit 2: no traceback (3), and the store took the space back.
            assert found["status"] == 2 and "no space left" in found["message"], (phase, found)
        assert found["debris"] == [], phase
        assert found["retried"] == ["blend-1", "blend-2"], phase


@needs_root
@pytest.mark.parametrize("fault", ["kill", "fill"])
def test_a_publish_killed_or_out_of_space_at_any_phase_leaves_a_whole_store(fault: str) -> None:
    results = _in_namespace(f"publish-{fault}")
    assert set(results) == set(PUBLISH_PHASES)
    before, after = [[10, 20], [10, 20, 30, 40]]
    for phase, found in results.items():
        assert found["problems"] == [], (phase, found)
        assert found["listed"] == (after if phase == COMMITTED else before), phase
        if fault == "fill" and phase != COMMITTED:
            assert found["status"] == 2 and "no space left" in found["message"], (phase, found)
        assert found["debris"] == [], phase
        assert found["retried"] == after, phase


@needs_root
def test_an_import_larger_than_the_disk_is_one_line_and_leaves_no_copy() -> None:
    found = _in_namespace("import-too-large")
    assert found["status"] == 2 and "no space left" in found["message"], found
    assert found["listed"] == ["blend-1"] and found["problems"] == []
    # The partial copy is gone: the disk is as full as before the import.
    assert found["used_after"] <= found["used_before"] + 64 * 1024, found


@needs_root
def test_concurrent_publishers_and_importers_number_each_version_once() -> None:
    found = _in_namespace("concurrent")
    assert found["statuses"] == [0] * len(found["statuses"])
    assert found["problems"] == []
    assert found["versions"] == list(range(len(found["versions"])))
    # Each (run, step) once: two runs of 5 steps, and 4 imports.
    assert sorted(found["published"]) == sorted(
        [[run, step] for run in ("a", "b") for step in (10, 20, 30, 40, 50)]
    )
    assert sorted(found["imported"]) == ["i0", "i1", "i2", "i3"]


@needs_root
def test_a_damaged_index_or_damaged_files_are_found_and_named() -> None:
    found = _in_namespace("corruption")
    assert found["list_status"] == 2 and "the index is damaged" in found["list_stderr"]
    assert "Traceback" not in found["list_stderr"]
    assert found["verify_rebuilt_status"] == 0, found
    assert "rebuilt versions.json" in found["verify_rebuilt_out"]
    assert found["verify_damaged_status"] == 1, found
    damaged = found["verify_damaged_out"]
    assert f"{found['truncated']} is 0 bytes" in damaged, damaged
    assert f"{found['flipped']} does not hold what its manifest's sha256 says" in damaged
    assert found["verify_one_status"] == 0, found


@needs_root
@pytest.mark.parametrize("fault", ["kill", "fill"])
def test_a_first_version_that_failed_before_its_index_is_not_published(fault: str) -> None:
    results = _in_namespace(f"first-{fault}")
    assert set(results) == {
        f"{kind}-{phase}" for kind, phases in FIRST_PHASES.items() for phase in phases
    }
    for where, found in results.items():
        committed = where.endswith(COMMITTED)
        assert found["problems"] == [] and found["debris"] == [], (where, found)
        assert bool(found["listed"]) == committed, (where, found)
        if fault == "fill" and not committed:
            assert found["status"] == 2 and "no space left" in found["message"], (where, found)
            assert "nothing of it was published" in found["message"], (where, found)
        assert found["retried"], where


@needs_root
def test_an_import_killed_on_top_of_a_restored_index_loses_no_committed_version() -> None:
    found = _in_namespace("rollback")
    for phase, state in found.items():
        assert state["problems"] == [] and state["debris"] == [], (phase, state)
        assert state["listed"][:4] == ["blend-0", "blend-1", "blend-2", "blend-3"], phase
        assert state["retried"] == ["blend-0", "blend-1", "blend-2", "blend-3", "blend-x"]


@needs_root
def test_a_read_only_store_is_listed_and_verified_and_refuses_changes_in_one_line() -> None:
    found = _in_namespace("read-only")
    assert found["verify_status"] == 0 and "v1 ok" in found["verify_out"], found
    assert found["list_status"] == 0 and "blend-2" in found["list_out"], found
    assert found["import_status"] == 2, found
    assert "read-only" in found["import_out"] and "Traceback" not in found["import_out"]
    # An index behind the markers: reported, not repaired, and verify fails.
    assert found["behind_status"] == 1, found
    assert "not repaired (the store is read-only here)" in found["behind_out"], found
    assert found["unchanged"], found


@needs_root
@pytest.mark.parametrize("exhausted", ["inodes", "bytes"])
def test_a_store_out_of_inodes_or_space_refuses_changes_and_still_verifies(
    exhausted: str,
) -> None:
    found = _in_namespace(f"exhausted-{exhausted}")
    for command in ("import", "publish"):
        assert found[f"{command}_status"] == 2, found
        assert "no space left" in found[f"{command}_out"], found
        assert "Traceback" not in found[f"{command}_out"], found
    # The stat of a touched file cannot be recorded: a note, and the version is still ok.
    assert found["verify_status"] == 0, found
    assert "stat not recorded" in found["verify_out"] and "v0 ok" in found["verify_out"]
    assert found["listed"] == ["blend-1"] and found["problems"] == [], found


# --- the scenarios, run inside the namespace -------------------------------------------------


def _fill(mount: Path) -> None:
    """Write one file until the tmpfs refuses: the next write anywhere on it is ENOSPC."""
    with open(mount / "filler", "ab") as out:
        try:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc


def _in_child(operation: Callable[[], object], hook: Callable[[str], None]) -> tuple[int, str]:
    """Run ``operation`` in a forked child with ``hook`` at each phase: its exit status (the
    negative signal when killed) and what it printed as an error."""
    from recipekit.errors import RecipeError
    from recipekit.lineage import store

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        store._phase = hook  # type: ignore[assignment]
        status, message = 0, ""
        try:
            operation()
        except RecipeError as exc:
            status, message = 2, exc.render()
        except BaseException:
            status, message = 3, traceback.format_exc()
        os.write(write, message.encode())
        os._exit(status)
    os.close(write)
    with os.fdopen(read) as pipe:
        message = pipe.read()
    _, raw = os.waitpid(pid, 0)
    status = -os.WTERMSIG(raw) if os.WIFSIGNALED(raw) else os.WEXITSTATUS(raw)
    return status, message


def _at(phase: str, fault: str, mount: Path) -> Callable[[str], None]:
    def hook(reached: str) -> None:
        if reached != phase:
            return
        if fault == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        _fill(mount)

    return hook


def _state(root: Path, artifact: str) -> dict[str, Any]:
    """What the store lists after recovery, what of it is damaged, and what is left over."""
    from recipekit.lineage.store import check_version, link_problems, recover, versions

    recover(root, artifact)
    listed = versions(root, artifact)
    problems = [p for v in listed for p in check_version(root, artifact, v).problems]
    problems += link_problems(root, artifact, listed)
    directory = root / artifact
    debris = [
        str(p.relative_to(directory))
        for p in directory.rglob("*")
        if not p.is_dir() or p.is_symlink()
        if ".partial" in p.parts[len(directory.parts) :] or p.name.endswith(".tmp")
    ]
    return {"listed": listed, "problems": problems, "debris": debris}


def _source(where: Path, size: int = 3000) -> Path:
    source = where / "blend"
    (source / "shards").mkdir(parents=True, exist_ok=True)
    # Not JSONL: what a store import checks of NeMo Gym rows (recipekit.datacheck) is not what
    # these scenarios test.
    (source / "notes.txt").write_text("2+2?\n")
    (source / "shards" / "00.bin").write_bytes(os.urandom(size))
    (source / "shards" / "01.bin").write_bytes(os.urandom(size))
    return source


def _save(root: Path, run: str, step: int) -> None:
    saved = root / MODEL / run / f"step_{step}" / "policy"
    saved.mkdir(parents=True, exist_ok=True)
    (saved / "weights.bin").write_bytes(os.urandom(2000))


def _fresh(mount: Path, name: str) -> Path:
    from recipekit.lineage.store import init_store

    (mount / "filler").unlink(missing_ok=True)
    root = mount / name
    init_store(root)
    return root


def _faulted(
    mount: Path,
    root: Path,
    artifact: str,
    operation: Callable[[], object],
    hook: Callable[[str], None],
    shown: Callable[[Any], Any],
) -> dict[str, Any]:
    """Run ``operation`` with ``hook`` in a child, then free the disk, recover and look: what
    is listed (each version as ``shown``), whether it is whole, and what running the same
    operation again then lists."""
    from recipekit.lineage.store import versions

    status, message = _in_child(operation, hook)
    (mount / "filler").unlink(missing_ok=True)
    state = _state(root, artifact)
    listed = [shown(v) for v in state["listed"]]
    try:
        operation()
    except Exception as exc:  # noqa: BLE001 (an import already committed: "exists")
        message += f"\nretry: {exc}"
    retried = [shown(v) for v in versions(root, artifact)]
    shutil.rmtree(root)
    return {**state, "listed": listed, "status": status, "message": message, "retried": retried}


def _import_faults(mount: Path, scratch: Path, fault: str) -> dict[str, Any]:
    from recipekit.lineage.store import import_version

    source = _source(scratch)
    results = {}
    for phase in IMPORT_PHASES:
        root = _fresh(mount, f"import-{phase}")
        import_version(root, DATA, source, name="blend-1")
        operation = functools.partial(import_version, root, DATA, source, name="blend-2")
        hook = _at(phase, fault, mount)
        results[phase] = _faulted(mount, root, DATA, operation, hook, lambda v: v.path)
    return results


def _publish_faults(mount: Path, fault: str) -> dict[str, Any]:
    from recipekit.lineage.store import publish

    results = {}
    for phase in PUBLISH_PHASES:
        root = _fresh(mount, f"publish-{phase}")
        for step in (10, 20):
            _save(root, RUN, step)
        publish(root, MODEL, RUN)
        for step in (30, 40):
            _save(root, RUN, step)
        operation = functools.partial(publish, root, MODEL, RUN, keep_steps=(30,))
        hook = _at(phase, fault, mount)
        results[phase] = _faulted(mount, root, MODEL, operation, hook, lambda v: v.step)
    return results


def _too_large(mount: Path, scratch: Path) -> dict[str, Any]:
    from recipekit.lineage.store import import_version

    root = _fresh(mount, "too-large")
    import_version(root, DATA, _source(scratch / "small"), name="blend-1")
    used_before = shutil.disk_usage(mount).used
    big = _source(scratch / "big", size=6 << 20)  # 12 MiB onto an 8 MiB disk
    status, message = _in_child(
        lambda: import_version(root, DATA, big, name="blend-2"), lambda _: None
    )
    state = _state(root, DATA)
    return {
        "status": status,
        "message": message,
        "listed": [v.path for v in state["listed"]],
        "problems": state["problems"],
        "used_before": used_before,
        "used_after": shutil.disk_usage(mount).used,
    }


def _concurrent(mount: Path, scratch: Path) -> dict[str, Any]:
    from recipekit.lineage.store import import_version, publish

    root = _fresh(mount, "concurrent")
    source = _source(scratch, size=500)
    for run in ("a", "b"):
        for step in (10, 20, 30, 40, 50):
            _save(root, run, step)
    children: list[int] = []

    def start(operation: Callable[[], object]) -> None:
        pid = os.fork()
        if pid == 0:
            try:
                operation()
            except BaseException:
                traceback.print_exc()
                os._exit(3)
            os._exit(0)
        children.append(pid)

    def sweeps(run: str) -> None:
        for _ in range(3):
            publish(root, MODEL, run)

    for _ in range(3):  # a requeued job's last sweep and its successor's first, and others
        for run in ("a", "b"):
            start(functools.partial(sweeps, run))
    for i in range(4):
        start(functools.partial(import_version, root, MODEL, source, name=f"i{i}"))
    statuses = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
    state = _state(root, MODEL)
    listed = state["listed"]
    return {
        "statuses": statuses,
        "problems": state["problems"],
        "versions": [v.version for v in listed],
        "published": [[v.run, v.step] for v in listed if v.step is not None],
        "imported": [v.path for v in listed if v.step is None],
    }


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``recipekit ARGS`` as its command line runs it (in this process), as a finished process."""
    from click.testing import CliRunner

    from recipekit.cli.recipekit_cli import cli

    result = CliRunner().invoke(cli, list(args))
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def _corruption(mount: Path, scratch: Path) -> dict[str, Any]:
    from recipekit.lineage.store import import_version

    root = _fresh(mount, "corruption")
    source = _source(scratch)
    for name in ("blend-1", "blend-2", "blend-3"):
        import_version(root, DATA, source, name=name)
    index = root / DATA / "versions.json"
    index.write_text(index.read_text()[: len(index.read_text()) // 2])
    listing = _cli("store", "list", str(root), DATA)
    rebuilt = _cli("store", "verify", str(root))
    truncated = root / DATA / "blend-1" / "shards" / "00.bin"
    truncated.write_bytes(b"")
    flipped = root / DATA / "blend-2" / "shards" / "01.bin"
    data = bytearray(flipped.read_bytes())
    data[100] ^= 0xFF
    flipped.write_bytes(bytes(data))
    damaged = _cli("store", "verify", str(root), DATA)
    one = _cli("store", "verify", str(root), f"{DATA}:v2")
    return {
        "list_status": listing.returncode,
        "list_stderr": listing.stderr,
        "verify_rebuilt_status": rebuilt.returncode,
        "verify_rebuilt_out": rebuilt.stdout + rebuilt.stderr,
        "verify_damaged_status": damaged.returncode,
        "verify_damaged_out": damaged.stdout + damaged.stderr,
        "verify_one_status": one.returncode,
        "truncated": str(truncated),
        "flipped": str(flipped),
    }


def _first_faults(mount: Path, scratch: Path, fault: str) -> dict[str, Any]:
    """Each phase of an artifact's first import and first publish, faulted."""
    from recipekit.lineage.store import import_version, publish

    source = _source(scratch)
    results = {}
    for phase in IMPORT_PHASES:
        root = _fresh(mount, f"first-import-{phase}")
        imports = functools.partial(import_version, root, DATA, source, name="blend-1")
        hook = _at(phase, fault, mount)
        results[f"import-{phase}"] = _faulted(mount, root, DATA, imports, hook, str)
    for phase in PUBLISH_PHASES:
        root = _fresh(mount, f"first-publish-{phase}")
        for step in (10, 20):
            _save(root, RUN, step)
        publishes = functools.partial(publish, root, MODEL, RUN)
        hook = _at(phase, fault, mount)
        results[f"publish-{phase}"] = _faulted(mount, root, MODEL, publishes, hook, str)
    return results


def _rollback(mount: Path, scratch: Path) -> dict[str, Any]:
    """v0..v3 committed, versions.json restored to its copy after v1, then an import killed
    at each phase: recovery must keep v2 and v3, and the retry is v4."""
    from recipekit.lineage.store import import_version

    results = {}
    for phase in IMPORT_PHASES:
        root = _fresh(mount, f"rollback-{phase}")
        for number in range(4):
            import_version(root, DATA, _source(scratch / str(number)), name=f"blend-{number}")
            if number == 1:
                older = (root / DATA / "versions.json").read_bytes()
        (root / DATA / "versions.json").write_bytes(older)
        source = _source(scratch / "x")
        operation = functools.partial(import_version, root, DATA, source, name="blend-x")
        results[phase] = _faulted(
            mount, root, DATA, operation, _at(phase, "kill", mount), lambda v: v.path
        )
    return results


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): os.readlink(p) if p.is_symlink() else p.read_bytes().hex()
        for p in sorted(root.rglob("*"))
        if p.is_symlink() or p.is_file()
    }


def _read_only(mount: Path, scratch: Path) -> dict[str, Any]:
    from recipekit.lineage.store import import_version

    root = _fresh(mount, "read-only")
    for name in ("blend-1", "blend-2"):
        import_version(root, DATA, _source(scratch / name), name=name)
    subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
    verified = _cli("store", "verify", str(root))
    listing = _cli("store", "list", str(root), DATA)
    imported = _cli("store", "import", str(root), DATA, str(_source(scratch)), "--name", "b3")
    subprocess.run(["mount", "-o", "remount,rw", str(mount)], check=True)
    index = root / DATA / "versions.json"
    entries = json.loads(index.read_text())["versions"]
    index.write_text(json.dumps({"versions": entries[:1]}))
    before = _snapshot(root)
    subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
    behind = _cli("store", "verify", str(root), DATA)
    unchanged = _snapshot(root) == before
    subprocess.run(["mount", "-o", "remount,rw", str(mount)], check=True)
    return {
        "verify_status": verified.returncode,
        "verify_out": verified.stdout + verified.stderr,
        "list_status": listing.returncode,
        "list_out": listing.stdout + listing.stderr,
        "import_status": imported.returncode,
        "import_out": imported.stdout + imported.stderr,
        "behind_status": behind.returncode,
        "behind_out": behind.stdout + behind.stderr,
        "unchanged": unchanged,
    }


def _exhausted(mount: Path, scratch: Path, what: str) -> dict[str, Any]:
    """A store whose file system has no free inode (or no free byte): changes are refused in
    one line and leave it as it was; verify still reads it."""
    from recipekit.lineage.store import import_version

    root = _fresh(mount, f"exhausted-{what}")
    import_version(root, DATA, _source(scratch), name="blend-1")
    _save(root, RUN, 10)
    touched = root / DATA / "blend-1" / "notes.txt"
    os.utime(touched)  # its stat moves: verify reads it whole and would record the new stat
    if what == "bytes":
        _fill(mount)
    else:
        filler = mount / "inodes"
        filler.mkdir()
        try:
            for number in range(1 << 20):
                (filler / str(number)).touch()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    imported = _cli("store", "import", str(root), DATA, str(_source(scratch / "2")), "--name", "b2")
    published = _cli_publish(root)
    verified = _cli("store", "verify", str(root), DATA)
    shutil.rmtree(mount / "inodes", ignore_errors=True)
    (mount / "filler").unlink(missing_ok=True)
    state = _state(root, DATA)
    return {
        "import_status": imported.returncode,
        "import_out": imported.stdout + imported.stderr,
        "publish_status": published[0],
        "publish_out": published[1],
        "verify_status": verified.returncode,
        "verify_out": verified.stdout + verified.stderr,
        "listed": [v.path for v in state["listed"]],
        "problems": state["problems"],
    }


def _cli_publish(root: Path) -> tuple[int, str]:
    """A publish as the job's last sweep runs it: a StoreError is its one line."""
    from recipekit.lineage.store import publish

    return _in_child(lambda: publish(root, MODEL, RUN), lambda _: None)


def _json_ready(value: Any) -> Any:
    import attrs

    if attrs.has(type(value)):
        return attrs.asdict(value)
    raise TypeError(type(value).__name__)


def main(scenario: str) -> None:
    mount = Path(tempfile.mkdtemp(prefix="recipekit-store-faults-"))
    scratch = Path(tempfile.mkdtemp(prefix="recipekit-store-sources-"))
    # Few inodes where a scenario runs out of them; the others never come near the bound.
    inodes = ",nr_inodes=400" if scenario == "exhausted-inodes" else ""
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}{inodes}", "tmpfs", str(mount)],
        check=True,
    )
    try:
        kind, _, fault = scenario.partition("-")
        if kind == "first":
            result = _first_faults(mount, scratch, fault)
        elif kind == "rollback":
            result = _rollback(mount, scratch)
        elif kind == "read":
            result = _read_only(mount, scratch)
        elif kind == "exhausted":
            result = _exhausted(mount, scratch, fault)
        elif scenario == "import-too-large":
            result = _too_large(mount, scratch)
        elif kind == "import":
            result = _import_faults(mount, scratch, fault)
        elif kind == "publish":
            result = _publish_faults(mount, fault)
        elif scenario == "concurrent":
            result = _concurrent(mount, scratch)
        else:
            result = _corruption(mount, scratch)
    finally:
        subprocess.run(["umount", str(mount)], check=False)
        shutil.rmtree(scratch, ignore_errors=True)
    print(json.dumps(result, default=_json_ready))


if __name__ == "__main__":
    main(sys.argv[1])
