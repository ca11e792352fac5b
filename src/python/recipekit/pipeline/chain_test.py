from __future__ import annotations

from pathlib import Path

import attrs
import pytest

import recipes
from recipekit.errors import RecipeError
from recipekit.launch.profile import ArtifactStore, Mount, Pyxis
from recipekit.lineage.store import RUN_PLACEHOLDER, init_store
from recipekit.pipeline.chain import load_chain, plan_chain
from recipekit.pipeline.submit import chain_issues
from recipes.clusters import PROFILES

ROOT = Path(recipes.__file__).resolve().parent.parent
SUPER35 = Path("recipes/super35")


@pytest.fixture(scope="module")
def chain():  # type: ignore[no-untyped-def]
    return load_chain(SUPER35, ROOT)


def test_the_whole_chain_plans_in_order_with_checkpoints_in_the_store(chain) -> None:  # type: ignore[no-untyped-def]
    names = chain.between(None, "eval")
    planned = plan_chain(chain, names)
    order = [p.name for p in planned]
    # Every producer before its consumers.
    for before, after in [
        ("pretrain", "sft"),
        ("sft", "sft-stage2"),
        ("sft-stage2", "rlvr"),
        ("rlvr", "teacher-reasoning"),
        ("teacher-reasoning", "mopd-phase1"),
        ("mopd-phase2", "hf-export"),
        ("hf-export", "eval"),
    ]:
        assert order.index(before) < order.index(after)
    assert "mopd-single-stage" not in order  # eval does not need it
    by_name = {p.name: p for p in planned}
    # The selected steps are kept by their producers.
    assert by_name["rlvr"].lineage.keep_steps == (120,)
    assert by_name["mopd-phase2"].lineage.keep_steps == (30,)
    for entry in planned:
        if entry.plan is None or entry.lineage.output is None:
            continue
        [checkpoints] = entry.plan.as_json()["outputs"].values()
        assert checkpoints == f"/artifacts/{entry.lineage.output}/{RUN_PLACEHOLDER}", entry.name
    # Eval serves what the export wrote, from the store.
    export, evaluation = by_name["hf-export"].plan, by_name["eval"].plan
    assert export is not None and evaluation is not None
    assert evaluation.framework_config["deployment"]["checkpoint_path"] == (
        "/artifacts/super35-rl-mopd-phase2-hf-model/latest"
    )


def test_from_and_until_select_a_slice(chain) -> None:  # type: ignore[no-untyped-def]
    assert chain.between("rlvr", "mopd-single-stage") == [
        "rlvr",
        "teacher-reasoning",
        "teacher-vision",
        "teacher-rlhf-teacher2-stage1",
        "teacher-rlhf-teacher2-stage2",
        "mopd-single-stage",
    ]
    with pytest.raises(RecipeError, match="did you mean 'teacher-vision'"):
        chain.between(None, "teacher-vison")


def test_a_step_the_producer_never_saves_is_an_error_naming_both_stages(chain) -> None:  # type: ignore[no-untyped-def]
    names = chain.between(None, "teacher-vision")
    pin = "teacher-vision:run.model=super35-rl-rlvr-model:step-125"
    with pytest.raises(RecipeError) as caught:
        plan_chain(chain, names, [pin])
    text = caught.value.render()
    assert "teacher-vision: run.model" in text and "rlvr never saves step 125" in text
    assert "checkpointing.save_period" in text and "step-120" in text


def test_a_step_the_producer_deletes_is_an_error_unless_the_pipeline_pins_it(chain) -> None:  # type: ignore[no-untyped-def]
    names = chain.between(None, "teacher-vision")
    pin = "teacher-vision:run.model=super35-rl-rlvr-model:step-130"
    with pytest.raises(RecipeError, match=r"rlvr deletes step 130 .*checkpointing.keep_top_k"):
        plan_chain(chain, names, [pin])


def test_the_producer_refuses_a_selected_step_it_would_not_save(chain) -> None:  # type: ignore[no-untyped-def]
    names = chain.between(None, "rlvr")
    with pytest.raises(RecipeError) as caught:
        plan_chain(chain, names, ["rlvr:grpo.max_num_steps=100"])
    text = caught.value.render()
    assert "lineage.keep_steps = 120" in text
    assert "up to step 100 (grpo.max_num_steps)" in text


def _pinned(image: str) -> str:
    return image.split(":")[0] + "@sha256:" + "0" * 64


def _profile(tmp_path: Path, *, store: bool = True):  # type: ignore[no-untyped-def]
    """The GB200 profile with every image pinned by digest (submit refuses tags)."""
    path = tmp_path / "artifacts"
    if store:
        init_store(path)
    profile = PROFILES["gb200-nvl72"]
    assert isinstance(profile.container, Pyxis)
    container = Pyxis(
        image=_pinned(profile.container.image), mounts=(Mount(str(tmp_path), "/shared"),)
    )
    bases = {k: attrs.evolve(v, image=_pinned(v.image)) for k, v in profile.bases.items()}
    return attrs.evolve(
        profile,
        container=container,
        bases=bases,
        artifact_store=ArtifactStore(path=str(path)),
        runs_dir=str(tmp_path),
    )


def test_submitting_through_a_blocked_or_unrunnable_stage_is_refused(chain, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    planned = plan_chain(chain, chain.between("mopd-phase1", "eval"))
    text = "\n".join(i.render() for i in chain_issues(planned, _profile(tmp_path)))
    assert "mopd-phase1: lineage.blocked" in text and "cannot run end to end" in text
    # The export mounts the pinned Megatron-Bridge checkout, which this host lacks.
    assert "hf-export: profile gb200-nvl72: code_checkouts.megatron-bridge" in text
    # Eval's client runs on this host (told to wait for the export): here it is missing.
    assert "eval: nemo-evaluator-launcher: not on this host's PATH" in text


def test_a_store_that_is_not_mounted_is_refused(chain, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    planned = plan_chain(chain, ["rlvr"])
    text = "\n".join(i.render() for i in chain_issues(planned, _profile(tmp_path, store=False)))
    assert "artifact_store.path" in text and "is not an artifact store on this host" in text
    no_store = attrs.evolve(_profile(tmp_path), artifact_store=None)
    text = "\n".join(i.render() for i in chain_issues(planned, no_store))
    assert "artifact_store: not set, and rlvr reads or writes artifacts" in text
    assert chain_issues(planned, _profile(tmp_path)) == []


def test_a_stage_needing_more_requeues_is_refused_before_any_submit(chain, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    planned = plan_chain(chain, ["rlvr"])
    profile = _profile(tmp_path)
    # 1000 steps of 10 minutes in attempts of the profile's time limit: more than Slurm's
    # default 5 requeues (no scontrol here: its default), so refused with the arithmetic.
    text = "\n".join(i.render() for i in chain_issues(planned, profile, {"rlvr": 600.0}))
    assert text.startswith("rlvr: ") and "MaxBatchRequeue" in text, text
    assert chain_issues(planned, profile, {"rlvr": 1.0}) == []
