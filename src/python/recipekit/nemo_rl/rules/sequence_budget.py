"""vLLM's ``max_model_len`` against the sequence budget (NVIDIA-NeMo/RL#796).

Training takes sequences of at most ``policy.max_total_sequence_length``; vLLM generates within
``max_model_len``. The longer direction (vLLM generating what training cannot take) is
``recipekit.nemo_rl.checks.sequence.response_budget_fits``. This is the other: a prompt the data
admits must leave vLLM room for at least one new token, or the rollout raises
(``_context_capped_max_new_tokens``, nemo_rl/models/generation/vllm/vllm_worker.py:77, and the
async server's clamp, vllm_worker_async.py:442, at super-v3.5-posttraining). Responses longer
than what is left are cut to fit, silently; that is NeMo-RL's intended clamp, not refused.
"""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.markers import Marker
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.rules.citation import cite, on_super35

ROLLOUTS_PY = "nemo_rl/experience/rollouts.py"

THREAD = "NVIDIA-NeMo/RL#796"


def _prompt_budgets(ctx: CheckContext) -> Iterator[tuple[str, int]]:
    limit = ctx.config.data.max_input_seq_length
    if isinstance(limit, int):
        yield "data.max_input_seq_length", limit
    gym = getattr(ctx.config.env, "nemo_gym", None)
    tokens = getattr(gym, "policy_max_input_tokens", None)
    if isinstance(tokens, int) and not isinstance(tokens, Marker):
        yield "env.nemo_gym.policy_max_input_tokens", tokens


def prompts_leave_room_to_generate(ctx: CheckContext) -> Iterator[Issue]:
    """recipekit.sequence.prompt-fits-max-model-len (NVIDIA-NeMo/RL#796)."""
    vllm, gen = ctx.vllm, ctx.generation
    if vllm is None or gen is None or gen.backend != "vllm":
        return
    context = vllm.max_model_len
    if not isinstance(context, int):
        return
    total = ctx.config.policy.max_total_sequence_length
    for key, prompt in _prompt_budgets(ctx):
        # Longer than the whole budget is response_budget_fits' error already.
        if context < prompt <= total:
            yield Issue(
                key,
                f"a prompt this long leaves vLLM no room to generate within "
                f"policy.generation.vllm_cfg.max_model_len = {context}; NeMo-RL raises at the "
                f"first such rollout (nemo_rl/models/generation/vllm/vllm_worker.py:77; {THREAD})",
                value=prompt,
                hint=f"at most {context - 1}, or raise max_model_len",
            )


def policy_cap_above_max_model_len(ctx: CheckContext) -> Iterator[Issue]:
    """rollouts.py:2355 (super-v3.5), a warning on NeMo Gym rollouts: vLLM truncates to its
    own max_model_len, so a longer policy.max_total_sequence_length is never reached."""
    vllm, gen = ctx.vllm, ctx.generation
    gym = getattr(ctx.config.env, "should_use_nemo_gym", None) is True
    if not on_super35(ctx) or not gym or vllm is None or gen is None or gen.backend != "vllm":
        return
    context, total = vllm.max_model_len, ctx.config.policy.max_total_sequence_length
    if isinstance(context, int) and isinstance(total, int) and total > context:
        yield Issue(
            "policy.max_total_sequence_length",
            f"NeMo-RL warns that it exceeds policy.generation.vllm_cfg.max_model_len = "
            f"{context}: the engine truncates to its own limit, so this cap is never reached "
            f"({cite(ctx, ROLLOUTS_PY, v35=2355)})",
            value=total,
            hint="lower it, or raise max_model_len",
        )


ERROR_CHECKS = (prompts_leave_room_to_generate,)
SUPER35_WARNING_CHECKS = (policy_cap_above_max_model_len,)
