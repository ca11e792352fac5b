"""Every YAML (and JSON) loader, fed hostile documents: deep nesting, alias bombs, a
``defaults:`` that names itself or loops, values JSON cannot hold, ``${...}`` strings and
plain garbage. Each gives a value or a RecipeError with a clear message, never a traceback,
and each in bounded time."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recipekit.errors import RecipeError
from recipekit.importers.nemo_rl_yaml import import_yaml, load_keeping_env
from recipekit.importers.yaml_comments import chain_source
from recipekit.keypaths import parse_assignment, read_value, replace_at
from recipekit.nemo_rl.run_env import from_env
from recipekit.nemo_rl.yaml_loader import expand
from recipekit.review.compiled import CONFIG, document
from recipekit.yaml_limits import (
    MAX_ALIASES,
    MAX_BYTES,
    MAX_DEPTH,
    MAX_NODES,
    file_source,
    load_json,
    load_yaml,
)
from recipes.super3.dapo import dapo_gb200

# Any one call, however hostile its input: the limits exist so that none takes long.
SECONDS_PER_CALL = 20.0
HOSTILE = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- documents ---------------------------------------------------------------------------


def _nested(depth: int, flow: bool) -> str:
    if flow:
        return "a: " + "[" * depth + "1" + "]" * depth + "\n"
    return "".join("  " * i + f"k{i}:\n" for i in range(depth)) + "  " * depth + "k: 1\n"


def _alias_bomb(levels: int, width: int) -> str:
    lines = ["l0: &l0 [" + ", ".join(["x"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


NOT_JSON = (
    "2024-01-01",
    "2001-12-14t21:59:43.10-05:00",
    "!!binary aGVsbG8=",
    "!!set {a, b}",
    "!!timestamp 2001-12-14",
    "!!omap [a: 1, b: 2]",
    "!!python/object/apply:os.system [echo hi]",
    "!custom x",
    ".nan",
    "-.inf",
    "1" * 5000,
    "&a [*a]",
)
INTERPOLATIONS = (
    "${oc.env:WANDB_API_KEY}",
    "${oc.env:HOME,/tmp}",
    "${policy.model_name}",
    "${mul:2,3}",
    "${div:1,0}",
    "\\${escaped}",
    "prefix-${a}-suffix",
    "${oc.decode:'[1, 2]'}",
    "${",
)


def scalars() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(NOT_JSON),
        st.sampled_from(INTERPOLATIONS),
        st.sampled_from(INTERPOLATIONS).map(lambda t: json.dumps(t)),  # quoted
        st.integers().map(str),
        st.text(max_size=20).map(json.dumps),
    )


def mappings() -> st.SearchStrategy[str]:
    """A small YAML mapping, block style, its values from ``scalars``."""
    return st.dictionaries(
        st.from_regex(r"[a-z]{1,6}", fullmatch=True), scalars(), min_size=1, max_size=5
    ).map(lambda d: "".join(f"{k}: {v}\n" for k, v in d.items()))


def documents() -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(_nested, st.integers(1, 3000), st.booleans()),
        st.builds(_alias_bomb, st.integers(1, 12), st.integers(1, 12)),
        mappings(),
        st.sampled_from(("a: &a [*a]\n", "a: *nowhere\n", "a: &x 1\nb: *x\n")),
        st.text(alphabet="ab:-[]{}&*!#'\"\n ${}.", max_size=200),
    )


def defaults_lines() -> st.SearchStrategy[str]:
    """What a file's ``defaults:`` may say: itself, the other file (a cycle), both, a list
    holding itself twice, something that is not a file name, or nothing."""
    return st.sampled_from(
        (
            "",
            "defaults: self.yaml\n",
            "defaults: other.yaml\n",
            "defaults: [other.yaml, self.yaml]\n",
            "defaults: [missing.yaml]\n",
            "defaults: 5\n",
            "defaults: {a: b}\n",
            "defaults: [[x]]\n",
        )
    )


# --- checks ------------------------------------------------------------------------------


def _bounded(call: Callable[[], Any]) -> Any:
    """``call``'s value, or None where it raised a RecipeError; any other exception fails the
    test. The message must be readable: non-empty, and naming where."""
    start = time.monotonic()
    try:
        return call()
    except RecipeError as exc:
        assert exc.issues and all(issue.message for issue in exc.issues)
        return None
    finally:
        assert time.monotonic() - start < SECONDS_PER_CALL


def _files(tmp: Path, text: str, defaults: str, other: str) -> Path:
    (tmp / "other.yaml").write_text(other)
    path = tmp / "self.yaml"
    path.write_text(defaults + text)
    return path


@HOSTILE
@given(documents(), defaults_lines(), defaults_lines())
def test_expand_reads_any_document_or_says_why(text: str, defaults: str, other: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = _files(Path(tmp), text, defaults, other + "b: 1\n")
        value = _bounded(lambda: expand(path))
        if value is not None:
            json.dumps(value)  # what `recipekit expand` prints


@HOSTILE
@given(documents(), defaults_lines(), defaults_lines())
def test_import_yaml_reads_any_document_or_says_why(text: str, defaults: str, other: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = _files(Path(tmp), text, defaults, other + "b: 1\n")
        _bounded(lambda: chain_source(path))
        loaded = _bounded(lambda: load_keeping_env(path, {}))
        if loaded is not None:
            json.dumps(loaded.resolved)
        _bounded(lambda: import_yaml(path))


@HOSTILE
@given(documents())
def test_set_reads_any_value_or_says_why(text: str) -> None:
    value = _bounded(lambda: read_value("policy.megatron_cfg.env_vars", text))
    if value is not None:
        json.dumps(value, allow_nan=False)
    _bounded(lambda: parse_assignment(dapo_gb200.config, f"logger.wandb.name={text}"))


@HOSTILE
@given(documents())
def test_compiled_files_read_any_document_or_say_why(text: str) -> None:
    value = _bounded(lambda: document({CONFIG: text}))
    if value is not None:
        json.dumps(value)


@HOSTILE
@given(st.integers(1, 100_000), st.sampled_from("[{"), st.text(max_size=30))
def test_json_reads_any_depth_or_says_why(depth: int, opener: str, tail: str) -> None:
    closer = {"[": "]", "{": "}"}[opener]
    inner = '"x"' if opener == "[" else ""
    text = opener * depth + inner + closer * depth + tail
    _bounded(lambda: load_json(text, file_source("record.json")))


# --- what each limit says ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (_nested(MAX_DEPTH + 1, True), f"nested more than {MAX_DEPTH}"),
        (_nested(1_000, False), f"nested more than {MAX_DEPTH}"),
        (_nested(10_000, True), f"nested more than {MAX_DEPTH}"),
        (_alias_bomb(9, 9), f"expands to more than {MAX_NODES} values"),
        ("".join(f"a{i}: &a{i} 1\n" for i in range(MAX_ALIASES + 1))
         + "".join(f"b{i}: *a{i}\n" for i in range(MAX_ALIASES + 1)), "aliases"),
        ("a: &a [*a]\n", "inside its own anchor"),
        ("a: !!binary aGk=\n", "!!binary"),
        ("a: !!set {x}\n", "!!set"),
        ("a: " + "x" * (MAX_BYTES + 1) + "\n", f"longer than {MAX_BYTES} bytes"),
        ("a: [\n", "not readable as YAML"),
    ],
)
def test_each_limit_names_the_file_line_and_limit(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(text)
    for load in (lambda: expand(path), lambda: chain_source(path)):
        with pytest.raises(RecipeError) as caught:
            load()
        message = caught.value.render()
        assert str(path) in message and says in message and "\n" not in message


def test_upstream_anchors_are_read(tmp_path: Path) -> None:
    # NeMo-RL's distillation configs alias a section (two aliases): a bounded count is fine.
    path = tmp_path / "anchors.yaml"
    path.write_text("base: &base {lr: 1.0e-6, steps: 10}\nteacher: *base\nstudent: *base\n")
    assert expand(path)["teacher"] == {"lr": 1e-6, "steps": 10}


@pytest.mark.parametrize(
    ("files", "loop"),
    [
        ({"a.yaml": "defaults: a.yaml\nx: 1\n"}, "a.yaml -> a.yaml"),
        (
            {"a.yaml": "defaults: b.yaml\nx: 1\n", "b.yaml": "defaults: [a.yaml]\ny: 1\n"},
            "a.yaml -> b.yaml -> a.yaml",
        ),
    ],
)
def test_a_defaults_cycle_is_named(tmp_path: Path, files: dict[str, str], loop: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    for load in (expand, chain_source):
        with pytest.raises(RecipeError, match=f"defaults: is a cycle \\({loop}\\)"):
            load(tmp_path / "a.yaml")


def test_a_date_in_set_is_the_text_the_framework_reads() -> None:
    # OmegaConf (every framework's loader) has no timestamps: 2024-01-01 is text.
    assert read_value("logger.wandb.name", "2024-01-01") == "2024-01-01"
    assert load_yaml("a: 2024-01-01", file_source("f.yaml")) == {"a": "2024-01-01"}


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="0123456789_.eE+-:", min_size=1, max_size=9))
def test_a_number_in_set_is_the_value_omegaconf_reads(scalar: str) -> None:
    # OmegaConf's own loader is the oracle: it reads 1e-6 as a float where YAML 1.1 reads text.
    from omegaconf._utils import get_yaml_loader

    try:
        theirs = yaml.load(f"a: {scalar}", Loader=get_yaml_loader())  # noqa: S506 - OmegaConf's
    except yaml.YAMLError:
        with pytest.raises(RecipeError):
            load_yaml(f"a: {scalar}", file_source("f.yaml"))
        return
    ours = load_yaml(f"a: {scalar}", file_source("f.yaml"))
    assert repr(ours) == repr(theirs)  # the same values, of the same types


def test_an_exponent_without_a_dot_is_a_float() -> None:
    assert read_value("policy.optimizer.kwargs.lr", "1e-6") == 1e-6
    assert read_value("policy.optimizer.kwargs.lr", "'1e-6'") == "1e-6"


# --- interpolation: config values are data ------------------------------------------------


@HOSTILE
@given(st.sampled_from(INTERPOLATIONS[:-1]), st.text(max_size=10), st.text(max_size=10))
def test_set_refuses_any_interpolation_naming_the_key(
    interpolation: str, before: str, after: str
) -> None:
    text = before + interpolation + after
    if text != text.strip() or not text or "${" not in text:
        return  # YAML trims or reads it otherwise: not a string holding ${...}
    with pytest.raises(RecipeError) as caught:
        path, value = parse_assignment(dapo_gb200.config, f"logger.wandb.name={json.dumps(text)}")
        replace_at(dapo_gb200.config, path, value)
    assert any(issue.path == "logger.wandb.name" for issue in caught.value.issues)


def test_a_recipe_string_with_interpolation_is_refused_at_its_key() -> None:
    with pytest.raises(RecipeError) as caught:
        dapo_gb200.with_values({"policy.megatron_cfg.env_vars": {"TOKEN": "${oc.env:SECRET}"}})
    (issue,) = caught.value.issues
    assert issue.path == "policy.megatron_cfg.env_vars.TOKEN"
    assert "interpolation" in issue.message and "from_env" in issue.hint


def test_recipekits_own_references_are_kept() -> None:
    stage = dapo_gb200.with_values(
        {
            "logger.wandb.name": from_env("RUN_LABEL") + "-dapo",
            "checkpointing.checkpoint_dir": "/artifacts/x/${oc.env:RECIPEKIT_RUN}",
        }
    )
    assert stage.config.logger.wandb.name == "${oc.env:RUN_LABEL}-dapo"
    with pytest.raises(RecipeError, match="a default holds no"):
        from_env("X", "${oc.env:SECRET}")
