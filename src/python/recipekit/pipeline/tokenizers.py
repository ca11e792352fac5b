"""One tokenizer and chat template along a lineage (issue 43): a stage that trains or evaluates a
model with another tokenizer or chat template than the stage its model comes from is a warning,
naming both stages and both values.

Which a stage uses is read from its framework config (``KEYS``): a value inside its own ``model``
input (``RunInput("model", "chat_template.jinja")``, ``/artifacts/<model>/...``), the key absent,
or a framework's "use the model's" marker (NeMo-RL's ``default``) is the checkpoint's own, and the
checkpoint's own is what the stage that wrote it used: NeMo-RL and Megatron-Bridge save the
tokenizer they trained with beside the weights, and a conversion copies it. So a difference can
only enter where a stage names its own value; it is compared with what its producer used,
followed back through the chain to an imported model ("super35-pretrain-model's own"). A
Megatron-Bridge stage reads both from its checkpoint (no key sets them here).

A warning, not a refusal: a new template on purpose (a fixed bug, a new tool-call format) is a
choice, but an accidental one silently changes the tokens the next stage trains on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from recipekit.errors import Issue
from recipekit.importers.data_paths import resolved_at
from recipekit.lineage.refs import artifact_path
from recipekit.markers import UNSET

# Where each framework's config names the tokenizer and chat template (None: it has no key; the
# checkpoint's own is read).
KEYS: dict[str, dict[str, str | None]] = {
    "nemo-rl": {
        "tokenizer": "policy.tokenizer.name",
        "chat template": "policy.tokenizer.chat_template",
    },
    "nemo-evaluator": {
        "tokenizer": "evaluation.nemo_evaluator_config.config.params.extra.tokenizer",
        "chat template": None,
    },
}
# NeMo-RL's get_tokenizer: "default" (or no key) keeps the model's template; null installs its
# passthrough template (nemo_rl/algorithms/utils.py, get_tokenizer).
OWN_MARKERS = ("default",)
PASSTHROUGH = "NeMo-RL's passthrough template (chat_template: null)"


@attrs.frozen
class Choice:
    """What one stage uses: ``value`` None for the checkpoint's own; ``key`` where it is set."""

    value: str | None
    key: str = ""


def choice(framework: str, config: Mapping[str, Any], model_path: str | None, what: str) -> Choice:
    """The ``what`` ("tokenizer" or "chat template") a stage's resolved config uses."""
    key = KEYS.get(framework, {}).get(what)
    if key is None:
        return Choice(None)
    value = resolved_at(config, key)
    if value is UNSET or (isinstance(value, str) and value.lower() in OWN_MARKERS):
        return Choice(None)
    if value is None:
        return Choice(PASSTHROUGH if framework == "nemo-rl" else None, key)
    shown = str(value)
    if model_path is not None and (shown == model_path or shown.startswith(model_path + "/")):
        return Choice(None)  # a file of the stage's own model input
    return Choice(shown, key)


def _model_path(planned: Any) -> str | None:
    ref = planned.lineage.artifact_inputs().get("model")
    return artifact_path(ref) if ref is not None else None


def _root(planned: Any) -> str:
    ref = planned.lineage.artifact_inputs().get("model")
    source = ref.name if ref is not None else planned.lineage.inputs.get("model", "its model")
    return f"the checkpoint's own (from {source})"


def tokenizer_warnings(planned: Sequence[Any]) -> list[Issue]:
    """A warning for every stage whose tokenizer or chat template differs from what the stage its
    ``model`` input comes from used (both planned here), naming both stages and values."""
    by_output = {p.lineage.output: p for p in planned if p.lineage.output is not None}
    effective: dict[tuple[str, str], str] = {}

    def used(stage: Any, what: str) -> tuple[str, Choice]:
        """(what ``stage`` effectively uses, its own choice)."""
        own = _choice_of(stage, what)
        if (stage.name, what) not in effective:
            effective[(stage.name, what)] = own.value or _inherited(stage, what)
        return effective[(stage.name, what)], own

    def _inherited(stage: Any, what: str) -> str:
        ref = stage.lineage.artifact_inputs().get("model")
        producer = by_output.get(ref.name) if ref is not None else None
        if producer is None or producer is stage:
            return _root(stage)
        return used(producer, what)[0]

    warnings: list[Issue] = []
    for stage in planned:
        ref = stage.lineage.artifact_inputs().get("model")
        producer = by_output.get(ref.name) if ref is not None else None
        if producer is None or stage.plan is None:
            continue
        for what in ("tokenizer", "chat template"):
            value, own = used(stage, what)
            before, _ = used(producer, what)
            if own.value is None or value == before:
                continue
            warnings.append(
                Issue(
                    f"{stage.name}: {own.key}",
                    f"the {what} differs from {producer.name}'s, whose checkpoint this stage "
                    f"starts from: {stage.name} uses {value!r}, {producer.name} used {before!r}",
                    hint=f"the tokens {stage.name} trains or scores on are not those "
                    f"{producer.name} trained on; use the checkpoint's own, or say why",
                )
            )
    return warnings


def _choice_of(stage: Any, what: str) -> Choice:
    plan = stage.plan
    if plan is None:
        return Choice(None)
    framework = str(getattr(plan.stage.framework, "name", ""))
    return choice(framework, plan.framework_config, _model_path(stage), what)
