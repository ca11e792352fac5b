"""Rules on quantised rollouts: how a real-quantised policy reaches vLLM."""

from __future__ import annotations

from collections.abc import Iterator

from recipekit.errors import Issue
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.keys import value_of
from recipekit.nemo_rl.rules.citation import mirrors

GEN = "policy.generation"


def _real_quant(ctx: CheckContext) -> bool:
    gen = ctx.generation
    return gen is not None and gen.backend == "vllm" and value_of(gen, "real_quant") is True


@mirrors(
    v35="nemo-rl.models.generation.--init--.configure-generation-config.real-quantisation-states-whether-export-goes"
)
def real_quant_names_its_export_offload(ctx: CheckContext) -> Iterator[Issue]:
    """models/generation/__init__.py, configure_generation_config (super-v3.5): real quantisation
    needs real_quant_export_cpu_offload stated, true or false; it has no default."""
    offload = value_of(ctx.generation, "real_quant_export_cpu_offload")
    if _real_quant(ctx) and not isinstance(offload, bool):
        yield Issue(
            f"{GEN}.real_quant_export_cpu_offload",
            "NeMo-RL refuses real_quant unless this is a boolean",
            hint="set it true or false",
        )


@mirrors(
    v35="nemo-rl.models.generation.--init--.configure-generation-config.real-quantised-export-without-cpu-offload"
)
def real_quant_in_gpu_export_needs_colocated_ipc(ctx: CheckContext) -> Iterator[Issue]:
    """models/generation/__init__.py, configure_generation_config (super-v3.5): exporting the
    quantised weights without a CPU copy works only over colocated CUDA-IPC refit, with no other
    refit transport."""
    gen = ctx.generation
    if gen is None or not _real_quant(ctx):
        return
    if value_of(gen, "real_quant_export_cpu_offload") is not False:
        return
    colocated = value_of(value_of(gen, "colocated"), "enabled") is True
    transport = value_of(gen, "refit_transport")
    if not colocated or isinstance(transport, str):
        yield Issue(
            f"{GEN}.real_quant_export_cpu_offload",
            "NeMo-RL refuses false unless generation is colocated and refit_transport is null "
            "(CUDA-IPC refit)",
            value=False,
            hint="set it true, or colocate generation with no refit_transport",
        )


ERROR_CHECKS = (real_quant_names_its_export_offload, real_quant_in_gpu_export_needs_colocated_ipc)
