"""Megatron-Core's own verdicts on recipekit's Megatron-backed stages, recorded as a fixture.

Megatron-Core's config classes check their fields in ``__post_init__``, which runs only with
PyTorch. This tool has two halves, so that the half that needs PyTorch carries nothing of
recipekit:

- ``cases`` (here, on the CPU, with recipekit): every Megatron-backed stage in ``recipes/``
  (found the way ``recipekit.review.discover`` finds stages), and mutations of their layouts and
  options (``--set`` overrides: TP/PP/CP/EP/ETP/SP, recompute, MoE, optimizer), each planned up
  to its rendered config and turned into the constructor arguments the framework passes
  (``recipekit.megatron_core.kwargs``). Writes the fixture with no verdicts.
- ``record`` (where ``torch`` and ``megatron-core`` import: no GPU is needed, PyPI's torch on a
  CPU does, with the unzipped wheel on PYTHONPATH): instantiates TransformerConfig,
  OptimizerConfig, DistributedDataParallelConfig and, for NeMo-RL's GRPO stages, the
  OptimizerParamScheduler for each case and writes each one's verdict: ok, or the error (type,
  message, the upstream file and line that raised), and the warnings (message, file and line of
  the call).

Re-recording for the next Megatron-Core version (change ``VERSION``, and the wheel carried):

    python tools/record_megatron_verdicts.py cases
    # then, on the device machine (torch there, the wheel installed from .whl/):
    python3 tools/record_megatron_verdicts.py record --out $OUT/megatron-core-<version>.json

and copy the file back over ``FIXTURE``. The stand-ins for Transformer Engine (below) answer
Megatron-Core's TE probes the way the NeMo container's TE does; the checks that depend on TE's
presence or version are catalogued as out of reach before start-up.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

VERSION = "0.19.2"
TRANSFORMER_ENGINE_STAND_IN_VERSION = "2.8.0"
# The selective-recompute module lists both frameworks' cases try (one not a module at all).
SELECTIVE_MODULES = (
    "[core_attn]",
    "[moe_act]",
    "[mla_up_proj]",
    "[bogus]",
    "[moe, shared_experts]",
)
# Megatron-Core fields no stage key names, broken and kept one way each (for megatron_core.guards).
GUARDED_FIELDS = (
    ("group-topk-alone", (("moe_router_group_topk", "2"),)),
    ("group-topk-with-groups", (("moe_router_group_topk", "2"), ("moe_router_num_groups", "4"))),
    ("defer-wgrad", (("defer_embedding_wgrad_compute", "true"),)),
    ("fine-grained-offloading", (("fine_grained_activation_offloading", "true"),)),
    ("capacity-factor", (("moe_expert_capacity_factor", "1.0"),)),
    ("fp16-and-bf16", (("fp16", "true"),)),
    # Guards on a value __post_init__ computes first, and its warnings (the replay's).
    ("mup-base-default", (("use_mup", "true"),)),
    ("mup-base-0", (("use_mup", "true"), ("mup_base_hidden_size", "0"))),
    ("no-rope-freq-7", (("no_rope_freq", "7"),)),
    ("no-rope-freq-4", (("no_rope_freq", "4"),)),
    ("pad-to-capacity-alone", (("moe_pad_expert_input_to_capacity", "true"),)),
    ("rank-capacity-factor", (("moe_expert_rank_capacity_factor", "1.5"),)),
    ("ncclep-without-flex", (("moe_flex_dispatcher_backend", "ncclep"),)),
    ("router-padding-for-quantization", (("moe_router_padding_for_quantization", "true"),)),
    ("moe-ffn-from-ffn", (("moe_ffn_hidden_size", "null"),)),
    (
        "cross-entropy-te",
        (("cross_entropy_loss_fusion", "true"), ("cross_entropy_fusion_impl", "te")),
    ),
)
FIXTURE = Path(f"src/python/recipekit/megatron_core/verdicts/megatron-core-{VERSION}.json")
CLASSES = {
    "model": "megatron.core.transformer.transformer_config:TransformerConfig",
    "optimizer": "megatron.core.optimizer.optimizer_config:OptimizerConfig",
    "ddp": "megatron.core.distributed.distributed_data_parallel_config:"
    "DistributedDataParallelConfig",
    # Handed a one-parameter SGD optimizer too (verdict_of): it reads only the param groups.
    "scheduler": "megatron.core.optimizer_param_scheduler:OptimizerParamScheduler",
}


# --- cases (recipekit, no torch) ----------------------------------------------------------------


def mutations(framework: str, config: Any) -> Iterator[tuple[str, tuple[str, ...]]]:
    """``(name, overrides)``: the stage's own config first, then one change (or one pair)
    at a time, each a ``--set`` a user could type."""
    yield "as-recipe", ()
    p = "policy.megatron_cfg." if framework == "nemo-rl" else "model."
    for tp in (1, 2, 4, 8):
        for sp in ("true", "false"):
            yield (
                f"tp{tp}-sp{sp}",
                (f"{p}tensor_model_parallel_size={tp}", f"{p}sequence_parallel={sp}"),
            )
    for pp in (1, 2, 3, 4, 8):
        yield (
            f"pp{pp}-even",
            (
                f"{p}pipeline_model_parallel_size={pp}",
                f"{p}num_layers_in_first_pipeline_stage=null",
                f"{p}num_layers_in_last_pipeline_stage=null",
            ),
        )
    for pp, first, last in (
        (4, 20, 20),
        (4, 21, 22),
        (2, 40, 48),
        (2, 44, 44),
        (3, 30, 29),
        (4, 88, 1),
    ):
        yield (
            f"pp{pp}-{first}-{last}",
            (
                f"{p}pipeline_model_parallel_size={pp}",
                f"{p}num_layers_in_first_pipeline_stage={first}",
                f"{p}num_layers_in_last_pipeline_stage={last}",
            ),
        )
    for cp in (1, 2, 4):
        yield f"cp{cp}", (f"{p}context_parallel_size={cp}",)
    for ep in (1, 3, 8, 16, 64):
        yield f"ep{ep}", (f"{p}expert_model_parallel_size={ep}",)
    for ep, tp, sp in ((8, 2, "false"), (8, 2, "true"), (8, 1, "false")):
        yield (
            f"ep{ep}-tp{tp}-sp{sp}",
            (
                f"{p}expert_model_parallel_size={ep}",
                f"{p}tensor_model_parallel_size={tp}",
                f"{p}sequence_parallel={sp}",
            ),
        )
    for etp in (1, 2):
        yield f"etp{etp}", (f"{p}expert_tensor_parallel_size={etp}",)
    for dispatcher in ("alltoall", "allgather", "flex"):
        yield f"dispatcher-{dispatcher}", (f"{p}moe_token_dispatcher_type={dispatcher}",)
    if framework == "nemo-rl":
        for dispatcher in ("alltoall", "allgather", "flex"):
            for deepep in ("true", "false"):
                yield (
                    f"deepep{deepep}-{dispatcher}",
                    (
                        f"{p}moe_enable_deepep={deepep}",
                        f"{p}moe_token_dispatcher_type={dispatcher}",
                    ),
                )
            yield (
                f"shared-overlap-{dispatcher}",
                (
                    f"{p}moe_shared_expert_overlap=true",
                    f"{p}moe_token_dispatcher_type={dispatcher}",
                ),
            )
        for dtype in ("null", "fp32", "fp64"):
            yield f"router-dtype-{dtype}", (f"{p}moe_router_dtype={dtype}",)
        for balancing in ("aux_loss", "seq_aux_loss", "none"):
            yield f"balancing-{balancing}", (f"{p}moe_router_load_balancing_type={balancing}",)
        for flag in ("true", "false"):
            yield f"checkpointing-{flag}", (f"{p}activation_checkpointing={flag}",)
            yield f"bias-act-fusion-{flag}", (f"{p}bias_activation_fusion={flag}",)
            yield f"expert-bias-{flag}", (f"{p}moe_router_enable_expert_bias={flag}",)
        o = f"{p}optimizer."
        yield "bf16-and-fp16", (f"{o}bf16=true", f"{o}fp16=true")
        yield "precision-aware-sgd", (f"{o}use_precision_aware_optimizer=true", f"{o}optimizer=sgd")
        yield (
            "precision-aware-no-distopt",
            (
                f"{o}use_precision_aware_optimizer=true",
                f"{o}use_distributed_optimizer=false",
            ),
        )
        yield (
            "precision-aware-offload",
            (
                f"{o}use_precision_aware_optimizer=true",
                f"{o}optimizer_cpu_offload=true",
            ),
        )
        yield "sgd", (f"{o}optimizer=sgd",)
        # The learning-rate schedule (OptimizerParamScheduler), broken and kept one way each.
        sched = f"{p}scheduler."
        yield "min-lr-above-lr", (f"{o}lr=1e-6", f"{o}min_lr=1e-5")
        yield "min-lr-equals-lr", (f"{o}lr=1e-5", f"{o}min_lr=1e-5")
        yield "warmup-init-above-lr", (f"{o}lr=1e-6", f"{sched}lr_warmup_init=1e-5")
        yield "warmup-past-the-run", (f"{sched}lr_warmup_iters=100000",)
        yield "warmup-past-the-decay", (f"{sched}lr_warmup_iters=20", f"{sched}lr_decay_iters=10")
        for style in ("cosine", "WSD"):
            yield f"lr-decay-{style}", (f"{sched}lr_decay_style={style}",)
        for style, start, end in (
            ("linear", "0.1", "0.01"),
            ("linear", "0.0", "0.1"),
            ("constant", "0.0", "0.1"),
            ("constant", "0.1", "0.1"),
        ):
            yield (
                f"weight-decay-{style}-{start}-{end}",
                (
                    f"{sched}weight_decay_incr_style={style}",
                    f"{sched}start_weight_decay={start}",
                    f"{sched}end_weight_decay={end}",
                ),
            )
        for layers in (0, 1, 2):
            yield f"mtp{layers}", (f"{p}mtp_num_layers={layers}",)
        if hasattr(config.policy.megatron_cfg, "recompute_modules"):
            for modules in SELECTIVE_MODULES:
                yield (
                    f"selective-{modules}",
                    (
                        f"{p}activation_checkpointing=true",
                        f"{p}recompute_granularity=selective",
                        f"{p}recompute_modules={modules}",
                    ),
                )
            yield (
                "full-recompute",
                (f"{p}activation_checkpointing=true", f"{p}recompute_granularity=full"),
            )
    else:
        for granularity in ("full", "selective", "null"):
            for method in ("uniform", "block", "null"):
                for count in ("1", "null", "200"):
                    yield (
                        f"recompute-{granularity}-{method}-{count}",
                        (
                            f"{p}recompute_granularity={granularity}",
                            f"{p}recompute_method={method}",
                            f"{p}recompute_num_layers={count}",
                        ),
                    )
        for modules in SELECTIVE_MODULES:
            yield (
                f"selective-{modules}",
                (
                    f"{p}recompute_granularity=selective",
                    f"{p}recompute_method=null",
                    f"{p}recompute_num_layers=null",
                    f"{p}recompute_modules={modules}",
                ),
            )
        # Transformer Engine's names, as transformer_config.py's docstring lists them.
        for comm in ("p2p", "a2a", "all_gather", "a2a+p2p"):
            yield f"cp2-{comm}", (f"{p}context_parallel_size=2", f"{p}cp_comm_type={comm}")
        # The DDP config's own guards (megatron_core.guards reads them from the wheel).
        yield "ddp-buckets-0", ("ddp.num_buckets=0",)
        yield "ddp-buckets-4", ("ddp.num_buckets=4",)
        yield "ddp-buckets-and-size", ("ddp.num_buckets=4", "ddp.bucket_size=1000000")
    # Fields no stage key names, set the way each framework lets a user set them (NeMo-RL's
    # model_overrides, Megatron-Bridge's model.*): the guards of megatron_core.guards.
    fields = f"{p}model_overrides=" if framework == "nemo-rl" else None
    for name, values in GUARDED_FIELDS:
        if fields is not None:
            body = ", ".join(f"{k}: {v}" for k, v in values)
            yield f"fields-{name}", (f"{fields}{{{body}}}",)
        else:
            yield f"fields-{name}", tuple(f"{p}{k}={v}" for k, v in values)


def build_cases(root: Path) -> tuple[list[dict[str, Any]], int]:
    """Every case that recipekit's schema accepts, and how many mutations it refused."""
    from recipekit.errors import RecipeError
    from recipekit.keypaths import parse_assignment, replace_at
    from recipekit.megatron_core.kwargs import framework_kwargs
    from recipekit.plan import resolve_run_inputs
    from recipekit.review.discover import discover_stages

    cases: list[dict[str, Any]] = []
    seen: set[str] = set()
    refused = 0
    for ref in discover_stages(root):
        stage = ref.stage
        framework = stage.framework.name
        if framework not in ("nemo-rl", "megatron-bridge") or not runs_megatron(stage.config):
            continue
        for name, overrides in mutations(framework, stage.config):
            try:
                rendered = render(
                    stage, overrides, parse_assignment, replace_at, resolve_run_inputs
                )
            except RecipeError:
                refused += 1
                continue
            kwargs = framework_kwargs(framework, rendered, stage.model)
            # Stages that share a config (the teachers) give the same arguments: one case.
            same = json.dumps([framework, kwargs], sort_keys=True)
            if same in seen:
                continue
            seen.add(same)
            cases.append(
                {
                    "id": f"{ref.target}/{name}",
                    "stage": ref.target,
                    "framework": framework,
                    "overrides": list(overrides),
                    "kwargs": kwargs,
                }
            )
    return cases, refused


def runs_megatron(config: Any) -> bool:
    policy = getattr(config, "policy", None)
    if policy is None:
        return True  # a Megatron-Bridge config
    return getattr(getattr(policy, "megatron_cfg", None), "enabled", False) is True


def render(stage: Any, overrides: tuple[str, ...], parse: Any, replace: Any, resolve: Any) -> Any:
    """The stage's rendered config with ``overrides`` applied, as ``plan`` makes it (no checks:
    a case the plan would refuse still has a framework verdict)."""
    import attrs

    config = stage.config
    for assignment in overrides:
        path, value = parse(config, assignment)
        config = replace(config, path, value)
    config, _ = resolve(attrs.evolve(stage, config=config))
    config, _ = stage.framework.derive(config, stage.hardware)
    return stage.framework.render(config)


# --- record (torch and megatron-core, nothing of recipekit) -------------------------------------


def _stand_in_for_transformer_engine() -> None:
    """Answer Megatron-Core's Transformer Engine probes as the NeMo container does: TE present
    and recent, its fused RoPE and permutation kernels importable. Without it every case of a
    model whose provider sets moe_permute_fusion would fail on the missing kernels, which the
    container has."""
    import megatron.core.distributed.distributed_data_parallel_config  # noqa: F401
    import megatron.core.models.common.embeddings.rope_utils as rope_utils
    import megatron.core.optimizer.optimizer_config  # noqa: F401
    import megatron.core.transformer.moe.moe_utils as moe_utils
    import megatron.core.transformer.transformer_config as transformer_config

    def present(*_: Any, **__: Any) -> bool:
        return True

    transformer_config.is_te_min_version = present
    stand_in = object()
    for name in ("fused_apply_rotary_pos_emb", "fused_apply_rotary_pos_emb_thd"):
        setattr(rope_utils, name, stand_in)
    for name in (
        "fused_permute",
        "fused_permute_with_probs",
        "fused_sort_chunks_by_index",
        "fused_sort_chunks_by_index_with_probs",
        "fused_unpermute",
    ):
        setattr(moe_utils, name, stand_in)
    # OptimizerConfig imports TE's FusedAdam for the precision-aware optimizer and reads its
    # parameters; the container's TE has them. Only that import sees this module: every
    # Megatron-Core module that probes TE at import time is already imported above.
    import types

    def fused_adam(
        params: Any,
        master_weight_dtype: Any = None,
        exp_avg_dtype: Any = None,
        exp_avg_sq_dtype: Any = None,
        use_decoupled_grad: bool = False,
    ) -> None:
        raise NotImplementedError("a stand-in: only its signature is read")

    optimizers = types.ModuleType("transformer_engine.pytorch.optimizers")
    optimizers.FusedAdam = fused_adam  # type: ignore[attr-defined]
    for name in ("transformer_engine", "transformer_engine.pytorch"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["transformer_engine.pytorch.optimizers"] = optimizers
    # utils.get_te_version reads __version__ (or the package metadata, which a stand-in has
    # none of): the TE of the NeMo 25.x containers the stages run in.
    sys.modules["transformer_engine"].__version__ = TRANSFORMER_ENGINE_STAND_IN_VERSION  # type: ignore[attr-defined]


def _statement_line(filename: str, lineno: int) -> int:
    """The first line of the assert or raise that spans ``lineno``: a traceback names the line
    of a failing assert's condition, the catalogue the line of the statement."""
    import ast
    import functools

    @functools.cache
    def statements(path: str) -> list[tuple[int, int]]:
        tree = ast.parse(Path(path).read_text())
        return [
            (n.lineno, n.end_lineno or n.lineno)
            for n in ast.walk(tree)
            if isinstance(n, ast.Assert | ast.Raise)
        ]

    spans = [s for s in statements(filename) if s[0] <= lineno <= s[1]]
    return max(spans)[0] if spans else lineno


def _relative(filename: str) -> str:
    marker = "/megatron/core/"
    return "megatron/core/" + filename.split(marker, 1)[1] if marker in filename else filename


def _torch_values(kwargs: dict[str, Any]) -> dict[str, Any]:
    import torch
    import torch.nn.functional as F  # noqa: N812
    from megatron.core.activations import squared_relu

    activations = {"squared_relu": squared_relu, "silu": F.silu, "gelu": F.gelu}
    out = dict(kwargs)
    for key in ("params_dtype", "pipeline_dtype", "main_grads_dtype", "main_params_dtype"):
        if isinstance(out.get(key), str):
            out[key] = getattr(torch, out[key])
    if isinstance(out.get("activation_func"), str):
        out["activation_func"] = activations[out["activation_func"]]
    return out


def verdict_of(cls: Any, kwargs: dict[str, Any], part: str = "") -> dict[str, Any]:
    """``{"error": {...} | None, "warnings": [...]}`` of ``cls(**kwargs)``; the scheduler
    (``part``) is also handed an optimizer, whose param groups are all it reads."""
    import logging
    import traceback
    import warnings

    import megatron.core.transformer.transformer_config as transformer_config

    found: list[dict[str, Any]] = []

    def caller() -> tuple[str, int]:
        frame = sys._getframe(2)
        return _relative(frame.f_code.co_filename), frame.f_lineno

    original_warn = warnings.warn

    def warn(message: Any, *args: Any, **kwargs: Any) -> None:
        file, line = caller()
        found.append({"message": str(message), "file": file, "line": line})

    original_log = transformer_config.log_single_rank

    def log_single_rank(logger: Any, level: int, message: Any, *args: Any, **kwargs: Any) -> None:
        if level >= logging.WARNING:
            file, line = caller()
            found.append({"message": str(message), "file": file, "line": line})

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING and "/megatron/core/" in record.pathname:
                found.append(
                    {
                        "message": record.getMessage(),
                        "file": _relative(record.pathname),
                        "line": record.lineno,
                    }
                )

    handler = Handler()
    logging.getLogger().addHandler(handler)
    warnings.warn = warn
    transformer_config.log_single_rank = log_single_rank
    error = None
    try:
        arguments = _torch_values(kwargs)
        if part == "scheduler":
            import torch

            arguments["optimizer"] = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.0)
        cls(**arguments)
    except Exception as exc:  # noqa: BLE001 (the verdict is whatever it raised)
        frames = [
            f for f in traceback.extract_tb(exc.__traceback__) if "/megatron/core/" in f.filename
        ]
        last = frames[-1] if frames else None
        error = {
            "type": type(exc).__name__,
            "message": str(exc),
            "file": _relative(last.filename) if last else "",
            "line": _statement_line(last.filename, last.lineno or 0) if last else 0,
        }
    finally:
        warnings.warn = original_warn
        transformer_config.log_single_rank = original_log
        logging.getLogger().removeHandler(handler)
    return {"error": error, "warnings": found}


def record(fixture: dict[str, Any]) -> dict[str, Any]:
    import importlib

    import megatron.core.package_info as info

    _stand_in_for_transformer_engine()
    # A job's process knows its rank; the scheduler's logging asks for it (_rank_utils.py),
    # and here, with no process group, would warn that it had to guess.
    os.environ.setdefault("RANK", "0")
    classes = {}
    for part, where in CLASSES.items():
        module, name = where.split(":")
        classes[part] = getattr(importlib.import_module(module), name)
    for case in fixture["cases"]:
        case["verdict"] = {
            part: verdict_of(classes[part], case["kwargs"][part], part)
            for part in CLASSES
            if part in case["kwargs"]
        }
    fixture["recorded_with"] = {"megatron_core": info.__version__, **_environment()}
    return fixture


def _environment() -> dict[str, str]:
    import platform

    import torch

    return {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.node(),
    }


# --- the command --------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="record-megatron-verdicts", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    cases = sub.add_parser("cases", help="write the fixture's cases (recipekit, no torch)")
    cases.add_argument("--out", type=Path, default=FIXTURE)
    rec = sub.add_parser("record", help="add Megatron-Core's verdicts (needs torch, megatron-core)")
    rec.add_argument("--cases", type=Path, default=FIXTURE)
    rec.add_argument("--out", type=Path, default=FIXTURE)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "cases":
        built, refused = build_cases(Path.cwd())
        fixture: dict[str, Any] = {"megatron_core": VERSION, "cases": built}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(fixture, indent=1, sort_keys=True) + "\n")
        print(
            f"record-megatron-verdicts: {len(built)} cases "
            f"({refused} mutations refused by the schema) -> {args.out}"
        )
        return 0
    fixture = record(dict(json.loads(args.cases.read_text())))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(fixture, indent=1, sort_keys=True) + "\n")
    errors = sum(1 for c in fixture["cases"] for v in c["verdict"].values() if v["error"])
    print(f"record-megatron-verdicts: {len(fixture['cases'])} cases, {errors} errors -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
