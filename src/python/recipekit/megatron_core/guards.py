"""Every guard and warning of Megatron-Core's config classes that no hand-written rule mirrors,
evaluated on the arguments the framework passes.

``generated/guards.json`` (``tools/generate_mcore_guards.py``) holds
``TransformerConfig``/``ModelParallelConfig``, ``OptimizerConfig`` and
``DistributedDataParallelConfig.__post_init__`` as programs: their assignments, branches,
``assert``/``raise`` statements and ``warnings.warn`` calls. ``kwargs`` gives the arguments a
framework builds from the rendered config; a field it leaves out takes its default. The program
is replayed on them (``recipekit.upstream.replay``), so a guard that reads a value the method
computes first (``ffn_hidden_size`` from ``hidden_size``) is evaluated on that value. A guard
that fails is the error Megatron-Core raises when the worker builds the config; a warning
reached is the one it logs. Each is reported at the stage key that sets one of the fields it
reads; one that only the model provider's own values reach is not, and a field the stage leaves
out counts as Megatron-Core's default only where ``kwargs`` writes the provider's values down
(``provider_written``): another provider may set it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from recipekit.convert import rendered
from recipekit.errors import Issue
from recipekit.megatron_core import MEGATRON_CORE_VERSION
from recipekit.megatron_core.kwargs import framework_kwargs, provider_written
from recipekit.megatron_core.options import options_of
from recipekit.memo import last_call
from recipekit.upstream import conditions
from recipekit.upstream.replay import constant_defaults, described, programs, replay

AT = f"@ Megatron-Core {MEGATRON_CORE_VERSION}"
# The class each name of kwargs builds, as a message names it.
CLASS_NAMES = {
    "model": "TransformerConfig",
    "optimizer": "OptimizerConfig",
    "ddp": "DistributedDataParallelConfig",
}
_NRL = "policy.megatron_cfg"


TABLE = Path(__file__).parent / "generated" / "guards.json"


def tables() -> dict[str, dict[str, Any]]:
    """Class name -> its fields' defaults and its program (``generated/guards.json``)."""
    return programs(TABLE)


def _stage_keys(framework: str, rendered: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Class name -> field -> the key of the rendered config that holds the field's value: the
    framework's section of that class, by the field's own name (NeMo-RL's model_overrides
    first, as its setup applies them; its FP8 settings; its precision)."""

    def section(*path: str) -> dict[str, Any]:
        value: Any = rendered
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        return value if isinstance(value, dict) else {}

    def named(prefix: str, values: dict[str, Any]) -> dict[str, str]:
        return {k: f"{prefix}.{k}" for k in values}

    if framework == "megatron-bridge":
        return {n: named(n, section(n)) for n in ("model", "optimizer", "ddp")}
    cfg = section("policy", "megatron_cfg")
    model = named(_NRL, cfg) | named(
        f"{_NRL}.fp8_cfg", section("policy", "megatron_cfg", "fp8_cfg")
    )
    model |= {k: "policy.precision" for k in ("bf16", "fp16", "params_dtype")}
    model |= named(f"{_NRL}.model_overrides", section("policy", "megatron_cfg", "model_overrides"))
    ddp_section = f"{_NRL}.distributed_data_parallel_config"
    ddp = named(ddp_section, section("policy", "megatron_cfg", "distributed_data_parallel_config"))
    ddp["use_distributed_optimizer"] = f"{_NRL}.optimizer.use_distributed_optimizer"
    optimizer = named(f"{_NRL}.optimizer", section("policy", "megatron_cfg", "optimizer"))
    optimizer["overlap_param_gather"] = f"{ddp_section}.overlap_param_gather"
    return {"model": model, "optimizer": optimizer, "ddp": ddp}


def reached(framework: str, rendered: dict[str, Any], model: Any) -> Iterator[tuple[bool, Issue]]:
    """(whether a warning, the issue) of each error Megatron-Core's unmirrored guards raise, and
    each warning its config classes issue, on the arguments ``framework`` builds from
    ``rendered``: each class's ``__post_init__`` replayed (``recipekit.upstream.replay``)."""
    arguments = framework_kwargs(framework, rendered, model)
    keys = _stage_keys(framework, rendered)
    defaults_hold = provider_written(model)
    for name, table in tables().items():
        # The model's fields are the provider's before they are Megatron-Core's defaults.
        defaults = constant_defaults(TABLE, name) if defaults_hold or name != "model" else {}
        given = arguments.get(name, {})
        for found in replay(table["program"], {**defaults, **given}):
            where, shown, mirrored = described(found.step)
            if mirrored:
                continue
            # The stage key behind a field the guard reads that the stage gives.
            read = [f for f in conditions.names(shown) if f in given and f in keys[name]]
            if not read:
                continue  # only the provider's own values: not the stage's to fix
            key = keys[name][read[0]]
            # The key's own value, where the key is the field (not policy.precision for bf16).
            shown_value = {"value": given[read[0]]} if key.endswith(f".{read[0]}") else {}
            warns = found.step[0] == "warn"
            does = "warns" if warns else f"raises {found.step[2]}"
            yield (
                warns,
                Issue(
                    key,
                    f"Megatron-Core {'warns' if warns else 'refuses it'}: {CLASS_NAMES[name]}"
                    f".__post_init__ {does} where `{shown}` ({where} {AT})",
                    hint=f"given: {conditions.given(shown, found.values)}",
                    **shown_value,
                ),
            )


# The errors and the warnings come from one replay: the last context's, kept for the second.
@last_call
def _reached(ctx: Any) -> list[tuple[bool, Issue]]:
    options = options_of(ctx)
    # (None: a key left underived, which the plan refuses, naming the key.)
    config = rendered(ctx.config) if options is not None else None
    if options is None or config is None:
        return []
    return list(reached(options.keys.framework, config, ctx.model))


def post_init_guards_hold(ctx: Any) -> Iterator[Issue]:
    """Megatron-Core 0.19.2's config classes' own guards (generated/guards.json) that no rule of
    ``rules/`` mirrors, on what the stage's framework passes them."""
    yield from (issue for warns, issue in _reached(ctx) if not warns)


def post_init_warnings(ctx: Any) -> Iterator[Issue]:
    """The warnings Megatron-Core 0.19.2's config classes issue on what the stage's framework
    passes them, where no rule of ``rules/`` mirrors them."""
    yield from (issue for warns, issue in _reached(ctx) if warns)
