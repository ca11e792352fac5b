"""GRPO as NeMo-RL's own example configs set it, beyond what the Super recipes' schemas allow.

``schema.GRPOMasterConfig`` and ``schema_main.GRPOMasterConfigMain`` are what the Super V3 and
Super 3.5 recipes are checked against. NeMo-RL's examples go further, and NeMo-RL runs them:
several training datasets, no periodic validation (``val_period: -1``), and on main what
``schema_common`` lists. These master configs are those
schemas widened just so far, subclasses that change nothing the Super recipes use.
"""

from recipekit.markers import Unset
from recipekit.nemo_rl import upstream_v35
from recipekit.nemo_rl.generated import section_keys as keys
from recipekit.nemo_rl.schema_common import (
    DataList,
    DataListMain,
    EnvironmentsExamples,
    PolicyExamples,
    PolicyExamplesMain,
)
from recipekit.nemo_rl.schema_main import GRPOConfigMain, GRPOMasterConfigMain
from recipekit.nemo_rl.schema_super_v3 import GRPOConfig, GRPOMasterConfig
from recipekit.sections import frozen_section, optional, required, section
from recipekit.validators import at_least


@section("grpo")
@frozen_section(kw_only=True, repr=False, eq=False)
class GRPOConfigExamples(GRPOConfig):
    # -1 (or 0): no periodic validation; NeMo-RL validates when val_period > 0.
    val_period: int = required(at_least(-1))


@section("grpo")
@frozen_section(kw_only=True, repr=False, eq=False)
class GRPOConfigExamplesMain(GRPOConfigMain):
    val_period: int = required(at_least(-1))


@section("reward_penalties.token_ids")
@frozen_section(kw_only=True, repr=False, eq=False)
class PenaltyTokenIds(keys.PenaltyTokenIdsKeys):
    upstream = upstream_v35("nemo_rl.algorithms.grpo:RewardPenaltyTokenIdsConfig")


@section("reward_penalties")
@frozen_section(kw_only=True, repr=False, eq=False)
class RewardPenalties(keys.RewardPenaltiesKeys):
    """main's RewardPenaltyConfig: zero the reward of Gym rollouts that misbehave."""

    upstream = upstream_v35("nemo_rl.algorithms.grpo:RewardPenaltyConfig")

    token_ids: PenaltyTokenIds | None | Unset = optional()


@section("data_plane")
@frozen_section(kw_only=True, repr=False, eq=False)
class DataPlane(keys.DataPlaneKeys):
    """main's DataPlaneConfig: rollouts reach training through a TransferQueue store."""

    upstream = upstream_v35("nemo_rl.data_plane.interfaces:DataPlaneConfig")

    storage_capacity: int = required(at_least(1))
    num_storage_units: int = required(at_least(1))
    claim_meta_poll_interval_s: float = required(at_least(0))
    global_segment_size: int = required(at_least(1))
    local_buffer_size: int = required(at_least(1))
    ack_timeout_ms: int | Unset = optional(at_least(1))


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class GRPOExamplesConfig(GRPOMasterConfig):
    """GRPO on super-v3 as its examples configure it."""

    grpo: GRPOConfigExamples = required()
    policy: PolicyExamples = required()
    data: DataList = required()
    # super-v3 reads env as dict[str, Any]; its Gym runner reads the switches and the Gym
    # config that main's Environments section declares (examples/configs/super/*.yaml).
    env: EnvironmentsExamples = required()  # type: ignore[assignment]


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class GRPOExamplesConfigMain(GRPOMasterConfigMain):
    """GRPO on main (super-v3.5-posttraining) as its examples configure it."""

    grpo: GRPOConfigExamplesMain = required()
    policy: PolicyExamplesMain = required()
    data: DataListMain = required()
    env: EnvironmentsExamples = required()
    reward_penalties: RewardPenalties | Unset = optional()  # type: ignore[assignment]
    data_plane: DataPlane | None | Unset = optional()  # type: ignore[assignment]


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class GRPOSingleControllerConfigMain(
    keys.GRPOSingleControllerConfigMainKeys, GRPOExamplesConfigMain
):
    """GRPO as main's single-controller runner (examples/run_grpo_single_controller.py) reads
    it: its own master config, which adds the asynchronous loop's ``async_rl``."""

    upstream = upstream_v35("nemo_rl.algorithms.single_controller_utils.config:MasterConfig")
