"""Write src/python/recipekit/upstream/allowed_values.json: the values a pinned framework accepts
for a string setting it dispatches on, read with ``ast`` from the code that dispatches.

A setting such as ``data.train.processor`` or ``lr_decay_style`` is typed ``str`` upstream; the
allowed set lives in the code that acts on it: a registry's keys (``PROCESSOR_REGISTRY``), an
enum's values (``PackingAlgorithm``), a ``Literal`` annotation, or the string constants an
``if``/``elif`` chain, an ``assert ... in (...)`` or a ``match`` compares the setting with.
Copied by hand, these drift: a registry gains a name at the next pin and recipekit refuses the
valid value. ``SETS`` says where each set is read, per pinned source; a section's field takes
``recipekit.upstream.allowed.upstream_values(NAME)``, which picks the set of the pinned source
its section's upstream class names.

A site that no longer yields a value stops the generator (``SystemExit``), naming it: the code
moved, and the spec must follow it. recipekit reads the JSON, never ``.reference/``;
``recipekit/upstream/allowed_test.py`` regenerates it and compares.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from tools.generated_modules import json_table, pins, reference_dir, write_or_check

TOOL = "tools/generate_allowed_values.py"
OUTPUT = "src/python/recipekit/upstream/allowed_values.json"

V3 = "nemo-rl/super-v3"
V35 = "nemo-rl/super-v3.5-posttraining"
MCORE = "megatron-core/0.19.2"
VLLM = "vllm/v0.25.1"


class Site(NamedTuple):
    """Where one set is read at one pinned source.

    ``kind``: ``keys`` (the string keys of the dict literal assigned to ``symbol``, in the
    function or class ``scope`` or anywhere in the module where ``scope`` is empty),
    ``constant`` (the strings of the tuple, list, set or ``Literal[...]`` assigned there),
    ``indexed`` (the keys of a dict literal indexed by the setting ``symbol``: ``{...}[x]``),
    ``enum`` (the string values of the class ``symbol``'s members), ``literal`` (the
    ``Literal[...]`` that annotates the field ``symbol`` = ``Class.field``), ``documented``
    (what the pattern ``scope`` captures in the docstring under the field ``Class.field``:
    Megatron-Core lists a string option's values there and checks them in code no pin holds)
    or ``compared`` (every
    string constant the setting ``symbol`` is compared with, by ``==``, ``!=``, ``in``, ``not
    in`` or ``match``, inside the function or class ``scope``, or the whole file where
    ``scope`` is empty). The setting is matched by its last name: ``x``, ``self.x``,
    ``cfg["x"]`` and ``cfg.get("x")``.
    """

    file: str
    kind: str
    symbol: str
    scope: str = ""
    # Read at another pinned source than the set's (the library the framework hands it to).
    source: str = ""


def _both(
    site: Site | tuple[Site, ...], v35_file: str | None = None
) -> dict[str, Site | tuple[Site, ...]]:
    if not isinstance(site, Site):  # several sites: the same files at both pins
        return {V3: site, V35: site}
    return {V3: site, V35: site._replace(file=v35_file or site.file)}


_LOSS_V3 = "nemo_rl/algorithms/loss_functions.py"
_LOSS_V35 = "nemo_rl/algorithms/loss/loss_functions.py"
_MCORE_GENERATION = "nemo_rl/models/generation/megatron/config.py"

# name -> pinned source label -> its site, or its sites whose values it takes together (what the
# framework handles itself, and what it hands on to a library)
SETS: dict[str, dict[str, Site | tuple[Site, ...]]] = {
    "nemo_rl.env_name": _both(Site("nemo_rl/environments/utils.py", "keys", "ENV_REGISTRY")),
    "nemo_rl.data_processor": _both(
        Site("nemo_rl/data/processors.py", "keys", "PROCESSOR_REGISTRY")
    ),
    # The dtype names NeMo-RL maps to torch dtypes (policy.precision, the Megatron dtypes).
    "nemo_rl.torch_dtype": _both(
        Site("nemo_rl/models/automodel/setup.py", "keys", "STRING_TO_DTYPE")
    ),
    # vLLM's dtypes (ModelConfig.dtype), and fp8, which NeMo-RL's worker turns into FP8 weights.
    "nemo_rl.vllm_precision": _both(
        (
            Site("vllm/config/model.py", "constant", "ModelDType", source=VLLM),
            Site("nemo_rl/models/generation/vllm/vllm_worker.py", "compared", "precision"),
        )
    ),
    "nemo_rl.packing_algorithm": _both(
        Site("nemo_rl/data/packing/algorithms.py", "enum", "PackingAlgorithm")
    ),
    "nemo_rl.reference_policy_kl_type": _both(
        Site("nemo_rl/algorithms/utils.py", "compared", "kl_type", "calculate_kl")
    ),
    "nemo_rl.truncated_importance_sampling_type": _both(
        Site(_LOSS_V3, "compared", "truncated_importance_sampling_type", "ClippedPGLossFn"),
        _LOSS_V35,
    ),
    "nemo_rl.adv_estimator": _both(
        Site(
            "nemo_rl/algorithms/grpo.py",
            "compared",
            "adv_estimator_name",
            "_create_advantage_estimator",
        )
    ),
    "nemo_rl.ppo_adv_estimator": {
        V35: Site(
            "nemo_rl/algorithms/ppo.py",
            "compared",
            "adv_estimator_name",
            "_create_advantage_estimator",
        )
    },
    "nemo_rl.generation_backend": _both(
        Site(
            "nemo_rl/algorithms/grpo.py",
            "compared",
            "backend",
            "setup",
        )
    ),
    "nemo_rl.math_verify_impl": _both(
        Site("nemo_rl/environments/math_environment.py", "compared", "math_verify_impl")
    ),
    "nemo_rl.distillation_kl_type": _both(
        Site(_LOSS_V3, "compared", "kl_type", "DistillationLossFn"), _LOSS_V35
    ),
    "nemo_rl.kd_loss_mode": {
        V35: Site(_LOSS_V35, "compared", "kd_loss_mode", "CrossTokenizerDistillationLossFn")
    },
    # Documented values: a list gives each layer its own (cp_comm_type) or combines several
    # losses (moe_router_load_balancing_type).
    "megatron_core.cp_comm_type": {
        MCORE: Site(
            "megatron/core/transformer/transformer_config.py",
            "documented",
            "TransformerConfig.cp_comm_type",
            r'^\s*"([^"]+)":',
        )
    },
    "megatron_core.moe_router_load_balancing_type": {
        MCORE: Site(
            "megatron/core/transformer/transformer_config.py",
            "documented",
            "TransformerConfig.moe_router_load_balancing_type",
            r'^\s*- "([^"]+)":',
        )
    },
    "megatron_core.data_parallel_sharding_strategy": {
        MCORE: Site(
            "megatron/core/distributed/distributed_data_parallel_config.py",
            "documented",
            "DistributedDataParallelConfig.data_parallel_sharding_strategy",
            r"'([^']+)'",
        )
    },
    "megatron_core.optimizer": {
        MCORE: Site(
            "megatron/core/optimizer/optimizer_config.py",
            "documented",
            "OptimizerConfig.optimizer",
            r"'([^']+)'",
        )
    },
    # Literal-typed upstream, restated by a section that states the key for its required-ness
    # or its place.
    **{
        f"nemo_rl.{field}": {V35: Site(file, "literal", f"{cls}.{field}")}
        for file, cls, field in (
            ("nemo_rl/models/policy/__init__.py", "SequencePackingConfig", "microbatch_order"),
            ("nemo_rl/models/generation/vllm/config.py", "VllmSpecificArgs", "logprobs_mode"),
            (_MCORE_GENERATION, "MCoreGenerationSpecificArgs", "refit_backend"),
            (_MCORE_GENERATION, "MCoreGenerationSpecificArgs", "kv_cache_management_mode"),
        )
    },
    "nemo_rl.eval_metric": {V35: Site("nemo_rl/evals/eval.py", "compared", "metric", "setup")},
    "nemo_rl.sum_weights_metric": {
        V35: Site(_LOSS_V35, "compared", "sum_weights_metric", "CrossTokenizerDistillationLossFn")
    },
    # Named sets the code dispatches on.
    "nemo_rl.refit_transport": {
        V35: Site("nemo_rl/models/generation/vllm/config.py", "constant", "VllmRefitSelector")
    },
    "nemo_rl.sparse_refit_transport": {
        V35: Site(
            "nemo_rl/models/generation/vllm/config.py", "constant", "VLLM_SPARSE_REFIT_TRANSPORTS"
        )
    },
    "nemo_rl.reward_penalty_flag": {
        V35: Site("nemo_rl/algorithms/grpo.py", "constant", "_REWARD_PENALTY_FLAGS")
    },
    # The rope_scaling fields Megatron setup requires of a yarn override (a local constant).
    "nemo_rl.yarn_required_field": {
        V35: Site("nemo_rl/models/megatron/setup.py", "constant", "_YARN_REQUIRED_FIELDS")
    },
    "nemo_rl.math_verifier_type": {
        V3: Site("nemo_rl/environments/math_environment.py", "indexed", "verifier_type"),
        V35: Site(
            "nemo_rl/environments/math_environment.py",
            "keys",
            "WORKER_CLASS_DICT",
            "MathEnvironment",
        ),
    },
    # The job runs run_recipe.py --mode <scheme>, which hands a PEFT recipe the modes it
    # compares here as its peft_scheme (recipekit's Recipe.run_mode).
    "megatron_bridge.peft_scheme": {
        "megatron-bridge/main": Site(
            "scripts/training/run_recipe.py", "compared", "mode", "_load_selected_recipe"
        )
    },
    "megatron_core.lr_decay_style": {
        MCORE: Site(
            "megatron/core/optimizer_param_scheduler.py", "compared", "lr_decay_style", "get_lr"
        )
    },
    "megatron_core.weight_decay_incr_style": {
        MCORE: Site(
            "megatron/core/optimizer_param_scheduler.py", "compared", "wd_incr_style", "get_wd"
        )
    },
    **{
        f"megatron_core.{field}": {
            MCORE: Site(
                "megatron/core/transformer/transformer_config.py",
                "literal",
                f"TransformerConfig.{field}",
            )
        }
        for field in (
            "fp8",
            "fp8_recipe",
            "moe_router_dtype",
            "moe_token_dispatcher_type",
            "recompute_granularity",
            "recompute_method",
        )
    },
}


def _strings(node: ast.AST | None) -> Iterator[str]:
    """The string constants of a constant, or of a tuple, list or set of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for element in node.elts:
            yield from _strings(element)


# The calls a comparison may fold the setting's case with first: ``scheme.lower() == "lora"``.
_CASE_FOLDS = ("lower", "casefold")


def _case_folded(node: ast.AST) -> ast.AST | None:
    """What ``node`` folds the case of (``x.lower()``: ``x``), or None."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _CASE_FOLDS
        and not node.args
    ):
        return node.func.value
    return None


def _names_setting(node: ast.AST, setting: str) -> bool:
    """``node`` reads ``setting``: ``setting``, ``x.setting``, ``x["setting"]``,
    ``x.get("setting", ...)``, or any of them with its case folded (``setting.lower()``)."""
    folded = _case_folded(node)
    if folded is not None:
        return _names_setting(folded, setting)
    if isinstance(node, ast.Name):
        return node.id == setting
    if isinstance(node, ast.Attribute):
        return node.attr == setting
    if isinstance(node, ast.Subscript):
        return next(_strings(node.slice), None) == setting
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr == "get" and next(_strings(node.args[0]), None) == setting
    return False


def _compared(scope: ast.AST, setting: str) -> Iterator[tuple[str, int, bool]]:
    """Each string ``setting`` is compared with in ``scope``, with the comparison's line and
    whether the setting's case is folded first."""
    for node in ast.walk(scope):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for left, op, right in zip(sides, node.ops, sides[1:], strict=False):
                if not isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn):
                    continue
                if _names_setting(left, setting):
                    folded = _case_folded(left) is not None
                    yield from ((v, node.lineno, folded) for v in _strings(right))
                elif _names_setting(right, setting) and isinstance(op, ast.Eq | ast.NotEq):
                    folded = _case_folded(right) is not None
                    yield from ((v, node.lineno, folded) for v in _strings(left))
        elif isinstance(node, ast.Match) and _names_setting(node.subject, setting):
            folded = _case_folded(node.subject) is not None
            for case in node.cases:
                for pattern in ast.walk(case.pattern):
                    if isinstance(pattern, ast.MatchValue):
                        yield from ((v, node.lineno, folded) for v in _strings(pattern.value))


def case_folded(text: str, site: Site) -> bool:
    """Whether every comparison a ``compared`` site reads folds the setting's case first: the
    framework then takes the values in any case (``LoRA``)."""
    if site.kind != "compared":
        return False
    tree = ast.parse(text)
    found = [f for scope in _scopes(tree, site.scope) for *_, f in _compared(scope, site.symbol)]
    return bool(found) and all(found)


def _scopes(tree: ast.Module, name: str) -> list[ast.AST]:
    if not name:
        return [tree]
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == name
    ]


def _assigned(scopes: list[ast.AST], name: str) -> ast.expr | None:
    """The value first assigned to ``name`` in ``scopes`` (the module, or its functions or
    classes of a name)."""
    for node in (node for scope in scopes for node in ast.walk(scope)):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            # PROCESSOR_REGISTRY = cast(Dict[...], {...})
            if isinstance(value, ast.Call) and value.args:
                value = value.args[-1]
            return value
    return None


def read(text: str, site: Site) -> tuple[list[str], int]:
    """The values ``site`` yields in the module ``text``, in source order, and the line it
    starts at."""
    tree = ast.parse(text)
    values: list[str] = []
    line = 0
    if site.kind == "keys":
        node = _assigned(_scopes(tree, site.scope), site.symbol)
        if isinstance(node, ast.Dict):
            values = [v for k in node.keys for v in _strings(k)]
            line = node.lineno
    elif site.kind == "indexed":
        for scope in _scopes(tree, site.scope):
            for sub in ast.walk(scope):
                if (
                    isinstance(sub, ast.Subscript)
                    and isinstance(sub.value, ast.Dict)
                    and _names_setting(sub.slice, site.symbol)
                ):
                    values = [v for k in sub.value.keys for v in _strings(k)]
                    line = sub.lineno
    elif site.kind == "constant":
        node = _assigned(_scopes(tree, site.scope), site.symbol)
        if isinstance(node, ast.Subscript):  # X = Literal["a", "b"]
            node = node.slice
        if node is not None:
            values, line = list(_strings(node)), node.lineno
    elif site.kind == "enum":
        for cls in _scopes(tree, site.symbol):
            assert isinstance(cls, ast.ClassDef)
            values = [v for n in cls.body if isinstance(n, ast.Assign) for v in _strings(n.value)]
            line = cls.lineno
    elif site.kind in ("literal", "documented"):
        owner, field = site.symbol.split(".")
        for cls in _scopes(tree, owner):
            body = getattr(cls, "body", [])
            for index, node in enumerate(body):
                if not (
                    isinstance(node, ast.AnnAssign)
                    and isinstance(node.target, ast.Name)
                    and node.target.id == field
                ):
                    continue
                line = node.lineno
                if site.kind == "literal":
                    values = [
                        v
                        for sub in ast.walk(node.annotation)
                        if isinstance(sub, ast.Subscript)
                        and isinstance(sub.value, ast.Name)
                        and sub.value.id == "Literal"
                        for v in _strings(sub.slice)
                    ]
                else:
                    doc = body[index + 1] if index + 1 < len(body) else None
                    text = next(_strings(doc.value), "") if isinstance(doc, ast.Expr) else ""
                    values = re.findall(site.scope, text, flags=re.MULTILINE)
    elif site.kind == "compared":
        compared = sorted(
            (
                (at, value)
                for scope in _scopes(tree, site.scope)
                for value, at, _ in _compared(scope, site.symbol)
            ),
            key=lambda pair: pair[0],
        )
        values = [value for _, value in compared]
        line = compared[0][0] if compared else 0
    else:
        raise ValueError(f"unknown kind {site.kind!r}")
    return list(dict.fromkeys(values)), line


def _site_text(root: Path, label: str, name: str, site: Site) -> str:
    label = site.source or label
    path = root / label / site.file
    if not path.is_file():
        raise SystemExit(
            f"{name}: {label}/{site.file} is not under {root}: run tools/fetch-reference"
        )
    return path.read_text()


def _read_site(root: Path, label: str, name: str, site: Site) -> tuple[list[str], int]:
    values, line = read(_site_text(root, label, name, site), site)
    if not values:
        raise SystemExit(
            f"{name}: {site.kind} {site.symbol!r} yields no value in {label}/{site.file}"
            + (f" ({site.scope})" if site.scope else "")
            + ": the code moved; point SETS at where it is now"
        )
    return values, line


def _entry(root: Path, label: str, name: str, sites: Site | tuple[Site, ...]) -> dict[str, Any]:
    """The set at ``label``: its values (every site's, in order) and where each site is; the
    first is the one a refusal cites, with the others as "also"."""
    each = (sites,) if isinstance(sites, Site) else sites
    read_each = [(site, *_read_site(root, label, name, site)) for site in each]
    (first, _, line), *others = read_each
    entry: dict[str, Any] = {
        "file": first.file,
        "line": line,
        "values": list(dict.fromkeys(v for _, values, _ in read_each for v in values)),
    }
    if first.source:
        entry["source"] = first.source
    if all(case_folded(_site_text(root, label, name, site), site) for site in each):
        entry["case_folded"] = True
    if others:
        entry["also"] = [[s.source or label, s.file, at] for s, _, at in others]
    return entry


def generate() -> dict[str, str]:
    commits, root = pins(), reference_dir()
    labels = sorted({label for sites in SETS.values() for label in sites})
    data = {
        label: {
            "commit": commits[label],
            "sets": {
                name: _entry(root, label, name, sites[label])
                for name, sites in sorted(SETS.items())
                if label in sites
            },
        }
        for label in labels
    }
    return json_table(OUTPUT, TOOL, data)


def main() -> int:
    return write_or_check(generate(), TOOL, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
