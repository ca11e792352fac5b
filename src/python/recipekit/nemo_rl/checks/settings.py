"""Settings that must agree with each other for NeMo-RL's Megatron policy and its environments."""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from recipekit.errors import Issue, did_you_mean
from recipekit.markers import UNSET, Marker
from recipekit.nemo_rl import SUPER35_TYPES, SUPER_V3_TYPES, runs_super35
from recipekit.nemo_rl.checks.context import (
    MEGATRON,
    CheckContext,
)
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rule_lines import line_of, where
from recipekit.nemo_rl.schema_super_v3 import MathEnvironment
from recipekit.upstream.allowed import allowed


def _math_environments(ctx: CheckContext) -> Iterator[tuple[str, MathEnvironment]]:
    """Each math environment the config sets, by name (super-v3: ``env`` is a dict of them;
    main: ``env.math``)."""
    envs = ctx.config.env
    named = envs.items() if isinstance(envs, dict) else [("math", envs.math)]
    for name, env in named:
        if not isinstance(env, Marker):
            yield name, env


def math_verifier_is_set(ctx: CheckContext) -> Iterator[Issue]:
    for name, env in _math_environments(ctx):
        if env.math_verify_impl is None:
            yield Issue(
                f"env.{name}.math_verify_impl",
                "null makes every reward 0.0 silently (the verifier's error is swallowed)",
                value=None,
                hint="remove the key for hf_math_verify, or name a verifier",
            )


# super-v3's MathEnvironment asserts its verifier_type is a string.
V3_VERIFIER_IS_A_STRING = (
    "nemo-rl.v3.environments.math-environment.init.math-environment-verifier-type-string-explicit"
)


def math_verifier_type_is_known(ctx: CheckContext) -> Iterator[Issue]:
    """NeMo-RL's math environment reads verifier_type with "math" as the default, asserts the
    value is a string, then looks its worker up (math_environment.py, MathEnvironment.__init__
    @ super-v3, BaseMathEnvironment.__init__ @ super-v3.5-posttraining): an explicit null fails the
    assert at setup, an unknown name a KeyError."""
    # The verifiers a math environment can start: super-v3's dict of them, MathEnvironment's
    # WORKER_CLASS_DICT at super-v3.5 (MathMultiRewardEnvironment's names one of them).
    pin = SUPER35_TYPES if runs_super35(ctx.config) else SUPER_V3_TYPES
    verifiers = allowed("nemo_rl.math_verifier_type", pin)
    for name, env in _math_environments(ctx):
        if isinstance(env.verifier_type, Marker):
            continue
        if env.verifier_type is None:
            yield Issue(
                f"env.{name}.verifier_type",
                "NeMo-RL's math environment asserts verifier_type is a string "
                f"(math_environment.py:{line_of(V3_VERIFIER_IS_A_STRING)} @ super-v3); an "
                "explicit null fails its setup",
                value=None,
                hint="remove the key for the default 'math', or name a verifier",
            )
        elif env.verifier_type not in verifiers.values:
            yield Issue(
                f"env.{name}.verifier_type",
                f"no math environment has a verifier worker of that name ({verifiers.cited()})",
                value=env.verifier_type,
                hint=did_you_mean(
                    env.verifier_type, verifiers.values, what="verifier types", most=1
                ),
            )


# NeMo-RL's MegatronConfig, whose keys its Megatron setup refuses as model overrides.
MEGATRON_CONFIG = "nemo_rl.models.policy:MegatronConfig"


def model_overrides_name_no_first_class_key(ctx: CheckContext) -> Iterator[Issue]:
    """NeMo-RL refuses a model override that a megatron_cfg key already sets: its conflict list
    is MegatronConfig's keys and every key the rendered megatron_cfg holds, less
    model_overrides itself (nemo_rl/models/megatron/setup.py, _validate_model_override_conflicts
    @ super-v3.5-posttraining).
    MegatronConfig's keys are the pinned source's (the generated table the section's upstream
    names); the rendered keys are those the section sets."""
    from recipekit.nemo_rl import upstream_v35

    m = ctx.megatron
    overrides = value_of(m, "model_overrides")
    if m is None or not isinstance(overrides, dict):
        return
    rendered = {f.name for f in attrs.fields(type(m)) if getattr(m, f.name) is not UNSET}
    declared = set(upstream_v35(MEGATRON_CONFIG).keys)
    first_class = (declared | rendered) - {"model_overrides"}
    for name in sorted(set(overrides) & first_class):
        yield Issue(
            f"{MEGATRON}.model_overrides.{name}",
            f"conflicts with {MEGATRON}.{name}: NeMo-RL's Megatron setup raises, model_overrides"
            " is only for Megatron-Bridge model fields without a first-class NeMo-RL key ("
            + where(
                "nemo-rl.models.megatron.setup.validate-model-override-conflicts.model-overrides-names-no-field-nemo"
            )
            + ")",
            value=overrides[name],
            hint=f"set {MEGATRON}.{name} instead",
        )


def model_overrides_are_provider_fields(ctx: CheckContext) -> Iterator[Issue]:
    """NeMo-RL merges model_overrides into the Megatron-Bridge model provider, which raises on
    a key that is none of its fields (nemo_rl/models/megatron/setup.py, _merge_model_overrides @
    super-v3.5-posttraining); a value is set as it is, so one of the wrong type fails later."""
    m = ctx.megatron
    overrides = value_of(m, "model_overrides")
    if m is None or not isinstance(overrides, dict):
        return
    from recipekit.megatron_core.overrides import override_issues

    at = where(
        "nemo-rl.models.megatron.setup.merge-model-overrides.each-model-override-names-field-megatron"
    )
    yield from override_issues(overrides, f"{MEGATRON}.model_overrides", at)


def model_overrides_keep_the_checkpoints_shape(ctx: CheckContext) -> Iterator[Issue]:
    """NeMo-RL builds the policy from the provider with model_overrides merged in, then loads
    the stage's model into it (nemo_rl/models/megatron/setup.py, setup_model_config: the
    overrides are merged before the checkpoint config and weights are used): an override of a
    size the weights fix is another model than the one loaded."""
    overrides = value_of(ctx.megatron, "model_overrides")
    if not isinstance(overrides, dict):
        return
    from recipekit.megatron_core.overrides import shape_issues

    yield from shape_issues(
        overrides,
        f"{MEGATRON}.model_overrides",
        ctx.model,
        "NeMo-RL loads from the stage's model (policy.model_name)",
    )
