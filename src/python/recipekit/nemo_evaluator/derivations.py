"""Keys that follow another key or the stage's hardware, computed when the plan is made.

A ``DERIVED`` key takes its rule's value, so ``--set deployment.checkpoint_path=/other/model``
moves the tokenizer the tasks count tokens with, the mount that lets the evaluation containers
read it and the name vLLM serves the model under. A key given a value keeps it.
"""

from __future__ import annotations

from typing import Any

from recipekit.derivation import Derivation
from recipekit.lineage.refs import ARTIFACTS_ROOT

CHECKPOINT = "deployment.checkpoint_path"
TOKENIZER = "evaluation.nemo_evaluator_config.config.params.extra.tokenizer"


def _same(value: Any) -> Any:
    return value


def _gres(gpus_per_node: int) -> str:
    return f"gpu:{gpus_per_node}"


def _served_name(path: Any) -> Any:
    # What the results are filed under (the launcher's model_id, W&B): the artifact reference
    # for an input artifact (/artifacts/NAME/VERSION -> NAME:VERSION), else the directory name.
    if not isinstance(path, str):
        return path
    parts = path.rstrip("/").split("/")
    if path.startswith(ARTIFACTS_ROOT + "/") and len(parts) == len(ARTIFACTS_ROOT.split("/")) + 2:
        return f"{parts[-2]}:{parts[-1]}"
    return parts[-1]


def _read_in_place(path: Any) -> Any:
    # The evaluation containers read the tokenizer from the checkpoint (an HF export holds its
    # tokenizer files); the launcher mounts only what execution.mounts.evaluation lists there.
    return {path: path} if isinstance(path, str) else path


RULES: tuple[Derivation, ...] = (
    Derivation("execution.num_nodes", ("hardware.num_nodes",), _same, "hardware.num_nodes"),
    Derivation(
        "execution.gres", ("hardware.gpus_per_node",), _gres, "gpu:<hardware.gpus_per_node>"
    ),
    Derivation(
        "deployment.served_model_name",
        (CHECKPOINT,),
        _served_name,
        f"NAME:VERSION of {CHECKPOINT} under /artifacts, else its last component",
    ),
    Derivation(TOKENIZER, (CHECKPOINT,), _same, CHECKPOINT),
    Derivation(
        "execution.mounts.evaluation",
        (CHECKPOINT,),
        _read_in_place,
        f"{{{CHECKPOINT}: {CHECKPOINT}}}",
    ),
)

RULES_BY_TARGET = {rule.target: rule for rule in RULES}
