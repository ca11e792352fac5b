"""NeMo-RL's distillation master configs as typed sections.

``distillation``: on-policy knowledge distillation (``examples/run_distillation.py``): the
student (``policy``) generates, the ``teacher`` scores its tokens, the loss is the KL between
them over the teacher's top-k logits. Every key of ``DistillationConfig`` and
``DistillationLossConfig`` is required on ``super-v3`` and has a default on ``main``
(``nemo_rl/algorithms/distillation.py`` of NVIDIA-NeMo/RL@8af543ad and NVIDIA-NeMo/RL@7ea279ab).

``xtoken_distillation``: main's cross-tokenizer off-policy distillation
(``examples/run_xtoken_off_policy_distillation.py``): a list of ``teachers``, each with its own
tokenizer and projection matrix, over a text corpus. Its keys are those of
``examples/configs/xtoken_off_policy_distillation.yaml`` (main 7ea279ab), whose comments say
what they do; the schema file of the reference has no class for them.
"""

from recipekit.markers import Unset
from recipekit.nemo_rl import upstream_v3, upstream_v35
from recipekit.nemo_rl.generated import section_keys as keys
from recipekit.nemo_rl.schema_common import (
    EnvironmentsExamples,
    PolicyExamples,
    PolicyExamplesMain,
    RunMasterConfig,
    RunMasterConfigMain,
)
from recipekit.sections import frozen_section, optional, required, section
from recipekit.upstream.declared import undeclared
from recipekit.validators import at_least, between, upstream_values


@section("distillation")
@frozen_section(kw_only=True, repr=False, eq=False)
class DistillationConfig(keys.DistillationConfigKeys):
    upstream = upstream_v3("nemo_rl.algorithms.distillation:DistillationConfig")

    num_prompts_per_step: int = required(at_least(1))
    num_generations_per_prompt: int = required(at_least(1))
    max_rollout_turns: int = required(at_least(1))
    max_num_steps: int = required(at_least(1))
    max_num_epochs: int = required(at_least(1))
    val_batch_size: int = required(at_least(1))
    # 0: no periodic validation.
    val_period: int = required(at_least(0))
    max_val_samples: int | None = required(at_least(1))
    # The teacher's logits the student matches: its k most likely tokens at each position.
    topk_logits_k: int = required(at_least(1))


@section("distillation")
@frozen_section(kw_only=True, repr=False, eq=False)
class DistillationConfigMain(keys.DistillationConfigMainKeys):
    """main's DistillationConfig: every key has a default (128 prompts a step, top 64, ...)."""

    upstream = upstream_v35("nemo_rl.algorithms.distillation:DistillationConfig")

    num_prompts_per_step: int | Unset = optional(at_least(1))
    num_generations_per_prompt: int | Unset = optional(at_least(1))
    max_rollout_turns: int | Unset = optional(at_least(1))
    max_num_steps: int | Unset = optional(at_least(1))
    max_num_epochs: int | Unset = optional(at_least(1))
    val_batch_size: int | Unset = optional(at_least(1))
    val_period: int | Unset = optional(at_least(0))
    max_val_samples: int | None | Unset = optional(at_least(1))
    topk_logits_k: int | Unset = optional(at_least(1))


@section("loss_fn")
@frozen_section(kw_only=True, repr=False, eq=False)
class DistillationLoss(keys.DistillationLossKeys):
    upstream = upstream_v3("nemo_rl.algorithms.loss_functions:DistillationLossConfig")

    kl_type: str = required(upstream_values("nemo_rl.distillation_kl_type"))
    # mixed: this weight on the reverse KL, the rest on the forward one.
    mixed_kl_weight: float = required(between(0, 1))


@section("loss_fn")
@frozen_section(kw_only=True, repr=False, eq=False)
class DistillationLossMain(keys.DistillationLossMainKeys):
    upstream = upstream_v35("nemo_rl.algorithms.loss.loss_functions:DistillationLossConfig")

    kl_type: str | Unset = optional(upstream_values("nemo_rl.distillation_kl_type"))
    mixed_kl_weight: float | Unset = optional(between(0, 1))


@section("loss_fn")
@frozen_section(kw_only=True, repr=False, eq=False)
class XTokenDistillationLoss(keys.XTokenDistillationLossKeys, DistillationLossMain):
    """The loss modes of cross-tokenizer distillation (gold_loss off: P-KL over a projected
    top-k of the teacher's vocabulary; on: KL on the exactly mapped vocabulary + L1 on the
    rest; xtoken_loss relaxes the exact mapping and requires gold_loss)."""

    upstream = upstream_v35(
        "nemo_rl.algorithms.loss.loss_functions:CrossTokenizerDistillationLossConfig"
    )
    undeclared_keys = undeclared(read=("kl_type", "mixed_kl_weight", "zero_outside_topk"))

    zero_outside_topk: bool | Unset = optional()
    gold_loss: bool | Unset = optional()
    xtoken_loss: bool | Unset = optional()
    temperature: float | Unset = optional(at_least(0))
    vocab_topk: int | Unset = optional(at_least(1))
    uncommon_topk: int | Unset = optional(at_least(1))
    reverse_kl: bool | Unset = optional()
    exact_token_match_only: bool | Unset = optional()
    kl_loss_weight: float | Unset = optional(at_least(0))
    ce_loss_scale: float | Unset = optional(at_least(0))
    dynamic_loss_scaling: bool | Unset = optional()
    kd_loss_mode: str | Unset = optional(upstream_values("nemo_rl.kd_loss_mode"))
    # null: each teacher's static weight; else a per-sequence softmax over this metric.
    sum_weights_metric: str | None | Unset = optional(upstream_values("nemo_rl.sum_weights_metric"))
    alpha: float | Unset = optional(at_least(0))
    normalize_teacher_by_vocab: bool | Unset = optional()


@section("teachers[]")
@frozen_section(kw_only=True, repr=False, eq=False)
class XTokenTeacher(PolicyExamplesMain):
    """One teacher: a policy section plus how its vocabulary maps onto the student's."""

    # null: the teacher shares the student's tokenizer (direct KL, no projection).
    projection_matrix_path: str | None | Unset = optional()
    weight: float | Unset = optional(at_least(0))
    gold_loss: bool | Unset = optional()
    xtoken_loss: bool | Unset = optional()


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class DistillationMasterConfig(keys.DistillationMasterConfigKeys, RunMasterConfig):
    """``examples/run_distillation.py --config`` on super-v3."""

    upstream = upstream_v3("nemo_rl.algorithms.distillation:MasterConfig")

    teacher: PolicyExamples = required()
    loss_fn: DistillationLoss = required()
    distillation: DistillationConfig = required()


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class DistillationMasterConfigMain(RunMasterConfigMain):
    """``examples/run_distillation.py --config`` on main (super-v3.5-posttraining)."""

    upstream = upstream_v35("nemo_rl.algorithms.distillation:MasterConfig")

    teacher: PolicyExamplesMain = required()
    loss_fn: DistillationLossMain = required()
    env: EnvironmentsExamples = required()
    distillation: DistillationConfigMain = required()


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class XTokenDistillationMasterConfig(DistillationMasterConfigMain):
    """``examples/run_xtoken_off_policy_distillation.py --config`` (main only)."""

    upstream = upstream_v35("nemo_rl.algorithms.xtoken_off_policy_distillation:MasterConfig")
    undeclared_keys = undeclared(read=("env", "teacher"))

    # Inherited from distillation_math.yaml and unused (null): the teachers are listed below.
    teacher: PolicyExamplesMain | None = required()  # type: ignore[assignment]
    teachers: tuple[XTokenTeacher, ...] = required()
    loss_fn: XTokenDistillationLoss = required()
