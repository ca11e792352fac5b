"""The Super 3.5 RL stages (rl.py, teachers.py, mopd.py): layouts, routing, lineage inputs."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# default_teacher_is_routed.

# The catalogued checks these tests break (by the upstream line each cites), which the
# rule catalogue's meta-test finds by name:
# distillation_teachers_fit.

from __future__ import annotations

import pytest

from recipekit.errors import RecipeError
from recipekit.hardware import GB200_NODE, Hardware
from recipekit.lineage.refs import ArtifactRef, artifact_path
from recipekit.markers import RunInput
from recipekit.plan import make_plan
from recipekit.stage import Stage
from recipes.super35 import mopd, teachers
from recipes.super35.domains import DOMAINS, GENERAL, SELF_ANCHOR
from recipes.super35.genrm import GENRM_NODES
from recipes.super35.lineage import SUPER35, teacher_role
from recipes.super35.rl import rlvr

TEACHERS = [getattr(teachers, n) for n in dir(teachers) if n.startswith("teacher_")]
MOPD = [mopd.mopd_phase1, mopd.mopd_phase2, mopd.mopd_single_stage]
RL_STAGES: list[Stage] = [rlvr, *TEACHERS, *MOPD]


@pytest.mark.parametrize("stage", RL_STAGES, ids=lambda s: s.name)
def test_each_rl_stage_plans_on_gb200_within_the_seeds_node_range(stage: Stage) -> None:
    plan = make_plan(stage)
    layout = plan.layout.as_json()
    assert stage.hardware.node is GB200_NODE  # recipe: "RL: GB200 nodes with 4 GPUs each"
    assert 16 <= stage.hardware.num_nodes <= 144  # recipe: "16 to 144 nodes depending on the stage"
    # Every GPU is generation's, training's, a MOPD teacher's or NeMo Gym's (the GenRM), and
    # NeMo-RL's cluster is all but Gym's.
    nodes = layout["teacher_nodes"] + layout["gym_nodes"]
    gpus = layout["generation_gpus"] + layout["training_gpus"] + nodes * 4
    assert gpus == stage.hardware.total_gpus
    cluster = dict(plan.framework_config["cluster"])
    # Set where a training group crosses a node (recipekit.launch.placement, its own tests).
    segment = cluster.pop("segment_size", None)
    assert segment is None or (isinstance(segment, int) and segment >= 1)
    assert cluster == {
        "gpus_per_node": 4,
        "num_nodes": stage.hardware.num_nodes - layout["gym_nodes"],
        "master_port_range_low": 1400,
        "master_port_range_high": 1999,
    }
    assert plan.as_json()["lineage"] == SUPER35.stage(stage.name).as_json()
    assert plan.as_json()["framework"]["image"] == "nemo-rl-super35"


def test_ten_teacher_configs_and_three_mopd_configs() -> None:
    names = {s.name for s in TEACHERS} | {s.name for s in MOPD}
    expected = {s.stage for s in SUPER35.stages if s.stage.startswith(("teacher-", "mopd-"))}
    assert len(TEACHERS) == 10 and names == expected


def test_inputs_are_read_from_the_lineage() -> None:
    config = make_plan(rlvr).framework_config
    assert config["policy"]["model_name"] == "/artifacts/super35-sft-model/latest"
    assert config["policy"]["tokenizer"]["name"] == "/artifacts/super35-sft-model/latest"
    assert config["data"]["train"]["data_path"] == (
        "/artifacts/super35-rl-rlvr-data/latest/train.jsonl"
    )
    teacher = make_plan(teachers.teacher_rlhf_teacher1_stage1).framework_config
    assert teacher["policy"]["model_name"] == "/artifacts/super35-sft-model/latest"
    student = make_plan(teachers.teacher_reasoning).framework_config
    assert student["policy"]["model_name"] == "/artifacts/super35-rl-rlvr-model/step-120"


def test_a_pinned_input_moves_every_key_that_reads_it() -> None:
    plan = make_plan(rlvr, ["run.model=super35-sft-model:v3"])
    config = plan.framework_config
    assert config["policy"]["model_name"] == "/artifacts/super35-sft-model/v3"
    assert config["policy"]["tokenizer"]["chat_template"] == (
        "/artifacts/super35-sft-model/v3/chat_template.jinja"
    )
    kwargs = config["policy"]["generation"]["vllm_cfg"]["http_server_serving_chat_kwargs"]
    assert kwargs["chat_template"] == "/artifacts/super35-sft-model/v3/chat_template.jinja"
    assert plan.hash != make_plan(rlvr).hash
    assert plan.run_inputs["policy.model_name"] == "super35-sft-model:v3"


def test_a_key_reading_an_undeclared_input_is_refused() -> None:
    stage = rlvr.with_values({"policy.model_name": RunInput("teacher_reasoning")})
    with pytest.raises(RecipeError) as exc:
        make_plan(stage)
    text = exc.value.render()
    assert "policy.model_name" in text and "run.teacher_reasoning" in text
    assert "artifact inputs: data, model" in text


def test_sequence_length_moves_what_follows_it() -> None:
    config = make_plan(rlvr, ["policy.max_total_sequence_length=8192"]).framework_config
    policy = config["policy"]
    assert policy["generation"]["vllm_cfg"]["max_model_len"] == 8192
    assert policy["generation"]["max_new_tokens"] == 8192
    assert config["env"]["nemo_gym"]["policy_max_input_tokens"] == 8192
    assert config["data"]["max_input_seq_length"] == 8192
    # 2 x TP x CP: context parallelism splits each sequence into 2 x CP chunks.
    assert policy["make_sequence_length_divisible_by"] == 2 * 8 * 2


@pytest.mark.parametrize("stage", MOPD, ids=lambda s: s.name)
def test_mopd_routes_every_domain_once_and_the_rest_to_the_self_anchor(stage: Stage) -> None:
    config = make_plan(stage).framework_config
    opd = config["on_policy_distillation"]
    routes: dict[str, str] = opd["teacher_model_by_agent_name"]
    lineage = SUPER35.stage(stage.name)
    teacher_paths = {
        artifact_path(ref): role
        for role, ref in lineage.artifact_inputs().items()
        if role.startswith("teacher_")
    }
    student_start = artifact_path(lineage.inputs["model"])  # type: ignore[arg-type]
    by_teacher: dict[str, set[str]] = {}
    for agent, path in routes.items():
        role = teacher_paths.get(path, SELF_ANCHOR if path == student_start else "?")
        by_teacher.setdefault(role, set()).add(agent)
    # Every teacher the lineage reads is routed, nothing else is, and the self-anchor is there.
    assert set(by_teacher) == {*teacher_paths.values(), SELF_ANCHOR}
    for domain in DOMAINS:
        role = SELF_ANCHOR if domain.teacher == SELF_ANCHOR else teacher_role(domain.teacher)
        if role in by_teacher:
            assert by_teacher[role] == set(domain.agents)
    assert opd["default_teacher_alias"] in by_teacher[SELF_ANCHOR]
    assert by_teacher[SELF_ANCHOR] == set(GENERAL.agents)
    # The domains' environments are the ones Gym loads.
    servers = set(config["env"]["nemo_gym"]["config_paths"])
    for domain in DOMAINS:
        if set(domain.agents) <= set(routes):
            assert set(domain.servers) <= servers


def test_vision_is_distilled_in_both_phases_every_other_teacher_in_one() -> None:
    def routed(stage: Stage) -> set[str]:
        return {t for t in SUPER35.stage(stage.name).teachers}

    phase1, phase2 = routed(mopd.mopd_phase1), routed(mopd.mopd_phase2)
    assert phase1 & phase2 == {"vision"}
    assert routed(mopd.mopd_single_stage) == phase1 - {"agentic"}


def test_an_agent_owned_by_two_teachers_is_refused() -> None:
    with pytest.raises(ValueError, match="lc_judge_simple_agent is owned by two teachers"):
        mopd.routing(GENERAL)


def test_a_teacher_pin_moves_its_route() -> None:
    pin = ArtifactRef.at_version("super35-rl-teacher-vision-model", 2)
    plan = make_plan(mopd.mopd_single_stage, [f"run.teacher_vision={pin}"])
    routes = plan.framework_config["on_policy_distillation"]["teacher_model_by_agent_name"]
    assert routes["gui_coordinate_simple_agent"] == artifact_path(pin)


def test_mopd_without_room_to_train_names_the_arithmetic() -> None:
    stage = mopd.mopd_phase1.with_values(hardware=Hardware(GB200_NODE, num_nodes=14))
    with pytest.raises(RecipeError) as exc:
        make_plan(stage)
    text = exc.value.render()
    assert "6 teachers x 2 nodes and 2 generation nodes leave no training node of the 14" in text


def test_a_misspelt_default_teacher_gets_did_you_mean() -> None:
    with pytest.raises(RecipeError) as exc:
        make_plan(mopd.mopd_phase2, ["on_policy_distillation.default_teacher_alias=lc_judge"])
    text = exc.value.render()
    assert "on_policy_distillation.default_teacher_alias" in text
    assert "lc_judge_simple_agent" in text


def test_teacher_tensor_parallelism_must_tile_nvlink() -> None:
    key = "on_policy_distillation.non_colocated_teachers.default_teacher_cfg"
    with pytest.raises(RecipeError) as exc:
        make_plan(mopd.mopd_phase2, [f"{key}.tensor_model_parallel_size=3"])
    assert f"{key}.tensor_model_parallel_size" in exc.value.render()


@pytest.mark.parametrize("stage", RL_STAGES, ids=lambda s: s.name)
def test_the_genrm_judges_rlvr_and_the_rlhf_teachers_on_its_own_nodes(stage: Stage) -> None:
    # The recipe: RLVR is joint RLVR + RLHF, the RLHF teachers train on GenRM comparisons, and a
    # MOPD phase that distills them runs their agents against it; the others judge nothing
    # with it and reserve no nodes for it.
    gym = make_plan(stage).framework_config["env"]["nemo_gym"]
    judged = stage.name in ("rlvr", "mopd-phase1", "mopd-single-stage") or "rlhf" in stage.name
    assert ("genrm_model" in gym) == judged
    assert any("genrm_compare" in path for path in gym["config_paths"]) == judged
    assert gym.get("num_gpu_nodes", 0) == (GENRM_NODES if judged else 0)
    if judged:
        server = gym["genrm_model"]["responses_api_models"]["genrm_model"]
        assert server["model"] == "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-GenRM"
        serve = server["vllm_serve_kwargs"]
        assert serve["tensor_parallel_size"] * serve["data_parallel_size"] == GENRM_NODES * 4
        judge = gym["genrm_compare_resources_server"]["resources_servers"]["genrm_compare"]
        # RLVR rewards and penalises length (Ultra's student); the RLHF teachers do not.
        assert (judge["group_answer_length_penalty_coeff"] > 0) == ("rlhf" not in stage.name)


def test_gym_nodes_that_leave_no_room_are_an_error_naming_the_key() -> None:
    with pytest.raises(RecipeError) as caught:
        make_plan(rlvr, ["env.nemo_gym.num_gpu_nodes=36"])
    text = caught.value.render()
    assert "env.nemo_gym.num_gpu_nodes" in text and "take all 36 nodes" in text
