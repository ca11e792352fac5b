"""Rules on how trained weights reach vLLM (refit): which transport goes with which deployment.

``policy.generation.refit_transport`` null is NeMo-RL's collective/CUDA-IPC refit; the others
are ``nccl_reshard``, the remote sparse transports ``vllm_s3_sparse`` / ``vllm_zmq_sparse``, and
the checkpoint-engine ones: ``nixl`` or a ``module:ClassName`` plugin
(nemo_rl/models/generation/vllm/config.py, normalize_vllm_refit_config @ super-v3.5-posttraining
names them so).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue, did_you_mean
from recipekit.nemo_rl import SUPER35_TYPES
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.citation import mirrors
from recipekit.upstream.allowed import allowed

GEN = "policy.generation"
TRANSPORT = f"{GEN}.refit_transport"
SPARSE_TRANSPORTS = allowed("nemo_rl.sparse_refit_transport", SUPER35_TYPES).values
# The named transports (vllm/config.py's VllmRefitSelector); any other needs a module:ClassName.
NAMED_TRANSPORTS = allowed("nemo_rl.refit_transport", SUPER35_TYPES).values


def _vllm_transport(ctx: CheckContext) -> str | None:
    """The refit transport a vLLM-backed stage names (None: the default refit)."""
    gen = ctx.generation
    if gen is None or gen.backend != "vllm":
        return None
    transport = value_of(gen, "refit_transport")
    return transport if isinstance(transport, str) else None


def _refit_cfg(ctx: CheckContext) -> dict[str, Any]:
    refit_cfg = value_of(ctx.generation, "refit_cfg")
    return refit_cfg if isinstance(refit_cfg, dict) else {}


def _colocated(ctx: CheckContext) -> bool:
    colocated = value_of(ctx.generation, "colocated")
    return value_of(colocated, "enabled") is True


@mirrors(v35="nemo-rl.algorithms.grpo.setup.non-default-refit-transport-needs-vllm")
def refit_transport_needs_vllm(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, setup (super-v3.5): only vLLM generation takes a refit transport other than
    NeMo-RL's default."""
    gen = ctx.generation
    transport = value_of(gen, "refit_transport")
    if gen is not None and isinstance(transport, str) and gen.backend != "vllm":
        yield Issue(
            TRANSPORT,
            f"NeMo-RL's GRPO setup refuses it with policy.generation.backend {gen.backend!r}: "
            f"non-default refit transports are supported for vLLM only",
            value=transport,
            hint="set it null",
        )


@mirrors(
    v35="nemo-rl.models.generation.vllm.config.normalize-vllm-refit-config.vllm-refit-transport-named-one-module"
)
def refit_transport_is_known(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config.py, normalize_vllm_refit_config (super-v3.5): a transport is one NeMo-RL names or
    a checkpoint-engine plugin's ``module:ClassName``."""
    transport = _vllm_transport(ctx)
    if transport is None or transport in NAMED_TRANSPORTS or ":" in transport:
        return
    close = did_you_mean(transport, NAMED_TRANSPORTS)
    yield Issue(
        TRANSPORT,
        "NeMo-RL refuses an unknown vLLM refit transport: it takes null, "
        f"{', '.join(NAMED_TRANSPORTS)} or a 'module:ClassName' checkpoint-engine path",
        value=transport,
        hint=close if close.startswith("did you mean") else "",
    )


@mirrors(
    v35="nemo-rl.models.generation.vllm.config.normalize-vllm-refit-config.plugin-checkpoint-engine-transport-needs-refit"
)
def plugin_refit_transport_needs_its_config(ctx: CheckContext) -> Iterator[Issue]:
    """vllm/config.py, normalize_vllm_refit_config (super-v3.5): a ``module:ClassName``
    checkpoint-engine transport reads its settings from refit_cfg under the same name."""
    transport = _vllm_transport(ctx)
    if transport is not None and ":" in transport and _refit_cfg(ctx).get(transport) is None:
        yield Issue(
            f"{GEN}.refit_cfg",
            f"NeMo-RL refuses refit_transport {transport!r} without refit_cfg[{transport!r}]",
        )


@mirrors(
    v35="nemo-rl.weight-sync.factory.create-weight-synchronizer.checkpoint-engine-refit-needs-generation-gpus"
)
def checkpoint_engine_refit_needs_separate_generation(ctx: CheckContext) -> Iterator[Issue]:
    """weight_sync/factory.py, create_weight_synchronizer (super-v3.5): checkpoint-engine refit
    (nixl or a plugin) only sends weights to generation GPUs of their own."""
    transport = _vllm_transport(ctx)
    engine = transport is not None and (transport == "nixl" or ":" in transport)
    if engine and _colocated(ctx):
        yield Issue(
            TRANSPORT,
            "NeMo-RL refuses checkpoint-engine refit with policy.generation.colocated.enabled",
            value=transport,
            hint="set colocated.enabled false, or refit_transport null",
        )


@mirrors(
    v35="nemo-rl.weight-sync.vllm-remote-sparse-weight-synchronizer.validate-vllm-remote-sparse-refit.remote-sparse-refit-needs-separate-generation"
)
def sparse_refit_needs_an_unquantised_megatron_policy(ctx: CheckContext) -> Iterator[Issue]:
    """vllm_remote_sparse_weight_synchronizer.py, validate_vllm_remote_sparse_refit (super-v3.5):
    the remote sparse refits need separate generation GPUs, a Megatron policy and unquantised
    BF16/FP16 vLLM."""
    transport, gen, vllm = _vllm_transport(ctx), ctx.generation, ctx.vllm
    if transport not in SPARSE_TRANSPORTS or gen is None or vllm is None:
        return
    reasons = [
        reason
        for reason, applies in (
            ("generation is colocated", _colocated(ctx)),
            ("policy.megatron_cfg is not enabled", ctx.megatron is None),
            ("vllm_cfg.precision is fp8", vllm.precision == "fp8"),
            ("vllm_cfg.kv_cache_dtype is FP8", vllm.kv_cache_dtype.startswith("fp8")),
            ("quant_cfg is set", isinstance(value_of(gen, "quant_cfg"), str)),
            ("real_quant is on", value_of(gen, "real_quant") is True),
        )
        if applies
    ]
    if reasons:
        yield Issue(
            TRANSPORT,
            f"NeMo-RL refuses {transport} here: {'; '.join(reasons)}",
            value=transport,
        )


@mirrors(
    v35="nemo-rl.weight-sync.vllm-remote-sparse-weight-synchronizer.validate-vllm-remote-sparse-refit.s3-sparse-refit-needs-bucket"
)
def s3_sparse_refit_needs_a_bucket(ctx: CheckContext) -> Iterator[Issue]:
    """vllm_remote_sparse_weight_synchronizer.py, validate_vllm_remote_sparse_refit (super-v3.5):
    vllm_s3_sparse stages the weights in an S3 bucket, which refit_cfg.sparse.storage.s3_bucket
    names."""
    if _vllm_transport(ctx) != "vllm_s3_sparse":
        return
    sparse = _refit_cfg(ctx).get("sparse")
    storage = sparse.get("storage") if isinstance(sparse, dict) else None
    bucket = storage.get("s3_bucket") if isinstance(storage, dict) else None
    if not isinstance(bucket, str) or not bucket.strip():
        yield Issue(
            f"{GEN}.refit_cfg.sparse.storage.s3_bucket",
            "NeMo-RL refuses vllm_s3_sparse refit without it",
            hint="name the bucket",
        )


@mirrors(
    v35="nemo-rl.utils.weight-transfer-stream.stream-sparse-delta-payloads-via-s3-manifest.s3-region-set"
)
def s3_sparse_refit_needs_a_region(ctx: CheckContext) -> Iterator[Issue]:
    """weight_transfer_stream.py, stream_sparse_delta_payloads_via_s3_manifest (super-v3.5): the
    first refit refuses an empty refit_cfg.sparse.storage.s3_region (its default is a region;
    a blank one set by hand is not)."""
    if _vllm_transport(ctx) != "vllm_s3_sparse":
        return
    sparse = _refit_cfg(ctx).get("sparse")
    storage = sparse.get("storage") if isinstance(sparse, dict) else None
    region = storage.get("s3_region") if isinstance(storage, dict) else None
    if isinstance(region, str) and not region.strip():
        yield Issue(
            f"{GEN}.refit_cfg.sparse.storage.s3_region",
            "NeMo-RL's S3 refit refuses an empty region at the first weight transfer",
            value=region,
            hint="name the bucket's region, or leave it to its default",
        )


ERROR_CHECKS = (
    refit_transport_needs_vllm,
    refit_transport_is_known,
    plugin_refit_transport_needs_its_config,
    checkpoint_engine_refit_needs_separate_generation,
    sparse_refit_needs_an_unquantised_megatron_policy,
    s3_sparse_refit_needs_a_bucket,
    s3_sparse_refit_needs_a_region,
)
