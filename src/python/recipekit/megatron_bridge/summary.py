"""The one-screen plan rows of a Megatron-Bridge stage: recipe, layout, batch, sequence, freeze,
data, checkpoints."""

from __future__ import annotations

from recipekit.markers import given
from recipekit.megatron_bridge.layout import Layout
from recipekit.megatron_bridge.memory import is_peft
from recipekit.megatron_bridge.schema import LoRA, MegatronBridgeConfig, Model, recipe_mode

_PARTS = (
    ("freeze_language_model", "language model"),
    ("freeze_vision_model", "vision encoder"),
    ("freeze_vision_projection", "vision projector"),
)


def _freeze_row(model: Model) -> str:
    return ", ".join(
        f"{part} {'frozen' if getattr(model, key) else 'trains'}" for key, part in _PARTS
    )


def megatron_bridge_summary(cfg: MegatronBridgeConfig, lay: Layout) -> list[tuple[str, str]]:
    train, model, dataset, ckpt = cfg.train, cfg.model, cfg.dataset, cfg.checkpoint
    function = cfg.recipe.function
    rows: list[tuple[str, str]] = [("recipe", f"{function} ({recipe_mode(function)})")]
    p = lay.parallel
    rows.append(
        (
            "layout",
            f"TP {p.tp} x PP {p.pp} x CP {p.cp} -> DP {p.dp} on {lay.total_gpus} GPUs; "
            f"experts EP {p.ep} x ETP {p.etp}",
        )
    )
    gbs, mbs, dp = train.global_batch_size, train.micro_batch_size, p.dp
    steps = f" x {gbs // (mbs * dp)} accumulation steps" if dp and gbs % (mbs * dp) == 0 else ""
    rows.append(
        (
            "batch",
            f"global_batch_size {gbs} = micro_batch_size {mbs} x DP {dp}{steps}; "
            f"{train.train_iters} iterations",
        )
    )
    sp = "on" if model.sequence_parallel else "off"
    data_seq = given(dataset.seq_length, "the recipe's")
    seq = f"seq_length {model.seq_length} (dataset {data_seq}), sequence_parallel {sp}"
    rows.append(("sequence", seq))
    if is_peft(cfg):
        assert isinstance(cfg.peft, LoRA)
        # PEFT freezes every base weight itself; only the adapters train.
        rows.append(("freeze", "every base weight frozen (PEFT); LoRA adapters train"))
        adapters = ", ".join(cfg.peft.target_modules)
        rows.append(("", f"LoRA dim {cfg.peft.dim}, alpha {cfg.peft.alpha} on {adapters}"))
    else:
        rows.append(("freeze", _freeze_row(model)))
    rows.append(("data", given(dataset.path, "the recipe's own dataset")))
    start = given(ckpt.pretrained_checkpoint, None)
    loads = (
        f"from {start}" + (" (weights only)" if given(ckpt.finetune, False) else "") + "; "
        if start
        else ""
    )
    rows.append(
        ("checkpoints", f"{loads}save to {ckpt.save} every {ckpt.save_interval} iterations")
    )
    return rows
