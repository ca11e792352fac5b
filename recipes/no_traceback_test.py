"""A user's value is a plan or a message, never a traceback: every key of one stage per
framework wing is set, one at a time through ``--set``, to the edge values of its type (zero, a
negative, an empty string or list, null where it may be null, each other allowed value), and
every key that upstream checks as a nested config mapping to ``{}`` and ``{enabled: true}``.
Each plan either succeeds or refuses with a RecipeError; any other exception fails here, naming
the key and the value. (``{enabled: true}`` on the Super 3.5 runner's ``peft`` was one.)"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from typing import Any, Literal, get_args, get_origin

import attrs
import pytest

from recipekit.errors import RecipeError
from recipekit.loading import load_object
from recipekit.markers import Marker
from recipekit.plan import make_plan
from recipekit.sections import is_section, key_of, upstream_key
from recipekit.upstream.declared import members

# One stage of each config family: Super 3.5's NeMo Gym runner, Super V3's GRPO, and
# Megatron-Bridge's pretraining.
STAGES = (
    "recipes.super35.rl:rlvr",
    "recipes.super3.dapo:dapo_gb200",
    "recipes.super35.pretrain:pretrain",
)


def _leaves(section: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(key path, annotation, the section holding it) for every settable key."""
    for field in attrs.fields(type(section)):
        if not field.init:
            continue
        value = getattr(section, field.name)
        key = key_of(type(section), field.name).rsplit(".", 1)[-1]
        where = f"{path}.{key}" if path else key
        if is_section(value):
            yield from _leaves(value, where)
        elif not (isinstance(value, tuple) and value and all(is_section(v) for v in value)):
            yield where, field, section


def _union(tp: Any) -> list[Any]:
    if get_origin(tp) in (typing.Union, types.UnionType):
        return [m for a in get_args(tp) for m in _union(a)]
    return [tp]


def _edge_values(field: Any, section: Any) -> list[str]:
    found: list[str] = []
    for member in _union(field.type):
        if member is int:
            found += ["0", "-1"]
        elif member is float:
            found += ["-1.0", "0.0"]
        elif member is bool:
            found += ["true", "false"]
        elif member is str:
            found += ['""']
        elif member is type(None):
            found += ["null"]
        elif get_origin(member) is Literal:
            allowed = [a for a in get_args(member) if not isinstance(a, Marker)]
            found += [repr(a) if isinstance(a, str) else str(a).lower() for a in allowed]
        elif get_origin(member) is tuple:
            found += ["[]"]
    key = upstream_key(field)
    upstream = getattr(type(section), "upstream", None)
    if key and upstream is not None:
        for declared in members(upstream):
            spec = declared.keys.get(key)
            if spec is not None and spec.nested:
                found += ["{}", "{enabled: true}"]
                break
    return list(dict.fromkeys(found))


@pytest.mark.parametrize("target", STAGES)
def test_every_edge_value_of_every_key_plans_or_refuses(target: str) -> None:
    stage = load_object(target)
    crashes = []
    tried = 0
    for path, field, section in _leaves(stage.config):
        for value in _edge_values(field, section):
            tried += 1
            try:
                make_plan(stage, [f"{path}={value}"], check_pins=False)
            except RecipeError:
                pass
            except Exception as exc:  # noqa: BLE001 - what this test looks for
                crashes.append(f"{path}={value}: {type(exc).__name__}: {exc}")
    assert tried > 500
    assert crashes == []


@pytest.mark.parametrize("target", STAGES[:2])
def test_leaving_out_any_key_a_rule_derives_from_plans_or_refuses(target: str) -> None:
    # A recipe may set any key UNSET (left out of the config): a derivation that reads it, and
    # the estimate that reads what it derives, must not crash (found: product rules raised a
    # TypeError on UNSET, and the NeMo-RL estimate asserted on a left-out token budget).
    from recipekit.derivation import Derivation
    from recipekit.markers import UNSET

    stage = load_object(target)
    rules: tuple[Derivation, ...] = stage.framework.rules
    paths = {s for rule in rules for s in (rule.target, *rule.sources)}
    paths = {p for p in paths if not p.startswith("hardware.")}
    crashes = []
    for path in sorted(paths):
        try:
            make_plan(stage.with_values({path: UNSET}), check_pins=False)
        except RecipeError:
            pass
        except Exception as exc:  # noqa: BLE001 - what this test looks for
            crashes.append(f"{path}: {type(exc).__name__}: {exc}")
    assert len(paths) > 10
    assert crashes == []
