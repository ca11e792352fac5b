"""Write src/python/recipekit/datacheck/gym_rows.json: what the pinned NeMo-RL and NeMo Gym read
from a row of NeMo Gym JSONL, found in their sources with ``ast`` (issue 43).

- ``reads``: each field of a row the rollout path indexes, the type it needs there, and every
  place it is read (``file:line``). A read is looked for by its shape (``row["agent_ref"]["name"]``,
  ``row.get("responses_create_params")`` tested with ``isinstance(..., dict)``); one the pinned
  source no longer has stops the tool, so an upgrade that moves a read is seen, not guessed.
- ``request``: NeMo Gym's request type a row's ``responses_create_params`` is validated with
  (``NeMoGymResponseCreateParamsNonStreaming``): each key's type, whether it must be given, and
  whether other keys are refused (``extra="forbid"``).
- ``media``: the content part types whose URL NeMo-RL resolves to a file before dispatch, and
  the keys it reads the URL from.
- ``opd``: how on-policy distillation (MOPD) routes a row to a teacher by its agent
  (``resolve_reference_aliases``): the line that raises for an agent with no teacher under
  ``strict_agent_name_match``, the fallback to ``default_teacher_alias``, and the line that raises
  without one.
- ``agents``: for each pinned NeMo Gym config file, the agents it defines (top-level keys holding
  ``responses_api_agents``): the names a row's ``agent_ref.name`` may take where a stage's
  ``env.nemo_gym.config_paths`` are all pinned.

recipekit reads the JSON, never ``.reference/``. ``datacheck/gym_rows_test.py`` regenerates it and
compares.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from recipekit.upstream.annotations import type_text
from recipekit.upstream.classes import UpstreamSource
from recipekit.upstream.conditions import keyed_call
from tools.generated_modules import CHECKOUT, pins, reference_dir, write_or_check

TOOL = "tools/generate_gym_rows.py"
OUTPUT = CHECKOUT / "src/python/recipekit/datacheck/gym_rows.json"
NEMO_RL = "nemo-rl/super-v3.5-posttraining"
GYM = "nemo-gym/0.7.0"
GYM_REQUEST = "nemo_gym.openai_utils:NeMoGymResponseCreateParamsNonStreaming"
GYM_CONFIGS = (
    "responses_api_models/vllm_model/configs/vllm_model_for_training.yaml",
    "resources_servers/math_with_judge/configs/math_with_judge.yaml",
    "resources_servers/mcqa/configs/mcqa.yaml",
    "resources_servers/gui_coordinate/configs/gui_coordinate.yaml",
    "resources_servers/string_match/configs/string_match.yaml",
    "resources_servers/genrm_compare/configs/genrm_compare.yaml",
)
DATASET_PY = "nemo_rl/data/datasets/response_datasets/nemogym_dataset.py"
PROCESSORS_PY = "nemo_rl/data/processors.py"
GYM_PY = "nemo_rl/environments/nemo_gym.py"
ROLLOUTS_PY = "nemo_rl/experience/rollouts.py"
MEDIA_PY = "nemo_rl/data/multimodal_utils.py"
VIDEO_PY = "nemo_rl/environments/nemo_gym_video.py"
OPD_PY = "nemo_rl/algorithms/opd.py"


def _key(node: ast.AST) -> str | None:
    """The string a subscript or ``.get`` call reads, if constant."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.slice.value if isinstance(node.slice.value, str) else None
    call = keyed_call(node)
    return call[1] if call is not None and isinstance(call[1], str) else None


def _inner(node: ast.AST) -> ast.AST | None:
    if isinstance(node, ast.Subscript):
        return node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.value
    return None


def _chain(node: ast.AST) -> tuple[str, ...]:
    """``row["a"].get("b")["c"]`` -> ("a", "b", "c")."""
    keys: list[str] = []
    while (key := _key(node)) is not None:
        keys.insert(0, key)
        inner = _inner(node)
        assert inner is not None
        node = inner
    return tuple(keys)


def _lines(tree: ast.Module, test: Callable[[ast.AST], bool]) -> list[int]:
    return sorted({getattr(n, "lineno", 0) for n in ast.walk(tree) if test(n)})


def _function(tree: ast.Module, name: str) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return node
    raise SystemExit(f"{TOOL}: no function {name} in the pinned source")


def _reads(nemo_rl: Path) -> list[dict[str, Any]]:
    trees = {f: ast.parse((nemo_rl / f).read_text()) for f in (GYM_PY, ROLLOUTS_PY)}
    processors = ast.parse((nemo_rl / PROCESSORS_PY).read_text())
    dataset = ast.parse((nemo_rl / DATASET_PY).read_text())

    def sites(
        test: Callable[[ast.AST], bool], files: tuple[str, ...] = (GYM_PY, ROLLOUTS_PY)
    ) -> list[str]:
        return [f"{f}:{line}" for f in files for line in _lines(trees[f], test)]

    def ends(*keys: str) -> Callable[[ast.AST], bool]:
        return lambda n: _key(n) is not None and _chain(n)[-len(keys) :] == keys

    # The dataset keeps every raw line, a blank one too (a list comprehension over the file),
    # and the processor parses each with json.loads.
    kept = _lines(dataset, lambda n: isinstance(n, ast.ListComp))
    processor = _function(processors, "nemo_gym_data_processor")
    parsed = sorted(
        n.lineno
        for n in ast.walk(processor)
        if isinstance(n, ast.Call) and ast.unparse(n.func) == "json.loads"
    )
    # _prepare_nemo_gym_rows: responses_create_params must be a dict (isinstance test, then a
    # TypeError), max_output_tokens goes into min() with an int.
    prepare = _function(trees[ROLLOUTS_PY], "_prepare_nemo_gym_rows")
    dict_test = [
        n.lineno
        for n in ast.walk(prepare)
        if isinstance(n, ast.Call) and ast.unparse(n) == "isinstance(responses_create_params, dict)"
    ]
    max_tokens = [
        getattr(n, "lineno", 0) for n in ast.walk(prepare) if _key(n) == "max_output_tokens"
    ]
    reads: list[dict[str, Any]] = [
        {
            "field": "",
            "type": "line",
            "rule": "every line is one JSON object (blank lines too are kept as rows)",
            "sites": [f"{DATASET_PY}:{line}" for line in kept]
            + [f"{PROCESSORS_PY}:{line}" for line in parsed],
        },
        {
            "field": "responses_create_params",
            "type": "dict",
            "rule": "a JSON object, or the rollout raises TypeError",
            "sites": [f"{ROLLOUTS_PY}:{line}" for line in dict_test],
        },
        {
            "field": "responses_create_params.max_output_tokens",
            "type": "int | None",
            "rule": "an integer where given: the rollout takes min() with max_new_tokens",
            "sites": [f"{ROLLOUTS_PY}:{line}" for line in max_tokens],
            "optional": True,
        },
        {
            "field": "agent_ref",
            "type": "dict",
            "rule": "a JSON object naming the row's agent",
            "sites": sites(ends("agent_ref", "name")),
        },
        {
            "field": "agent_ref.name",
            "type": "str",
            "rule": "the agent's name: every rollout batch groups rows by it",
            "sites": sites(ends("agent_ref", "name")),
        },
        {
            "field": "responses_create_params.input",
            "type": "str | list",
            "rule": "the prompt: text, or a list of messages (JSON objects)",
            "sites": sites(ends("responses_create_params", "input")),
        },
    ]
    for read in reads:
        if not read["sites"]:
            raise SystemExit(f"{TOOL}: {NEMO_RL} no longer reads {read['field'] or 'a line'}")
    return reads


def _frozenset(tree: ast.Module, name: str) -> tuple[list[str], int]:
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == name
        ):
            return sorted(ast.literal_eval(node.value.args[0])), node.lineno  # type: ignore[attr-defined]
    raise SystemExit(f"{TOOL}: no {name} in {MEDIA_PY}")


def _media(nemo_rl: Path) -> dict[str, Any]:
    tree = ast.parse((nemo_rl / MEDIA_PY).read_text())
    images, image_line = _frozenset(tree, "IMAGE_CONTENT_TYPES")
    videos, video_line = _frozenset(tree, "VIDEO_CONTENT_TYPES")

    def keys(path: str, function: str) -> tuple[list[str], str]:
        """The URL keys the function tries in order (the tuple in ``next(... for key in ...)``)."""
        found = ast.parse((nemo_rl / path).read_text())
        body = _function(found, function)
        for node in ast.walk(body):
            if isinstance(node, ast.comprehension) and isinstance(node.iter, ast.Tuple):
                return [ast.literal_eval(e) for e in node.iter.elts], f"{path}:{node.iter.lineno}"
        raise SystemExit(f"{TOOL}: no media keys in {path}:{function}")

    image_keys, image_site = keys(MEDIA_PY, "encode_images_in_examples")
    video_keys, video_site = keys(VIDEO_PY, "normalize_video_urls_in_examples")
    return {
        "image": {
            "types": images,
            "keys": image_keys,
            "sites": [f"{MEDIA_PY}:{image_line}", image_site],
        },
        "video": {
            "types": videos,
            "keys": video_keys,
            "sites": [f"{MEDIA_PY}:{video_line}", video_site],
        },
    }


def _request(gym: Path) -> dict[str, Any]:
    path = "nemo_gym/openai_utils.py"
    source = UpstreamSource.from_files(gym, [path])
    cls = source.config_class(GYM_REQUEST)
    node = source.nodes[GYM_REQUEST]
    if cls is None:
        raise SystemExit(f"{TOOL}: no {GYM_REQUEST} in {GYM}")
    forbids = any(
        isinstance(s, ast.Assign)
        and ast.unparse(s.targets[0]) == "model_config"
        and "extra='forbid'" in ast.unparse(s.value)
        for s in node.body
    )
    return {
        "class": f"{path}:{node.lineno}",
        "forbids_extra": forbids,
        "keys": {
            f.name: {
                "type": type_text(f.annotation, f.module, source),
                "required": f.required,
                "site": f"{path}:{f.line}",
            }
            for f in cls.fields.values()
        },
    }


def _opd(nemo_rl: Path) -> dict[str, str]:
    tree = ast.parse((nemo_rl / OPD_PY).read_text())
    route = _function(tree, "resolve_reference_aliases")
    chain = next(
        (n for n in ast.walk(route) if isinstance(n, ast.If) and ast.unparse(n.test)
         == "name in teacher_model_by_agent_name"),
        None,
    )  # fmt: skip
    if chain is None or not chain.orelse or not isinstance(chain.orelse[0], ast.If):
        raise SystemExit(f"{TOOL}: {OPD_PY} routes agents otherwise")
    strict = chain.orelse[0]
    fallback = strict.orelse[0] if strict.orelse and isinstance(strict.orelse[0], ast.If) else None
    if ast.unparse(strict.test) != "strict_agent_name_match" or fallback is None:
        raise SystemExit(f"{TOOL}: {OPD_PY} routes agents otherwise")
    unmapped = fallback.orelse[0] if fallback.orelse else None
    return {
        "key": "on_policy_distillation.teacher_model_by_agent_name",
        "strict": f"{OPD_PY}:{strict.body[0].lineno}",
        "fallback": f"{OPD_PY}:{fallback.lineno}",
        "unmapped": f"{OPD_PY}:{getattr(unmapped, 'lineno', fallback.lineno)}",
    }


def _agents(gym: Path) -> dict[str, list[str]]:
    found = {}
    for path in GYM_CONFIGS:
        data = yaml.safe_load((gym / path).read_text()) or {}
        found[path] = sorted(
            name
            for name, body in data.items()
            if isinstance(body, dict) and "responses_api_agents" in body
        )
    return found


def generate(reference: Path | None = None) -> dict[str, str]:
    reference = reference or reference_dir()
    pinned = pins()
    table = {
        "generated_by": TOOL,
        "sources": {NEMO_RL: pinned[NEMO_RL], GYM: pinned[GYM]},
        "reads": _reads(reference / NEMO_RL),
        "request": _request(reference / GYM),
        "media": _media(reference / NEMO_RL),
        "opd": _opd(reference / NEMO_RL),
        "agents": _agents(reference / GYM),
    }
    return {str(OUTPUT.relative_to(CHECKOUT)): json.dumps(table, indent=1, sort_keys=True) + "\n"}


def main() -> int:
    return write_or_check(generate(), TOOL, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
