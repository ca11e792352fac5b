"""Megatron-Bridge's Megatron -> Hugging Face export, as a framework a stage can target.

The entry point is the script that Megatron-Bridge's verification cards run on GPUs for a
Megatron -> HF conversion (``megatron_to_hf_gpu``, through their ``convert.sh``),
``examples/conversion/convert_checkpoints_multi_gpu.py export``: one process per GPU
(``launch="per-gpu"``, torch.distributed from Slurm's environment), each loading its shard of the
Megatron checkpoint and writing its share of the Hugging Face files.

The config is the script's flags, grouped as the plan reads them: ``export`` (what is read and
written) and ``model`` (the parallel layout, under Megatron-Core's names, which the script
passes to Megatron-Core as they are). NeMo-RL's Megatron policy saves its weights as a Megatron
checkpoint at ``step_N/policy/weights/iter_0000000`` (``NEMO_RL_WEIGHTS``): an RL stage's
checkpoint is read from there.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import attrs

from recipekit.derivation import Derivation
from recipekit.framework import FrameworkBase, Launch
from recipekit.hardware import Hardware
from recipekit.lineage.checkpoint_stamp import CheckpointReads
from recipekit.lineage.steps import SavePolicy
from recipekit.megatron_bridge import MEGATRON_BRIDGE_VERSION
from recipekit.megatron_bridge.checks import Check, CheckContext, parallel_layout_holds
from recipekit.megatron_bridge.layout import EXPORT, Layout, compute_layout, layout_candidates
from recipekit.memory.estimate import MemoryEstimate, Phase
from recipekit.memory.megatron import MegatronSetup, conversion_terms
from recipekit.model_card import ModelCard
from recipekit.sections import fixed, frozen_section, required, section
from recipekit.validators import at_least, one_of

NEMO_RL_WEIGHTS = "policy/weights/iter_0000000"
TORCH_DTYPES = ("bfloat16", "float16", "float32")
# Where the command line comes from (``export_test.py`` and the pipeline's integration test hold
# it to this): the verified export of Megatron-Bridge's Nemotron 3 Super card, in the reference
# data (3rdparty/reference/manifest.toml), less the options of convert.sh itself (where and how
# it submits), which are not the script's.
VERIFICATION_CARD = (
    "megatron-bridge/main/examples/model_verification_cards/nemotron-3-super-120b-a12b/card.yaml"
)
VERIFIED_EXPORT = "megatron_to_hf_gpu"
CONVERT_SH_OPTIONS = frozenset(
    {"--executor", "--device", "--nodes", "--gpus-per-node", "--hf-revision"}
)


@section("export")
@frozen_section(kw_only=True, repr=False, eq=False)
class Export:
    """What is converted, and where to: the script's ``--hf-model``, ``--megatron-path``,
    ``--hf-path``, ``--torch-dtype``, ``--distributed-save`` and (when false) ``--not-strict``."""

    # The Hugging Face model (id or path) whose config, code and tokenizer the export is
    # written with; its architecture must be the checkpoint's.
    hf_model: str = required()
    megatron_path: str = required()
    hf_path: str = required()
    torch_dtype: str = fixed("bfloat16", one_of(TORCH_DTYPES))
    # Each rank writes its own shards (the verification card's choice for Super).
    distributed_save: bool = fixed(True)
    # Every tensor of the Hugging Face model must come from the checkpoint.
    strict: bool = fixed(True)


@section("model")
@frozen_section(kw_only=True, repr=False, eq=False)
class ExportParallelism:
    """The layout the checkpoint is loaded with (``--tp``, ``--pp``, ``--ep``, ``--etp``)."""

    tensor_model_parallel_size: int = fixed(1, at_least(1))
    pipeline_model_parallel_size: int = fixed(1, at_least(1))
    expert_model_parallel_size: int = required(at_least(1))
    expert_tensor_parallel_size: int = fixed(1, at_least(1))


@section()
@frozen_section(kw_only=True, repr=False, eq=False)
class HfExportConfig:
    export: Export = required()
    model: ExportParallelism = required()


# Megatron-Core's layout rules, as for a training stage (the same keys under ``model``).
ERROR_CHECKS: tuple[Check, ...] = (parallel_layout_holds,)

# The converter's flags are the sizes' short names (--tp, --pp, --ep, --etp).
EXPORT_KEYS = EXPORT.size_keys()


def export_arguments(rendered: dict[str, Any]) -> list[str]:
    """``convert_checkpoints_multi_gpu.py``'s command line for a rendered config."""
    export, model = rendered["export"], rendered["model"]
    args = ["export", "--hf-model", export["hf_model"]]
    args += ["--megatron-path", export["megatron_path"], "--hf-path", export["hf_path"]]
    args += [
        a
        for name, key in EXPORT_KEYS.items()
        for a in (f"--{name}", str(model[key.removeprefix("model.")]))
    ]
    args += ["--torch-dtype", export["torch_dtype"]]
    args += ["--distributed-save"] if export["distributed_save"] else []
    args += [] if export["strict"] else ["--not-strict"]
    return args


@attrs.frozen
class MegatronBridgeExport(FrameworkBase):
    name: str = "megatron-bridge-export"
    version: str = MEGATRON_BRIDGE_VERSION
    # Relative to the Megatron-Bridge checkout, as run_recipe.py is.
    entry_point: str = "examples/conversion/convert_checkpoints_multi_gpu.py"
    config_type: type = HfExportConfig
    launch: Launch = "per-gpu"
    image: str = "nemo"
    rules: tuple[Derivation, ...] = ()
    error_checks: tuple[Check, ...] = ERROR_CHECKS
    warning_checks: tuple[Check, ...] = ()
    context_type: ClassVar[type] = CheckContext

    def layout(self, config: Any, hardware: Hardware) -> Layout:
        return compute_layout(config, hardware, EXPORT)

    def arguments(self, rendered: dict[str, Any]) -> list[str]:
        return export_arguments(rendered)

    def inputs(self, config: Any) -> dict[str, str]:
        return {"megatron_checkpoint": config.export.megatron_path}

    def outputs(self, config: Any) -> dict[str, str]:
        return {"hf_model": config.export.hf_path}

    def checkpoint_reads(self, config: Any) -> CheckpointReads:
        # The conversion reads the weights alone, resharded to its own layout.
        return CheckpointReads(starts={"export.megatron_path": config.export.megatron_path})

    def save_policy(self, config: Any) -> SavePolicy | None:
        return None  # one model, no steps: the finished run is the version

    def summary(self, config: Any, layout: Any) -> list[tuple[str, str]]:
        export = config.export
        save = "each rank writes its shards" if export.distributed_save else "rank 0 writes"
        p = layout.parallel
        return [
            (
                "layout",
                f"TP {p.tp} x PP {p.pp} x EP {p.ep} x ETP {p.etp} on {layout.total_gpus} GPUs",
            ),
            ("reads", f"{export.megatron_path} (Megatron checkpoint)"),
            ("writes", f"{export.hf_path} (Hugging Face, {export.torch_dtype}; {save})"),
            ("as", f"{export.hf_model}{'' if export.strict else ' (not strict)'}"),
        ]

    def memory(
        self, config: Any, hardware: Hardware, model: ModelCard, layout: Any
    ) -> MemoryEstimate | None:
        arch = model.architecture
        if arch is None or not layout.parallel.dp:
            return None
        setup = MegatronSetup.of(
            layout.parallel,
            tokens=0,
            mtp=arch.mtp_depth > 0,
            keys=EXPORT_KEYS,
        )
        terms = conversion_terms(arch, setup)
        phase = Phase("export", "all GPUs", terms, hardware.node.gpu.hbm_gib)
        return MemoryEstimate(phases=(phase,))

    def layout_candidates(
        self, layout: Any, hardware: Hardware, model: ModelCard
    ) -> Iterator[tuple[Any, dict[str, Any]]]:
        return layout_candidates(layout, hardware, model.num_layers, model.num_experts)


MEGATRON_BRIDGE_EXPORT = MegatronBridgeExport()
