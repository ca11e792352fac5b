"""A broken cluster profile is a message naming the file, line and field: never a traceback,
and nothing is written."""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.queues
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from recipekit.cli import stage_launcher

HEADER = (
    "from pathlib import Path\n"
    "from recipekit.hardware import B200_NODE\n"
    "from recipekit.launch.profile import (ArtifactStore, BaseContainer, ClusterProfile, "
    "Gb200Settings, NoContainer, Pyxis, Tracking)\n"
    "from recipekit.launch.ray_ports import RayPorts\n"
)


def _profile(runs: Path, **fields: str) -> str:
    values = {
        "name": "'local'",
        "node": "B200_NODE",
        "partition": "'gpu'",
        "container": "NoContainer()",
        "runs_dir": repr(str(runs)),
        "tracking": "Tracking(mode='off')",
        **fields,
    }
    body = ", ".join(f"{k}={v}" for k, v in values.items())
    return f"{HEADER}profile = ClusterProfile({body})\n"


BROKEN = {
    "runs_dir-an-int": (
        {"runs_dir": "42"},
        "profile.py:5: runs_dir = 42: must be an absolute path",
    ),
    "time_limit-an-int": (
        {"time_limit": "20"},
        "profile.py:5: time_limit = 20: expected [D-]HH:MM:SS",
    ),
    "ray_ports-malformed": (
        {"ray_ports": "RayPorts(gcs='6379')"},
        "profile.py:5: gcs = '6379': ray port must be a port number",
    ),
    "tracking-a-string": (
        {"tracking": "'offline'"},
        "profile.py:5: tracking = 'offline': must be a Tracking, not str",
    ),
    "relative-framework_root": (
        {"framework_root": "'opt/nemo-rl'"},
        "framework_root = 'opt/nemo-rl': must be an absolute path",
    ),
    # A newline would end sbatch's directive block: the ones after it would be dropped.
    "partition-with-a-newline": (
        {"partition": repr("gpu\n#SBATCH --dependency=afterok:1")},
        "partition = 'gpu\\n#SBATCH --dependency=afterok:1': holds a newline (\\n) at position 3; "
        "must be a partition name",
    ),
    "name-with-a-newline": (
        {"name": repr("local\nrm -rf /")},
        "name = 'local\\nrm -rf /': holds a newline (\\n) at position 5; must be a name of",
    ),
    # A pattern's "$" also matches before a final newline: these loaded (issue 39), and sbatch
    # then read none of the job's directives, or --output's line ended early.
    "name-with-a-trailing-newline": (
        {"name": repr("local\n")},
        "profile.py:5: name = 'local\\n': holds a newline (\\n) at position 5; must be a name",
    ),
    "runs_dir-with-a-trailing-newline": (
        {"runs_dir": repr("/shared/runs\n")},
        "runs_dir = '/shared/runs\\n': holds a newline (\\n) at position 12",
    ),
    "runs_dir-with-a-space": (
        {"runs_dir": repr("/shared/my runs")},
        "runs_dir = '/shared/my runs': must be a path of letters, digits",
    ),
    "secret_env-a-string": (
        {"secret_env": "'WANDB_API_KEY'"},
        "secret_env = 'WANDB_API_KEY': must be a tuple of names",
    ),
    "extra_env-not-a-name": (
        {"extra_env": "{'A=$(id)': 'x'}"},
        "extra_env = 'A=$(id)': 'A=$(id)' is not an environment variable name",
    ),
    "imex_channel-a-word": (
        {"gb200": "Gb200Settings(imex_channel='zero')"},
        "imex_channel = 'zero': must be a channel number, not str",
    ),
    "artifact_store-none": (
        {"artifact_store": "ArtifactStore(path=None)"},
        "path = None: must be an absolute path, not None",
    ),
    "artifact_store-an-int": (
        {"artifact_store": "ArtifactStore(path=42)"},
        "path = 42: must be an absolute path",
    ),
    "bases-a-string": (
        {
            "container": "Pyxis(image='nvcr.io/x/y@sha256:' + '0' * 64)",
            "bases": "{'nemo': 'img'}",
        },
        "bases = 'img': nemo: must be BaseContainer(image=..., framework_root=...), not str",
    ),
    "imex_channel-negative": (
        {"gb200": "Gb200Settings(imex_channel=-1)"},
        "profile.py:5: imex_channel = -1: must be >= 0",
    ),
    # Optional fields: each named at the profile's line, not at attrs' optional validator.
    "account-with-a-space": (
        {"account": "'my account'"},
        "profile.py:5: account = 'my account': must be a name of letters",
    ),
    "login_host-with-a-space": (
        {"login_host": "'login 1'"},
        "profile.py:5: login_host = 'login 1': must be a host name",
    ),
    "hf_home-relative": (
        {"hf_home": "'hf'"},
        "profile.py:5: hf_home = 'hf': must be an absolute path",
    ),
    "artifact_store-a-string": (
        {"artifact_store": "'/shared/artifacts'"},
        "profile.py:5: artifact_store = '/shared/artifacts': must be an ArtifactStore",
    ),
    "tracking-mode-unknown": (
        {"tracking": "Tracking(mode='onlne')"},
        "profile.py:5: mode = 'onlne': must be one of 'online', 'offline', 'off'",
    ),
    # None passed recipekit's one_of (an unset schema key), and the job could not read the
    # profile's JSON back: the property test's round trip found both.
    "tracking-mode-none": (
        {"tracking": "Tracking(mode=None)"},
        "profile.py:5: mode = None: must be one of 'online', 'offline', 'off'",
    ),
    "shipping-none": (
        {"shipping": "None"},
        "profile.py:5: shipping = None: must be one of 'mounted', 'baked'",
    ),
    "ray_ports-node_offset-a-word": (
        {"ray_ports": "RayPorts(node_offset='x')"},
        "profile.py:5: node_offset = 'x': must be a whole number of ports",
    ),
    "ray_start_timeout_s-zero": (
        {"ray_start_timeout_s": "0"},
        "profile.py:5: ray_start_timeout_s = 0: must be >= 1",
    ),
    # Python writes no integer of more than 4300 digits: the message says the range instead.
    "master_port-huge": (
        {"master_port": "10**5000"},
        "profile.py:5: ValueError: port master_port=<a 16610-bit number> must be in "
        "1024..32767 (a port number)",
    ),
    # The kind names the class in the profile's JSON: the job would read back an OciBundle.
    "container-kind-of-another-class": (
        {"container": "Pyxis(image='nvcr.io/x/y@sha256:' + '0' * 64, kind='oci-bundle')"},
        "profile.py:5: kind = 'oci-bundle': is 'pyxis' (the container's class says which it is)",
    ),
    "image-with-a-space": (
        {"container": "Pyxis(image='nvcr.io/x/y:1 --pty')"},
        "image = 'nvcr.io/x/y:1 --pty': must be an image reference",
    ),
}


@pytest.fixture()
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv(stage_launcher.STAGE_VARIABLE, "recipes.super3.dapo:dapo_b200")
    return CliRunner()


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_field_of_the_wrong_type_is_named_with_its_line(
    case: str, tmp_path: Path, runner: CliRunner
) -> None:
    fields, expected = BROKEN[case]
    runs = tmp_path / "runs"
    runs.mkdir()
    (tmp_path / "profile.py").write_text(_profile(runs, **fields))
    cluster = f"{tmp_path}/profile.py:profile"
    result = runner.invoke(stage_launcher.cli, ["submit", "--cluster", cluster])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output + result.stderr
    assert expected in result.stderr
    assert list(runs.iterdir()) == []  # nothing written


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("profile = (\n", "profile.py:1: syntax error: '(' was never closed"),
        (
            f"{HEADER}profile = ClusterProfil(name='x')\n",
            "profile.py:5: NameError: name 'ClusterProfil'",
        ),
        (
            "import recipekit.no_such_module\n",
            "profile.py:1: cannot import recipekit.no_such_module",
        ),
        (
            "import os\nprofile = os.environ['RECIPEKIT_NO_SUCH_VARIABLE']\n",
            "profile.py:2: the profile raised KeyError: 'RECIPEKIT_NO_SUCH_VARIABLE'",
        ),
        (
            "profile = open('/no/such/file').read()\n",
            "profile.py:1: the profile raised FileNotFoundError: [Errno 2]",
        ),
        (
            "def f():\n    return f()\nprofile = f()\n",
            "profile.py:2: the profile raised RecursionError: maximum recursion depth",
        ),
    ],
)
def test_a_profile_file_that_does_not_load_is_named_with_its_line(
    source: str, expected: str, tmp_path: Path, runner: CliRunner
) -> None:
    (tmp_path / "profile.py").write_text(source)
    cluster = f"{tmp_path}/profile.py:profile"
    result = runner.invoke(stage_launcher.cli, ["plan", "--cluster", cluster])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output + result.stderr
    assert expected in result.stderr


def test_a_path_object_is_taken_as_its_text(tmp_path: Path, runner: CliRunner) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (tmp_path / "profile.py").write_text(_profile(runs, runs_dir=f"Path({str(runs)!r})"))
    cluster = f"{tmp_path}/profile.py:profile"
    result = runner.invoke(stage_launcher.cli, ["plan", "--cluster", cluster])
    assert result.exit_code == 0, result.stderr
    assert f"--output={runs}/dapo-b200-" in result.output


@pytest.mark.parametrize("kind", ["missing", "a-file", "read-only"])
def test_a_runs_dir_that_is_not_a_writable_directory_is_refused(
    kind: str, tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PEX", str(tmp_path / "launcher.pex"))
    (tmp_path / "launcher.pex").write_bytes(b"")
    runs = tmp_path / "runs"
    if kind == "a-file":
        runs.write_text("")
    elif kind == "read-only":
        runs.mkdir()
    (tmp_path / "profile.py").write_text(_profile(runs))
    argv = ["submit", "--cluster", f"{tmp_path}/profile.py:profile"]
    if kind == "read-only":
        exit_code, stderr = _on_read_only_mount(runs, runner, argv)
    else:
        result = runner.invoke(stage_launcher.cli, argv)
        exit_code, stderr = result.exit_code, result.stderr
    assert exit_code == 2, stderr
    assert "Traceback" not in stderr
    expected = {
        "missing": "does not exist on this host",
        "a-file": "is not a directory",
        "read-only": "is not writable here (Read-only file system)",
    }[kind]
    assert f"runs_dir = '{runs}': {expected}" in stderr
    assert kind != "missing" or not runs.exists()  # never created on the submit host


def _on_read_only_mount(folder: Path, runner: CliRunner, argv: list[str]) -> tuple[int, str]:
    """Run the launcher in a child process that sees ``folder`` on a read-only mount (its own
    mount namespace: nothing outside the child changes). Needs root, as the Slurm tests do."""
    context = multiprocessing.get_context("fork")
    results: multiprocessing.queues.SimpleQueue[tuple[int, str]] = context.SimpleQueue()

    def child() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(0x00020000) != 0:  # CLONE_NEWNS
            results.put((-1, f"unshare failed: errno {ctypes.get_errno()}"))
            return
        for command in (
            ["mount", "--make-rprivate", "/"],
            ["mount", "--bind", str(folder), str(folder)],
            ["mount", "-o", "remount,bind,ro", str(folder)],
        ):
            subprocess.run(command, check=True)
        result = runner.invoke(stage_launcher.cli, argv)
        results.put((result.exit_code, result.stderr))

    process = context.Process(target=child)
    process.start()
    process.join(60)
    return results.get()


def test_a_full_file_system_under_runs_dir_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    """ENOSPC while the run directory is written (a 64 KiB tmpfs in a mount namespace of the
    child's own, as root): an error naming runs_dir, and no half-written run directory."""
    from recipekit.errors import RecipeError
    from recipekit.hardware import B200_NODE
    from recipekit.launch.profile import ClusterProfile, NoContainer, Tracking
    from recipekit.launch.submit import write_run_dir
    from recipekit.plan import make_plan
    from recipes.super3.dapo import dapo_b200

    runs = tmp_path / "runs"
    runs.mkdir()
    context = multiprocessing.get_context("fork")
    results: multiprocessing.queues.SimpleQueue[tuple[str, list[str]]] = context.SimpleQueue()

    def child() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(0x00020000) != 0:  # CLONE_NEWNS
            results.put((f"unshare failed: errno {ctypes.get_errno()}", []))
            return
        subprocess.run(["mount", "--make-rprivate", "/"], check=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(runs)], check=True)
        profile = ClusterProfile(
            name="local",
            node=B200_NODE,
            partition="gpu",
            container=NoContainer(),
            runs_dir=str(runs),
            tracking=Tracking(mode="off"),
        )
        (runs / "filler").write_bytes(b"\0" * (60 << 10))
        try:
            write_run_dir(make_plan(dapo_b200), profile, None)
            message = "written"
        except RecipeError as exc:
            message = exc.render()
        except BaseException as exc:  # noqa: BLE001 (the test reports it)
            message = f"traceback: {type(exc).__name__}: {exc}"
        results.put((message, sorted(p.name for p in runs.iterdir())))

    process = context.Process(target=child)
    process.start()
    process.join(60)
    message, left = results.get()
    assert "runs_dir = " in message and "(No space left on device)" in message, message
    assert left == ["filler"]
