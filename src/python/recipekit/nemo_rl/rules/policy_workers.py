"""The policy (``nemo_rl/models/policy/lm_policy.py``): which worker NeMo-RL starts and what
each worker supports (batching across pipeline stages, LoRA, save formats, the draft model)."""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.markers import given_at
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.rules.citation import mirrors, on_super35, where
from recipekit.rule_sites import keywords


def _dtensor_v1(ctx: CheckContext) -> bool:
    """The DTensor worker NeMo-RL starts when dtensor_cfg._v2 is not true."""
    return ctx.config.policy.dtensor_cfg.v2 is not True


@mirrors(
    v3="nemo-rl.v3.models.policy.lm-policy.save-checkpoint.save-format-needs-dtensor-cfg-v2",
    v35="nemo-rl.models.policy.lm-policy.save-checkpoint.save-format-needs-dtensor-cfg-v2",
)
def model_save_format_needs_dtensor_v2(ctx: CheckContext) -> Iterator[Issue]:
    """lm_policy.py, Policy.save_checkpoint (super-v3 and super-v3.5): a save format is passed only
    to workers started with dtensor_cfg._v2 (the flag is read whichever back-end trains)."""
    ckpt = ctx.config.checkpointing
    fmt = ckpt.model_save_format
    if ckpt.enabled and isinstance(fmt, str) and _dtensor_v1(ctx):
        yield Issue(
            "checkpointing.model_save_format",
            "NeMo-RL refuses it at the first checkpoint unless policy.dtensor_cfg._v2 is true",
            value=fmt,
            hint="leave it null, or set policy.dtensor_cfg._v2: true",
        )


ERROR_CHECKS = (model_save_format_needs_dtensor_v2,)
WARNING_CHECKS: tuple[()] = ()


# The calls that spread policy.hf_config_overrides as keywords (catalogue ids without the
# version's prefix), each with whether the policy's back-end reaches it: Megatron-Core imports
# the HF checkpoint through two, each DTensor worker builds the model's config with one.
_HF_CONFIG_SPREADS = (
    (
        "models.megatron.community-import.import-model-from-hf-name.hf-config-overrides-keywords",
        lambda ctx: ctx.megatron is not None,
    ),
    (
        "models.megatron.setup.handle-model-import.import-hf-config-overrides-keywords",
        lambda ctx: ctx.megatron is not None,
    ),
    (
        "models.policy.workers.dtensor-policy-worker.init.hf-config-overrides-keywords",
        lambda ctx: ctx.megatron is None and _dtensor_v1(ctx),
    ),
    (
        "models.automodel.setup.validate-and-prepare-config.hf-config-overrides-keywords",
        lambda ctx: ctx.megatron is None and not _dtensor_v1(ctx),
    ),
)


def hf_config_overrides_not_passed_twice(ctx: CheckContext) -> Iterator[Issue]:
    """The calls of the policy's back-end that spread ``policy.hf_config_overrides`` as keywords
    (catalogued ``keyword`` rules; the keywords each passes itself are read from the pinned
    source into rule_sites.json): an override named like one of them is a duplicate keyword, a
    TypeError when the call runs."""
    overrides = given_at(ctx.config.policy, "hf_config_overrides")
    if not isinstance(overrides, dict) or not overrides:
        return
    prefix = "nemo-rl." if on_super35(ctx) else "nemo-rl.v3."
    passed = keywords("nemo_rl")
    reached = [prefix + rule for rule, reaches in _HF_CONFIG_SPREADS if reaches(ctx)]
    for key in overrides:
        rule = next((r for r in reached if key in passed.get(r, ())), None)
        if rule is not None:
            yield Issue(
                f"policy.hf_config_overrides.{key}",
                f"NeMo-RL passes {key} itself in the call that spreads these overrides: a "
                f"duplicate keyword, a TypeError when it runs ({where(rule)})",
                hint="remove it",
            )
