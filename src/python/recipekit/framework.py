"""What a stage's framework must provide for recipe -> plan -> render to work.

A framework (NeMo-RL GRPO on ``super-v3``, NeMo-RL on ``main``, Megatron-Bridge, NeMo
Evaluator) owns its typed config: how values are derived, what is checked, how it is written
out and how it is summarised. Everything else (overrides, lineage pins, the hash, the job
script) is the same for all of them, so ``plan`` and ``launch`` only see this protocol.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, ClassVar, Literal, Protocol

import attrs

from recipekit.checking import run_checks
from recipekit.convert import to_dict
from recipekit.derivation import Derivation, derive
from recipekit.errors import Issue
from recipekit.hardware import Hardware
from recipekit.lineage.checkpoint_stamp import CheckpointReads
from recipekit.lineage.steps import SavePolicy
from recipekit.memory.estimate import MemoryEstimate
from recipekit.model_card import ModelCard
from recipekit.parallelism import ParallelLayout

# How the job step starts the entry point once preflight passed on every node:
# "ray": Ray on every node, the entry point once on the head (NeMo-RL);
# "per-gpu": one process per GPU on every node, torch.distributed set up from Slurm's
#   environment, as NeMo-Run's Slurm executor starts Megatron-Bridge;
# "head": the entry point once on the head, no cluster runtime;
# "delegated": the framework is its own Slurm client (nemo-evaluator-launcher's Slurm executor):
#   its entry point runs once on the submit host and submits the job that does the work.
#   recipekit allocates nothing for it, and so runs no preflight.
Launch = Literal["ray", "per-gpu", "head", "delegated"]

# In ``Framework.arguments``: where the rendered config file's path goes.
CONFIG_PLACEHOLDER = "{config}"
# In a "delegated" framework's arguments: what its own Slurm client must be told of the cluster,
# filled in from the cluster profile at submit (so not in the plan's hash, like the container).
SITE_PLACEHOLDERS = {
    "{login_host}": "the host its Slurm client submits from (profile login_host)",
    "{account}": "the Slurm account (profile account)",
    "{partition}": "the Slurm partition (profile partition)",
    "{image}": "the stage's container image, by digest (profile container or bases)",
}


@attrs.frozen
class FrameworkCall:
    """What starts a stage's framework: its entry point and arguments (placeholders in), the
    base image it runs on, and the run's name (``launch.framework_process`` fills them in)."""

    entry_point: str
    arguments: tuple[str, ...]
    image: str
    run: str


class Layout(Protocol):
    """Where the work runs on the stage's GPUs, as the plan shows it."""

    def as_json(self) -> dict[str, Any]: ...


class Framework(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    @property
    def entry_point(self) -> str: ...

    @property
    def launch(self) -> Launch: ...

    @property
    def rules(self) -> tuple[Derivation, ...]:
        """How each ``DERIVED`` key is computed (applied by ``derive``, shown by ``explain``)."""
        ...

    @property
    def config_type(self) -> type:
        """The class of the config this framework reads (its schema's master config)."""
        ...

    @property
    def image(self) -> str:
        """The base image (a name in ``containers/bases.py``) the stage runs in."""
        ...

    def derive(self, config: Any, hardware: Hardware) -> tuple[Any, list[str]]:
        """``config`` with derived keys computed, and the keys that were.

        Paths of input artifacts (``RunInput``) are already resolved when this runs.
        """
        ...

    def check(
        self, config: Any, hardware: Hardware, model: ModelCard
    ) -> tuple[Layout, list[Issue], list[Issue]]:
        """The layout, the errors that stop the plan and the warnings shown with it."""
        ...

    def render(self, config: Any) -> dict[str, Any]:
        """Exactly what the entry point reads as its config file."""
        ...

    def arguments(self, rendered: dict[str, Any]) -> list[str]:
        """The entry point's arguments; ``{config}`` stands for the rendered config file.

        An entry point ending in ``.py`` runs with the container's Python, from the profile's
        framework root; any other is a command on the container's PATH. (A command line is the
        config written out, so this one hook reads the rendered dict.)
        """
        ...

    # The hooks below read the derived typed config (``Plan.config``), never the rendered
    # dict: a key the config leaves unset is UNSET there, and what the framework does without
    # it is said once, where the hook reads it (``recipekit.markers.given``).

    def inputs(self, config: Any) -> dict[str, str]:
        """Paths the run reads, which every node must see (preflight checks them)."""
        ...

    def outputs(self, config: Any) -> dict[str, str]: ...

    def checkpoint_reads(self, config: Any) -> CheckpointReads:
        """The checkpoint directories the run loads, by key: those it resumes whole and those
        it takes weights from (their stamps are checked against the run)."""
        ...

    def save_policy(self, config: Any) -> SavePolicy | None:
        """When the run saves checkpoints by step, and which it keeps; None: it saves none."""
        ...

    def summary(self, config: Any, layout: Layout) -> list[tuple[str, str]]:
        """Rows of the one-screen plan: layout, batch, sequence, data, checkpoints."""
        ...

    def memory(
        self, config: Any, hardware: Hardware, model: ModelCard, layout: Any
    ) -> MemoryEstimate | None:
        """Per-GPU memory of each phase of the run; None where there is no estimate (the
        model card has no architecture, or the framework has no estimator). Every size comes
        from ``layout``, none from the config's size keys: the layout search prices each layout
        it proposes on the recipe's own config (``layout_pricer``)."""
        ...

    def layout_pricer(
        self, config: Any, hardware: Hardware, model: ModelCard
    ) -> Callable[[Any], MemoryEstimate | None]:
        """``memory`` of ``config`` as a function of the layout: the layout search calls it for
        thousands of layouts, and a framework keeps there what they share."""
        ...

    def layout_candidates(
        self, layout: Any, hardware: Hardware, model: ModelCard
    ) -> Iterator[tuple[Any, dict[str, Any]]]:
        """The layouts ``recipekit layout`` tries: each with the overrides that make it."""
        ...

    def microbatches(self, config: Any, parallel: ParallelLayout) -> int:
        """The micro-batches a data-parallel rank of ``parallel`` runs a training step, from the
        typed config's batch keys (the layout search prices the pipeline bubble with it); 1
        where the stage does not train."""
        ...

    def waiting_for(self, job_ids: Sequence[str]) -> list[str]:
        """A "delegated" framework's arguments that make the job its client submits wait for
        these Slurm jobs to end well (a pipeline); empty where its client cannot."""
        ...


class FrameworkBase:
    """``derive``, ``check`` and ``render``, written once for every framework: a framework
    class supplies its ``rules``, its checks, the ``CheckContext`` subclass they read
    (``context_type``) and how its layout is computed (``layout``)."""

    rules: tuple[Derivation, ...]
    error_checks: tuple[Callable[[Any], Iterable[Issue]], ...]
    warning_checks: tuple[Callable[[Any], Iterable[Issue]], ...]
    context_type: ClassVar[type]

    def layout(self, config: Any, hardware: Hardware) -> Any:
        raise NotImplementedError

    def derive(self, config: Any, hardware: Hardware) -> tuple[Any, list[str]]:
        return derive(config, hardware, self.rules)

    def check(
        self, config: Any, hardware: Hardware, model: ModelCard
    ) -> tuple[Any, list[Issue], list[Issue]]:
        layout = self.layout(config, hardware)
        context = self.check_context(config, hardware, model, layout)
        errors, warnings = run_checks(context, self.error_checks, self.warning_checks)
        return layout, errors, warnings

    def check_context(self, config: Any, hardware: Hardware, model: ModelCard, layout: Any) -> Any:
        """What the checks read (``context_type``); a framework adds what it knows besides."""
        return self.context_type(config, hardware, model, layout)

    def render(self, config: Any) -> dict[str, Any]:
        out = to_dict(config)
        assert isinstance(out, dict)
        return out

    def memory(
        self, config: Any, hardware: Hardware, model: ModelCard, layout: Any
    ) -> MemoryEstimate | None:
        return None

    def layout_pricer(
        self, config: Any, hardware: Hardware, model: ModelCard
    ) -> Callable[[Any], MemoryEstimate | None]:
        return functools.partial(self.memory, config, hardware, model)

    def layout_candidates(
        self, layout: Any, hardware: Hardware, model: ModelCard
    ) -> Iterator[tuple[Any, dict[str, Any]]]:
        return iter(())

    def microbatches(self, config: Any, parallel: ParallelLayout) -> int:
        return 1

    def waiting_for(self, job_ids: Sequence[str]) -> list[str]:
        return []

    def checkpoint_reads(self, config: Any) -> CheckpointReads:
        return CheckpointReads()
