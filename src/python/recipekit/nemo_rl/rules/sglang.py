"""The SGLang generation back-end (``policy.generation.backend: sglang``):
``nemo_rl/models/generation/sglang/`` (the generation, its workers, the router), at
super-v3.5-posttraining. Catalogue: ``rule_catalogue/nemo-rl.sglang.toml``.

NeMo-RL reads SGLang's settings from ``policy.generation.sglang_cfg``, a free dict its
``SGLangConfig`` declares; every schema whose upstream declares it has the key.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.keys import has_key, value_of
from recipekit.nemo_rl.rules.citation import cite_line, mirrors

SGLANG = "policy.generation.sglang_cfg"
SERVER = f"{SGLANG}.sglang_server_config"
ROUTER = f"{SGLANG}.sglang_router_config"
GRPO_PY = "nemo_rl/algorithms/grpo.py"
V2_WORKER_PY = "nemo_rl/models/policy/workers/dtensor_policy_worker_v2.py"
# Lines no rule site states (no assert: a KeyError, a missing method), so written here by hand,
# once (an upgrade must check them), @ super-v3.5-posttraining: where GRPO's setup indexes
# policy.generation.sglang_cfg and where it hands the policy's workers SGLang's engine size, and
# the one worker method that takes it.
READS_SGLANG_CFG = 1432
HANDS_ENGINE_SIZE = 1442
V2_TAKES_ENGINE_SIZE = 397


def _sglang_cfg(ctx: CheckContext) -> dict[str, Any] | None:
    """``policy.generation.sglang_cfg`` when generation runs on SGLang and the schema has it."""
    gen = ctx.generation
    if gen is None or gen.backend != "sglang":
        return None
    cfg = value_of(gen, "sglang_cfg")
    return cfg if isinstance(cfg, dict) else None


def _section(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    """A nested section of sglang_cfg; an absent or null one reads as empty, as NeMo-RL's
    ``.get(name) or {}`` does."""
    section = cfg.get(name)
    return section if isinstance(section, dict) else {}


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@mirrors(v35="nemo-rl.sglang.worker.engine-tensor-parallel-size-gpu-count")
def tp_size_matches_gpus_per_engine(ctx: CheckContext) -> Iterator[Issue]:
    """sglang_worker.py, SGLangGenerationWorker._compute_server_args (super-v3.5): each SGLang
    engine spans num_gpus_per_engine GPUs, split into pp_size pipeline stages of tp_size GPUs, and
    the worker asserts that split when it computes its server arguments."""
    cfg = _sglang_cfg(ctx)
    if cfg is None:
        return
    tp, pp = _count(cfg.get("tp_size")), _count(cfg.get("pp_size"))
    per_engine = _count(_section(cfg, "sglang_server_config").get("num_gpus_per_engine"))
    if tp is None or pp is None or per_engine is None or pp < 1:
        return
    expected = per_engine // pp
    if tp != expected:
        yield Issue(
            f"{SGLANG}.tp_size",
            "NeMo-RL's SGLang worker refuses it with sglang_server_config.num_gpus_per_engine "
            f"= {per_engine} and pp_size = {pp}: an engine's tensor-"
            f"parallel size must be its GPUs divided by its pipeline stages, {expected} here",
            value=tp,
            hint=f"set tp_size to {expected}, or {SERVER}.num_gpus_per_engine to "
            f"tp_size * pp_size ({tp * pp})",
        )


@mirrors(v35="nemo-rl.sglang.router.external-router-needs-both-host-port")
def external_router_needs_its_address(ctx: CheckContext) -> Iterator[Issue]:
    """sglang_router.py, _start_router (super-v3.5): with use_external_router, NeMo-RL starts no
    router of its own and sends every request to sglang_router_ip:sglang_router_port, so both must
    be given."""
    cfg = _sglang_cfg(ctx)
    if cfg is None:
        return
    router = _section(cfg, "sglang_router_config")
    if not router.get("use_external_router"):
        return
    missing = [k for k in ("sglang_router_ip", "sglang_router_port") if router.get(k) is None]
    if missing:
        yield Issue(
            f"{ROUTER}.use_external_router",
            "NeMo-RL's SGLang setup refuses an external router without its address: "
            f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set",
            value=router.get("use_external_router"),
            hint=f"set {ROUTER}.sglang_router_ip and .sglang_router_port, or set "
            "use_external_router false to let NeMo-RL start the router",
        )


def sglang_needs_its_settings(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, setup (super-v3.5): GRPO's setup indexes policy.generation.sglang_cfg when it
    builds SGLang generation (a KeyError without it, no assert): a recipe of the Super 3.5
    schema, which has no such key, cannot run on SGLang."""
    gen = ctx.generation
    if gen is None or gen.backend != "sglang" or isinstance(value_of(gen, "sglang_cfg"), dict):
        return
    declared = has_key(gen, "sglang_cfg")
    yield Issue(
        "policy.generation.backend",
        "GRPO's setup reads SGLang's settings from policy.generation.sglang_cfg and fails "
        f"without them ({cite_line(ctx, GRPO_PY, v35=READS_SGLANG_CFG)}); "
        + ("it is not set" if declared else "this config's schema has no such key"),
        value="sglang",
        hint="vllm" if not declared else f"set {SGLANG}",
    )


def sglang_needs_the_v2_dtensor_worker(ctx: CheckContext) -> Iterator[Issue]:
    """grpo.py, setup (super-v3.5): with SGLang, GRPO's setup hands every policy worker the
    engines' GPU count (lm_policy.py, Policy.set_rollout_num_gpus_per_engine), a method only the
    v2 DTensor worker defines (dtensor_policy_worker_v2.py,
    DTensorPolicyWorkerV2Impl.set_rollout_num_gpus_per_engine); the Megatron and first DTensor
    workers have no such method, so the setup fails before the first step (no assert states it)."""
    gen = ctx.generation
    if gen is None or gen.backend != "sglang":
        return
    dtensor = ctx.config.policy.dtensor_cfg
    if ctx.megatron is None and dtensor.enabled is True and dtensor.v2 is True:
        return
    worker = "Megatron" if ctx.megatron is not None else "first DTensor"
    yield Issue(
        "policy.generation.backend",
        f"GRPO's setup gives the policy's workers SGLang's engine size through a method only "
        f"the v2 DTensor worker has; the {worker} worker fails there "
        f"({cite_line(ctx, GRPO_PY, v35=HANDS_ENGINE_SIZE)}, "
        f"{V2_WORKER_PY}:{V2_TAKES_ENGINE_SIZE})",
        value="sglang",
        hint="vllm, or train on DTensor with policy.dtensor_cfg._v2: true",
    )


@mirrors(v3="nemo-rl.v3.models.generation.sglang.sglang-generation.init.gpus-per-server-set")
def sglang_names_its_gpus_per_server(ctx: CheckContext) -> Iterator[Issue]:
    """sglang_generation.py, SGLangGeneration.__init__ (super-v3): the generation splits its GPUs
    into servers of sglang_cfg.gpus_per_server, and refuses to start without it (a missing
    sglang_cfg is a KeyError there first)."""
    gen = ctx.generation
    if gen is None or gen.backend != "sglang":
        return
    cfg = value_of(gen, "sglang_cfg")
    if not isinstance(cfg, dict) or cfg.get("gpus_per_server") is None:
        yield Issue(
            f"{SGLANG}.gpus_per_server",
            "NeMo-RL's SGLang generation refuses to start without it: its GPUs are split into "
            "servers of this many",
            hint="the GPUs one SGLang server spans (its tensor-parallel size)",
        )


SUPER_V3_ERROR_CHECKS = (sglang_names_its_gpus_per_server,)
ERROR_CHECKS = (
    sglang_needs_its_settings,
    sglang_needs_the_v2_dtensor_worker,
    tp_size_matches_gpus_per_engine,
    external_router_needs_its_address,
)
WARNING_CHECKS: tuple[()] = ()
