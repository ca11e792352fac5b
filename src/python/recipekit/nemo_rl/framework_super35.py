"""NeMo-RL's GRPO on the super-v3.5-posttraining branch, whose config schema is main's.

Its own module, so that only the stages that run it import main's schema (``schema_main``):
about a third of a Super 3 plan's start-up went into building sections it never reads.
"""

from __future__ import annotations

from recipekit.megatron_core.checks import NEMO_RL_ERROR_CHECKS as MCORE_ERRORS
from recipekit.megatron_core.checks import NEMO_RL_WARNING_CHECKS as MCORE_WARNINGS
from recipekit.nemo_rl.checks import ERROR_CHECKS, WARNING_CHECKS_MAIN
from recipekit.nemo_rl.config_guards import runner_refusals, runner_warnings
from recipekit.nemo_rl.derivations_main import RULES_MAIN
from recipekit.nemo_rl.framework import NemoRLGrpo
from recipekit.nemo_rl.rules import ERROR_CHECKS_SUPER35, WARNING_CHECKS_SUPER35
from recipekit.nemo_rl.schema_main import GRPOMasterConfigMain

# Super 3.5 RL (the recipe, "Software"): NeMo-RL's super-v3.5-posttraining branch; the recipe builds
# its image at f299847f1, which is not public, so the version names 5d63149a, the branch head whose
# source the rule catalogue reads (3rdparty/reference/manifest.toml),
# whose config schema is main's. Its GRPO + NeMo Gym runner is the entry point of every RL stage
# (RLVR, teachers, MOPD): main's docs launch Gym GRPO with it (nemotron-3-nano.md).
NEMO_RL_SUPER35 = NemoRLGrpo(
    version="super-v3.5-posttraining@5d63149a",
    entry_point="examples/nemo_gym/run_grpo_nemo_gym.py",
    config_type=GRPOMasterConfigMain,
    image="nemo-rl-super35",
    rules=RULES_MAIN,
    error_checks=(*ERROR_CHECKS, *ERROR_CHECKS_SUPER35, *MCORE_ERRORS, runner_refusals),
    warning_checks=(
        *WARNING_CHECKS_MAIN,
        *WARNING_CHECKS_SUPER35,
        *MCORE_WARNINGS,
        runner_warnings,
    ),
)
