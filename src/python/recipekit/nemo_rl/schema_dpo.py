"""NeMo-RL's DPO master config (``examples/run_dpo.py``) as typed sections.

As for SFT: every ``DPOConfig`` key is required on ``super-v3`` and has a default on ``main``
(``nemo_rl/algorithms/dpo.py`` of NVIDIA-NeMo/RL@8af543ad and NVIDIA-NeMo/RL@7ea279ab). The data
entries are preference datasets (``prompt_key``, ``chosen_key``, ``rejected_key``: GRPO's
``Dataset`` has them).
"""

from recipekit.markers import Unset
from recipekit.nemo_rl import upstream_v3, upstream_v35
from recipekit.nemo_rl.generated import section_keys as keys
from recipekit.nemo_rl.schema_common import (
    RunMasterConfig,
    RunMasterConfigMain,
    TrainLoop,
    TrainLoopMain,
)
from recipekit.sections import frozen_section, optional, required, section
from recipekit.validators import at_least


@section("dpo")
@frozen_section(kw_only=True, repr=False, eq=False)
class DPOConfig(keys.DPOConfigKeys, TrainLoop):
    upstream = upstream_v3("nemo_rl.algorithms.dpo:DPOConfig")

    # beta of the DPO loss: how far the policy may move from the reference policy.
    reference_policy_kl_penalty: float = required(at_least(0))
    preference_loss_weight: float = required(at_least(0))
    sft_loss_weight: float = required(at_least(0))


@section("dpo")
@frozen_section(kw_only=True, repr=False, eq=False)
class DPOConfigMain(keys.DPOConfigMainKeys, TrainLoopMain):
    """main's DPOConfig: every key has a default (150 steps, beta 0.05, ...)."""

    upstream = upstream_v35("nemo_rl.algorithms.dpo:DPOConfig")

    reference_policy_kl_penalty: float | Unset = optional(at_least(0))
    preference_loss_weight: float | Unset = optional(at_least(0))
    sft_loss_weight: float | Unset = optional(at_least(0))


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class DPOMasterConfig(RunMasterConfig):
    """``examples/run_dpo.py --config`` on super-v3."""

    upstream = upstream_v3("nemo_rl.algorithms.dpo:MasterConfig")

    dpo: DPOConfig = required()


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class DPOMasterConfigMain(RunMasterConfigMain):
    """``examples/run_dpo.py --config`` on main (super-v3.5-posttraining)."""

    upstream = upstream_v35("nemo_rl.algorithms.dpo:MasterConfig")

    dpo: DPOConfigMain = required()
