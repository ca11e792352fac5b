"""Property tests of what a user types: generated values for ``--set`` (one key of every type
the config has) and for every field of a cluster profile, through the real command line.

Whatever the value: exit 0 or 2, never a traceback; on 2 nothing is written; plan.json is
always JSON (no NaN); and the job script, run by bash with stand-ins for srun and scontrol,
runs exactly the job steps it means to, with every profile value as the data it was given:
nothing in it is read by the shell as code, and sbatch's directive block is whole.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from recipekit.cli import stage_launcher
from recipekit.keypaths import field_type_at, get_at
from recipekit.launch.profile import (
    ArtifactStore,
    BaseContainer,
    ClusterProfile,
    Gb200Settings,
    Mount,
    NoContainer,
    OciBundle,
    Pyxis,
    Tracking,
    profile_from_json,
    profile_to_json,
)
from recipekit.launch.ray_ports import RayPorts
from recipekit.markers import Marker
from recipekit.plan import Plan
from recipekit.sections import key_names
from recipekit.validators import single_line_problem
from recipes.super3.dapo import dapo_b200
from recipes.super35.sft import sft

STAGE = "recipes.super3.dapo:dapo_b200"
# A Megatron-Bridge stage: its config is another schema (and leaves sections unset).
SFT_STAGE = "recipes.super35.sft:sft"
PROPERTY = settings(
    # Each property runs in about ten seconds at this count on two cores (a minute at most in CI,
    # beside the Slurm suites); the file's three properties share the BUILD's timeout.
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# What the shell, sbatch and YAML read specially, with a few plain letters to carry them.
AWKWARD = "$`'\"\\;&|<>(){}[]*?!#%:,=~/ \t\n\r\x00-_.aZ9"
TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=30)
AWKWARD_TEXT = st.text(alphabet=AWKWARD, max_size=24)
SPECIAL_YAML = st.sampled_from(
    [
        ".nan",
        "-.inf",
        "[1, .nan]",
        "9" * 5000,
        "&a {x: *a}",
        "{a: &a [x, x], b: [*a, *a]}",
        "!!python/object:os.system [id]",
        "{",
        "null",
        "~",
        "[]",
        "{}",
        "1e400",
        "0x1F",
        "yes",
        "[" * 500 + "]" * 500,
        "{a: " * 500 + "1" + "}" * 500,
    ]
)
# Exponents around and past a float's range (1.8e308), as YAML 1.1 (a dot and a signed
# exponent) and YAML 1.2 (either may be left out) write them: float() reads the far ones as
# infinity.
OVERFLOWING = st.builds(
    "{}{}{}{}{}".format,
    st.sampled_from(["", "-", "+"]),
    st.sampled_from(["1", "1.0", "2", "9.99", ".5"]),
    st.sampled_from(["e", "E"]),
    st.sampled_from(["", "+", "-"]),
    st.integers(min_value=300, max_value=5000),
)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)


def _strict_json(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def _run(runner: CliRunner, argv: list[str], stage: str = STAGE) -> Result:
    result = runner.invoke(stage_launcher.cli, argv, env={"RECIPEKIT_STAGE": stage})
    output = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert result.exit_code in (0, 2), output
    assert "Traceback" not in output
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), repr(result.exception)
    return result


# --- --set: one key of every type --------------------------------------------------------------


def _keys(section: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    for key in key_names(type(section)):
        path = f"{prefix}{key}"
        value = get_at(section, key)
        if attrs.has(type(value)) and not isinstance(value, Marker):
            yield from _keys(value, f"{path}.")
        else:
            yield path, str(field_type_at(section, key))


def _one_key_per_type(config: Any) -> list[str]:
    first: dict[str, str] = {}
    for path, annotation in _keys(config):
        first.setdefault(annotation, path)
    return sorted(first.values())


KEYS = _one_key_per_type(dapo_b200.config)
# With keys of a section the stage leaves unset (--set opens it): the optimizer's float lr.
SFT_KEYS = [*_one_key_per_type(sft.config), "optimizer.lr", "optimizer.weight_decay"]


def test_the_config_has_keys_of_many_types() -> None:
    # The properties below would prove little otherwise.
    assert len(KEYS) >= 8, KEYS
    assert len(SFT_KEYS) >= 8, SFT_KEYS


# A key, or a path below it (a key of a dict-valued key, or of a plain value: refused).
def _set_keys(keys: list[str]) -> st.SearchStrategy[str]:
    return st.tuples(
        st.sampled_from(keys), st.from_regex(r"(\.[A-Za-z_]{1,6}){0,2}", fullmatch=True)
    ).map("".join)


SET_KEYS = _set_keys(KEYS)
SET_VALUES = st.one_of(TEXT, AWKWARD_TEXT, SPECIAL_YAML, OVERFLOWING, JSONISH.map(json.dumps))


@PROPERTY
@given(assignments=st.lists(st.tuples(SET_KEYS, SET_VALUES), min_size=1, max_size=2))
# Each was a plan with Infinity in plan.json (float() of an exponent past a float's range).
@example(assignments=[("loss_fn.ratio_clip_min", "1e400")])
@example(assignments=[("loss_fn.ratio_clip_min", "1.0e400")])
@example(assignments=[("loss_fn.ratio_clip_min", "1E+400")])
@example(assignments=[("loss_fn.ratio_clip_min", "2e308")])
def test_any_value_for_any_key_is_a_plan_or_one_line(assignments: list[tuple[str, str]]) -> None:
    _renders_or_refuses(assignments, STAGE)


@PROPERTY
@given(assignments=st.lists(st.tuples(_set_keys(SFT_KEYS), SET_VALUES), min_size=1, max_size=2))
@example(assignments=[("optimizer.lr", "1e400")])
@example(assignments=[("optimizer.lr", "[" * 500 + "]" * 500)])
def test_any_value_for_any_key_of_a_megatron_bridge_stage_is_a_plan_or_one_line(
    assignments: list[tuple[str, str]],
) -> None:
    _renders_or_refuses(assignments, SFT_STAGE)


def _renders_or_refuses(assignments: list[tuple[str, str]], stage: str) -> None:
    out = Path(tempfile.mkdtemp(prefix="recipekit-set-")) / "run"
    sets = [a for key, value in assignments for a in ("--set", f"{key}={value}")]
    try:
        result = _run(CliRunner(), ["render", str(out), *sets], stage)
        event(f"exit {result.exit_code}")
        if result.exit_code == 2:
            assert not out.exists()  # nothing written
            assert result.stderr.startswith("error: ")
        else:
            _strict_json((out / "plan.json").read_text())
    finally:
        shutil.rmtree(out.parent)


# --- every field of a cluster profile -------------------------------------------------------

HEADER = (
    "from recipekit.hardware import B200_NODE\n"
    "from recipekit.launch.profile import (ArtifactStore, BaseContainer, ClusterProfile, "
    "Gb200Settings, Mount, NoContainer, OciBundle, Pyxis, Tracking)\n"
    "from recipekit.launch.ray_ports import RayPorts\n"
)
IMAGE = "nvcr.io/your-org/nemo-rl@sha256:" + "0" * 64


def _base_fields(runs: Path) -> dict[str, str]:
    return {
        "name": "'local'",
        "node": "B200_NODE",
        "partition": "'gpu'",
        "container": f"Pyxis(image={IMAGE!r}, mounts=(Mount({str(runs)!r}, '/runs'),))",
        "runs_dir": repr(str(runs)),
        "tracking": "Tracking(mode='off')",
    }


# Each field, and the fields of the classes a profile holds, as the expression that sets it.
FIELDS: dict[str, str] = {
    **{
        f.name: "{}"
        for f in attrs.fields(ClusterProfile)
        if f.name not in ("container", "gb200", "tracking", "artifact_store", "ray_ports")
    },
    "container.image": "Pyxis(image={}, mounts=(Mount(RUNS, '/runs'),))",
    "container.python": f"Pyxis(image={IMAGE!r}, python={{}}, mounts=(Mount(RUNS, '/runs'),))",
    "container.mounts": f"Pyxis(image={IMAGE!r}, mounts=(Mount(RUNS, '/runs'), Mount({{}}, '/x')))",
    "container.mounts.container": (
        f"Pyxis(image={IMAGE!r}, mounts=(Mount(RUNS, '/runs'), Mount('/shared/x', {{}})))"
    ),
    "container.kind": f"Pyxis(image={IMAGE!r}, kind={{}}, mounts=(Mount(RUNS, '/runs'),))",
    "container.none.python": "NoContainer(python={})",
    "container.bundle.kind": (
        "OciBundle(bundle='/shared/bundle', kind={}, mounts=(Mount(RUNS, '/runs'),))"
    ),
    "container.bundle": "OciBundle(bundle={}, mounts=(Mount(RUNS, '/runs'),))",
    "container.bundle.mounts": (
        "OciBundle(bundle='/shared/bundle', mounts=(Mount(RUNS, '/runs'), Mount({}, '/x')))"
    ),
    "container.bundle.mounts.container": (
        "OciBundle(bundle='/shared/bundle', mounts=(Mount(RUNS, '/runs'), Mount('/x', {})))"
    ),
    "container.bundle.python": (
        "OciBundle(bundle='/shared/bundle', python={}, mounts=(Mount(RUNS, '/runs'),))"
    ),
    **{f"ray_ports.{f.name}": f"RayPorts({f.name}={{}})" for f in attrs.fields(RayPorts)},
    "gb200.imex_channel": "Gb200Settings(imex_channel={})",
    "gb200.nccl_mnnvl_enable": "Gb200Settings(imex_channel=0, nccl_mnnvl_enable={})",
    "gb200.gloo_socket_ifname": "Gb200Settings(imex_channel=0, gloo_socket_ifname={})",
    "gb200.imex_device_dir": "Gb200Settings(imex_channel=0, imex_device_dir={})",
    "gb200.nvlink_domain_nodes": "Gb200Settings(imex_channel=0, nvlink_domain_nodes={})",
    "gb200.slurm_segment": "Gb200Settings(imex_channel=0, slurm_segment={})",
    "tracking.mode": "Tracking(mode={})",
    "tracking.project": "Tracking(mode='off', project={})",
    "tracking.entity": "Tracking(mode='off', entity={})",
    "artifact_store.path": "ArtifactStore(path={})",
    "bases.image": "{{'vllm': BaseContainer(image={}, framework_root='/opt/x')}}",
    # The stage's own base (nemo-rl) from bases, so its framework_root is the one planned.
    "bases.framework_root": (
        f"{{{{'nemo-rl': BaseContainer(image={IMAGE!r}, framework_root={{}})}}}}"
    ),
}
# The classes a profile holds: test_every_field_is_generated checks FIELDS names each field.
HELD: tuple[type, ...] = (ClusterProfile, Pyxis, OciBundle, NoContainer, Mount, Gb200Settings)
HELD += (Tracking, ArtifactStore, BaseContainer, RayPorts)
# Fields a field above needs beside it.
ALONGSIDE: dict[str, dict[str, str]] = {"bases.framework_root": {"default_base": "'vllm'"}}


def test_every_field_is_generated() -> None:
    """Every field of a profile and of each class it holds gets generated values: a field
    added later without a line in FIELDS fails here."""
    named = {label.rsplit(".", 1)[-1] for label in FIELDS} | {f.split(".")[0] for f in FIELDS}
    named |= {m.group(1) for expr in FIELDS.values() for m in re.finditer(r"(\w+)=\{\}", expr)}
    if any("Mount({}" in expr for expr in FIELDS.values()):
        named.add("host")
    missing = [
        f"{cls.__name__}.{f.name}"
        for cls in HELD
        for f in attrs.fields(cls)
        if f.init and f.name not in named
    ]
    assert missing == [], missing


def _profile_source(runs: Path, field: str, value: Any) -> str:
    fields = _base_fields(runs)
    name = field.split(".")[0]
    fields[name] = FIELDS[field].format(repr(value)).replace("RUNS", repr(str(runs)))
    fields.update(ALONGSIDE.get(field, {}))
    body = ", ".join(f"{k}={v}" for k, v in fields.items())
    return f"{HEADER}profile = ClusterProfile({body})\n"


# Values a profile accepts, often: the property is about what then reaches the script.
NEARLY_VALID = st.one_of(
    st.from_regex(r"/[a-z0-9._+@=~/-]{0,12}", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,8}", fullmatch=True),
    st.dictionaries(
        st.from_regex(r"[A-Z_][A-Z0-9_]{0,6}", fullmatch=True),
        st.text(alphabet=AWKWARD.replace("\t", "").replace("\n", "").replace("\r", "")),
        max_size=3,
    ),
    st.tuples(st.from_regex(r"[A-Z_][A-Z0-9_]{0,6}", fullmatch=True)),
)
# A value the profile accepts with a line end put at its start, middle or end: "$" in a pattern
# matched before a final newline, and such a value reached the job script (issue 39).
LINE_ENDS = st.sampled_from(["\n", "\r", "\x85", "\u2028", "\u2029"])
LINE_ENDED = st.builds(
    lambda text, end, at: text[: at * len(text) // 2] + end + text[at * len(text) // 2 :],
    st.one_of(
        st.sampled_from(["/shared/runs", "gpu", "04:00:00", "nemo-rl", IMAGE, "python3"]),
        st.from_regex(r"/[a-z0-9._-]{0,12}", fullmatch=True),
        st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,8}", fullmatch=True),
    ),
    LINE_ENDS,
    st.integers(min_value=0, max_value=2),
)
PROFILE_VALUES = st.one_of(
    NEARLY_VALID,
    LINE_ENDED,
    st.tuples(LINE_ENDED),
    st.dictionaries(LINE_ENDED, st.just("x"), min_size=1, max_size=1),
    st.dictionaries(st.just("X"), LINE_ENDED, min_size=1, max_size=1),
    AWKWARD_TEXT,
    TEXT,
    st.integers(min_value=-(10**6), max_value=10**6),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.tuples(AWKWARD_TEXT),
    st.dictionaries(AWKWARD_TEXT, AWKWARD_TEXT, max_size=2),
    st.sampled_from(["/shared/runs", "gpu", "04:00:00", "WANDB_API_KEY", ("HF_TOKEN",), 0]),
)

STUB = """#!{python}
import json, os, sys
with open({log!r}, "a") as out:
    out.write(json.dumps({{"argv": sys.argv, "env": dict(os.environ)}}) + "\\n")
if os.path.basename(sys.argv[0]) == "scontrol" and sys.argv[1:3] == ["show", "node"]:
    print("NodeName=node-1 NodeAddr=10.0.0.1 State=ALLOCATED")
elif os.path.basename(sys.argv[0]) == "scontrol":
    print("node-1")
"""
# The directives a job script of a Ray stage carries, each exactly once.
DIRECTIVES = {
    "job-name", "nodes", "ntasks-per-node", "gres", "exclusive", "time", "partition",
    "account", "dependency", "requeue", "output", "open-mode",
    "signal",  # before the time limit, where it is long enough (TimeBudget.signal_armed)
}  # fmt: skip


def _directives(script: str) -> list[str]:
    """The #SBATCH lines sbatch reads: those before the first line that is not a comment."""
    found = []
    for line in script.splitlines()[1:]:
        if line and not line.startswith("#"):
            break
        if line.startswith("#SBATCH"):
            found.append(line)
    return found


def _check_script(script_path: Path, profile: Any, plan: Any) -> None:
    from recipekit.launch.job_script import job_environment

    script = script_path.read_text()
    directives = _directives(script)
    names = [re.match(r"^#SBATCH --([a-z-]+)(=\S+)?$", d) for d in directives]
    assert all(names), directives
    seen = [m.group(1) for m in names if m]
    assert len(seen) == len(set(seen)) and {"partition", "output", "dependency"} <= set(seen)
    assert set(seen) <= DIRECTIVES, seen
    stubs = script_path.parent / "stubs"
    stubs.mkdir()
    log = script_path.parent / "calls.jsonl"
    for name in ("srun", "scontrol"):
        (stubs / name).write_text(STUB.format(python=sys.executable, log=str(log)))
        (stubs / name).chmod(0o755)
    # The tools the script itself uses around Slurm's (bounding a call, reading its answer).
    for tool in ("timeout", "awk"):
        found = shutil.which(tool)
        assert found, tool
        (stubs / tool).symlink_to(found)
    # Nothing but these on PATH: an injected command would fail, a builtin would show as a
    # step the script does not mean.
    env = {"PATH": str(stubs), "SLURM_JOB_NODELIST": "node-1", "SLURM_JOB_ID": "7"}
    done = subprocess.run(
        ["/bin/bash", str(script_path)], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "" and done.stderr == "", done.stdout + done.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    # One question for every node's address (launch.ray_cluster), then the two steps.
    assert [c["argv"][1:3] for c in calls if Path(c["argv"][0]).name == "scontrol"] == [
        ["show", "node"]
    ]
    calls = [c for c in calls if Path(c["argv"][0]).name == "srun"]
    assert len(calls) == 2  # preflight, job-step
    assert [c["argv"][-2] for c in calls] == ["preflight", "job-step"]
    expected = job_environment(profile, plan)
    for call in calls:
        assert {k: call["env"].get(k) for k in expected} == expected


@PROPERTY
@given(field=st.sampled_from(sorted(FIELDS)), value=PROFILE_VALUES)
# Accepted, and read back by the job as an OciBundle: the round trip fails.
@example(field="container.kind", value="oci-bundle")
# Each passed recipekit's one_of, which lets None through, and did not read back.
@example(field="shipping", value=None)
@example(field="tracking.mode", value=None)
# Each loaded ("$" matched before the final newline) and broke the job script (issue 39).
@example(field="name", value="local\n")
@example(field="runs_dir", value="/shared/runs\n")
@example(field="extra_env", value={"A": "x\u2028y"})
def test_any_value_of_any_profile_field_is_a_safe_job_script_or_one_line(
    field: str, value: Any
) -> None:
    from recipekit.launch.profiles import find_profile
    from recipekit.plan import make_plan

    work = Path(tempfile.mkdtemp(prefix="recipekit-profile-"))
    try:
        runs, out = work / "runs", work / "render"
        runs.mkdir()
        source = _profile_source(runs, field, value)
        file = work / "profile.py"
        file.write_text(source)
        cluster = f"{file}:profile"
        result = _run(CliRunner(), ["render", str(out), "--cluster", cluster])
        event(f"exit {result.exit_code}")
        # No string the profile holds is more than one line of safe text.
        assert result.exit_code == 2 or not _holds_a_control(value), result.output
        if result.exit_code == 2:
            assert not out.exists()
            assert result.stderr.startswith("error: ") and result.stderr.count("\n") <= 12
            return
        profile = find_profile(cluster).for_base(dapo_b200.framework.image)
        # The job reads the profile back from the JSON submit writes: the same profile.
        assert profile_from_json(json.loads(json.dumps(profile_to_json(profile)))) == profile
        _strict_json((out / "plan.json").read_text())
        _check_script(out / "job.sbatch", profile, make_plan(dapo_b200))
    finally:
        shutil.rmtree(work)


def _holds_a_control(value: Any) -> bool:
    """Whether ``value`` holds, in any string of it, a character no profile value may hold."""
    if isinstance(value, str):
        return single_line_problem(value) != ""
    if isinstance(value, dict):
        return any(_holds_a_control(k) or _holds_a_control(v) for k, v in value.items())
    return isinstance(value, tuple) and any(_holds_a_control(v) for v in value)


def test_the_script_check_catches_an_injected_line(tmp_path: Path) -> None:
    """The check above can fail: a job script with a value outside its quotes is caught."""
    from recipekit.launch.profiles import find_profile
    from recipekit.plan import make_plan

    runs = tmp_path / "runs"
    runs.mkdir()
    (tmp_path / "profile.py").write_text(_profile_source(runs, "partition", "gpu"))
    profile = find_profile(f"{tmp_path}/profile.py:profile")
    out = tmp_path / "render"
    _run(CliRunner(), ["render", str(out), "--cluster", f"{tmp_path}/profile.py:profile"])
    script = (out / "job.sbatch").read_text()
    (out / "job.sbatch").write_text(
        script.replace("set -euo pipefail", "set -euo pipefail\nsrun --injected true", 1)
    )
    with pytest.raises(AssertionError):
        _check_script(out / "job.sbatch", profile, make_plan(dapo_b200))
    # And a directive block cut short by a newline in a value.
    (out / "job.sbatch").write_text(script.replace("--partition=gpu", "--partition=gpu\nid", 1))
    (out / "calls.jsonl").unlink(missing_ok=True)
    shutil.rmtree(out / "stubs", ignore_errors=True)
    with pytest.raises(AssertionError):
        _check_script(out / "job.sbatch", profile, make_plan(dapo_b200))


def test_a_stage_whose_names_the_script_cannot_write_is_refused(tmp_path: Path) -> None:
    """A stage's own environment and name reach the script unquoted as names: checked too."""
    from recipekit.errors import RecipeError
    from recipekit.launch.job_script import job_environment
    from recipekit.launch.profiles import find_profile
    from recipekit.plan import make_plan

    runs = tmp_path / "runs"
    runs.mkdir()
    (tmp_path / "profile.py").write_text(_profile_source(runs, "partition", "gpu"))
    profile = find_profile(f"{tmp_path}/profile.py:profile")
    plan = make_plan(dapo_b200)
    assert job_environment(profile, plan)["RECIPEKIT_RUN"].startswith("dapo-b200-")
    with pytest.raises(RecipeError, match=r"environment: 'A=\$\(id\)' is not an environment"):
        job_environment(profile, _with_stage(plan, environment={"A=$(id)": "x"}))
    with pytest.raises(RecipeError, match="a stage's name is letters"):
        job_environment(profile, _with_stage(plan, name="dapo\nid"))


def _with_stage(plan: Plan, **changes: Any) -> Plan:
    """``plan`` as if its stage had been written with ``changes``."""
    return attrs.evolve(plan, stage=attrs.evolve(plan.stage, **changes))
