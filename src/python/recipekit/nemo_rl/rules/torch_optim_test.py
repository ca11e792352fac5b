"""The policy's optimizer and LR schedulers against the torch 2.11.0 classes they name
(``recipekit.pytorch.generated``): on the Super 3.5 RL stage switched to DTensor, each fault a
user can write is refused at its key with the constructor's file and line; what torch takes
plans."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by name:
# policy_optimizer_and_schedulers_build.

from __future__ import annotations

import pytest

from recipekit.nemo_rl.rules.conftest import Plan, RefusedAt
from recipekit.pytorch.generated.optim_2_11_0 import CLASSES
from recipekit.upstream import conditions
from recipes.super35.rl import rlvr

DTENSOR = (
    "policy.megatron_cfg.enabled=false",
    "policy.dtensor_cfg.enabled=true",
    "policy.dtensor_cfg._v2=true",
    "policy.optimizer={name: torch.optim.AdamW, kwargs: {lr: 5.0e-6, weight_decay: 0.01, "
    "betas: [0.9, 0.999], eps: 1e-8, foreach: false, fused: false}}",
)
KW = "policy.optimizer.kwargs"
ADAMW = CLASSES["torch.optim.AdamW"]
# Where AdamW declares lr, and where (Adam's __init__) it refuses a negative one.
LR_DECLARED = f"{ADAMW['file']}:{ADAMW['parameters']['lr'][2]} @ torch 2.11.0"
LR_REFUSED = next(where for c, _, where in ADAMW["guards"] if c == "not 0.0 <= lr")


@pytest.mark.parametrize(
    ("overrides", "key", "reason"),
    [
        ((f"{KW}.weight_decy=0.1",), f"{KW}.weight_decy", "did you mean 'weight_decay'"),
        ((f"{KW}.params=[]",), f"{KW}.params", "passes the model's parameters"),
        ((f"{KW}.lr=fast",), f"{KW}.lr", LR_DECLARED),
        ((f"{KW}.betas=[0.9, 1.0]",), f"{KW}.betas", "`not 0.0 <= betas[1] < 1.0`"),
        ((f"{KW}.lr=-1e-6",), f"{KW}.lr", LR_REFUSED),
        ((f"{KW}.fused=true", f"{KW}.foreach=true"), f"{KW}.fused", "`fused and foreach`"),
        (
            ("policy.optimizer.name=torch.optim.AdamWW",),
            "policy.optimizer.name",
            "did you mean 'torch.optim.AdamW'",
        ),
        (
            (
                "policy.scheduler=[{name: torch.optim.lr_scheduler.LinearLR, kwargs: "
                "{start_factor: 0, total_iters: 10}}, {milestones: [10]}]",
            ),
            "policy.scheduler[0].kwargs.start_factor",
            "torch/optim/lr_scheduler.py:",
        ),
        (
            ("policy.scheduler=[{name: torch.optim.lr_scheduler.StepLR, kwargs: {gamma: 0.5}}]",),
            "policy.scheduler[0].kwargs",
            "needs 'step_size'",
        ),
    ],
)
def test_refused_at_the_key(
    refused_at: RefusedAt, overrides: tuple[str, ...], key: str, reason: str
) -> None:
    refused_at(rlvr, (*DTENSOR, *overrides), key, reason)


def test_what_torch_takes_plans(errors: Plan) -> None:
    assert errors(rlvr, *DTENSOR) == []
    schedulers = (
        "policy.scheduler=[{name: torch.optim.lr_scheduler.LinearLR, kwargs: {start_factor: "
        "0.1, end_factor: 1.0, total_iters: 10}}, {name: torch.optim.lr_scheduler.ConstantLR, "
        "kwargs: {factor: 1.0, total_iters: 100}}, {milestones: [10]}]"
    )
    assert errors(rlvr, *DTENSOR, schedulers, f"{KW}.fused=true") == []
    # Another package's class is not read, so not checked.
    te = "policy.optimizer.name=transformer_engine.pytorch.optimizers.fused_adam.FusedAdam"
    assert errors(rlvr, *DTENSOR, te, f"{KW}.master_weights=true") == []


def test_megatron_trains_with_its_own_optimizer_settings(errors: Plan) -> None:
    # policy.optimizer is not built on the Megatron path: a typo there fails nothing.
    found = errors(rlvr, f"{KW[:-7]}={{name: torch.optim.AdamW, kwargs: {{weight_decy: 1}}}}")
    assert not [e for e in found if "weight_decy" in e]


def test_guards_are_read_through_the_base_class() -> None:
    # AdamW has none of its own: Adam's, reached through super().__init__ with AdamW's names.
    adamw = {c: where for c, _, where in CLASSES["torch.optim.AdamW"]["guards"]}
    assert adamw["not 0.0 <= betas[0] < 1.0"].startswith("torch/optim/adam.py:")
    assert CLASSES["torch.optim.AdamW"]["parameters"]["weight_decay"][1] == "0.01"
    # Every optimizer torch.optim exports is there, and each scheduler.
    assert {"torch.optim.SGD", "torch.optim.lr_scheduler.CosineAnnealingLR"} <= CLASSES.keys()


@pytest.mark.parametrize(
    ("condition", "values", "holds"),
    [
        ("not 0.0 <= betas[1] < 1.0", {"betas": [0.9, 1.0]}, True),
        ("not 0.0 <= betas[1] < 1.0", {"betas": [0.9, 0.999]}, False),
        ("start_factor > 1.0 or start_factor <= 0", {"start_factor": 1.0 / 3}, False),
        (
            "nesterov and (momentum <= 0 or dampening != 0)",
            {"nesterov": True, "momentum": 0, "dampening": 0},
            True,
        ),
        ("x not in ['a', 'b']", {"x": "c"}, True),
        # What cannot be told is None: an unknown name, a string compared with a number.
        ("not 0.0 <= lr", {}, None),
        ("not 0.0 <= lr", {"lr": "fast"}, None),
    ],
)
def test_a_guard_holds_as_python_would_evaluate_it(
    condition: str, values: dict[str, object], holds: bool | None
) -> None:
    assert conditions.holds(condition, values) is holds


def test_only_constants_and_operators_are_evaluated() -> None:
    assert conditions.holds("__import__('os') is None", {}) is None
    assert conditions.constant("1.0 / 3") == (True, 1.0 / 3)
    assert conditions.constant("ParamsT")[0] is False
