"""NeMo-RL main's PPO master config (``examples/run_ppo.py``) as typed sections.

PPO is GRPO's loop with a learned critic: ``value`` is a second policy section (the critic,
with a regression head: ``reward_model_cfg``) trained with ``value_loss_fn``, and GAE replaces
the group baseline. The keys are those of ``examples/configs/ppo_math_1B.yaml`` (main
7ea279ab), whose comments say what they do; the reference schema file has no class for them.
Main only: super-v3 has no PPO entry point.
"""

from recipekit.markers import Unset
from recipekit.nemo_rl import upstream_v35
from recipekit.nemo_rl.generated import section_keys as keys
from recipekit.nemo_rl.schema_common import (
    EnvironmentsExamples,
    PolicyExamplesMain,
    RunMasterConfigMain,
)
from recipekit.nemo_rl.schema_main import ClippedPGLossMain, RewardShapingMain
from recipekit.nemo_rl.schema_super_v3 import AsyncGRPO, RewardScaling
from recipekit.sections import frozen_section, optional, required, section
from recipekit.validators import at_least, between, upstream_values


@section("ppo.async_ppo")
@frozen_section(kw_only=True, repr=False, eq=False)
class AsyncPPO(keys.AsyncPPOKeys, AsyncGRPO):
    """GRPO's asynchronous loop, for PPO; it needs non-colocated generation and the
    importance-sampling correction."""

    upstream = upstream_v35("nemo_rl.algorithms.ppo:AsyncPPOConfig")

    # Generation steps ahead of training during the critic warm-up (null: the age limit);
    # needs policy_training_start_step > 0.
    warmup_generation_lead_steps: int | None | Unset = optional(at_least(1))  # ppo.py:125


@section("ppo.adv_estimator")
@frozen_section(kw_only=True, repr=False, eq=False)
class GAE(keys.GAEKeys):
    """Generalised advantage estimation; VAPO decouples the critic's and the policy's lambda."""

    upstream = upstream_v35("nemo_rl.algorithms.ppo:AdvEstimatorConfig")

    name: str = required(upstream_values("nemo_rl.ppo_adv_estimator"))
    gae_lambda: float | Unset = optional(between(0, 1))
    gae_gamma: float | Unset = optional(between(0, 1))
    # null: gae_lambda for both.
    gae_lambda_value: float | None | Unset = optional(between(0, 1))
    gae_lambda_policy: float | None | Unset = optional(between(0, 1))
    # lambda_policy = 1 - 1/(alpha * length); 0 turns it off.
    length_adaptive_alpha: float | Unset = optional(at_least(0))


@section("ppo")
@frozen_section(kw_only=True, repr=False, eq=False)
class PPOConfig(keys.PPOConfigKeys):
    upstream = upstream_v35("nemo_rl.algorithms.ppo:PPOConfig")

    num_prompts_per_step: int = required(at_least(1))
    num_generations_per_prompt: int = required(at_least(1))
    max_rollout_turns: int = required(at_least(1))
    # -1: no epoch limit, which asynchronous PPO requires (run_ppo.py:69; rules/ppo.py).
    max_num_epochs: int = required(at_least(-1))
    max_num_steps: int = required(at_least(1))
    # Optimiser passes over each batch of rollouts.
    ppo_epochs: int = required(at_least(1))
    # Steps that train the critic only, before the policy starts to learn.
    policy_training_start_step: int | Unset = optional(at_least(0))
    val_period: int = required(at_least(0))
    val_at_start: bool = required()
    val_at_end: bool = required()
    max_val_samples: int | None = required(at_least(1))
    val_batch_size: int = required(at_least(1))
    seed: int = required()
    dynamic_sampling_max_gen_batches: int | Unset = optional(at_least(1))
    batch_multiplier: float | Unset = optional(at_least(1))
    async_ppo: AsyncPPO | Unset = optional()
    reward_shaping: RewardShapingMain | Unset = optional()
    adv_estimator: GAE = required()
    reward_scaling: RewardScaling | Unset = optional()


@section("value_loss_fn")
@frozen_section(kw_only=True, repr=False, eq=False)
class ValueLoss:
    upstream = upstream_v35("nemo_rl.algorithms.loss.loss_functions:MseValueLossConfig")

    scale: float = required(at_least(0))
    # The critic's value may move this far from its old estimate per update.
    cliprange: float | None = required(at_least(0))


@section("value.reward_model_cfg")
@frozen_section(kw_only=True, repr=False, eq=False)
class RewardModelHead:
    enabled: bool = required()
    reward_model_type: str = required()


@section("value")
@frozen_section(kw_only=True, repr=False, eq=False)
class ValuePolicy(PolicyExamplesMain):
    """The critic: a policy section with a scalar head instead of the language-model one."""

    reward_model_cfg: RewardModelHead | Unset = optional()  # type: ignore[assignment]


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class PPOMasterConfig(RunMasterConfigMain):
    """``examples/run_ppo.py --config`` (main, super-v3.5-posttraining)."""

    upstream = upstream_v35("nemo_rl.algorithms.ppo:MasterConfig")

    ppo: PPOConfig = required()
    loss_fn: ClippedPGLossMain = required()
    value_loss_fn: ValueLoss = required()
    value: ValuePolicy = required()
    env: EnvironmentsExamples = required()
