"""NeMo-RL's pydantic config classes at super-v3.5-posttraining, checked on the config a stage
renders as pydantic builds them (``recipekit.upstream.models``): their required fields, and
their own validators, replayed.

Each runner of that branch builds its master config with ``MasterConfig(**config)``, and pydantic
builds every model the config nests with it, running each one's
``@model_validator(mode="after")`` methods (``AsyncPPOConfig``'s, the single controller's
``AsyncRLConfig`` and its blocks', ...). GRPO's setup validates ``policy.generation`` as
``DynamoConfig`` with ``backend: dynamo`` (a boundary). ``generated/config_guards.json``
(``tools/generate_nemo_rl_guards.py``) holds them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from recipekit import checking
from recipekit.errors import Issue
from recipekit.nemo_rl import SUPER35_BRANCH, SUPER35_TYPES, runs_super35
from recipekit.nemo_rl.checks.key_needs import rendered_config
from recipekit.upstream.declared import members
from recipekit.upstream.models import PinnedModels

MODELS = PinnedModels(
    Path(__file__).parent / "generated" / "config_guards.json",
    SUPER35_TYPES,
    "NeMo-RL",
    f"@ {SUPER35_BRANCH}",
)


def config_validators_hold(subject: Any) -> Iterator[Issue]:
    """The pydantic models a Super 3.5 runner builds from the config (``MasterConfig(**config)``
    and the boundaries NeMo-RL validates on its own), checked as pydantic builds them: a GRPO
    check (``subject`` a check context) and one of the other entry points (``subject`` the
    config)."""
    config = subject.config if isinstance(subject, checking.CheckContext) else subject
    upstream = getattr(type(config), "upstream", None)
    if not runs_super35(config) or upstream is None:
        return
    rendered = rendered_config(config)
    if rendered is not None:
        yield from MODELS.refusals(rendered, members(upstream)[0].qualified)
