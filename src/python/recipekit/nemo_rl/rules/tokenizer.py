"""The tokenizer and chat template are the model's own, in training and in the rollouts' server.

No NeMo-RL line states these; each is silent when broken: a tokenizer of another model maps
text to the wrong ids, and a chat template other than the one training tokenizes with formats
rollouts differently from what the policy learns on. NeMo-RL reads ``policy.tokenizer.name``
with ``AutoTokenizer`` and a ``chat_template`` ending in ``.jinja`` as a file
(nemo_rl/algorithms/utils.py, get_tokenizer @ super-v3.5-posttraining); vLLM's HTTP server reads its
own ``chat_template`` from ``http_server_serving_chat_kwargs``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from recipekit.errors import Issue
from recipekit.lineage.model_files import belongs_to_model
from recipekit.nemo_rl.checks import CheckContext
from recipekit.nemo_rl.keys import value_of

TOKENIZER = "policy.tokenizer"
SERVING = "policy.generation.vllm_cfg.http_server_serving_chat_kwargs"


def _template_file(value: Any) -> str | None:
    """A chat template given as a file (NeMo-RL's ``.jinja`` rule), not as template text."""
    return value if isinstance(value, str) and value.endswith(".jinja") else None


def tokenizer_is_the_models(ctx: CheckContext) -> Iterator[Issue]:
    """The tokenizer is the model's: the same name, or files of the same checkpoint (a
    warning: a tokenizer kept apart from the weights may still be theirs)."""
    policy = ctx.config.policy
    model, name = policy.model_name, policy.tokenizer.name
    if isinstance(model, str) and isinstance(name, str) and not belongs_to_model(name, model):
        yield Issue(
            f"{TOKENIZER}.name",
            f"is not the tokenizer of policy.model_name ({model}): a tokenizer of another "
            "model maps text to the wrong token ids, silently",
            value=name,
            hint="leave it to follow policy.model_name, or point both at one checkpoint",
        )


def chat_template_file_is_the_models(ctx: CheckContext) -> Iterator[Issue]:
    """A chat template file outside the model's checkpoint is one the model was not trained
    with (a warning: a deliberate new template is possible)."""
    policy = ctx.config.policy
    template = _template_file(policy.tokenizer.chat_template)
    model = policy.model_name
    if template is not None and isinstance(model, str) and not belongs_to_model(template, model):
        yield Issue(
            f"{TOKENIZER}.chat_template",
            f"is not a file of policy.model_name ({model}): the model was trained on its own "
            "checkpoint's template, and a different one changes every prompt it sees",
            value=template,
            hint=f"{model.rstrip('/')}/chat_template.jinja, the template its checkpoint carries",
        )


def rollouts_use_the_training_template(ctx: CheckContext) -> Iterator[Issue]:
    """The generation server formats rollouts with the template training tokenizes with."""
    vllm = ctx.vllm
    kwargs = value_of(vllm, "http_server_serving_chat_kwargs")
    served = kwargs.get("chat_template") if isinstance(kwargs, dict) else None
    trained = ctx.config.policy.tokenizer.chat_template
    if isinstance(served, str) and isinstance(trained, str) and served != trained:
        yield Issue(
            f"{SERVING}.chat_template",
            f"differs from {TOKENIZER}.chat_template ({trained}): NeMo Gym's rollouts would be "
            "formatted with another template than the policy is trained on",
            value=served,
            hint=f"set both to one template (the recipes use the model's {trained!r})",
        )


# Files elsewhere than the model's checkpoint may still be its own (a tokenizer kept apart):
# warnings. Two templates in one config are a certain mismatch: an error.
ERROR_CHECKS = (rollouts_use_the_training_template,)
WARNING_CHECKS = (tokenizer_is_the_models, chat_template_file_is_the_models)

__all__ = [
    "ERROR_CHECKS",
    "WARNING_CHECKS",
    "chat_template_file_is_the_models",
    "rollouts_use_the_training_template",
    "tokenizer_is_the_models",
]
