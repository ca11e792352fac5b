"""NeMo-RL's entry points, one framework object each, for every algorithm its examples configure.

A framework object names what a stage runs: the NeMo-RL version (the container's), the entry
point, and the config type that version's entry point reads. The config type is the schema:
a key the version lacks is an unknown key, a key it requires and the recipe omits is a missing
one, both reported at their path when the recipe is built or compiled.

Two versions: ``super-v3`` (the Super V3 container, ``NEMO_RL_VERSION``) and the
``super-v3.5-posttraining`` branch of the Super 3.5 container, whose config schema is ``main``'s
(``schema_main``). Entry points are those both branches ship under ``examples/``
(NVIDIA-NeMo/RL at super-v3 8af543ad and super-v3.5-posttraining 5d63149a).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs

from recipekit.checking import run_checks
from recipekit.derivation import Derivation
from recipekit.errors import Issue, RecipeError
from recipekit.framework import CONFIG_PLACEHOLDER, FrameworkBase, Launch
from recipekit.hardware import Hardware
from recipekit.lineage.checkpoint_stamp import CheckpointReads
from recipekit.lineage.steps import SavePolicy
from recipekit.markers import UNSET, given
from recipekit.model_card import ModelCard
from recipekit.nemo_rl import NEMO_RL_VERSION
from recipekit.nemo_rl.checks import Check, CheckContext
from recipekit.nemo_rl.checks.key_needs import unread_in
from recipekit.nemo_rl.config_guards import config_validators_hold, runner_issues
from recipekit.nemo_rl.derivations import RULES
from recipekit.nemo_rl.derivations_main import RULES_MAIN
from recipekit.nemo_rl.framework import (
    NEMO_RL_GRPO,
    NemoRLGrpo,
    nemo_rl_checkpoint_reads,
    nemo_rl_save_policy,
)
from recipekit.nemo_rl.framework_super35 import NEMO_RL_SUPER35
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.layout import Layout, NodeSplit
from recipekit.nemo_rl.rules import (
    POLICY_ERROR_CHECKS_SUPER35,
    POLICY_ERROR_CHECKS_SUPER_V3,
    POLICY_WARNING_CHECKS_SUPER35,
    POLICY_WARNING_CHECKS_SUPER_V3,
)
from recipekit.nemo_rl.rules.dpo import DPO_ERROR_CHECKS, DPO_WARNING_CHECKS
from recipekit.nemo_rl.rules.generation_split import training_gpus
from recipekit.nemo_rl.rules.offpolicy_distillation import (
    DISTILLATION_ERROR_CHECKS,
    DISTILLATION_WARNING_CHECKS,
)
from recipekit.nemo_rl.rules.ppo import PPO_ERROR_CHECKS, PPO_WARNING_CHECKS
from recipekit.nemo_rl.rules.rm import RM_ERROR_CHECKS, RM_WARNING_CHECKS
from recipekit.nemo_rl.rules.sft import SFT_ERROR_CHECKS, SFT_WARNING_CHECKS
from recipekit.nemo_rl.rules.xtoken_distillation import XTOKEN_ERROR_CHECKS
from recipekit.nemo_rl.schema_distillation import (
    DistillationMasterConfig,
    DistillationMasterConfigMain,
    XTokenDistillationMasterConfig,
)
from recipekit.nemo_rl.schema_dpo import DPOMasterConfig, DPOMasterConfigMain
from recipekit.nemo_rl.schema_eval import EvalMasterConfig
from recipekit.nemo_rl.schema_grpo_examples import (
    GRPOExamplesConfig,
    GRPOExamplesConfigMain,
    GRPOSingleControllerConfigMain,
)
from recipekit.nemo_rl.schema_ppo import PPOMasterConfig
from recipekit.nemo_rl.schema_rm import RMMasterConfig, RMMasterConfigMain
from recipekit.nemo_rl.schema_sft import SFTMasterConfig, SFTMasterConfigMain
from recipekit.parallelism import (
    DTENSOR,
    LAYOUT_RULES,
    NEMO_RL,
    ParallelKeys,
    ParallelLayout,
    model_layout_issues,
    model_parallel_divides_gpus,
)

SUPER35_VERSION = NEMO_RL_SUPER35.version
SUPER35_IMAGE = NEMO_RL_SUPER35.image


@attrs.frozen
class ClusterLayout:
    """The GPUs a non-GRPO run asks NeMo-RL's virtual cluster for, and the Megatron-Core layout
    of its policy on them (None on DTensor)."""

    num_nodes: int
    gpus_per_node: int
    parallel: ParallelLayout | None = None

    def as_json(self) -> dict[str, Any]:
        return {"num_nodes": self.num_nodes, "gpus_per_node": self.gpus_per_node}


@attrs.frozen
class NemoRLRun(FrameworkBase):
    """A NeMo-RL entry point other than GRPO's: SFT, DPO, RM, distillation, PPO, evaluation.

    What it checks is what the config itself says (its types, the GPUs NeMo-RL's cluster asks
    for against the stage's hardware, and a Megatron policy's parallel layout on them, by the
    rules every Megatron-Core framework runs); the other checks of ``checks`` are GRPO's, and
    so is the memory estimate (none here, FrameworkBase's default, as for the layout search).
    """

    algorithm: str
    entry_point: str
    config_type: type
    version: str = NEMO_RL_VERSION
    image: str = "nemo-rl"
    rules: tuple[Derivation, ...] = RULES
    name: str = "nemo-rl"
    launch: Launch = "ray"
    # The entry point's own run-time rules, each reading the typed config: errors, warnings.
    error_checks: tuple[Callable[[Any], Iterable[Issue]], ...] = ()
    warning_checks: tuple[Callable[[Any], Iterable[Issue]], ...] = ()
    # Where the entry point trains on fewer GPUs than its cluster (generation on GPUs of its
    # own): those GPUs and how they were counted, or None for the whole cluster. The policy's
    # Megatron layout must hold on them.
    training_gpus: Callable[[Any], tuple[int, str] | None] | None = None
    # The policy's own rules (its class, workers, Megatron-Core setup and config classes), which
    # every entry point that trains a policy starts: GRPO's checks, read through a CheckContext
    # whose layout is the policy's on the GPUs it trains on.
    policy_error_checks: tuple[Check, ...] = POLICY_ERROR_CHECKS_SUPER_V3
    policy_warning_checks: tuple[Check, ...] = POLICY_WARNING_CHECKS_SUPER_V3

    def check(
        self, config: Any, hardware: Hardware, model: ModelCard
    ) -> tuple[ClusterLayout, list[Issue], list[Issue]]:
        """The GPUs NeMo-RL's cluster asks for must be in the stage's allocation, a Megatron
        policy's layout must hold on them, and the entry point's own rules (error_checks,
        warning_checks) must hold."""
        cluster = given(value_of(config, "cluster", UNSET), None)  # an eval config has its own
        asked = {}
        errors = []
        for key, has, what in (
            ("num_nodes", hardware.num_nodes, "the stage's hardware has {} nodes"),
            ("gpus_per_node", hardware.gpus_per_node, f"a {hardware.node.name} node has {{}} GPUs"),
        ):
            value = value_of(cluster, key, has)
            asked[key] = value if isinstance(value, int) else has
            if asked[key] > has:
                errors.append(Issue(f"cluster.{key}", what.format(has), value=value))
        nodes, per_node = asked["num_nodes"], asked["gpus_per_node"]
        training = None if self.training_gpus is None else self.training_gpus(config)
        if training is None:
            gpus = nodes * per_node
            where = f"the {gpus} GPUs of NeMo-RL's cluster ({nodes} x {per_node})"
        else:
            gpus, counted = training
            where = f"the {gpus} GPUs it trains on ({counted})"
        sizes = _policy_sizes(config, gpus)
        if sizes is not None and sizes.enabled:
            # On DTensor too: the policy's class and its DTensor workers refuse sizes that do
            # not divide the GPUs (Policy.__init__, DTensorPolicyWorkerImpl.__init__), as for GRPO.
            errors += model_layout_issues(sizes.parallel, sizes.keys, hardware.node, model, where)
        parallel = sizes.parallel if sizes is not None and sizes.keys is NEMO_RL else None
        critic = _megatron_value_of_the_policys_model(config)
        if critic is not None:
            # PPO's critic is built from the policy's model (its card is the stage's) and trains
            # on the same GPUs; whether its sizes divide them is its own catalogued rule
            # (rules.ppo.value_parallelism_divides_its_gpus, lm_value.py's Value.__init__).
            errors += model_layout_issues(
                VALUE.read(critic, gpus), VALUE, hardware.node, model, where, VALUE_LAYOUT_RULES
            )
        policy_errors, warnings = self._policy_issues(
            config, hardware, model, (nodes, per_node, gpus), sizes
        )
        errors += policy_errors
        errors += [issue for rule in self.error_checks for issue in rule(config)]
        errors += unread_in(config, self.version, self.entry_point)
        # The runner's own checks, replayed where it is pinned (GRPO's: runner_refusals).
        errors += runner_issues(config, self.entry_point, "guard")
        warnings += [issue for rule in self.warning_checks for issue in rule(config)]
        warnings += runner_issues(config, self.entry_point, "warn")
        return ClusterLayout(nodes, per_node, parallel), errors, warnings

    def _policy_issues(
        self,
        config: Any,
        hardware: Hardware,
        model: ModelCard,
        gpus: tuple[int, int, int],
        sizes: PolicySizes | None,
    ) -> tuple[list[Issue], list[Issue]]:
        """The policy's own rules, on ``gpus`` = (cluster nodes, GPUs per node, training GPUs)
        with the policy's ``sizes`` there (None: the config has no policy to read them on)."""
        checks = self.policy_error_checks, self.policy_warning_checks
        if sizes is None or not any(checks):
            return [], []
        nodes, per_node, training = gpus
        split = NodeSplit(
            gpus_per_node=per_node,
            cluster_nodes=nodes,
            colocated=True,
            generation_nodes=0,
            generation_gpus=0,
            training_nodes=-(-training // per_node),
            training_gpus=training,
        )
        layout = Layout(
            nodes=split,
            backend="megatron" if sizes.keys is NEMO_RL else "dtensor",
            parallel=sizes.parallel,
            keys=sizes.keys,
            vllm_tensor_parallel=1,
            vllm_pipeline_parallel=1,
        )
        return run_checks(CheckContext(config, hardware, model, layout), *checks)

    def arguments(self, rendered: dict[str, Any]) -> list[str]:
        return ["--config", CONFIG_PLACEHOLDER]

    def inputs(self, config: Any) -> dict[str, str]:
        found: dict[str, str] = {}
        for role in ("policy", "teacher", "value"):
            model = value_of(value_of(config, role, None), "model_name", None)
            if isinstance(model, str):
                found["model" if role == "policy" else role] = model
        return found

    def outputs(self, config: Any) -> dict[str, str]:
        ckpt = given(value_of(config, "checkpointing", UNSET), None)
        return {"checkpoints": ckpt.checkpoint_dir} if ckpt is not None and ckpt.enabled else {}

    def checkpoint_reads(self, config: Any) -> CheckpointReads:
        return nemo_rl_checkpoint_reads(config)

    def save_policy(self, config: Any) -> SavePolicy | None:
        return nemo_rl_save_policy(config, self.algorithm.removeprefix("xtoken_"))

    def summary(self, config: Any, layout: Any) -> list[tuple[str, str]]:
        section = value_of(config, self.algorithm.removeprefix("xtoken_"), None)
        steps = given(value_of(section, "max_num_steps", UNSET), "")
        return [
            ("algorithm", f"{self.algorithm} ({self.entry_point})"),
            ("cluster", f"{layout.num_nodes} x {layout.gpus_per_node} GPUs"),
            ("steps", str(steps)),
        ]


def _megatron_of(config: Any, role: str) -> Any:
    """``role``'s (``policy``, ``value``) ``megatron_cfg`` when it trains with Megatron-Core
    (an eval config has no policy; a DTensor one leaves it off)."""
    model = given(value_of(config, role, UNSET), None)
    megatron = given(value_of(model, "megatron_cfg", UNSET), None)
    return megatron if megatron is not None and megatron.enabled is True else None


@attrs.frozen
class PolicySizes:
    """The policy's parallel sizes on the GPUs it trains on, in its back-end's keys, and
    whether that back-end is on."""

    parallel: ParallelLayout
    keys: ParallelKeys
    enabled: bool


def _policy_sizes(config: Any, gpus: int) -> PolicySizes | None:
    """Megatron-Core's sizes where it trains the policy, else the DTensor section's, on or not
    (the rule refusing a policy with neither back-end on reads them too); None where the
    config has no policy (an evaluation's)."""
    megatron = _megatron_of(config, "policy")
    if megatron is not None:
        return PolicySizes(NEMO_RL.read(megatron, gpus), NEMO_RL, True)
    policy = given(value_of(config, "policy", UNSET), None)
    dtensor = given(value_of(policy, "dtensor_cfg", UNSET), None)
    if dtensor is None:
        return None
    return PolicySizes(DTENSOR.read(dtensor, gpus), DTENSOR, dtensor.enabled is True)


# PPO's critic (``value``), laid out by the same Megatron keys as the policy.
VALUE = attrs.evolve(NEMO_RL, section="value.megatron_cfg")
VALUE_LAYOUT_RULES = tuple(rule for rule in LAYOUT_RULES if rule is not model_parallel_divides_gpus)


def _megatron_value_of_the_policys_model(config: Any) -> Any:
    """The critic's ``megatron_cfg`` where it trains with Megatron-Core and is built from the
    policy's model (so the stage's model card describes it); None otherwise."""
    megatron = _megatron_of(config, "value")
    if megatron is None:
        return None
    same = config.value.model_name == value_of(config.policy, "model_name", None)
    return megatron if same else None


def _main(run: NemoRLRun) -> NemoRLRun:
    """The same entry point on the Super 3.5 container (main's schema and derivations)."""
    return attrs.evolve(
        run,
        version=SUPER35_VERSION,
        image=SUPER35_IMAGE,
        rules=RULES_MAIN,
        error_checks=(*run.error_checks, config_validators_hold),
        policy_error_checks=POLICY_ERROR_CHECKS_SUPER35,
        policy_warning_checks=POLICY_WARNING_CHECKS_SUPER35,
    )


# --- super-v3 ---------------------------------------------------------------------------------

NEMO_RL_SFT = NemoRLRun("sft", "examples/run_sft.py", SFTMasterConfig)
NEMO_RL_VLM_SFT = NemoRLRun("sft", "examples/run_vlm_sft.py", SFTMasterConfig)
NEMO_RL_DPO = NemoRLRun("dpo", "examples/run_dpo.py", DPOMasterConfig)
NEMO_RL_RM = NemoRLRun("rm", "examples/run_rm.py", RMMasterConfig)
NEMO_RL_DISTILLATION = NemoRLRun(
    "distillation", "examples/run_distillation.py", DistillationMasterConfig
)
# GRPO as the super-v3 examples configure it beyond the Super V3 recipe's schema (NeMo Gym,
# reward-model and puzzle environments, several datasets); NEMO_RL_GRPO is the Super V3 one.
NEMO_RL_GRPO_EXAMPLES = NemoRLGrpo(config_type=GRPOExamplesConfig)
NEMO_RL_VLM_GRPO = NemoRLGrpo(
    entry_point="examples/run_vlm_grpo.py", config_type=GRPOExamplesConfig
)
NEMO_RL_GYM_GRPO = NemoRLGrpo(
    entry_point="examples/nemo_gym/run_grpo_nemo_gym.py", config_type=GRPOExamplesConfig
)
NEMO_RL_SLIDING_PUZZLE_GRPO = NemoRLGrpo(
    entry_point="examples/run_grpo_sliding_puzzle.py", config_type=GRPOExamplesConfig
)

# --- super-v3.5-posttraining (main's schema) ----------------------------------------------------

NEMO_RL_SUPER35_SFT = _main(
    NemoRLRun(
        "sft",
        "examples/run_sft.py",
        SFTMasterConfigMain,
        error_checks=SFT_ERROR_CHECKS,
        warning_checks=SFT_WARNING_CHECKS,
    )
)
NEMO_RL_SUPER35_VLM_SFT = _main(
    NemoRLRun(
        "sft",
        "examples/run_vlm_sft.py",
        SFTMasterConfigMain,
        error_checks=SFT_ERROR_CHECKS,
        warning_checks=SFT_WARNING_CHECKS,
    )
)
NEMO_RL_SUPER35_DPO = _main(
    NemoRLRun(
        "dpo",
        "examples/run_dpo.py",
        DPOMasterConfigMain,
        error_checks=DPO_ERROR_CHECKS,
        warning_checks=DPO_WARNING_CHECKS,
    )
)
NEMO_RL_SUPER35_RM = _main(
    NemoRLRun(
        "rm",
        "examples/run_rm.py",
        RMMasterConfigMain,
        error_checks=RM_ERROR_CHECKS,
        warning_checks=RM_WARNING_CHECKS,
    )
)
NEMO_RL_SUPER35_DISTILLATION = _main(
    NemoRLRun(
        "distillation",
        "examples/run_distillation.py",
        DistillationMasterConfigMain,
        error_checks=DISTILLATION_ERROR_CHECKS,
        warning_checks=DISTILLATION_WARNING_CHECKS,
        training_gpus=training_gpus,
    )
)
NEMO_RL_SUPER35_XTOKEN_DISTILLATION = _main(
    NemoRLRun(
        "xtoken_distillation",
        "examples/run_xtoken_off_policy_distillation.py",
        XTokenDistillationMasterConfig,
        error_checks=XTOKEN_ERROR_CHECKS,
    )
)
NEMO_RL_SUPER35_PPO = _main(
    NemoRLRun(
        "ppo",
        "examples/run_ppo.py",
        PPOMasterConfig,
        error_checks=PPO_ERROR_CHECKS,
        warning_checks=PPO_WARNING_CHECKS,
        training_gpus=training_gpus,
    )
)
NEMO_RL_SUPER35_EVAL = _main(
    # Its rules are eval.py's setup's, replayed (config_guards.runner_issues).
    NemoRLRun("eval", "examples/run_eval.py", EvalMasterConfig)
)
# NEMO_RL_SUPER35 (Gym, examples/nemo_gym/run_grpo_nemo_gym.py) is the Super 3.5 RL one; these
# read GRPO as main's examples configure it.
NEMO_RL_SUPER35_GYM_GRPO = attrs.evolve(NEMO_RL_SUPER35, config_type=GRPOExamplesConfigMain)


def _runner(entry_point: str) -> NemoRLGrpo:
    """Main's GRPO run by another runner than NeMo Gym's (run_grpo.py starts the math and other
    environments its config names): the replay of each runner's own checks follows the entry
    point (config_guards.runner_refusals)."""
    return attrs.evolve(NEMO_RL_SUPER35_GYM_GRPO, entry_point=entry_point)


NEMO_RL_SUPER35_GRPO = _runner("examples/run_grpo.py")
NEMO_RL_SUPER35_VLM_GRPO = _runner("examples/run_vlm_grpo.py")
NEMO_RL_SUPER35_SLIDING_PUZZLE_GRPO = _runner("examples/run_grpo_sliding_puzzle.py")
NEMO_RL_SUPER35_SINGLE_CONTROLLER_GRPO = attrs.evolve(
    _runner("examples/run_grpo_single_controller.py"), config_type=GRPOSingleControllerConfigMain
)

# --- which one a config is for ------------------------------------------------------------------

# The top-level section that names the algorithm, in the order they are looked for.
ALGORITHM_SECTIONS = ("grpo", "ppo", "sft", "dpo", "rm", "distillation", "eval")
# Datasets and environments of NeMo-RL's vision-language (and audio) examples, which its
# README launches with run_vlm_grpo.py / run_vlm_sft.py (vlm_grpo_3B.yaml, sft_vlm_3B.yaml,
# sft_avlm.yaml, audio_grpo_3B_megatron.yaml, evals/mmau.yaml).
VLM_DATASETS = ("clevr-cogent", "geometry3k", "refcoco", "daily-omni", "avqa", "TwinkStart/MMAU")
VLM_ENVIRONMENTS = ("clevr-cogent", "geometry3k", "refcoco", "vlm")


def algorithm_of(config: dict[str, Any]) -> str:
    for section in ALGORITHM_SECTIONS:
        if section in config:
            if section == "distillation" and "teachers" in config:
                return "xtoken_distillation"
            return section
    raise RecipeError(
        [
            Issue(
                "",
                "not a NeMo-RL run config: it has none of the sections that name an algorithm",
                hint="expected one of " + ", ".join(ALGORITHM_SECTIONS),
            )
        ]
    )


def frameworks_for(schema: str, config: dict[str, Any]) -> tuple[Any, ...]:
    """The framework objects that can run ``config`` on NeMo-RL ``schema`` ("super-v3" or
    "main"), the strictest schema first: a Super recipe's own where the config fits it."""
    algorithm = algorithm_of(config)
    main = schema == "main"
    if algorithm == "grpo":
        return _grpo(config, main)
    if algorithm == "sft":
        if _is_vlm(config):
            return (NEMO_RL_SUPER35_VLM_SFT if main else NEMO_RL_VLM_SFT,)
        return (NEMO_RL_SUPER35_SFT if main else NEMO_RL_SFT,)
    by_algorithm = {
        "dpo": (NEMO_RL_DPO, NEMO_RL_SUPER35_DPO),
        "rm": (NEMO_RL_RM, NEMO_RL_SUPER35_RM),
        "distillation": (NEMO_RL_DISTILLATION, NEMO_RL_SUPER35_DISTILLATION),
        # Main only: super-v3 has no entry point for these.
        "xtoken_distillation": (None, NEMO_RL_SUPER35_XTOKEN_DISTILLATION),
        "ppo": (None, NEMO_RL_SUPER35_PPO),
        "eval": (None, NEMO_RL_SUPER35_EVAL),
    }
    v3, on_main = by_algorithm[algorithm]
    if main:
        return (on_main,)
    if v3 is None:
        raise RecipeError(
            [Issue(algorithm, f"NeMo-RL {NEMO_RL_VERSION} has no entry point for {algorithm}")]
        )
    return (v3,)


def _grpo(config: dict[str, Any], main: bool) -> tuple[NemoRLGrpo, ...]:
    env = config.get("env") or {}
    if env.get("should_use_nemo_gym") is True:
        return (NEMO_RL_SUPER35, NEMO_RL_SUPER35_GYM_GRPO) if main else (NEMO_RL_GYM_GRPO,)
    if main and "async_rl" in config:
        return (NEMO_RL_SUPER35_SINGLE_CONTROLLER_GRPO,)
    if "sliding_puzzle_game" in env:
        return (NEMO_RL_SUPER35_SLIDING_PUZZLE_GRPO if main else NEMO_RL_SLIDING_PUZZLE_GRPO,)
    if _is_vlm(config):
        return (NEMO_RL_SUPER35_VLM_GRPO if main else NEMO_RL_VLM_GRPO,)
    return (NEMO_RL_SUPER35_GRPO,) if main else (NEMO_RL_GRPO, NEMO_RL_GRPO_EXAMPLES)


def _is_vlm(config: dict[str, Any]) -> bool:
    policy = config.get("policy") or {}
    if policy.get("is_vlm") is True:
        return True
    data = config.get("data") or {}
    datasets = [data.get("train"), data.get("validation"), data]
    names = [d.get("dataset_name") for d in _flatten(datasets) if isinstance(d, dict)]
    env = config.get("env") or {}
    return any(n in VLM_DATASETS for n in names) or any(e in VLM_ENVIRONMENTS for e in env)


def _flatten(items: list[Any]) -> list[Any]:
    out = []
    for item in items:
        out += item if isinstance(item, list) else [item]
    return out


__all__ = ["NEMO_RL_GRPO", "NEMO_RL_SUPER35", "algorithm_of", "frameworks_for"]
