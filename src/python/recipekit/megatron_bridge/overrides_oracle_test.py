"""Megatron-Core's and Megatron-Bridge's own config classes as the oracle for the Megatron-Bridge
stages' overrides.

A Megatron-Bridge stage's ``model.*`` overrides set fields of its model provider, which extends
Megatron-Core's ``TransformerConfig`` (and ``ModelParallelConfig``); ``optimizer.*`` sets
``OptimizerConfig``. ``train``, ``checkpoint``, ``scheduler`` and ``logger`` are sections of
Megatron-Bridge's ``ConfigContainer`` (``TrainingConfig``, ``CheckpointConfig``,
``SchedulerConfig``, ``LoggerConfig``) and ``peft`` its ``LoRA``. Their definitions are read
here with ``ast`` from the ``megatron-core`` (0.19.2) and ``megatron-bridge`` (0.4.1) wheels
that ``3rdparty/wheels`` fetches from PyPI and checks by sha256: never imported, nothing of
recipekit in between. Every key must be a field, of the declared type (``Literal`` values too),
and ``recompute_modules`` must be among the modules ``TransformerConfig.__post_init__`` accepts.

Not checked: ``dataset``. The Super-VL recipes' dataset provider lives in the pinned
Megatron-Bridge checkout's ``nemotronh_multimodal`` recipes, which no release ships.

Keys of the Megatron-Bridge model provider itself (``seq_length``, the VL provider's
``freeze_*``) are not Megatron-Core's; they are named below, each with its owner, and checked
to be absent from Megatron-Core so that the list cannot hide a Megatron-Core key.
"""

from __future__ import annotations

import ast
import zipfile
from pathlib import Path
from typing import Any

import pytest

from recipekit.plan import make_plan
from recipekit.stage import Stage
from recipes.super35 import pretrain, sft

WHEEL = Path("3rdparty/wheels") / (
    "megatron_core-0.19.2-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl"
)
SOURCES = [
    (WHEEL, path, name, name)
    for name, path in (
        ("ModelParallelConfig", "megatron/core/model_parallel_config.py"),
        ("TransformerConfig", "megatron/core/transformer/transformer_config.py"),
        ("OptimizerConfig", "megatron/core/optimizer/optimizer_config.py"),
    )
]
BRIDGE_WHEEL = Path("3rdparty/wheels/megatron_bridge-0.4.1-py3-none-any.whl")
_SECTIONS = ("TrainingConfig", "CheckpointConfig", "SchedulerConfig", "LoggerConfig")
BRIDGE_SOURCES = [
    # Megatron-Bridge's sections extend Megatron-Core's megatron.training ones (imported as
    # MTrain<Name>), in the megatron-core wheel (megatron/training/config/).
    *((WHEEL, "megatron/training/config/training_config.py", n, f"MTrain{n}") for n in _SECTIONS),
    *((BRIDGE_WHEEL, "megatron/bridge/training/config.py", n, n) for n in _SECTIONS),
    (BRIDGE_WHEEL, "megatron/bridge/peft/lora.py", "LoRA", "LoRA"),
]
# The ConfigContainer section each stage section overrides.
BRIDGE_SECTIONS = {
    "train": "TrainingConfig",
    "checkpoint": "CheckpointConfig",
    "scheduler": "SchedulerConfig",
    "logger": "LoggerConfig",
    "peft": "LoRA",
}
# Fields of Megatron-Bridge's model providers, not of Megatron-Core (their owner).
PROVIDER_KEYS = {
    "seq_length": "GPTModelProvider (megatron.bridge.models.gpt_provider)",
    "freeze_language_model": "the VL provider (nemotronh_multimodal)",
    "freeze_vision_model": "the VL provider (nemotronh_multimodal)",
    "freeze_vision_projection": "the VL provider (nemotronh_multimodal)",
}
STAGES = [
    s
    for module in (pretrain, sft)
    for s in vars(module).values()
    if isinstance(s, Stage) and s.framework.name == "megatron-bridge"
]


class CoreConfigs:
    """The dataclass fields of config classes, read from wheels' sources; a base class among
    them lends its fields. ``sources``: (wheel, module path, class, the name its subclasses
    give it as a base)."""

    def __init__(self, sources: list[tuple[Path, str, str, str]]) -> None:
        self.fields: dict[str, dict[str, ast.expr]] = {}
        self.sources: dict[str, str] = {}
        for wheel, path, name, known_as in sources:
            with zipfile.ZipFile(wheel) as archive:
                text = archive.read(path).decode()
            self.sources[known_as] = text
            tree = ast.parse(text)
            [node] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
            own = {
                s.target.id: s.annotation
                for s in node.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            }
            bases = [ast.unparse(b) for b in node.bases]
            self.fields[known_as] = {
                **{k: v for b in bases if b in self.fields for k, v in self.fields[b].items()},
                **own,
            }

    def allowed_recompute_modules(self) -> set[str]:
        """The set ``__post_init__`` checks ``recompute_modules`` against (the
        ``allowed_modules`` assignment whose next statement reads ``recompute_modules``)."""
        tree = ast.parse(self.sources["TransformerConfig"])
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if not isinstance(body, list):
                continue
            for stmt, after in zip(body, body[1:], strict=False):
                if (
                    isinstance(stmt, ast.Assign)
                    and [ast.unparse(t) for t in stmt.targets] == ["allowed_modules"]
                    and isinstance(stmt.value, ast.Set)
                    and "self.recompute_modules" in ast.unparse(after)
                ):
                    return {str(e.value) for e in stmt.value.elts if isinstance(e, ast.Constant)}
        raise AssertionError("TransformerConfig no longer lists its allowed recompute modules")

    def issues(self, section: dict[str, Any], config_class: str, where: str) -> list[str]:
        fields = self.fields[config_class]
        found = []
        for key, value in section.items():
            if key in PROVIDER_KEYS and config_class == "TransformerConfig":
                continue
            if key not in fields:
                found.append(f"{where}.{key}: not a field of {config_class}")
                continue
            wrong = _type_issue(value, fields[key])
            if wrong:
                found.append(f"{where}.{key} = {value!r}: {wrong} ({config_class})")
        modules = section.get("recompute_modules")
        if config_class == "TransformerConfig" and isinstance(modules, list):
            bad = sorted(set(modules) - self.allowed_recompute_modules())
            if bad:
                found.append(f"{where}.recompute_modules: {bad} not accepted by TransformerConfig")
        return found


def _type_issue(value: Any, ann: ast.expr) -> str:
    """Why ``value`` is not an ``ann``; "" when it is or when the reader cannot tell."""
    text = ast.unparse(ann)
    members = _members(ann)
    if any(_matches(value, m) is not False for m in members):
        return ""
    return f"not {text}"


def _members(ann: ast.expr) -> list[ast.expr]:
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        return _members(ann.left) + _members(ann.right)
    if isinstance(ann, ast.Subscript) and ast.unparse(ann.value) in ("Optional", "Union"):
        inner = ann.slice
        elements = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        found = [m for e in elements for m in _members(e)]
        return found + [ast.Constant(None)] if ast.unparse(ann.value) == "Optional" else found
    return [ann]


def _matches(value: Any, ann: ast.expr) -> bool | None:
    text = ast.unparse(ann)
    if text == "None":
        return value is None
    checks: dict[str, Any] = {
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "str": lambda v: isinstance(v, str),
        "bool": lambda v: isinstance(v, bool),
    }
    if text in checks:
        return bool(checks[text](value))
    if isinstance(ann, ast.Subscript):
        head = ast.unparse(ann.value)
        if head == "Literal":
            items = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            return value in [i.value for i in items if isinstance(i, ast.Constant)]
        if head in ("List", "list", "Tuple", "tuple"):
            return isinstance(value, list)
    return None


@pytest.fixture(scope="module")
def core() -> CoreConfigs:
    return CoreConfigs(SOURCES)


@pytest.fixture(scope="module")
def bridge() -> CoreConfigs:
    return CoreConfigs(BRIDGE_SOURCES)


def _bridge_issues(config: dict[str, Any], bridge: CoreConfigs) -> list[str]:
    return [
        issue
        for section, config_class in BRIDGE_SECTIONS.items()
        for issue in bridge.issues(config.get(section) or {}, config_class, section)
    ]


def test_the_provider_keys_are_not_megatron_cores(core: CoreConfigs) -> None:
    assert not set(PROVIDER_KEYS) & set(core.fields["TransformerConfig"])
    assert "tensor_model_parallel_size" in core.fields["TransformerConfig"]  # inherited


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.name)
def test_each_stages_overrides_are_megatron_core_fields_of_their_type(
    stage: Stage, core: CoreConfigs
) -> None:
    config = make_plan(stage).framework_config
    found = core.issues(config.get("model", {}), "TransformerConfig", "model")
    found += core.issues(config.get("optimizer") or {}, "OptimizerConfig", "optimizer")
    assert found == []


@pytest.mark.parametrize("stage", STAGES, ids=lambda s: s.name)
def test_each_stages_sections_are_megatron_bridge_config_fields_of_their_type(
    stage: Stage, bridge: CoreConfigs
) -> None:
    config = make_plan(stage).framework_config
    assert _bridge_issues(config, bridge) == []
    assert set(config) - {"recipe", "model", "optimizer", "dataset"} <= set(BRIDGE_SECTIONS)


def test_the_oracle_names_a_key_megatron_bridge_does_not_have(bridge: CoreConfigs) -> None:
    config = make_plan(sft.sft_peft).framework_config
    broken = {
        **config,
        "train": {**config["train"], "global_batchsize": 16},
        "checkpoint": {**config["checkpoint"], "save_interval": "100"},
        "peft": {**config["peft"], "dropout_position": "middle"},
    }
    assert _bridge_issues(broken, bridge) == [
        "train.global_batchsize: not a field of TrainingConfig",
        "checkpoint.save_interval = '100': not int | None (CheckpointConfig)",
        "peft.dropout_position = 'middle': not Literal['pre', 'post'] (LoRA)",
    ]


def test_the_oracle_names_a_key_megatron_core_does_not_have(core: CoreConfigs) -> None:
    config = make_plan(pretrain.pretrain).framework_config
    model = {
        **config["model"],
        "tensor_model_paralel_size": 2,
        "recompute_method": "blocks",
        "recompute_modules": ["moe", "attention"],
    }
    optimizer = {**config["optimizer"], "optimizer_offload_fraction": "a quarter"}
    assert core.issues(model, "TransformerConfig", "model") + core.issues(
        optimizer, "OptimizerConfig", "optimizer"
    ) == [
        "model.recompute_method = 'blocks': not Optional[Literal['uniform', 'block']] "
        "(TransformerConfig)",
        "model.tensor_model_paralel_size: not a field of TransformerConfig",
        "model.recompute_modules: ['attention'] not accepted by TransformerConfig",
        "optimizer.optimizer_offload_fraction = 'a quarter': not float (OptimizerConfig)",
    ]
