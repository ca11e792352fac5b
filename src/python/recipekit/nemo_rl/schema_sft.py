"""NeMo-RL's SFT master config (``examples/run_sft.py``, ``run_vlm_sft.py``) as typed sections.

On ``super-v3`` every ``SFTConfig`` key is required (a TypedDict); on ``main`` it is a pydantic
model whose keys all have defaults (``nemo_rl/algorithms/sft.py`` of NVIDIA-NeMo/RL@8af543ad and
NVIDIA-NeMo/RL@7ea279ab). The other sections are those every non-GRPO entry point reads
(``schema_common``).
"""

from recipekit.nemo_rl import upstream_v3, upstream_v35
from recipekit.nemo_rl.generated import section_keys as keys
from recipekit.nemo_rl.schema_common import (
    RunMasterConfig,
    RunMasterConfigMain,
    TrainLoop,
    TrainLoopMain,
)
from recipekit.sections import frozen_section, required, section


@section("sft")
@frozen_section(kw_only=True, repr=False, eq=False)
class SFTConfig(TrainLoop):
    upstream = upstream_v3("nemo_rl.algorithms.sft:SFTConfig")

    pass


@section("sft")
@frozen_section(kw_only=True, repr=False, eq=False)
class SFTConfigMain(keys.SFTConfigMainKeys, TrainLoopMain):
    upstream = upstream_v35("nemo_rl.algorithms.sft:SFTConfig")


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class SFTMasterConfig(RunMasterConfig):
    """``examples/run_sft.py --config`` on super-v3."""

    upstream = upstream_v3("nemo_rl.algorithms.sft:MasterConfig")

    sft: SFTConfig = required()


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class SFTMasterConfigMain(RunMasterConfigMain):
    """``examples/run_sft.py --config`` on main (super-v3.5-posttraining)."""

    upstream = upstream_v35("nemo_rl.algorithms.sft:MasterConfig")

    sft: SFTConfigMain = required()
