"""The Super 3.5 lineage is the recipe's: the recipe, "Artifact Lineage" (the table under the
diagram), "Stage 2: Reinforcement Learning" (the selected steps) and "Open-Source Status"
(the blocked stages)."""

from recipekit.lineage import ArtifactRef, StageLineage
from recipes.super35.lineage import SUPER35, teacher_model

# The recipe, "Artifact Lineage", the table: stage -> (run.model, run.data, output). Rows that
# the recipe writes as "peft / long_context" are split; "(or an imported checkpoint)" is
# `model import pretrain`, checked below. `model` carries the selected step where the recipe's
# Stage 2 text gives one ("Step 120 is the MOPD phase-1 student").
SEED_TABLE: dict[str, tuple[str, str | None, str | None]] = {
    "pretrain": (
        "${SUPER35_INIT_CHECKPOINT}",
        "${SUPER35_PRETRAIN_DATA}",
        "super35-pretrain-model",
    ),
    "sft": ("super35-pretrain-model:latest", "super35-sft-data:latest", "super35-sft-stage1-model"),
    "sft-stage2": (
        "super35-sft-stage1-model:latest",
        "super35-sft-stage2-data:latest",
        "super35-sft-model",
    ),
    "sft-peft": (
        "super35-pretrain-model:latest",
        "super35-sft-data:latest",
        "super35-sft-peft-model",
    ),
    "sft-long-context": (
        "super35-pretrain-model:latest",
        "(built-in dataset)",
        "super35-sft-long-context-model",
    ),
    "rlvr": ("super35-sft-model:latest", "super35-rl-rlvr-data:latest", "super35-rl-rlvr-model"),
    "mopd-phase1": (
        "super35-rl-rlvr-model:step-120",
        "super35-rl-mopd-phase1-data:latest",
        "super35-rl-mopd-phase1-model",
    ),
    "mopd-phase2": (
        "super35-rl-mopd-phase1-model:latest",
        "super35-rl-mopd-phase2-data:latest",
        "super35-rl-mopd-phase2-model",
    ),
    # "An HF export of the RL output" (the Quick Start's super35-rl-mopd-phase2-hf-model); no
    # data ("—"); "Evaluation results", not an artifact.
    "eval": ("super35-rl-mopd-phase2-hf-model:latest", None, None),
}
# The table's `rl teacher <name>` row: every teacher starts from RLVR (step 120, seed Stage 2)
# except RLHF teacher 1, which starts from SFT; each publishes super35-rl-teacher-<name>-model.
TEACHER_START = {
    "reasoning": "super35-rl-rlvr-model:step-120",
    "vision": "super35-rl-rlvr-model:step-120",
    "video": "super35-rl-rlvr-model:step-120",
    "agentic": "super35-rl-rlvr-model:step-120",
    "vision-reasoning": "super35-rl-rlvr-model:step-120",
    "rlhf-teacher1": "super35-sft-model:latest",
    "rlhf-teacher2": "super35-rl-rlvr-model:step-120",
}
# The recipe, "CLI Reference": one stage per built-in config.
CLI_TABLE_STAGES = {
    "pretrain", "pretrain-tiny",
    "sft", "sft-stage2", "sft-peft", "sft-long-context", "sft-tiny",
    "rlvr",
    "teacher-reasoning", "teacher-vision", "teacher-video", "teacher-agentic",
    "teacher-vision-reasoning-stage1", "teacher-vision-reasoning-stage2",
    "teacher-rlhf-teacher1-stage1", "teacher-rlhf-teacher1-stage2",
    "teacher-rlhf-teacher2-stage1", "teacher-rlhf-teacher2-stage2",
    "mopd-phase1", "mopd-phase2", "mopd-single-stage",
    "eval",
}  # fmt: skip
# The recipe, "Open-Source Status": the agentic teacher and vision-reasoning stage 2 are blocked,
# "so the report's two MOPD phases cannot run end to end".
BLOCKED = {"teacher-agentic", "teacher-vision-reasoning-stage2", "mopd-phase1", "mopd-phase2"}


def _row(stage: StageLineage) -> tuple[str, str | None, str | None]:
    data = stage.inputs.get("data")
    return str(stage.inputs["model"]), None if data is None else str(data), stage.output


def test_every_cli_config_is_a_stage() -> None:
    assert {s.stage for s in SUPER35.stages} == CLI_TABLE_STAGES


def test_stages_read_and_publish_what_the_seed_table_says() -> None:
    assert {name: _row(SUPER35.stage(name)) for name in SEED_TABLE} == SEED_TABLE
    assert SUPER35.stage("eval").output_note == "Evaluation results"


def test_teachers_start_where_the_seed_says_and_publish_its_names() -> None:
    for name, start in TEACHER_START.items():
        names = (f"teacher-{name}", f"teacher-{name}-stage1", f"teacher-{name}-stage2")
        stages = [s for s in SUPER35.stages if s.stage in names]
        first, last = stages[0], stages[-1]
        assert str(first.inputs["model"]) == start, name
        assert last.output == teacher_model(name), name
        if len(stages) == 2:  # stage 2 continues from stage 1
            assert first.output is not None
            assert last.inputs["model"] == ArtifactRef(first.output)


def test_selected_steps_and_release() -> None:
    assert SUPER35.selected_steps() == {
        "super35-rl-mopd-phase2-model": (30,),
        "super35-rl-rlvr-model": (120,),
    }
    assert str(SUPER35.release) == "super35-rl-mopd-phase2-model:step-30"
    # The HF export eval reads is made from the release.
    assert SUPER35.stage("hf-export").inputs["model"] == SUPER35.release


def test_blocked_stages_carry_the_seeds_reason() -> None:
    assert {s.stage for s in SUPER35.stages if s.blocked} == BLOCKED
    for name in ("teacher-agentic", "teacher-vision-reasoning-stage2"):
        assert "NeMo Gym components that are not public" in SUPER35.stage(name).blocked
    for name in ("mopd-phase1", "mopd-phase2"):
        assert "cannot run end to end" in SUPER35.stage(name).blocked
    # A stage that consumes a blocked stage's output is blocked too (eval can be pointed at any
    # HF export, so it is not).
    producers = SUPER35.producers()
    for stage in SUPER35.stages:
        upstream = [producers.get(r.name) for r in stage.artifact_inputs().values()]
        if any(p in BLOCKED for p in upstream):
            assert stage.stage in BLOCKED, stage.stage


def test_mopd_teachers_each_distilled_once_vision_twice() -> None:
    phase1, phase2 = SUPER35.stage("mopd-phase1"), SUPER35.stage("mopd-phase2")
    teachers = {n for n in TEACHER_START}
    assert set(phase1.teachers) | set(phase2.teachers) == {n.replace("-", "_") for n in teachers}
    assert set(phase1.teachers) & set(phase2.teachers) == {"vision"}
    single = SUPER35.stage("mopd-single-stage")
    assert set(single.teachers) == set(phase1.teachers) - {"agentic"}
    for stage in (phase1, phase2, single):
        for name, ref in stage.teachers.items():
            assert isinstance(ref, ArtifactRef)
            assert ref.name == teacher_model(name.replace("_", "-"))


def test_every_input_is_published_or_imported_and_there_is_no_cycle() -> None:
    known = set(SUPER35.producers()) | set(SUPER35.imported())
    for step in SUPER35.steps():
        for ref in step.artifact_inputs().values():
            assert ref.name in known, (step.stage, str(ref))
    assert sorted(SUPER35.order()) == sorted(s.stage for s in SUPER35.steps())
    # The recipe's imports: data import sft|rl, model import pretrain|sft|rl.
    imported = SUPER35.imported()
    assert imported["super35-sft-data"] == "super35 data import sft PATH"
    assert imported["super35-rl-rlvr-data"] == "super35 data import rl PATH"
    assert imported["super35-pretrain-model"] == "super35 model import pretrain PATH"
    assert imported["super35-sft-model"] == "super35 model import sft PATH"
    assert imported["super35-rl-rlvr-model"] == "super35 model import rl PATH"


def test_walking_from_eval_reaches_pretrain_without_a_missing_producer() -> None:
    producers = SUPER35.producers()
    chain, step = [], SUPER35.stage("eval")
    while True:
        chain.append(step.stage)
        model = step.inputs["model"]
        if not isinstance(model, ArtifactRef):
            break
        step = SUPER35.stage(producers[model.name])
    assert chain == [
        "eval", "hf-export", "mopd-phase2", "mopd-phase1", "rlvr", "sft-stage2", "sft", "pretrain",
    ]  # fmt: skip


def test_the_stages_that_start_from_sft_state_the_hand_off() -> None:
    from recipes.super35.lineage import SFT_TO_RL, SUPER35

    stated = {s.stage for s in SUPER35.steps() if s.handoff}
    assert stated == {"rlvr", "teacher-rlhf-teacher1-stage1"}
    assert SUPER35.stage("rlvr").handoff == SFT_TO_RL
