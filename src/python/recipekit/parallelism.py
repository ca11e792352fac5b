"""Megatron-Core's parallel layout as one typed value, with every rule it must obey, worded once.

A model-parallel group is TP x PP x CP GPUs; it must divide the GPUs that train, the rest being
data parallel (Megatron-Core's ``parallel_state.initialize_model_parallel`` refuses a world
size that is not a multiple of it). The MoE layers regroup the same ranks as EP x ETP x PP.
:class:`ParallelLayout` holds the sizes; :class:`ParallelKeys` says how one framework's config
spells them (one table per framework: ``NEMO_RL``, ``MEGATRON_BRIDGE``, ``DTENSOR``), so an
error names the key the user set (``--set ...context_parallel_size=3`` is answered in terms of
``context_parallel_size``). ``LAYOUT_RULES`` are the checks every framework on Megatron-Core
runs; whether a tensor-parallel group stays inside NVLink is the node's rule
(``NodeType.tensor_parallel_problem``, GB200 NVL72 trays included).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

from recipekit.errors import Issue
from recipekit.hardware import NodeType
from recipekit.model_card import ModelCard
from recipekit.validators import at_least

# The sizes a field of ParallelLayout is called by, in the order the plan shows them.
SIZE_FIELDS = ("tp", "pp", "vpp", "cp", "ep", "etp")
# A plan's name for each size (every framework's ``Layout.as_json``), the ParallelLayout
# attribute it shows, and how a message names it (the checkpoint stamp compares these).
PLAN_SIZES: dict[str, tuple[str, str]] = {
    "tensor_parallel": ("tp", "TP"),
    "pipeline_parallel": ("pp", "PP"),
    "context_parallel": ("cp", "CP"),
    "expert_parallel": ("ep", "EP"),
    "expert_tensor_parallel": ("etp", "ETP"),
    "data_parallel": ("whole_groups", "DP"),
}


# Its hash is kept (cache_hash): the layout search and the estimate's caches key on it.
@attrs.frozen(kw_only=True, cache_hash=True)
class ParallelLayout:
    """One Megatron-Core layout of the ``gpus`` that train one model."""

    gpus: int
    tp: int = attrs.field(default=1, validator=at_least(1))
    pp: int = attrs.field(default=1, validator=at_least(1))
    # Virtual pipeline stages per pipeline rank (interleaved 1F1B); None: not interleaved.
    vpp: int | None = None
    cp: int = attrs.field(default=1, validator=at_least(1))
    ep: int = attrs.field(default=1, validator=at_least(1))
    etp: int = attrs.field(default=1, validator=at_least(1))
    sp: bool = False
    # An uneven pipeline split: the layers of the first and last stage (None: an even share).
    first_stage_layers: int | None = None
    last_stage_layers: int | None = None

    @property
    def model_parallel(self) -> int:
        return self.tp * self.pp * self.cp

    @property
    def fits(self) -> bool:
        return self.gpus > 0 and self.gpus % self.model_parallel == 0

    @property
    def dp(self) -> int:
        """GPUs / (TP x PP x CP); 0 when that does not divide (a layout rule reports it)."""
        return self.whole_groups if self.fits else 0

    @property
    def whole_groups(self) -> int:
        """The model-parallel groups the GPUs hold, rounded down: what a plan shows as DP while
        a layout rule reports that it does not divide."""
        return self.gpus // self.model_parallel

    @property
    def expert_group(self) -> int:
        return self.ep * self.etp * self.pp

    @property
    def expert_dp(self) -> int:
        """The expert-data-parallel size, over which expert weights' optimizer state shards."""
        return self.gpus // self.expert_group if self.gpus % self.expert_group == 0 else 0

    def as_json(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "dp": self.dp}

    def microbatches(self, global_batch: int, micro_batch: int) -> int:
        """The micro-batches each data-parallel rank runs a step (at least 1): what fills the
        pipeline's 1F1B schedule."""
        return max(global_batch // (max(self.whole_groups, 1) * micro_batch), 1)

    def plan_sizes(self) -> dict[str, int]:
        """The model-parallel sizes as a plan's layout names them (``tensor_parallel`` ...
        ``expert_tensor_parallel``); each framework's ``as_json`` places them, and
        ``plan_data_parallel``, among its own keys."""
        return {
            name: getattr(self, field)
            for name, (field, _) in PLAN_SIZES.items()
            if name != "data_parallel"
        }

    def plan_data_parallel(self) -> dict[str, int]:
        """``{"data_parallel": ...}`` as a plan shows it: the whole model-parallel groups, so a
        layout a rule refuses still shows what it would hold."""
        return {"data_parallel": self.whole_groups}

    @staticmethod
    def plan_labels() -> dict[str, str]:
        """Each plan size's name in a message: ``{"tensor_parallel": "TP", ...}``."""
        return {name: label for name, (_, label) in PLAN_SIZES.items()}


@attrs.frozen
class ParallelKeys:
    """Where one framework's config sets each size: ``section.<name>``; a name of None is a
    size the framework does not have (DTensor has no pipeline), always 1 there."""

    section: str
    tp: str | None = "tensor_model_parallel_size"
    pp: str | None = "pipeline_model_parallel_size"
    vpp: str | None = "virtual_pipeline_model_parallel_size"
    cp: str | None = "context_parallel_size"
    ep: str | None = "expert_model_parallel_size"
    etp: str | None = "expert_tensor_parallel_size"
    sp: str | None = "sequence_parallel"
    first_stage_layers: str | None = "num_layers_in_first_pipeline_stage"
    last_stage_layers: str | None = "num_layers_in_last_pipeline_stage"

    def name(self, field: str) -> str:
        name = getattr(self, field)
        assert name is not None, f"{self.section} has no {field}"
        return str(name)

    def key(self, field: str) -> str:
        """The full key path of ``field``: ``policy.megatron_cfg.tensor_model_parallel_size``."""
        return f"{self.section}.{self.name(field)}"

    def has(self, field: str) -> bool:
        return getattr(self, field) is not None

    def size_keys(self) -> dict[str, str]:
        """``{"tp": "<section>.tensor_model_parallel_size", ...}`` for the sizes it has."""
        return {field: self.key(field) for field in SIZE_FIELDS if self.has(field)}

    def read(self, section: object, gpus: int) -> ParallelLayout:
        """The layout a typed config section states (a missing or unset size is 1)."""

        def size(field: str, default: int | None = 1) -> Any:
            name = getattr(self, field)
            value = getattr(section, name, None) if name is not None else None
            if isinstance(value, bool) or not isinstance(value, int):
                return default
            return value

        tp = size("tp")
        name = self.etp
        etp_value = getattr(section, name, None) if name is not None else None
        # Megatron-Core: an expert tensor-parallel size of None is the TP size
        # (model_parallel_config.py, __post_init__).
        etp = (
            etp_value
            if isinstance(etp_value, int) and etp_value >= 1
            else (tp if etp_value is None and self.etp is not None else 1)
        )
        sp = getattr(section, self.sp, False) if self.sp is not None else False
        return ParallelLayout(
            gpus=gpus,
            tp=max(tp, 1),
            pp=max(size("pp"), 1),
            vpp=size("vpp", None),
            cp=max(size("cp"), 1),
            ep=max(size("ep"), 1),
            etp=max(etp, 1),
            sp=sp is True,
            first_stage_layers=size("first_stage_layers", None),
            last_stage_layers=size("last_stage_layers", None),
        )

    def overrides(self, layout: ParallelLayout, base: ParallelLayout) -> dict[str, Any]:
        """The ``--set`` values that turn ``base`` into ``layout``: every size the framework has;
        a new pipeline depth drops the recipe's uneven split, tuned for its own."""
        out: dict[str, Any] = {
            self.key(field): getattr(layout, field)
            for field in ("tp", "pp", "cp", "ep", "etp")
            if self.has(field)
        }
        if layout.pp != base.pp:
            for field in ("first_stage_layers", "last_stage_layers", "vpp"):
                if self.has(field) and getattr(base, field) is not None:
                    out[self.key(field)] = None
        return out


NEMO_RL = ParallelKeys("policy.megatron_cfg")
MEGATRON_BRIDGE = ParallelKeys("model")
# NeMo-RL's DTensor (FSDP2) policy: tensor and context parallelism only.
DTENSOR = ParallelKeys(
    "policy.dtensor_cfg",
    tp="tensor_parallel_size",
    pp=None,
    vpp=None,
    cp="context_parallel_size",
    ep=None,
    etp=None,
    sp="sequence_parallel",
    first_stage_layers=None,
    last_stage_layers=None,
)


@attrs.frozen(kw_only=True)
class LayoutContext:
    """What the layout rules read: the layout, the framework's keys, the node and the model."""

    layout: ParallelLayout
    keys: ParallelKeys
    node: NodeType
    model_name: str
    num_layers: int
    num_experts: int
    # What the layout's GPUs are, for messages: "the 16 training GPUs (4 nodes x 4 GB200)".
    gpus_text: str


LayoutRule = Callable[[LayoutContext], Iterator[Issue]]


def product_of(factors: Sequence[tuple[str, int]]) -> tuple[int, str]:
    """The product of ``(key, value)`` factors and its arithmetic, keys named:
    ``tensor_model_parallel_size x context_parallel_size = 4 x 3 = 12``."""
    total = 1
    for _, value in factors:
        total *= value
    names = " x ".join(key for key, _ in factors)
    values = " x ".join(str(value) for _, value in factors)
    return total, f"{names} = {values} = {total}"


def model_parallel_divides_gpus(ctx: LayoutContext) -> Iterator[Issue]:
    """parallel_state.initialize_model_parallel: the world size must be divisible by
    TP x PP x CP."""
    lay, keys = ctx.layout, ctx.keys
    if lay.gpus <= 0:
        return  # the framework's node split reports it
    if lay.gpus % _model_parallel_of(lay, keys) == 0:
        return
    factors = [(keys.name(f), getattr(lay, f)) for f in ("tp", "pp", "cp") if keys.has(f)]
    size, arithmetic = product_of(factors)
    yield Issue(
        keys.section,
        f"{arithmetic} does not divide {ctx.gpus_text}",
        hint=f"data parallel would be {lay.gpus} / {size} = {lay.gpus / size:g}; change one of "
        + ", ".join(keys.key(f) for f in ("tp", "pp", "cp") if keys.has(f)),
    )


def _model_parallel_of(lay: ParallelLayout, keys: ParallelKeys) -> int:
    # TP x PP x CP of the sizes the framework has, without the message's arithmetic: the
    # layout search asks this of thousands of layouts, most of which pass.
    return (
        (lay.tp if keys.tp is not None else 1)
        * (lay.pp if keys.pp is not None else 1)
        * (lay.cp if keys.cp is not None else 1)
    )


def tensor_groups_stay_inside_nvlink(ctx: LayoutContext) -> Iterator[Issue]:
    """recipekit's rule: a tensor-parallel group's all-reduces run on every layer, so TP and
    ETP groups stay inside one NVLink domain."""
    for field, what in (("tp", "tensor"), ("etp", "expert tensor")):
        if not ctx.keys.has(field):
            continue
        size = getattr(ctx.layout, field)
        problem = ctx.node.tensor_parallel_problem(size) if size > 1 else ""
        if problem:
            yield Issue(
                ctx.keys.key(field),
                f"{what} parallelism must stay inside NVLink: {problem}",
                value=size,
            )


def experts_split_evenly(ctx: LayoutContext) -> Iterator[Issue]:
    """transformer_config.py: expert parallelism needs num_moe_experts; each EP rank holds
    num_experts / EP experts (moe_layer.py asserts the division)."""
    if not ctx.keys.has("ep"):
        return
    ep, key = ctx.layout.ep, ctx.keys.key("ep")
    if not ctx.num_experts:
        # A placeholder card (no layer count) knows nothing of experts: the plan says so once.
        if ep > 1 and ctx.num_layers:
            yield Issue(key, f"{ctx.model_name} is a dense model: no experts to split", value=ep)
        return
    if ctx.num_experts % ep:
        yield Issue(
            key,
            f"{ctx.num_experts} experts per MoE layer cannot be split evenly over EP={ep} "
            f"({ctx.num_experts} / {ep} = {ctx.num_experts / ep:g})",
            value=ep,
        )


def expert_group_divides_gpus(ctx: LayoutContext) -> Iterator[Issue]:
    """parallel_state.initialize_model_parallel: the world size must be divisible by
    ETP x EP x PP."""
    lay = ctx.layout
    if not ctx.keys.has("ep") or lay.gpus <= 0 or lay.gpus % lay.expert_group == 0:
        return
    yield Issue(
        ctx.keys.key("ep"),
        f"EP x ETP x PP = {lay.ep} x {lay.etp} x {lay.pp} = {lay.expert_group} does not divide "
        f"{ctx.gpus_text}",
        value=lay.ep,
    )


def pipeline_splits_the_layers(ctx: LayoutContext) -> Iterator[Issue]:
    """transformer_config.py (uneven PP): the first and last stages take their own layer
    counts, the middle stages share the rest evenly; transformer_block.py: an even split
    needs PP to divide the layers."""
    lay, keys = ctx.layout, ctx.keys
    if not keys.has("pp") or lay.pp == 1:
        return
    ends = [
        (field, n)
        for field in ("first_stage_layers", "last_stage_layers")
        if (n := getattr(lay, field)) is not None
    ]
    for field, n in ends:
        if n <= 0:
            yield Issue(keys.key(field), "a pipeline stage needs at least one layer", value=n)
            return
    layers, pp = ctx.num_layers, lay.pp
    if layers == 0:  # a placeholder card (import-yaml's "fill in"): the plan warns once
        return
    rest, stages = layers - sum(n for _, n in ends), pp - len(ends)
    even = rest > 0 and rest % stages == 0 if stages else rest == 0
    if even:
        return
    key = keys.key("pp")
    if not ends:
        yield Issue(
            key,
            f"{ctx.model_name} has {layers} layers, which PP={pp} cannot split evenly "
            f"({layers} / {pp} = {layers / pp:g})",
            value=pp,
            hint="set num_layers_in_first/last_pipeline_stage for an uneven split",
        )
        return
    given = " - ".join(str(n) for _, n in ends)
    if not stages:
        left = f"but no stage of the PP={pp} is left for them"
    elif rest < stages:
        left = f"for the other {stages} of the PP={pp} stages, fewer than one layer each"
    else:
        left = f"for the other {stages} of the PP={pp} stages, which cannot split them evenly"
    yield Issue(
        key,
        f"{ctx.model_name} has {layers} layers: {layers} - {given} = {rest} are left {left}",
        value=pp,
    )


def virtual_pipeline_splits_each_stage(ctx: LayoutContext) -> Iterator[Issue]:
    """transformer_config.py: with interleaving, every pipeline rank's layers (first, last and
    middle stages alike) must split into VPP chunks."""
    lay, keys = ctx.layout, ctx.keys
    vpp = lay.vpp
    if not keys.has("vpp") or vpp is None or vpp == 1:
        return
    key = keys.key("vpp")
    if vpp < 1:
        yield Issue(key, "must be at least 1, or null for no interleaving", value=vpp)
        return
    if lay.pp == 1:
        yield Issue(
            key,
            "interleaving splits each pipeline rank's layers into virtual stages; with "
            f"{keys.key('pp')} = 1 there is no pipeline to interleave",
            value=vpp,
        )
        return
    if ctx.num_layers == 0:
        return  # no layer count: pipeline_splits_the_layers says so once
    first, last = lay.first_stage_layers, lay.last_stage_layers
    per_stage: list[tuple[str, int]] = []
    middle_layers, middle_stages = ctx.num_layers, lay.pp
    for what, n in (("the first stage", first), ("the last stage", last)):
        if n is not None:
            per_stage.append((what, n))
            middle_layers -= n
            middle_stages -= 1
    if middle_stages > 0 and middle_layers > 0 and middle_layers % middle_stages == 0:
        per_stage.append(("each pipeline rank", middle_layers // middle_stages))
    for what, n in per_stage:
        if n % vpp:
            yield Issue(
                key,
                f"{what} holds {n} layers, which VPP={vpp} virtual stages cannot split evenly",
                value=vpp,
            )
            return


LAYOUT_RULES: tuple[LayoutRule, ...] = (
    tensor_groups_stay_inside_nvlink,
    model_parallel_divides_gpus,
    experts_split_evenly,
    expert_group_divides_gpus,
    pipeline_splits_the_layers,
    virtual_pipeline_splits_each_stage,
)


# Rules that refuse TP, PP and CP (and the GPUs) whatever the expert sizes: one that refuses
# them with EP = ETP = 1 refuses them with every EP and ETP, so megatron_layouts tries no expert
# sizes there (most of the sizes it tries go no further). parallelism_test checks it against
# every size tried.
_SIZES_ALONE: tuple[LayoutRule, ...] = (
    tensor_groups_stay_inside_nvlink,
    model_parallel_divides_gpus,
)


def _passes(rule: LayoutRule, ctx: LayoutContext) -> bool:
    return next(iter(rule(ctx)), None) is None


def layout_issues(ctx: LayoutContext) -> list[Issue]:
    """Every layout rule's issues for one layout."""
    return [issue for rule in LAYOUT_RULES for issue in rule(ctx)]


def layout_passes(ctx: LayoutContext) -> bool:
    """No layout rule refuses the layout: the search's test, stopping at the first issue (it
    tries thousands of layouts a stage, most refused by the first rule that looks)."""
    return all(_passes(rule, ctx) for rule in LAYOUT_RULES)


def model_layout_issues(
    layout: ParallelLayout,
    keys: ParallelKeys,
    node: NodeType,
    model: ModelCard,
    gpus_text: str,
    rules: tuple[LayoutRule, ...] = LAYOUT_RULES,
) -> list[Issue]:
    """The layout rules' issues (every one, or ``rules``) for ``layout`` of ``model`` on
    ``node`` nodes, in ``keys``."""
    ctx = LayoutContext(
        layout=layout,
        keys=keys,
        node=node,
        model_name=model.name,
        num_layers=model.num_layers,
        num_experts=model.num_experts,
        gpus_text=gpus_text,
    )
    return [issue for rule in rules for issue in rule(ctx)]


SIZES = (1, 2, 4, 8, 16, 32, 64)


def megatron_layouts(
    gpus: int, node: NodeType, num_layers: int, num_experts: int, base: ParallelLayout
) -> Iterator[ParallelLayout]:
    """Every layout the search tries on ``gpus`` GPUs of ``node``: the sizes that pass
    ``LAYOUT_RULES`` (checked by the rules themselves, so the search and the plan cannot
    disagree), with ``base``'s other settings; a new pipeline depth is an even split."""
    probe = LayoutContext(
        layout=base,
        keys=MEGATRON_BRIDGE,
        node=node,
        model_name="",
        num_layers=num_layers,
        num_experts=num_experts,
        gpus_text="",
    )
    experts = [1] if not num_experts else [e for e in SIZES if num_experts % e == 0]
    # attrs.evolve of ``base`` and of ``probe``, their fields read once (thousands of layouts).
    kept, context = _init_values(base), _init_values(probe)
    new_pipeline = {"vpp": None, "first_stage_layers": None, "last_stage_layers": None}
    for tp, pp, cp in itertools.product(SIZES, SIZES[:4], SIZES[:5]):
        sizes = {"gpus": gpus, "tp": tp, "pp": pp, "cp": cp}
        pipeline = {} if pp == base.pp else new_pipeline
        dense = ParallelLayout(**{**kept, **sizes, **pipeline, "ep": 1, "etp": 1})
        dense_context = LayoutContext(**{**context, "layout": dense})
        if not all(_passes(rule, dense_context) for rule in _SIZES_ALONE):
            continue
        for ep, etp in itertools.product(experts, SIZES[:4]):
            if not num_experts and etp > 1:
                continue
            layout = ParallelLayout(**{**kept, **sizes, **pipeline, "ep": ep, "etp": etp})
            if layout_passes(LayoutContext(**{**context, "layout": layout})):
                yield layout


def _init_values(instance: Any) -> dict[str, Any]:
    """What ``attrs.evolve(instance, ...)`` passes on of ``instance``: its init fields."""
    return {f.name: getattr(instance, f.name) for f in attrs.fields(type(instance)) if f.init}
