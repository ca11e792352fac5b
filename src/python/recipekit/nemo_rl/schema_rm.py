"""NeMo-RL's reward-model training master config (``examples/run_rm.py``) as typed sections.

Every ``RMConfig`` key is required on ``super-v3`` and has a default on ``main``
(``nemo_rl/algorithms/rm.py`` of NVIDIA-NeMo/RL@8af543ad and NVIDIA-NeMo/RL@7ea279ab).
"""

from recipekit.markers import Unset
from recipekit.nemo_rl import upstream_v3, upstream_v35
from recipekit.nemo_rl.schema_common import (
    RunMasterConfig,
    RunMasterConfigMain,
    TrainLoop,
    TrainLoopMain,
)
from recipekit.sections import frozen_section, optional, required, section
from recipekit.validators import at_least


@section("rm")
@frozen_section(kw_only=True, repr=False, eq=False)
class RMConfig(TrainLoop):
    upstream = upstream_v3("nemo_rl.algorithms.rm:RMConfig")

    # -1: as many steps as the epochs give (rm.yaml).
    max_num_steps: int = required(at_least(-1))


@section("rm")
@frozen_section(kw_only=True, repr=False, eq=False)
class RMConfigMain(TrainLoopMain):
    upstream = upstream_v35("nemo_rl.algorithms.rm:RMConfig")

    max_num_steps: int | Unset = optional(at_least(-1))


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class RMMasterConfig(RunMasterConfig):
    """``examples/run_rm.py --config`` on super-v3."""

    upstream = upstream_v3("nemo_rl.algorithms.rm:MasterConfig")

    rm: RMConfig = required()


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class RMMasterConfigMain(RunMasterConfigMain):
    """``examples/run_rm.py --config`` on main (super-v3.5-posttraining)."""

    upstream = upstream_v35("nemo_rl.algorithms.rm:MasterConfig")

    rm: RMConfigMain = required()
