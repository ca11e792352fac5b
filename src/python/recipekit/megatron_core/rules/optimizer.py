"""The optimizer: OptimizerConfig.__post_init__'s checks on the precision-aware optimizer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.megatron_core.options import options_of
from recipekit.megatron_core.rules import cite


def precision_aware_optimizer_needs_adam(ctx: Any) -> Iterator[Issue]:
    """optimizer_config.py, OptimizerConfig.__post_init__: the precision-aware optimizer is Adam
    only."""
    o = options_of(ctx)
    if o is not None and o.use_precision_aware_optimizer and o.optimizer != "adam":
        yield Issue(
            o.key("optimizer"),
            "Megatron-Core's precision-aware optimizer (use_precision_aware_optimizer) is Adam "
            "only "
            + cite("megatron-core.optimizer-config.post-init.precision-aware-optimizer-adam-only"),
            value=o.optimizer,
        )


def precision_aware_optimizer_needs_distributed_optimizer(ctx: Any) -> Iterator[Issue]:
    """optimizer_config.py, OptimizerConfig.__post_init__: the precision-aware optimizer needs
    the distributed one."""
    o = options_of(ctx)
    if o is not None and o.use_precision_aware_optimizer and not o.use_distributed_optimizer:
        yield Issue(
            o.key("use_distributed_optimizer"),
            "Megatron-Core's precision-aware optimizer runs only with the distributed optimizer "
            + cite(
                "megatron-core.optimizer-config.post-init.precision-aware-optimizer-needs-distributed-optimizer"
            ),
            value=False,
        )
