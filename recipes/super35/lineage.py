"""Nemotron 3.5 Super VL: the artifact lineage of every stage (the recipe, "Artifact Lineage").

Each stage reads its starting checkpoint from ``run.model`` and its data from ``run.data``
(MOPD also reads one ``run.teacher_<name>`` per teacher) at ``:latest`` unless pinned, and
publishes one model artifact. The selected steps are the reference run's (the recipe, "Stage 2"):
RLVR step 120 is the MOPD phase-1 student and the start of every teacher except RLHF teacher 1,
which starts from SFT; MOPD phase 2's step 30 is the release.

Where the recipe does not name something, the choice is marked ``NOT IN THE RECIPE`` with its
reason. The recipe's RL guide pages (``rl/teachers.md`` for the teachers' data artifacts,
``rl/mopd.md`` for which teacher each MOPD phase distills) are not public (none is pinned in
``3rdparty/reference/manifest.toml``);
replace those choices when the pages are available.
"""

from __future__ import annotations

from recipekit.lineage import (
    ArtifactRef,
    ExternalInput,
    Import,
    Pipeline,
    PipelinePhase,
    StageLineage,
)

PREFIX = "super35"
RLVR_SELECTED_STEP = 120  # the MOPD phase-1 student and the teachers' start
RELEASE_STEP = 30  # MOPD phase 2's released checkpoint (before MTP boosting)

PRETRAIN_MODEL = "super35-pretrain-model"
SFT_STAGE1_MODEL = "super35-sft-stage1-model"
SFT_MODEL = "super35-sft-model"
RLVR_MODEL = "super35-rl-rlvr-model"
MOPD_PHASE1_MODEL = "super35-rl-mopd-phase1-model"
MOPD_PHASE2_MODEL = "super35-rl-mopd-phase2-model"
# The recipe's Quick Start evaluates ``run.model=super35-rl-mopd-phase2-hf-model:latest``.
MOPD_PHASE2_HF_MODEL = "super35-rl-mopd-phase2-hf-model"

RLVR_AT_SELECTED_STEP = ArtifactRef.at_step(RLVR_MODEL, RLVR_SELECTED_STEP)
RELEASE = ArtifactRef.at_step(MOPD_PHASE2_MODEL, RELEASE_STEP)

# Seed, Open-Source Status: "the agentic teacher and vision-reasoning stage 2 depend on NeMo Gym
# components that are not public (an environment and a verifier). Their configs are provided
# for reference and cannot be launched, so the report's two MOPD phases cannot run end to end;
# `super35 rl mopd -c single_stage` can."
NOT_PUBLIC = (
    "depends on NeMo Gym components that are not public (an environment and a verifier); "
    "the config is provided for reference and cannot be launched"
)
MOPD_BLOCKED = (
    "the report's two MOPD phases cannot run end to end: {why}; "
    "`super35 rl mopd -c single_stage` can"
)


def teacher_model(name: str) -> str:
    """``super35-rl-teacher-<name>-model``, the recipe's name for a teacher's output."""
    return f"super35-rl-teacher-{name}-model"


def teacher_data(name: str) -> str:
    # NOT IN THE RECIPE: the recipe's table says "per teacher, see Teachers" (rl/teachers.md, not
    # available). Named like the recipe's other RL data artifacts, super35-rl-<stage>-data.
    return f"super35-rl-teacher-{name}-data"


def teacher_role(name: str) -> str:
    """The MOPD input role of a teacher: ``teacher_`` + its artifact name with '_' for '-'."""
    return "teacher_" + name.replace("-", "_")


# The recipe, Verification: "SFT -> RL hand-off | Automatic Megatron -> HF conversion in the RL
# runner | Not tested end to end". The RL stages that start from SFT say so in their plan.
SFT_TO_RL = (
    "run.model is a Megatron-Bridge checkpoint (SFT's output); NeMo-RL's runner converts it to "
    "Hugging Face format when it loads it (NVIDIA's Nemotron 3.5 Super training recipe, "
    "Verification: automatic Megatron -> HF conversion in the RL runner, not tested end to end). "
    "The processor, tokenizer and chat template come from that checkpoint too, not from the "
    "Hugging Face repo the recipe names: the nodes read the store, and the released repo is "
    "the post-trained model, not this stage's start"
)


def _stage(
    stage: str,
    command: str,
    *,
    model: ArtifactRef | ExternalInput,
    data: ArtifactRef | ExternalInput | None,
    output: str | None,
    teachers: tuple[str, ...] = (),
    blocked: str = "",
    output_note: str = "",
    handoff: str = "",
) -> StageLineage:
    inputs: dict[str, ArtifactRef | ExternalInput] = {"model": model}
    if data is not None:
        inputs["data"] = data
    for name in teachers:
        inputs[teacher_role(name)] = ArtifactRef(teacher_model(name))
    return StageLineage(
        stage=stage,
        command=command,
        inputs=inputs,
        output=output,
        blocked=blocked,
        output_note=output_note,
        handoff=handoff,
    )


# --- Stage 0: pretraining (Megatron-Bridge image-caption) ------------------------------------
INIT_CHECKPOINT = ExternalInput("Converted checkpoint", env_var="SUPER35_INIT_CHECKPOINT")
PRETRAIN_DATA = ExternalInput("Energon image-caption data", env_var="SUPER35_PRETRAIN_DATA")

PRETRAIN = (
    _stage(
        "pretrain",
        "super35 pretrain",
        model=INIT_CHECKPOINT,
        data=PRETRAIN_DATA,
        output=PRETRAIN_MODEL,
    ),
    # NOT IN THE RECIPE: the tiny configs' artifacts. Named as Nemotron 3 Super's tiny configs name
    # theirs (nemotron recipes/super3/stage{0_pretrain,1_sft}/config/test.yaml: "-tiny" suffix).
    _stage(
        "pretrain-tiny",
        "super35 pretrain -c tiny",
        model=INIT_CHECKPOINT,
        data=PRETRAIN_DATA,
        output=f"{PRETRAIN_MODEL}-tiny",
    ),
)

# --- Stage 1: SFT ------------------------------------------------------------------------------
SFT = (
    _stage(
        "sft",
        "super35 sft",
        model=ArtifactRef(PRETRAIN_MODEL),
        data=ArtifactRef("super35-sft-data"),
        output=SFT_STAGE1_MODEL,
    ),
    _stage(
        "sft-stage2",
        "super35 sft -c stage2",
        model=ArtifactRef(SFT_STAGE1_MODEL),
        data=ArtifactRef("super35-sft-stage2-data"),
        output=SFT_MODEL,
    ),
    _stage(
        "sft-peft",
        "super35 sft -c peft",
        model=ArtifactRef(PRETRAIN_MODEL),
        data=ArtifactRef("super35-sft-data"),
        output="super35-sft-peft-model",
    ),
    _stage(
        "sft-long-context",
        "super35 sft -c long_context",
        model=ArtifactRef(PRETRAIN_MODEL),
        data=ExternalInput("built-in dataset"),
        output="super35-sft-long-context-model",
    ),
    _stage(
        "sft-tiny",
        "super35 sft -c tiny",
        model=ArtifactRef(f"{PRETRAIN_MODEL}-tiny"),
        data=ArtifactRef("super35-sft-data"),
        output=f"{SFT_MODEL}-tiny",
    ),
)

# --- Stage 2.1: RLVR ---------------------------------------------------------------------------
RLVR = _stage(
    "rlvr",
    "super35 rl rlvr",
    model=ArtifactRef(SFT_MODEL),
    data=ArtifactRef("super35-rl-rlvr-data"),
    output=RLVR_MODEL,
    handoff=SFT_TO_RL,
)


# --- Stage 2.2: specialist teachers (six teachers, ten configs) ---------------------------------
def _single_teacher(name: str, *, blocked: str = "") -> StageLineage:
    return _stage(
        f"teacher-{name}",
        f"super35 rl teacher {name}",
        model=RLVR_AT_SELECTED_STEP,
        data=ArtifactRef(teacher_data(name)),
        output=teacher_model(name),
        blocked=blocked,
    )


def _two_stage_teacher(
    name: str, command: str, first: ArtifactRef, *, blocked_second: str = ""
) -> tuple[StageLineage, StageLineage]:
    # NOT IN THE RECIPE: the artifact between a teacher's two stages. Named as SFT names its own
    # (stage 1 publishes super35-sft-stage1-model, stage 2 the final super35-sft-model), so the
    # final teacher artifact keeps the recipe's super35-rl-teacher-<name>-model.
    stage1_model = teacher_model(f"{name}-stage1")
    first_stage = _stage(
        f"teacher-{name}-stage1",
        f"{command} -c stage1",
        model=first,
        data=ArtifactRef(teacher_data(f"{name}-stage1")),
        output=stage1_model,
    )
    second_stage = _stage(
        f"teacher-{name}-stage2",
        f"{command} -c stage2",
        model=ArtifactRef(stage1_model),
        data=ArtifactRef(teacher_data(f"{name}-stage2")),
        output=teacher_model(name),
        blocked=blocked_second,
    )
    return first_stage, second_stage


def _rlhf_teacher(number: int, first: ArtifactRef) -> tuple[StageLineage, StageLineage]:
    name = f"rlhf-teacher{number}"
    stages = []
    for part, model in ((1, first), (2, ArtifactRef(teacher_model(f"{name}-stage1")))):
        stages.append(
            _stage(
                f"teacher-{name}-stage{part}",
                f"super35 rl teacher rlhf -c teacher{number}_stage{part}",
                model=model,
                data=ArtifactRef(teacher_data(f"{name}-stage{part}")),
                # As for the two-stage teachers above: stage 1 publishes <name>-stage1.
                output=teacher_model(f"{name}-stage1" if part == 1 else name),
                handoff=SFT_TO_RL if model.name == SFT_MODEL else "",
            )
        )
    return stages[0], stages[1]


TEACHERS = (
    _single_teacher("reasoning"),
    _single_teacher("vision"),
    _single_teacher("video"),
    _single_teacher("agentic", blocked=NOT_PUBLIC),
    # The vision-reasoning teacher starts from RLVR step 120: the reference run's choice, which
    # the recipe says this recipe follows rather than the report.
    *_two_stage_teacher(
        "vision-reasoning",
        "super35 rl teacher vision-reasoning",
        RLVR_AT_SELECTED_STEP,
        blocked_second=NOT_PUBLIC,
    ),
    # RLHF teacher 1 starts from SFT (the reference run, not the report); teacher 2 from RLVR.
    *_rlhf_teacher(1, ArtifactRef(SFT_MODEL)),
    *_rlhf_teacher(2, RLVR_AT_SELECTED_STEP),
)

# --- Stage 2.3: MOPD ---------------------------------------------------------------------------
# NOT IN THE RECIPE: which teacher each phase distills (rl/mopd.md). The recipe fixes only that
# vision tool use is distilled in both phases and every other teacher in one; that phase 1 has
# the agentic teacher (single_stage is "phase 1 apart from the agentic teacher" and can run);
# and that vision-reasoning stage 2 keeps the phases from running, so it is phase 2's. The rest
# (reasoning and both RLHF teachers in phase 1, video in phase 2) follow Nemotron 3 Ultra's MOPD
# stage 1 (nemo-rl main examples/nemo_gym/nemotron-3-ultra/mopd.yaml: reasoning, rlhf) and put
# the visual teachers together.
MOPD_PHASE1_TEACHERS = ("reasoning", "vision", "agentic", "rlhf-teacher1", "rlhf-teacher2")
MOPD_PHASE2_TEACHERS = ("vision", "video", "vision-reasoning")
MOPD_SINGLE_STAGE_TEACHERS = tuple(t for t in MOPD_PHASE1_TEACHERS if t != "agentic")

MOPD = (
    _stage(
        "mopd-phase1",
        "super35 rl mopd",
        model=RLVR_AT_SELECTED_STEP,
        data=ArtifactRef("super35-rl-mopd-phase1-data"),
        output=MOPD_PHASE1_MODEL,
        teachers=MOPD_PHASE1_TEACHERS,
        blocked=MOPD_BLOCKED.format(why="phase 1 distills the agentic teacher, which is blocked"),
    ),
    _stage(
        "mopd-phase2",
        "super35 rl mopd -c phase2",
        model=ArtifactRef(MOPD_PHASE1_MODEL),
        data=ArtifactRef("super35-rl-mopd-phase2-data"),
        output=MOPD_PHASE2_MODEL,
        teachers=MOPD_PHASE2_TEACHERS,
        blocked=MOPD_BLOCKED.format(
            why="phase 2 starts from phase 1 and distills vision-reasoning stage 2, both blocked"
        ),
    ),
    # NOT IN THE RECIPE: single_stage's artifacts. It is "a port of NeMo-RL's mopd.yaml; same
    # settings as phase 1 apart from the agentic teacher", so it reads phase 1's student and
    # data; its output is named like the other MOPD outputs.
    _stage(
        "mopd-single-stage",
        "super35 rl mopd -c single_stage",
        model=RLVR_AT_SELECTED_STEP,
        data=ArtifactRef("super35-rl-mopd-phase1-data"),
        output="super35-rl-mopd-single-stage-model",
        teachers=MOPD_SINGLE_STAGE_TEACHERS,
    ),
)

# --- Stage 3: evaluation -----------------------------------------------------------------------
EVAL = _stage(
    "eval",
    "super35 eval",
    model=ArtifactRef(MOPD_PHASE2_HF_MODEL),
    data=None,
    output=None,
    output_note="Evaluation results",
)

# Not a CLI stage: "export the RL checkpoint to HF first" (the recipe, Quick Start), from the
# release.
HF_EXPORT = _stage(
    "hf-export",
    "HF export of the release (recipe: Evaluation)",
    model=RELEASE,
    data=None,
    output=MOPD_PHASE2_HF_MODEL,
)

# --- Imports (the recipe, CLI reference: data import / model import) -----------------------
_RL_DATA = [
    "super35-rl-rlvr-data",
    *(teacher_data(n) for n in ("reasoning", "vision", "video", "agentic")),
    *(teacher_data(f"{n}-stage{p}") for n in ("vision-reasoning",) for p in (1, 2)),
    *(teacher_data(f"rlhf-teacher{t}-stage{p}") for t in (1, 2) for p in (1, 2)),
    "super35-rl-mopd-phase1-data",
    "super35-rl-mopd-phase2-data",
]
IMPORTS = (
    Import("super35-sft-data", "super35 data import sft PATH"),
    Import(
        "super35-sft-stage2-data", "super35 data import sft PATH --name super35-sft-stage2-data"
    ),
    Import("super35-rl-rlvr-data", "super35 data import rl PATH"),
    *(
        Import(name, f"super35 data import rl PATH --name {name}")
        for name in _RL_DATA
        if name != "super35-rl-rlvr-data"
    ),
    Import(PRETRAIN_MODEL, "super35 model import pretrain PATH"),
    Import(SFT_MODEL, "super35 model import sft PATH"),
    Import(RLVR_MODEL, "super35 model import rl PATH"),
)

SUPER35 = Pipeline(
    name="super35",
    stages=(*PRETRAIN, *SFT, RLVR, *TEACHERS, *MOPD, EVAL),
    conversions=(HF_EXPORT,),
    imports=IMPORTS,
    release=RELEASE,
    # The recipe's stages, in its order: what the drawing lays out as bands.
    phases=(
        PipelinePhase("pretrain", [s.stage for s in PRETRAIN]),
        PipelinePhase("SFT", [s.stage for s in SFT]),
        PipelinePhase("RL trunk (RLVR)", [RLVR.stage]),
        PipelinePhase("teachers", [s.stage for s in TEACHERS]),
        PipelinePhase("MOPD", [s.stage for s in MOPD]),
        PipelinePhase("export", [HF_EXPORT.stage]),
        PipelinePhase("eval", [EVAL.stage]),
    ),
)
