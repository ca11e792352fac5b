"""Refit transports: which one goes with which deployment."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# checkpoint_engine_refit_needs_separate_generation, runner_refusals,
# plugin_refit_transport_needs_its_config, refit_transport_is_known, refit_transport_needs_vllm,
# s3_sparse_refit_needs_a_bucket, sparse_refit_needs_an_unquantised_megatron_policy,
# s3_sparse_refit_needs_a_region.

from __future__ import annotations

import pytest

from recipekit.nemo_rl.rule_lines import where
from recipekit.nemo_rl.rules.conftest import COLOCATED_MEGATRON_GENERATION, Plan
from recipekit.stage import Stage

GEN = "policy.generation"
TRANSPORT = f"{GEN}.refit_transport"
ENCODER_RESET = "reset_encoder_cache_after_weight_update"
S3_BUCKET = f"{GEN}.refit_cfg={{sparse: {{storage: {{s3_bucket: b}}}}}}"


@pytest.mark.parametrize(
    ("overrides", "key", "reason"),
    [
        (
            (f"{TRANSPORT}=nixl", f"{GEN}.vllm_cfg.{ENCODER_RESET}=true"),
            f"{GEN}.vllm_cfg.{ENCODER_RESET}",
            where(
                "nemo-rl.models.generation.vllm.config.normalize-vllm-refit-config.resetting-encoder-cache-after-refit-needs-default"
            ),
        ),
        (
            (f"{TRANSPORT}=my_pkg.engine:Engine",),
            f"{GEN}.refit_cfg",
            where(
                "nemo-rl.models.generation.vllm.config.normalize-vllm-refit-config.plugin-checkpoint-engine-transport-needs-refit"
            ),
        ),
        (
            (f"{TRANSPORT}=nixl", f"{GEN}.colocated.enabled=true"),
            TRANSPORT,
            where(
                "nemo-rl.weight-sync.factory.create-weight-synchronizer.checkpoint-engine-refit-needs-generation-gpus"
            ),
        ),
        (
            (f"{TRANSPORT}=vllm_zmq_sparse", f"{GEN}.real_quant=true"),
            TRANSPORT,
            where(
                "nemo-rl.weight-sync.vllm-remote-sparse-weight-synchronizer.validate-vllm-remote-sparse-refit.remote-sparse-refit-needs-separate-generation"
            ),
        ),
        (
            (f"{TRANSPORT}=vllm_s3_sparse", f"{GEN}.refit_cfg={{sparse: {{storage: {{}}}}}}"),
            f"{GEN}.refit_cfg.sparse.storage.s3_bucket",
            where(
                "nemo-rl.weight-sync.vllm-remote-sparse-weight-synchronizer.validate-vllm-remote-sparse-refit.s3-sparse-refit-needs-bucket"
            ),
        ),
        (
            (
                f"{TRANSPORT}=vllm_s3_sparse",
                f"{GEN}.refit_cfg={{sparse: {{storage: {{s3_bucket: b, s3_region: ' '}}}}}}",
            ),
            f"{GEN}.refit_cfg.sparse.storage.s3_region",
            where(
                "nemo-rl.utils.weight-transfer-stream.stream-sparse-delta-payloads-via-s3-manifest.s3-region-set"
            ),
        ),
    ],
)
def test_a_transport_the_deployment_cannot_use_is_refused(
    gym_examples: Stage, refused: Plan, overrides: tuple[str, ...], key: str, reason: str
) -> None:
    found = [e for e in refused(gym_examples, *overrides) if e.startswith(key)]
    assert any(reason in e for e in found), refused(gym_examples, *overrides)


@pytest.mark.parametrize(
    "overrides",
    [
        (f"{TRANSPORT}=nixl",),
        (f"{TRANSPORT}=vllm_zmq_sparse",),
        (f"{TRANSPORT}=vllm_s3_sparse", S3_BUCKET),
        (f"{TRANSPORT}=nccl_reshard", f"{GEN}.vllm_cfg.{ENCODER_RESET}=true"),
    ],
)
def test_a_transport_the_deployment_can_use_plans(
    gym_examples: Stage, errors: Plan, overrides: tuple[str, ...]
) -> None:
    assert not [e for e in errors(gym_examples, *overrides) if e.startswith(f"{GEN}.")]


def test_an_unknown_transport_is_refused_with_the_nearest(
    gym_examples: Stage, refused: Plan
) -> None:
    found = [e for e in refused(gym_examples, f"{TRANSPORT}=nixll") if e.startswith(TRANSPORT)]
    assert (
        found
        and where(
            "nemo-rl.models.generation.vllm.config.normalize-vllm-refit-config.vllm-refit-transport-named-one-module"
        )
        in found[0]
    )
    assert "did you mean 'nixl'?" in found[0]


def test_a_transport_needs_vllm_generation(gym_examples: Stage, refused: Plan) -> None:
    errors = refused(gym_examples, *COLOCATED_MEGATRON_GENERATION, f"{TRANSPORT}=nixl")
    found = [e for e in errors if e.startswith(TRANSPORT)]
    assert (
        found
        and where("nemo-rl.algorithms.grpo.setup.non-default-refit-transport-needs-vllm")
        in found[0]
    ), errors
