"""What pydantic enforces on a pinned config key is what recipekit checks, with pydantic itself as
the oracle: each bounded key's annotation and ``Field(...)`` default, as the pinned source writes
them, are evaluated by pydantic, and both sides judge the same values on each side of every
bound."""

from __future__ import annotations

import ast
import collections
from pathlib import Path
from typing import Any

import pydantic

from recipekit.sections import type_check
from recipekit.upstream.annotations import type_text
from recipekit.upstream.bounds import Bounds, unbounded
from recipekit.upstream.classes import UpstreamSource, tree_files
from recipekit.upstream.declared import table
from tools.generated_modules import reference_dir

LABEL = "nemo-rl/super-v3.5-posttraining"


def _pinned() -> UpstreamSource:
    root = reference_dir() / LABEL / "nemo_rl"
    return UpstreamSource(tree_files(root, "nemo_rl"))


def _bounded_keys() -> list[tuple[str, str]]:
    return [
        (qualified, key)
        for qualified, declared in table(LABEL).classes.items()
        for key, spec in declared.keys.items()
        if "Bounds(" in spec.type_text
    ]


class _Names(collections.UserDict[str, Any]):
    """The names an upstream annotation uses: typing's and pydantic's own, and Any for a class
    of the framework's (the bounds never sit on those)."""

    def __missing__(self, name: str) -> Any:
        import builtins
        import typing

        if name.startswith("__"):
            raise KeyError(name)
        for module in (builtins, pydantic, typing):
            if hasattr(module, name):
                return getattr(module, name)
        return Any


def _pydantic_model(annotation: str, default: str) -> type[pydantic.BaseModel]:
    names = _Names()
    kind = eval(annotation, {}, names)  # noqa: S307 - the pinned source's own annotation
    given = eval(default, {}, names) if default else ...  # noqa: S307
    return pydantic.create_model("Upstream", value=(kind, given))


def _candidates(bounds: Bounds, integer: bool) -> list[Any]:
    """Values just inside and outside each bound."""
    found: list[Any] = []
    for name, limit in bounds.given().items():
        if name in ("min_length", "max_length"):
            found += [[{}] * n for n in (max(int(limit) - 1, 0), int(limit), int(limit) + 1)]
            continue
        steps = (-1, 0, 1) if integer else (-1, -0.5, 0, 0.5, 1)
        found += [int(limit) + s if integer else float(limit) + s for s in steps]
    return found


def test_every_bound_pydantic_enforces_is_checked_the_same_way() -> None:
    source = _pinned()
    keys = _bounded_keys()
    # Field(ge=1) defaults, Annotated[float, Field(gt=0, lt=1)] and pydantic's named types
    # (PositiveInt, NonNegativeInt, PositiveFloat) all occur at this pin.
    assert len(keys) >= 40, keys
    compared = 0
    for qualified, key in keys:
        spec = table(LABEL)[qualified].keys[key]
        field = source.config_class(qualified).fields[key]  # type: ignore[union-attr]
        model = _pydantic_model(field.annotation, _written_default(source, qualified, key))
        ours, _ = type_check(spec.type)
        plain, _ = type_check(unbounded(spec.type))
        for bounds in _bounds_in(spec.type):
            integer = "int" in spec.type_text.split("Bounds")[0].rsplit("[", 1)[-1]
            for candidate in _candidates(bounds, integer):
                value = {"k": candidate} if spec.type_text.startswith("dict[") else candidate
                if not plain(value):
                    continue
                try:
                    model(value=value)
                    accepted = True
                except pydantic.ValidationError:
                    accepted = False
                assert ours(value) == accepted, (qualified, key, value, accepted)
                compared += 1
    assert compared > 150


def _written_default(source: UpstreamSource, qualified: str, key: str) -> str:
    """The key's default as the class writes it (``Field(default=1, ge=1)`` whole)."""
    for stmt in source.nodes[qualified].body:
        if isinstance(stmt, ast.AnnAssign) and ast.unparse(stmt.target) == key and stmt.value:
            return ast.unparse(stmt.value)
    return ""


def _bounds_in(tp: Any) -> list[Bounds]:
    from typing import get_args

    found = [a for a in get_args(tp) if isinstance(a, Bounds)]
    return found + [b for a in get_args(tp) for b in _bounds_in(a)]


def test_the_forms_pydantic_constrains_a_key_with(tmp_path: Path) -> None:
    source = UpstreamSource(
        {
            "pkg.config": (
                "from typing import Annotated\n"
                "from pydantic import BaseModel, Field, NonNegativeInt, PositiveFloat\n"
                "from annotated_types import Gt, Interval\n"
            )
        }
    )

    def text(annotation: str, **field: float) -> str:
        from recipekit.upstream.bounds import from_keywords

        return type_text(
            annotation, "pkg.config", source, constraints=True, bounds=from_keywords(field)
        )

    assert text("PositiveFloat | None") == "Annotated[float, Bounds(gt=0)] | None"
    assert text("dict[str, NonNegativeInt]") == "dict[str, Annotated[int, Bounds(ge=0)]]"
    assert text("Annotated[float, Field(gt=0.0, le=1.0)]") == (
        "Annotated[float, Bounds(gt=0, le=1)]"
    )
    assert text("Annotated[int, Gt(2)]") == "Annotated[int, Bounds(gt=2)]"
    assert text("Annotated[int, Interval(ge=1, lt=9)]") == "Annotated[int, Bounds(ge=1, lt=9)]"
    assert text("int | None", ge=1) == "Annotated[int, Bounds(ge=1)] | None"
    assert text("list[dict]", min_length=1) == (
        "Annotated[tuple[dict[str, Any], ...], Bounds(min_length=1)]"
    )
    # Without constraints (the other generators), the plain type as before.
    assert type_text("PositiveFloat | None", "pkg.config", source) == "Any"
    assert type_text("Annotated[int, Gt(2)]", "pkg.config", source) == "int"


def test_a_bound_is_named_in_the_refusal_with_the_class_that_declares_it() -> None:
    issues = table(LABEL).mapping_issues(
        {"update_weights_bucket_memory_ratio": 1.5},
        ("nemo_rl.models.generation.vllm.config:VllmNixlRefitConfig",),
        "policy.generation.refit_cfg.nixl",
    )
    assert [str(i.path) for i in issues] == [
        "policy.generation.refit_cfg.nixl.update_weights_bucket_memory_ratio"
    ]
    assert "greater than 0 and less than 1, as VllmNixlRefitConfig" in issues[0].message
    # A wrong type is a wrong type, whoever declares the bound.
    issues = table(LABEL).mapping_issues(
        {"update_weights_bucket_memory_ratio": "half"},
        ("nemo_rl.models.generation.vllm.config:VllmNixlRefitConfig",),
        "nixl",
    )
    assert "declares it" not in issues[0].message


def test_a_key_recipekit_states_keeps_the_bound_upstream_declares() -> None:
    import attrs

    from recipekit.errors import FieldError
    from recipekit.nemo_rl.schema_distillation import XTokenDistillationMasterConfig

    # recipekit states `teachers` (its own section type, no check of its own); pydantic's
    # Field(min_length=1) in xtoken_off_policy_distillation.py still holds.
    field = attrs.fields_dict(XTokenDistillationMasterConfig)["teachers"]
    assert field.validator is not None
    try:
        field.validator(None, field, ())
    except FieldError as exc:
        assert "at least 1 items long, as MasterConfig" in exc.message
    else:
        raise AssertionError("an empty teachers list passed")
