"""The Energon dataset: EnergonDatasetConfig.validate's checks on the keys a stage sets."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from recipekit.errors import Issue
from recipekit.megatron_bridge.rules import builds_energon_dataset, cite

if TYPE_CHECKING:
    from recipekit.megatron_bridge.checks import CheckContext


def energon_dataset_has_a_path(ctx: CheckContext) -> Iterator[Issue]:
    """energon.py, EnergonDatasetConfig.validate: an Energon dataset needs a non-empty path (the
    builder asserts it again in EnergonDatasetBuilder.build)."""
    path = ctx.config.dataset.path
    if builds_energon_dataset(ctx.config) and (not isinstance(path, str) or not path.strip()):
        yield Issue(
            "dataset.path",
            "Megatron-Bridge's Energon dataset refuses to start without a dataset path "
            + cite(
                "megatron-bridge.energon.energon-dataset-config-validate.energon-dataset-path-unset-blank"
            ),
            value=path if isinstance(path, str) else None,
            hint="set it to the stage's data input",
        )


def energon_has_no_test_split(ctx: CheckContext) -> Iterator[Issue]:
    """energon.py, EnergonDatasetConfig.validate: the Energon dataset has no separate test split."""
    if builds_energon_dataset(ctx.config) and ctx.config.dataset.do_test is True:
        yield Issue(
            "dataset.do_test",
            "Megatron-Bridge's Energon dataset has no distinct test split "
            + cite(
                "megatron-bridge.energon.energon-dataset-config-validate.energon-dataset-asked-test-split-do"
            ),
            value=True,
            hint="leave it unset (false)",
        )
