"""The second DTensor policy worker (``policy.dtensor_cfg._v2: true``):
``nemo_rl/models/policy/workers/dtensor_policy_worker_v2.py`` and the NeMo Automodel setup,
training, data and checkpoint code it runs (``nemo_rl/models/automodel/``),
super-v3.5-posttraining. Catalogue: ``rule_catalogue/nemo-rl.automodel.toml``.

NeMo-RL starts this worker for a policy section with ``megatron_cfg`` off, ``dtensor_cfg``
enabled and ``_v2`` true (lm_policy.py); distillation starts one for its ``teacher`` and
cross-tokenizer distillation one for each of its ``teachers`` as well, so the rules of the
worker's start read every such section. An absent ``cpu_offload`` or ``sequence_parallel`` is
read as off (the worker indexes both)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.markers import Marker, given, given_at, is_set
from recipekit.nemo_rl.checks import Check, CheckContext
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.citation import mirrors
from recipekit.nemo_rl.schema_super_v3 import Policy


def _runs_v2(policy: Any) -> bool:
    """A policy section NeMo-RL trains (or scores) on the v2 DTensor worker."""
    if given_at(policy, "megatron_cfg", "enabled") is True:
        return False
    dtensor = given_at(policy, "dtensor_cfg")
    return given_at(dtensor, "enabled") is True and given_at(dtensor, "v2") is True


def _teachers(ctx: CheckContext) -> list[Any]:
    """Cross-tokenizer distillation's teachers (none on the other entry points)."""
    teachers = value_of(ctx.config, "teachers")
    return [] if teachers is None or isinstance(teachers, Marker) else list(teachers)


def _v2_sections(ctx: CheckContext) -> Iterator[tuple[str, Any]]:
    """(key prefix, section) for each policy section a v2 worker starts from: the policy, the
    teacher of distillation and the teachers of cross-tokenizer distillation."""
    if ctx.megatron is None and _runs_v2(ctx.config.policy):
        yield "policy", ctx.config.policy
    teacher = value_of(ctx.config, "teacher")
    if isinstance(teacher, Policy) and _runs_v2(teacher):
        yield "teacher", teacher
    for i, each in enumerate(_teachers(ctx)):
        if _runs_v2(each):
            yield f"teachers[{i}]", each


def _size(dtensor: Any, name: str) -> int:
    value = given_at(dtensor, name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def _packs(section: Any) -> bool:
    return given_at(section, "sequence_packing", "enabled") is True


def _processor(section: Any) -> bool:
    """The worker loads the HF processor (a vision-language model) only on this key."""
    return given_at(section, "tokenizer", "use_processor") is True


def _policy_v2(ctx: CheckContext) -> Any:
    """The policy's dtensor_cfg where the policy runs on the v2 worker, else None."""
    policy = ctx.config.policy
    return policy.dtensor_cfg if ctx.megatron is None and _runs_v2(policy) else None


# --- setup.py: validate_and_prepare_config, setup_distributed, setup_model_and_optimizer ----


@mirrors(
    v35="nemo-rl.automodel.setup.validate-and-prepare-config.no-sequence-packing-model-loaded-hf"
)
def packing_needs_a_text_tokenizer(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, validate_and_prepare_config: the v2 worker does not pack the sequences of a model
    it loads with an HF processor (policy.tokenizer.use_processor)."""
    for where, section in _v2_sections(ctx):
        if _packs(section) and _processor(section):
            yield Issue(
                f"{where}.sequence_packing.enabled",
                f"the v2 DTensor worker refuses to start with it while {where}.tokenizer."
                "use_processor is true: it packs no vision-language model's sequences",
                value=True,
                hint="set it false for a model loaded with a processor",
            )


@mirrors(
    v35="nemo-rl.automodel.setup.validate-and-prepare-config.no-yarn-rope-scaling-automodel-back"
)
def yarn_rope_scaling_needs_megatron(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, validate_and_prepare_config: YaRN rope scaling set through hf_config_overrides is
    not supported on the Automodel back-end. Kept by hand: GRPO hands the same overrides to its
    vLLM generation, which keeps them, so the replay cannot tell them by the time the worker
    starts."""
    for where, section in _v2_sections(ctx):
        overrides = given_at(section, "hf_config_overrides")
        rope = overrides.get("rope_scaling") if isinstance(overrides, dict) else None
        if isinstance(rope, dict) and rope.get("rope_type") == "yarn":
            yield Issue(
                f"{where}.hf_config_overrides.rope_scaling.rope_type",
                "the v2 DTensor worker refuses YaRN rope scaling: the Automodel back-end "
                "does not support it, the Megatron one does",
                value="yarn",
                hint=f"train with {where}.megatron_cfg.enabled: true for YaRN",
            )


@mirrors(v35="nemo-rl.automodel.setup.setup-distributed.no-cpu-offload-single-training-gpu")
def cpu_offload_needs_several_gpus(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, setup_distributed: Automodel's CPU offload does not run on a single training
    GPU."""
    dtensor = _policy_v2(ctx)
    gpus = ctx.layout.parallel.gpus
    if dtensor is not None and given(dtensor.cpu_offload, False) is True and gpus == 1:
        yield Issue(
            "policy.dtensor_cfg.cpu_offload",
            "the v2 DTensor worker refuses CPU offload when the policy trains on a single GPU "
            "(world size 1)",
            value=True,
            hint="set it false, or train on more GPUs",
        )


@mirrors(v35="nemo-rl.automodel.setup.setup-model-and-optimizer.no-sequence-parallelism-over-tp")
def context_parallel_without_sequence_parallel(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, setup_model_and_optimizer: with context parallelism, the v2 worker refuses sequence
    parallelism over more than one tensor-parallel rank."""
    for where, section in _v2_sections(ctx):
        dtensor = given_at(section, "dtensor_cfg")
        cp, tp = _size(dtensor, "context_parallel_size"), _size(dtensor, "tensor_parallel_size")
        if cp > 1 and tp > 1 and given_at(dtensor, "sequence_parallel") is True:
            yield Issue(
                f"{where}.dtensor_cfg.sequence_parallel",
                f"the v2 DTensor worker refuses it with context_parallel_size {cp} and "
                f"tensor_parallel_size {tp}: context and sequence parallelism do not work "
                "together there",
                value=True,
                hint="set it false, or context_parallel_size 1",
            )


@mirrors(
    v35="nemo-rl.automodel.setup.setup-model-and-optimizer.no-context-parallelism-model-loaded-hf"
)
def context_parallel_needs_a_text_tokenizer(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, setup_model_and_optimizer: no context parallelism for a model loaded with an HF
    processor."""
    for where, section in _v2_sections(ctx):
        cp = _size(given_at(section, "dtensor_cfg"), "context_parallel_size")
        if cp > 1 and _processor(section):
            yield Issue(
                f"{where}.dtensor_cfg.context_parallel_size",
                f"the v2 DTensor worker refuses it while {where}.tokenizer.use_processor is "
                f"true: vision-language models do not run context-parallel there",
                value=cp,
                hint="set it 1",
            )


@mirrors(
    v3="nemo-rl.v3.models.automodel.setup.setup-model-and-optimizer.lora-triton-needs-tp-one",
    v35="nemo-rl.automodel.setup.setup-model-and-optimizer.lora-triton-kernels-need-tp",
)
def lora_triton_needs_one_tensor_parallel_rank(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, setup_model_and_optimizer: LoRA's Triton kernels run only at tensor_parallel_size
    1."""
    for where, section in _v2_sections(ctx):
        dtensor = given_at(section, "dtensor_cfg")
        lora = given_at(dtensor, "lora_cfg")
        tp = _size(dtensor, "tensor_parallel_size")
        if given_at(lora, "enabled") is True and given_at(lora, "use_triton") is True and tp > 1:
            yield Issue(
                f"{where}.dtensor_cfg.lora_cfg.use_triton",
                f"the v2 DTensor worker refuses LoRA's Triton kernels at tensor_parallel_size "
                f"{tp}",
                value=True,
                hint="set it false, or tensor_parallel_size 1",
            )


@mirrors(
    v35="nemo-rl.automodel.setup.setup-model-and-optimizer.sequence-packing-stated-attention-implementation-flash"
)
def packing_needs_flash_attention_2(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, setup_model_and_optimizer: an attention implementation named in automodel_kwargs
    must be flash_attention_2 when sequences are packed (only it keeps packed documents apart)."""
    for where, section in _v2_sections(ctx):
        kwargs = given_at(section, "dtensor_cfg", "automodel_kwargs")
        if not isinstance(kwargs, dict) or "attn_implementation" not in kwargs:
            continue
        attn = kwargs["attn_implementation"]
        if _packs(section) and attn != "flash_attention_2":
            yield Issue(
                f"{where}.dtensor_cfg.automodel_kwargs.attn_implementation",
                f"the v2 DTensor worker refuses it with {where}.sequence_packing.enabled: "
                f"packed sequences need flash_attention_2, which alone reads their boundaries",
                value=attn,
                hint="flash_attention_2, or leave it out",
            )


# --- train.py and the worker's refit ----------------------------------------------------------


@mirrors(
    v35="nemo-rl.automodel.train.full-logits-post-processor.cross-tokenizer-teacher-full-logit-export"
)
def teacher_full_logits_without_sequence_packing(ctx: CheckContext) -> Iterator[Issue]:
    """train.py, FullLogitsPostProcessor.__call__: a cross-tokenizer teacher hands over its full
    logits, which the v2 worker computes only on unpacked sequences."""
    for i, teacher in enumerate(_teachers(ctx)):
        if _runs_v2(teacher) and _packs(teacher):
            yield Issue(
                f"teachers[{i}].sequence_packing.enabled",
                "the teacher's v2 DTensor worker refuses it at the first teacher forward: its "
                "full-logit export takes no packed sequences",
                value=True,
                hint="set it false for the teacher",
            )


@mirrors(
    v35="nemo-rl.automodel.worker.stream-weights-via-http.colocated-sglang-refit-needs-engines-gpu"
)
def sglang_refit_outside_grpo(ctx: CheckContext) -> Iterator[Issue]:
    """dtensor_policy_worker_v2.py, DTensorPolicyWorkerV2Impl.stream_weights_via_http: the worker
    streams weights to colocated SGLang only
    after being told the engines' GPU count, which GRPO's setup alone does (grpo.py, setup)."""
    gen = ctx.generation
    if _policy_v2(ctx) is None or gen is None or gen.backend != "sglang":
        return
    if value_of(ctx.config, "grpo") is not None:
        return
    if given_at(gen, "colocated", "enabled") is True:
        yield Issue(
            "policy.generation.backend",
            "the v2 DTensor worker fails its first refit with colocated SGLang outside GRPO: "
            "only GRPO's setup gives it the engines' GPU count it streams weights by",
            value="sglang",
            hint="generate with vllm (no other policy worker streams weights to SGLang)",
        )


# --- warnings -------------------------------------------------------------------------------


@mirrors(
    v35="nemo-rl.automodel.setup.validate-and-prepare-config.sequence-parallelism-tp-1-has-no-effect"
)
def sequence_parallel_without_tensor_parallel(ctx: CheckContext) -> Iterator[Issue]:
    """setup.py, validate_and_prepare_config: sequence parallelism at tensor_parallel_size 1 does
    nothing."""
    for where, section in _v2_sections(ctx):
        dtensor = given_at(section, "dtensor_cfg")
        if given_at(dtensor, "sequence_parallel") is True and (
            _size(dtensor, "tensor_parallel_size") == 1
        ):
            yield Issue(
                f"{where}.dtensor_cfg.sequence_parallel",
                "the v2 DTensor worker warns that it has no effect at tensor_parallel_size 1",
                value=True,
                hint="set it false, or tensor_parallel_size above 1",
            )


@mirrors(v35="nemo-rl.automodel.worker.train.emptying-cuda-cache-few-micro-batches")
def clear_cache_every_n_steps_slows_training(ctx: CheckContext) -> Iterator[Issue]:
    """dtensor_policy_worker_v2.py, DTensorPolicyWorkerV2Impl.train: emptying the CUDA cache every
    few micro-batches costs time; the worker warns at every training step."""
    dtensor = _policy_v2(ctx)
    steps = None if dtensor is None else given(dtensor.clear_cache_every_n_steps, None)
    if steps:
        yield Issue(
            "policy.dtensor_cfg.clear_cache_every_n_steps",
            f"the v2 DTensor worker empties the CUDA cache every {steps} micro-batches and "
            f"warns at each training step that this is slow when memory does not need it",
            value=steps,
            hint="null, unless training runs out of memory",
        )


@mirrors(
    v35="nemo-rl.automodel.worker.broadcast-weights-for-collective.cpu-offload-collective-refit-non-colocated"
)
def cpu_offload_with_non_colocated_refit(ctx: CheckContext) -> Iterator[Issue]:
    """dtensor_policy_worker_v2.py, DTensorPolicyWorkerV2Impl.broadcast_weights_for_collective: with
    CPU offload, the collective refit to a separate
    generation engine loads the model onto the GPUs and off again at every refit."""
    dtensor, gen = _policy_v2(ctx), ctx.generation
    if dtensor is None or gen is None or given(dtensor.cpu_offload, False) is not True:
        return
    colocated = given_at(gen, "colocated", "enabled")
    transport = value_of(gen, "refit_transport")
    if colocated is False and gen.backend != "sglang" and not is_set(transport):
        yield Issue(
            "policy.dtensor_cfg.cpu_offload",
            "the v2 DTensor worker warns at each refit that CPU offload with non-colocated "
            "generation moves the model to the GPUs and back for the broadcast, which only "
            "pays when memory is short",
            value=True,
            hint="set it false unless training runs out of memory",
        )


ERROR_CHECKS: tuple[Check, ...] = (
    packing_needs_a_text_tokenizer,
    yarn_rope_scaling_needs_megatron,
    cpu_offload_needs_several_gpus,
    context_parallel_without_sequence_parallel,
    context_parallel_needs_a_text_tokenizer,
    lora_triton_needs_one_tensor_parallel_rank,
    packing_needs_flash_attention_2,
    teacher_full_logits_without_sequence_packing,
    sglang_refit_outside_grpo,
)
WARNING_CHECKS: tuple[Check, ...] = (
    sequence_parallel_without_tensor_parallel,
    clear_cache_every_n_steps_slows_training,
    cpu_offload_with_non_colocated_refit,
)
