"""``policy.optimizer`` and ``policy.scheduler`` against the PyTorch classes they name.

NeMo-RL's DTensor workers (dtensor_policy_worker.py, and automodel/setup.py for ``_v2``) build
the optimizer as ``get_class(name)(parameters, **kwargs)`` and each scheduler of the list as
``get_class(name)(optimizer, **kwargs)``. So for a class ``torch.optim`` or
``torch.optim.lr_scheduler`` exports, a key that is no parameter of its constructor is a
TypeError, as is the parameter the worker passes itself or a required one left out; a value
of another type fails in the constructor; and a value its ``__init__`` raises on (``betas``
outside [0, 1), ``fused`` with ``foreach``) stops the worker. Each is read from torch 2.11.0
(``recipekit.pytorch.generated``), the torch super-v3.5-posttraining runs, so only Super 3.5
asks them. A class of another package (Transformer Engine's FusedAdam) is not read and not
checked. Megatron-Core trains with its own optimizer settings (``megatron_cfg.optimizer``),
so these sections are checked where DTensor trains.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue, did_you_mean
from recipekit.markers import Marker, given_at
from recipekit.nemo_rl.checks import CheckContext
from recipekit.pytorch import TORCH_VERSION
from recipekit.upstream import conditions
from recipekit.upstream.values import OPAQUE, expected_type, plain

AT = f"@ torch {TORCH_VERSION}"
# The packages whose every class the table holds: a name in one of them that it lacks is no
# class there.
_PACKAGES = ("torch.optim.lr_scheduler", "torch.optim")
# What the worker passes itself, as the user would know it.
_PASSED = {"params": "the model's parameters", "optimizer": "the optimizer it built"}


def _classes() -> dict[str, dict[str, Any]]:
    from recipekit.pytorch.generated.optim_2_11_0 import CLASSES

    return CLASSES


def built_by_name(where: str, section: Any) -> Iterator[Issue]:
    """The issues of one ``{name, kwargs}`` section at key ``where`` that a torch class builds."""
    name, raw = given_at(section, "name"), given_at(section, "kwargs")
    if not isinstance(name, str) or "${" in name:
        return
    classes = _classes()
    target = classes.get(name)
    if target is None:
        package = next((p for p in _PACKAGES if name.startswith(p + ".")), None)
        if package is not None and "." not in name.removeprefix(package + "."):
            siblings = [c for c in classes if c.rpartition(".")[0] == package]
            yield Issue(
                f"{where}.name",
                f"{package} has no such class {AT}: get_class fails when the worker starts",
                value=name,
                hint=did_you_mean(name, siblings, what="classes"),
            )
        return
    kwargs = {k: plain(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
    built = f"{name} ({target['file']}:{target['line']} {AT})"
    parameters: dict[str, tuple[str, str | None, int]] = target["parameters"]
    for key, value in kwargs.items():
        if key == target["passed"]:
            yield Issue(
                f"{where}.kwargs.{key}",
                f"NeMo-RL's worker passes {_PASSED.get(key, key)} as {name}'s first argument "
                f"itself: a duplicate, a TypeError when the worker starts ({built})",
                hint="remove it",
            )
        elif key not in parameters:
            if not target["takes_any"]:
                yield Issue(
                    f"{where}.kwargs.{key}",
                    f"not a parameter of {built}: a TypeError when the worker starts",
                    hint=did_you_mean(str(key), parameters, what="parameters"),
                )
        elif expected := expected_type(value, parameters[key][0]):
            file, line = target["file"], parameters[key][2]
            yield Issue(
                f"{where}.kwargs.{key}",
                f"{name} takes {expected} ({file}:{line} {AT})",
                value=raw[key],
            )
    missing = [p for p, (_, default, _) in parameters.items() if default is None]
    for key in (k for k in missing if k not in kwargs):
        yield Issue(
            f"{where}.kwargs",
            f"{name} needs {key!r}, which has no default: a TypeError when the worker starts "
            f"({built})",
            hint=f"set {where}.kwargs.{key}",
        )
    yield from _guards(where, name, target, kwargs)


def _guards(
    where: str, name: str, target: dict[str, Any], kwargs: dict[str, Any]
) -> Iterator[Issue]:
    defaults = {k: default for k, (_, default, _) in target["parameters"].items()}
    values = conditions.bound(defaults, {k: v for k, v in kwargs.items() if v is not OPAQUE})
    for condition, raised, line in target["guards"]:
        if not conditions.holds(condition, values):
            continue
        read = conditions.names(condition)
        given = [k for k in read if k in kwargs] or read
        yield Issue(
            f"{where}.kwargs.{given[0]}",
            f"{name} raises {raised} where `{condition}` ({line} {AT}): the worker stops "
            "when it builds it",
            value=kwargs.get(given[0], values.get(given[0])),
            hint=f"given: {conditions.given(condition, values)}",
        )


def _scheduler_sections(section: Any) -> Iterator[tuple[int, Any]]:
    schedulers = given_at(section, "scheduler")
    if isinstance(schedulers, tuple | list):
        yield from ((i, s) for i, s in enumerate(schedulers) if given_at(s, "name") is not None)


def trained_by_dtensor(prefix: str, section: Any) -> Iterator[Issue]:
    """The optimizer and every scheduler of a section NeMo-RL trains with DTensor."""
    optimizer = given_at(section, "optimizer")
    if optimizer is not None and not isinstance(optimizer, Marker):
        yield from built_by_name(f"{prefix}.optimizer", optimizer)
    for i, scheduler in _scheduler_sections(section):
        yield from built_by_name(f"{prefix}.scheduler[{i}]", scheduler)


def policy_optimizer_and_schedulers_build(ctx: CheckContext) -> Iterator[Issue]:
    """dtensor_policy_worker.py and automodel/setup.py @ super-v3.5-posttraining, torch 2.11.0's
    torch/optim: the policy's optimizer and LR schedulers, each built by name with its kwargs,
    where the policy trains with DTensor."""
    policy = ctx.config.policy
    if ctx.megatron is None and given_at(policy, "dtensor_cfg", "enabled") is True:
        yield from trained_by_dtensor("policy", policy)


SUPER35_ERROR_CHECKS = (policy_optimizer_and_schedulers_build,)
