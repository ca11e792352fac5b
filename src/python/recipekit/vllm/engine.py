"""What a framework starts vLLM 0.25.1's engine with, as far as the plan can tell: the engine's
arguments, the config key that sets each, and the environment its processes see.

vLLM's own rules (``recipekit.vllm.rules``) read this, as Megatron-Core's read
``MegatronOptions``: a framework's check context gives it (``ctx.vllm_engine()``, None where the
stage starts no vLLM engine), so the rules are written once in vLLM's terms and each message
names the key the user of that framework changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs


@attrs.frozen
class Setting:
    """The config key that sets an engine argument, its value there, and, where the framework
    derives the argument rather than passing the key's value, how (in words for a message)."""

    key: str
    value: Any
    how: str = ""


@attrs.frozen
class EngineStart:
    """The engine's arguments the plan can tell (an argument it cannot tell, or that is not
    given, is absent: vLLM's default or its own computation applies), each one's ``settings``
    entry, and the variables the engine's processes see.

    What the user hands the engine as it is: ``given``, the mapping at ``given_in``
    (``policy.generation.vllm_kwargs``), as written. ``passed``: the keywords the framework
    passes itself beside them; ``taken_out``: keys of a mapping argument it removes before vLLM
    builds its config class; ``undetermined``: arguments it sets from what the plan cannot tell
    (a value it computes, or one it writes over the user's on a condition), whose vLLM default
    does not apply either. ``asynchronous``: it builds ``AsyncEngineArgs``, not ``vllm.LLM``."""

    arguments: Mapping[str, Any]
    settings: Mapping[str, Setting]
    environment: Mapping[str, str] = attrs.field(factory=dict)
    given_in: str = ""
    given: Mapping[str, Any] = attrs.field(factory=dict)
    asynchronous: bool = False
    passed: frozenset[str] = frozenset()
    taken_out: Mapping[str, frozenset[str]] = attrs.field(factory=dict)
    undetermined: frozenset[str] = frozenset()

    def get(self, argument: str, default: Any = None) -> Any:
        return self.arguments.get(argument, default)

    def integer(self, argument: str, default: int) -> int | None:
        """An integer argument, ``default`` when it is not given, None when it is no integer."""
        value = self.arguments.get(argument)
        if value is None:
            return default
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def section(self, argument: str) -> dict[str, Any]:
        """A mapping argument (``eplb_config``, ``compilation_config``), {} where it is not."""
        value = self.arguments.get(argument)
        return value if isinstance(value, dict) else {}

    def key(self, argument: str) -> str:
        """The config key that sets ``argument``; a dotted ``argument`` names a key inside a
        mapping argument (``eplb_config.communicator``)."""
        head, _, rest = argument.partition(".")
        setting = self.settings.get(head)
        base = setting.key if setting is not None else ".".join(filter(None, (self.given_in, head)))
        return f"{base}.{rest}" if rest else base

    def value(self, argument: str) -> Any:
        """What the user set at ``key(argument)``: the argument's value, or the key's where the
        framework derives the argument from it."""
        setting = self.settings.get(argument)
        return setting.value if setting is not None else self.arguments.get(argument)

    def how(self, argument: str) -> str:
        """How the framework derives ``argument`` from its key, " (...)" for a message; "" where
        it passes the key's value."""
        setting = self.settings.get(argument)
        return f" ({setting.how})" if setting is not None and setting.how else ""


def engine_of(ctx: Any) -> EngineStart | None:
    """The engine a framework's check context starts (``ctx.vllm_engine()``); None where it
    starts none."""
    start: EngineStart | None = ctx.vllm_engine()
    return start
