"""vLLM's ``max_model_len`` against the sequence budget (NVIDIA-NeMo/RL#796).

Training takes sequences of at most ``policy.max_total_sequence_length``; vLLM generates within
``max_model_len``. The longer direction (vLLM generating what training cannot take) is
``recipekit.nemo_rl.checks.sequence.response_budget_fits``. This is the other: the longest
prompt the data admits must leave vLLM room for at least one new token. With none left,
super-v3.5-posttraining raises (vllm_worker.py, ``_context_capped_max_new_tokens``, and the
HTTP server's clamp, vllm_worker_async.py, ``_clamp_max_tokens``: ``remaining <= 0``) or its
async engine returns the prompt with no response (vllm_worker_async.py, ``generate_async``);
super-v3's async engine does the latter (``V3_WHERE``) and its synchronous one hands vLLM a
prompt that fills the context.

How long that prompt is differs by version, at the data processors (math_hf_data_processor,
``PROMPT_CUT``; the others alike):
super-v3 cuts only a prompt *longer* than
``data.max_input_seq_length`` (``length > max_seq_length``), so one of exactly that length
reaches vLLM; super-v3.5-posttraining cuts one that *reaches* it (``length >=
max_seq_length``), so the longest is one token shorter. ``max_input_seq_length ==
max_model_len`` is thus accepted on super-v3.5-posttraining; on super-v3 it is a warning, not
a refusal: such a prompt gets an empty response there, nothing fails, and the Super V3 guide's
own DAPO configs sit exactly there (1024 = 1024), a contract recipekit compiles key for key. NeMo
Gym's ``policy_max_input_tokens`` is the limit NeMo-RL itself sets equal to ``max_model_len``
(nemo_gym.py's setup_nemo_gym_config), and a prompt past it ends the rollout as
context_length_exceeded, so only a larger value is refused. Responses longer than what is left
are cut to fit, silently; that is NeMo-RL's intended clamp, not refused.
"""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.markers import Marker
from recipekit.nemo_rl import NEMO_RL_VERSION, SUPER35_BRANCH
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.citation import cite, mirrors, on_super35

THREAD = "NVIDIA-NeMo/RL#796"
# Lines no rule site states, so written here by hand, once (an upgrade must check them):
# super-v3 states no rule: its async engine generates nothing for such a prompt
# (VllmAsyncGenerationWorker.generate_async's process_single_sample).
V3_WHERE = "nemo_rl/models/generation/vllm/vllm_worker_async.py:890 @ super-v3"
# math_hf_data_processor's cut of a long prompt, an ``if`` (``length > max_seq_length`` on
# super-v3, ``length >= max_seq_length`` on super-v3.5-posttraining).
PROMPT_CUT = {
    NEMO_RL_VERSION: "nemo_rl/data/processors.py:422",
    SUPER35_BRANCH: "nemo_rl/data/processors.py:427",
}


def _longest_prompts(ctx: CheckContext) -> Iterator[tuple[str, int, int, str]]:
    """(key, its value, the longest prompt it lets reach vLLM, why that long)."""
    limit = ctx.config.data.max_input_seq_length
    if isinstance(limit, int):
        if on_super35(ctx):
            why = f"prompts that reach it are cut: {PROMPT_CUT[SUPER35_BRANCH]}, length >= max"
            yield "data.max_input_seq_length", limit, limit - 1, why
        else:
            why = f"only longer prompts are cut: {PROMPT_CUT[NEMO_RL_VERSION]}, length > max"
            yield "data.max_input_seq_length", limit, limit, why
    gym = value_of(ctx.config.env, "nemo_gym")
    tokens = value_of(gym, "policy_max_input_tokens")
    if isinstance(tokens, int) and not isinstance(tokens, Marker):
        why = "NeMo Gym ends a rollout whose prompt outgrows it"
        yield "env.nemo_gym.policy_max_input_tokens", tokens, tokens - 1, why


def _no_room(ctx: CheckContext) -> Iterator[tuple[bool, Issue]]:
    """Each prompt limit that leaves vLLM no room to generate, and whether NeMo-RL fails on
    it (False: super-v3's processors, whose full-context prompt gets an empty response)."""
    vllm, gen = ctx.vllm, ctx.generation
    if vllm is None or gen is None or gen.backend != "vllm":
        return
    context = vllm.max_model_len
    if not isinstance(context, int):
        return
    total = ctx.config.policy.max_total_sequence_length
    super35 = on_super35(ctx)
    for key, value, longest, why in _longest_prompts(ctx):
        # Longer than the whole budget is response_budget_fits' error already.
        if longest >= context and value <= total:
            fits = context if longest < value else context - 1
            fails = super35 or key != "data.max_input_seq_length"
            where = cite(ctx, v35="nemo-rl.vllm-worker.prompt-leaves-room") if super35 else V3_WHERE
            outcome = (
                "NeMo-RL raises, or returns it with an empty response"
                if fails
                else ("super-v3 returns it with an empty response (no error)")
            )
            yield (
                fails,
                Issue(
                    key,
                    f"a prompt of {longest} tokens ({why}) leaves vLLM no room to generate within "
                    f"policy.generation.vllm_cfg.max_model_len = {context}: {outcome} "
                    f"({where}; {THREAD})",
                    value=value,
                    hint=f"at most {fits}, or raise max_model_len",
                ),
            )


def prompts_leave_room_to_generate(ctx: CheckContext) -> Iterator[Issue]:
    """recipekit.sequence.prompt-fits-max-model-len (NVIDIA-NeMo/RL#796): where NeMo-RL fails."""
    yield from (issue for fails, issue in _no_room(ctx) if fails)


def full_context_prompts_get_empty_responses(ctx: CheckContext) -> Iterator[Issue]:
    """recipekit.sequence.prompt-fills-max-model-len-super-v3 (NVIDIA-NeMo/RL#796), a warning:
    on super-v3 a prompt of exactly max_model_len tokens reaches vLLM and gets an empty
    response, which the framework does not refuse."""
    yield from (issue for fails, issue in _no_room(ctx) if not fails)


@mirrors(
    v35="nemo-rl.experience.rollouts.tensorize-nemo-gym-result.gym-rollouts-policy-sequence-cap-most"
)
def policy_cap_above_max_model_len(ctx: CheckContext) -> Iterator[Issue]:
    """rollouts.py, run_async_nemo_gym_rollout (super-v3.5), a warning on NeMo Gym rollouts: vLLM
    truncates to its own max_model_len, so a longer policy.max_total_sequence_length is never
    reached."""
    vllm, gen = ctx.vllm, ctx.generation
    gym = ctx.uses_nemo_gym
    if not on_super35(ctx) or not gym or vllm is None or gen is None or gen.backend != "vllm":
        return
    context, total = vllm.max_model_len, ctx.config.policy.max_total_sequence_length
    if isinstance(context, int) and isinstance(total, int) and total > context:
        yield Issue(
            "policy.max_total_sequence_length",
            f"NeMo-RL warns that it exceeds policy.generation.vllm_cfg.max_model_len = "
            f"{context}: the engine truncates to its own limit, so this cap is never reached",
            value=total,
            hint="lower it, or raise max_model_len",
        )


ERROR_CHECKS = (prompts_leave_room_to_generate,)
SUPER_V3_WARNING_CHECKS = (full_context_prompts_get_empty_responses,)
SUPER35_WARNING_CHECKS = (policy_cap_above_max_model_len,)
