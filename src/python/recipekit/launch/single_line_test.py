"""Every string a cluster profile holds is one line of safe text (issue 39).

A pattern's ``$`` also matches before a final newline, so ``name='x\\n'`` loaded and reached
the job script's ``#SBATCH`` lines: sbatch then read none of them after it, and bash failed. Here
every string field of the profile and of each class it holds, found with ``attrs.fields`` (a
field added later is covered, or fails the coverage test), is given its valid value with a line
end at the start, in the middle and at the end, and must be refused with a message naming what
it holds and where. A valid profile's script is read as sbatch reads it, and by ``bash -n``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recipekit.errors import FieldError, RecipeError
from recipekit.hardware import B200_NODE
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
)
from recipekit.launch.run_files import job_script
from recipekit.plan import make_plan
from recipekit.validators import single_line_problem
from recipes.super3.dapo import dapo_b200

IMAGE = "nvcr.io/your-org/nemo-rl@sha256:" + "0" * 64
RUNS = "/shared/runs"
STORE = "/shared/artifacts"


def _profile(container: Pyxis | OciBundle | NoContainer, store: str = STORE) -> ClusterProfile:
    """A profile with every optional field set, so that each string field holds a value."""
    return ClusterProfile(
        name="local",
        node=B200_NODE,
        partition="gpu,gpu-long",
        account="research",
        login_host="me@login-1",
        time_limit="1-04:00:00",
        container=container,
        runs_dir=RUNS,
        shared_paths={"data": "/shared/data"},
        artifact_store=ArtifactStore(path=store),
        hf_home="/shared/hf",
        gb200=Gb200Settings(imex_channel=0),
        extra_env={"NCCL_DEBUG": "INFO"},
        secret_env=("WANDB_API_KEY", "HF_TOKEN"),
        preflight_skip={"gpu-clocks": "known slow on this partition"},
        tracking=Tracking(mode="online", project="nemotron", entity="team"),
        bases={"vllm": BaseContainer(IMAGE, "/opt/vllm")},
        code_checkouts={"megatron-bridge": "/shared/checkouts/mb"},
    )


# One profile per kind of container: their fields differ.
PROFILES = {
    "pyxis": _profile(Pyxis(image=IMAGE, mounts=(Mount(RUNS, "/runs"),))),
    "oci-bundle": _profile(
        OciBundle(
            bundle="/shared/bundle", mounts=(Mount(RUNS, "/runs"), Mount(STORE, "/artifacts"))
        )
    ),
    # Without a container every node mounts the store at /artifacts itself.
    "none": _profile(NoContainer(python="/usr/bin/python3"), store="/artifacts"),
}

# Where a string sits: attrs field names, ("key", k) or ("value", k) of a dict, tuple indexes.
Step = str | int | tuple[str, str]


@attrs.frozen
class Site:
    path: tuple[Step, ...]
    text: str
    # The attrs class and field that hold it, for the coverage test.
    owner: tuple[type, str]

    def __str__(self) -> str:
        return ".".join(_step_text(step) for step in self.path)


def _step_text(step: Step) -> str:
    if isinstance(step, tuple):
        where, key = step
        return f"<key {key!r}>" if where == "key" else f"[{key!r}]"
    return f"[{step}]" if isinstance(step, int) else step


def _sites(
    value: Any, path: tuple[Step, ...] = (), owner: tuple[type, str] | None = None
) -> Iterator[Site]:
    """Every string ``value`` holds, however deep: fields, dict keys and values, tuple items."""
    if attrs.has(type(value)):
        for field in attrs.fields(type(value)):
            yield from _sites(
                getattr(value, field.name), (*path, field.name), (type(value), field.name)
            )
    elif isinstance(value, str):
        assert owner is not None
        yield Site(path, value, owner)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _sites(key, (*path, ("key", key)), owner)
            yield from _sites(item, (*path, ("value", key)), owner)
    elif isinstance(value, tuple):
        for index, item in enumerate(value):
            yield from _sites(item, (*path, index), owner)


def _replaced(value: Any, path: tuple[Step, ...], new: str) -> Any:
    """``value`` with the string at ``path`` replaced by ``new``, every class made again (so
    each validator runs, as when a profile file is loaded)."""
    if not path:
        return new
    step, rest = path[0], path[1:]
    if attrs.has(type(value)):
        assert isinstance(step, str)
        return attrs.evolve(value, **{step: _replaced(getattr(value, step), rest, new)})
    if isinstance(value, dict):
        assert isinstance(step, tuple)
        where, key = step
        if where == "key":
            return {new if k == key else k: v for k, v in value.items()}
        return {k: _replaced(v, rest, new) if k == key else v for k, v in value.items()}
    assert isinstance(value, tuple) and isinstance(step, int)
    return tuple(_replaced(v, rest, new) if i == step else v for i, v in enumerate(value))


SITES = {f"{kind}:{site}": (kind, site) for kind, p in PROFILES.items() for site in _sites(p)}
# What each line end is called in the message.
LINE_ENDS = {
    "\n": "a newline (\\n)",
    "\r": "a carriage return (\\r)",
    "\x85": "a next-line character (\\x85)",
    "\u2028": "a line separator (\\u2028)",
    "\u2029": "a paragraph separator (\\u2029)",
}


def _placed(text: str, char: str, where: str) -> tuple[str, int]:
    """``text`` with ``char`` at its start, middle or end, and the position it is at."""
    at = {"start": 0, "middle": len(text) // 2, "end": len(text)}[where]
    return text[:at] + char + text[at:], at


def _refusal(kind: str, site: Site, bad: str) -> str:
    """The message that refuses the profile with ``bad`` at ``site``; fails if none does."""
    with pytest.raises((FieldError, RecipeError)) as refused:
        _replaced(PROFILES[kind], site.path, bad)
    error = refused.value
    assert isinstance(error, (FieldError, RecipeError))
    message = error.message if isinstance(error, FieldError) else error.render()
    assert "\n" not in message, message  # one line, as the CLI prints it
    return message


def _str_annotated(annotation: Any) -> bool:
    if annotation is str:
        return True
    if typing.get_origin(annotation) is Literal:
        return any(isinstance(arg, str) for arg in typing.get_args(annotation))
    return any(_str_annotated(arg) for arg in typing.get_args(annotation))


def _held_classes(cls: type, seen: set[type]) -> set[type]:
    """``cls`` and every attrs class its fields' annotations name, however deep."""
    if cls in seen:
        return seen
    seen.add(cls)
    for annotation in typing.get_type_hints(cls).values():
        for arg in (annotation, *_all_args(annotation)):
            if isinstance(arg, type) and attrs.has(arg):
                _held_classes(arg, seen)
    return seen


def _all_args(annotation: Any) -> Iterator[Any]:
    for arg in typing.get_args(annotation):
        yield arg
        yield from _all_args(arg)


def test_every_string_field_is_tried() -> None:
    """Each field annotated with str (or a Literal of strings, or a container of them), of
    the profile and of every class it holds, has a value in one of PROFILES: a field added
    later without one fails here, as one the tests below would not try."""
    fields = {
        (cls, name)
        for cls in _held_classes(ClusterProfile, set())
        for name, annotation in typing.get_type_hints(cls).items()
        if _str_annotated(annotation) and name in attrs.fields_dict(cls)
    }
    tried = {site.owner for _, site in SITES.values()}
    assert sorted(f"{c.__name__}.{n}" for c, n in fields - tried) == []
    assert len(fields) >= 30, len(fields)


@pytest.mark.parametrize("label", sorted(SITES))
def test_a_line_end_anywhere_in_a_string_field_is_refused_naming_it(label: str) -> None:
    kind, site = SITES[label]
    assert single_line_problem(site.text) == ""  # the value itself is accepted
    for char, called in LINE_ENDS.items():
        for where in ("start", "middle", "end"):
            bad, at = _placed(site.text, char, where)
            message = _refusal(kind, site, bad)
            assert f"holds {called} at position {at}" in message, (where, message)


# Any character these categories hold: C0, DEL and C1 (Cc), format characters such as a
# bidi override (Cf), and the unicode line and paragraph separators (Zl, Zp).
REFUSED = st.characters(categories=["Cc", "Cf", "Zl", "Zp"])


@settings(max_examples=300, deadline=None, database=None)
@given(
    label=st.sampled_from(sorted(SITES)),
    char=REFUSED,
    where=st.sampled_from(["start", "middle", "end"]),
)
def test_any_control_or_separator_character_is_refused(label: str, char: str, where: str) -> None:
    kind, site = SITES[label]
    bad, at = _placed(site.text, char, where)
    message = _refusal(kind, site, bad)
    assert f"at position {at}" in message, message


# --- a valid profile's job script, read by sbatch and bash ----------------------------------


def _directive_block(script: str) -> tuple[list[str], list[str]]:
    """(the #SBATCH lines sbatch reads, those it does not): sbatch stops at the first line
    that is neither blank nor a comment."""
    lines = script.splitlines()
    assert lines[0].startswith("#!"), lines[0]
    end = next(
        (i for i, line in enumerate(lines) if line.strip() and not line.startswith("#")),
        len(lines),
    )
    read = [line for line in lines[:end] if line.startswith("#SBATCH")]
    ignored = [line for line in lines[end:] if line.lstrip().startswith("#SBATCH")]
    return read, ignored


def _well_formed(path: Path) -> dict[str, str]:
    """The directives of the script at ``path``, after checking it is whole: every #SBATCH
    line in the block sbatch reads, each one option, and bash parses the rest."""
    read, ignored = _directive_block(path.read_text())
    assert ignored == [], ignored
    options: dict[str, str] = {}
    for line in read:
        found = re.fullmatch(r"#SBATCH (--[a-z-]+)(?:=(\S+))?", line)
        assert found is not None, line
        assert found.group(1) not in options, line
        options[found.group(1)] = found.group(2) or ""
    checked = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    return options


def _sbatch() -> str:
    """Fail, not skip, without sbatch: tools/install-system-deps installs it (slurm-client)."""
    found = shutil.which("sbatch") or (
        "/usr/bin/sbatch" if os.path.exists("/usr/bin/sbatch") else None
    )
    if found is None:
        pytest.fail("needs sbatch: run tools/install-system-deps")
    return found


def _as_sbatch_reads(script: Path, work: Path) -> dict[str, str]:
    """The options sbatch itself reads from ``script``: ``sbatch -v --test-only`` lists them
    before it contacts a controller, here one that is never there (a port nothing listens
    on); it is stopped once it has listed them, as it would retry for 18 s."""
    conf = work / "slurm.conf"
    conf.write_text(
        "ClusterName=check\nSlurmctldHost=localhost\nSlurmctldPort=1\n"
        "NodeName=n1 CPUs=1 State=UNKNOWN\nPartitionName=gpu Nodes=n1 Default=YES\n"
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SLURM_CONF": str(conf)}
    process = subprocess.Popen(
        [_sbatch(), "-v", "--test-only", str(script)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    listed: dict[str, str] = {}
    seen: list[str] = []
    try:
        assert process.stderr is not None
        for line in process.stderr:
            seen.append(line)
            if "end of defined options" in line:
                break
            found = re.fullmatch(r"sbatch: (\S+)\s+: (.*)\n", line)
            if found and not found.group(1).startswith("-"):
                listed[found.group(1)] = found.group(2)
    finally:
        process.kill()
        process.wait()
    assert any("end of defined options" in line for line in seen), "".join(seen)
    return listed


def _script(profile: ClusterProfile) -> str:
    return job_script(make_plan(dapo_b200), profile.for_base(dapo_b200.framework.image))


@pytest.mark.parametrize("kind", sorted(PROFILES))
def test_a_valid_profiles_job_script_is_whole_to_sbatch_and_bash(kind: str, tmp_path: Path) -> None:
    profile = PROFILES[kind]
    path = tmp_path / "job.sbatch"
    path.write_text(_script(profile))
    options = _well_formed(path)
    assert options["--partition"] == profile.partition
    assert options["--time"] == profile.time_limit
    assert options["--account"] == profile.account
    assert options["--output"].startswith(f"{RUNS}/dapo-b200-")
    read = _as_sbatch_reads(path, tmp_path)
    # Every directive the script writes is one sbatch read, with the value written.
    assert read["partition"] == profile.partition and read["account"] == profile.account
    assert read["time"] == profile.time_limit
    assert read["job-name"] == options["--job-name"]
    assert {"nodes", "gres", "requeue", "dependency", "open-mode"} <= set(read), read


def test_the_checks_catch_a_newline_that_got_past_the_profile(tmp_path: Path) -> None:
    """The checks above can fail: a profile whose validators were bypassed (as a trailing
    newline once passed them) gives a script sbatch and these checks read as broken."""
    profile = PROFILES["pyxis"]
    object.__setattr__(profile := attrs.evolve(profile), "name", "local\nid")
    (tmp_path / "job.sbatch").write_text(_script(profile))
    with pytest.raises(AssertionError):
        _well_formed(tmp_path / "job.sbatch")
    # sbatch stops at the injected line: it never reads the partition, or anything after.
    assert "partition" not in _as_sbatch_reads(tmp_path / "job.sbatch", tmp_path)
