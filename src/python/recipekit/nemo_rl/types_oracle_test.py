"""NeMo-RL's own config types as the oracle for compiled configs (issue: oracles).

NeMo-RL declares its config as ``TypedDict`` (and, on newer branches, pydantic) classes rooted
at ``MasterConfig``. They are read here from NeMo-RL's source at the pinned commits (the
reference data, ``3rdparty/reference/manifest.toml``) with ``ast``: never imported, nothing of
recipekit in between. A compiled config is checked against them: keys NeMo-RL requires and the
config omits, keys it does not declare, and values not of the declared type (int, float, str,
bool, None, Literal, list, dict and the config classes; an annotation the reader cannot judge,
a type alias say, passes). NeMo-RL's own configs diverge too (its YAMLs set
keys its worker code reads with ``.get()``), so the test is: recipekit introduces no divergence
that the upstream config it ports does not already have, both measured by the same types.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
import yaml

from recipekit.plan import make_plan
from recipes.super3.dapo import dapo_b200, dapo_gb200, dapo_h100
from recipes.super35.mopd import mopd_single_stage
from recipes.super35.rl import rlvr
from recipes.super35.teachers import teacher_reasoning
from tools.fetch_reference import nemo_rl_expand

MASTER = "nemo_rl.algorithms.grpo:MasterConfig"
SUPER_OMNI = (
    "nemo-rl/main/examples/configs/recipes/vlm/"
    "vlm_grpo-nemotron-super-omni-120ba12b-16n8g-megatron-tp8ep16cp2-async-gym.v1.yaml"
)
SUPER_OMNI_MOPD = (
    "nemo-rl/main/examples/configs/recipes/vlm/"
    "mopd-nemotron-super-omni-120ba12b-10n8g-megatron-tp8ep16cp2-async-gym.v1.yaml"
)
EXPANDED = "expanded/super-v3-dapo/dapo17k_nemotron_super_120b_{}.expanded.yaml"

TYPED_BASES = {
    "TypedDict",
    "typing.TypedDict",
    "BaseModel",
    "pydantic.BaseModel",
    "typing_extensions.TypedDict",
}


class Types:
    """NeMo-RL's config classes at one commit, read from its source (never imported)."""

    def __init__(self, root: Path) -> None:
        self.classes: dict[str, ast.ClassDef] = {}  # "module:Name"
        self.scope: dict[str, dict[str, str]] = {}  # module -> local name -> "module:Name"
        for path in sorted(root.rglob("*.py")):
            module = ".".join(path.relative_to(root.parent).with_suffix("").parts).removesuffix(
                ".__init__"
            )
            tree = ast.parse(path.read_text())
            names: dict[str, str] = {}
            for node in tree.body:
                if isinstance(node, ast.ImportFrom) and node.module:
                    for alias in node.names:
                        names[alias.asname or alias.name] = f"{node.module}:{alias.name}"
                elif isinstance(node, ast.ClassDef):
                    names[node.name] = f"{module}:{node.name}"
                    self.classes[f"{module}:{node.name}"] = node
            self.scope[module] = names
        self._subclasses: dict[str, list[str]] = {}
        for qualified in self.classes:
            for base in self.bases(qualified):
                self._subclasses.setdefault(base, []).append(qualified)

    def resolve(self, module: str, name: str) -> str | None:
        found = self.scope.get(module, {}).get(name)
        if found is None:
            return None
        if found in self.classes:
            return found
        target_module, _, target = found.partition(":")  # re-exported: follow it
        return self.resolve(target_module, target) if target_module in self.scope else None

    def bases(self, qualified: str) -> list[str]:
        module = qualified.split(":")[0]
        out = []
        for base in self.classes[qualified].bases:
            resolved = self.resolve(module, ast.unparse(base))
            if resolved is not None:
                out.append(resolved)
        return out

    def is_config(self, qualified: str) -> bool:
        node = self.classes[qualified]
        return any(ast.unparse(b) in TYPED_BASES for b in node.bases) or any(
            self.is_config(b) for b in self.bases(qualified)
        )

    def fields(self, qualified: str) -> dict[str, tuple[ast.expr, bool]]:
        node = self.classes[qualified]
        out: dict[str, tuple[ast.expr, bool]] = {}
        for base in self.bases(qualified):
            if self.is_config(base):
                out.update(self.fields(base))
        total = not any(
            k.arg == "total" and isinstance(k.value, ast.Constant) and k.value.value is False
            for k in node.keywords
        )
        pydantic = not any(ast.unparse(b).endswith("TypedDict") for b in node.bases) and any(
            ast.unparse(b).endswith("BaseModel") for b in node.bases
        )
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                ann, text = stmt.annotation, ast.unparse(stmt.annotation)
                optional = text.startswith(("NotRequired[", "typing.NotRequired["))
                if optional or text.startswith("Required["):
                    ann = ann.slice  # type: ignore[attr-defined]
                required = total and not optional and not (pydantic and stmt.value is not None)
                out[stmt.target.id] = (ann, required)
        return out

    def members(self, ann: ast.expr) -> list[ast.expr]:
        if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
            return self.members(ann.left) + self.members(ann.right)
        if isinstance(ann, ast.Subscript) and ast.unparse(ann.value) in (
            "Optional",
            "Union",
            "typing.Optional",
            "typing.Union",
        ):
            inner = ann.slice
            return [
                m
                for e in (inner.elts if isinstance(inner, ast.Tuple) else [inner])
                for m in self.members(e)
            ]
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            return self.members(ast.parse(ann.value, mode="eval").body)
        return [ann]

    def family(self, qualified: str) -> list[str]:
        out, todo = [qualified], [qualified]
        while todo:
            for sub in self._subclasses.get(todo.pop(), []):
                if sub not in out:
                    out.append(sub)
                    todo.append(sub)
        return out

    def check(self, value: Any, qualified: str, path: str = "") -> list[str]:
        results = [self._check_one(value, member, path) for member in self.family(qualified)]
        return min(results, key=len)

    def _check_one(self, value: dict[str, Any], qualified: str, path: str) -> list[str]:
        name = qualified.split(":")[1]
        declared = self.fields(qualified)
        module = qualified.split(":")[0]
        issues: list[str] = []
        for key, (ann, required) in declared.items():
            if key not in value:
                if required:
                    issues.append(f"{path}{key}: required by {name}, missing")
                continue
            sub = value[key]
            wrong = self.type_issue(sub, ann, module)
            if wrong:
                issues.append(f"{path}{key} = {sub!r}: {wrong} ({name})")
                continue
            if isinstance(sub, dict):
                configs = [
                    r
                    for m in self.members(ann)
                    if isinstance(m, ast.Name)
                    and (r := self.resolve(module, m.id))
                    and self.is_config(r)
                ]
                if configs:
                    found = [self.check(sub, c, f"{path}{key}.") for c in configs]
                    fewest = min(found, key=len)
                    issues += fewest
        if not self.allows_extra(qualified):
            issues += [
                f"{path}{key}: not declared by {name}" for key in value if key not in declared
            ]
        return issues

    def type_issue(self, value: Any, ann: ast.expr, module: str) -> str:
        """Why ``value`` is not of type ``ann``; "" when it is, or when that cannot be told."""
        members = self.members(ann)
        if any(self._matches(value, member, module) is not False for member in members):
            return ""
        return f"not {ast.unparse(ann)}"

    def _matches(self, value: Any, ann: ast.expr, module: str) -> bool | None:
        """Whether ``value`` is an ``ann``; None when the annotation is beyond this reader."""
        text = ast.unparse(ann)
        if isinstance(ann, ast.Constant) and ann.value is None or text == "None":
            return value is None
        scalars: dict[str, Any] = {
            "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
            "str": lambda v: isinstance(v, str),
            "bool": lambda v: isinstance(v, bool),
        }
        if text in scalars:
            return bool(scalars[text](value))
        if text in ("Any", "typing.Any", "object"):
            return True
        if isinstance(ann, ast.Subscript):
            head = ast.unparse(ann.value).removeprefix("typing.")
            if head == "Literal":
                items = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
                allowed = [i.value for i in items if isinstance(i, ast.Constant)]
                return value in allowed if len(allowed) == len(items) else None
            if head in ("list", "List", "Sequence", "tuple", "Tuple"):
                return isinstance(value, list)
            if head in ("dict", "Dict", "Mapping"):
                return isinstance(value, dict)
            return None
        if isinstance(ann, ast.Name):
            resolved = self.resolve(module, ann.id)
            if resolved is not None and self.is_config(resolved):
                return isinstance(value, dict)
        return None

    def allows_extra(self, qualified: str) -> bool:
        """A pydantic class with ``extra="allow"`` takes keys it does not declare."""
        return any(
            k.arg == "extra" and isinstance(k.value, ast.Constant) and k.value.value == "allow"
            for k in self.classes[qualified].keywords
        ) or any(self.allows_extra(base) for base in self.bases(qualified))


def _divergences(types: Types, config: dict[str, Any]) -> set[str]:
    return set(types.check(config, MASTER))


@pytest.fixture(scope="module")
def super_v3(reference_dir: Path) -> Types:
    return Types(reference_dir / "nemo-rl/super-v3/nemo_rl")


@pytest.fixture(scope="module")
def super_v35(reference_dir: Path) -> Types:
    return Types(reference_dir / "nemo-rl/super-v3.5-posttraining/nemo_rl")


@pytest.mark.parametrize(
    ("stage", "variant"),
    [
        (dapo_gb200, "gb200_5x4_noncolocated"),
        (dapo_b200, "b200_3x8_noncolocated"),
        (dapo_h100, "h100_4x8_colocated"),
    ],
)
def test_super_v3_configs_diverge_from_nemo_rls_types_only_where_the_guide_does(
    stage: Any, variant: str, super_v3: Types, reference_dir: Path
) -> None:
    guide = yaml.safe_load((reference_dir / EXPANDED.format(variant)).read_text())
    ours = _divergences(super_v3, make_plan(stage).framework_config)
    assert ours - _divergences(super_v3, guide) == set()


@pytest.mark.parametrize(
    ("stage", "ported_from"),
    [(rlvr, SUPER_OMNI), (teacher_reasoning, SUPER_OMNI), (mopd_single_stage, SUPER_OMNI_MOPD)],
    ids=["rlvr", "teacher-reasoning", "mopd-single-stage"],
)
def test_super_35_configs_diverge_from_nemo_rls_types_only_where_super_omni_does(
    stage: Any, ported_from: str, super_v35: Types, reference_dir: Path
) -> None:
    upstream = nemo_rl_expand(reference_dir / ported_from)
    ours = _divergences(super_v35, make_plan(stage).framework_config)
    assert ours - _divergences(super_v35, upstream) == set()


def test_the_oracle_sees_what_recipekit_would_get_wrong(super_v3: Types) -> None:
    config = make_plan(dapo_gb200).framework_config
    assert _divergences(super_v3, config) == _divergences(super_v3, config)  # deterministic
    broken = {**config, "grpo": {k: v for k, v in config["grpo"].items() if k != "max_num_steps"}}
    broken["checkpointing"] = {**config["checkpointing"], "save_every": 10, "enabled": "yes"}
    found = _divergences(super_v3, broken) - _divergences(super_v3, config)
    assert found == {
        "grpo.max_num_steps: required by GRPOConfig, missing",
        "checkpointing.save_every: not declared by CheckpointingConfig",
        "checkpointing.enabled = 'yes': not bool (CheckpointingConfig)",
    }
