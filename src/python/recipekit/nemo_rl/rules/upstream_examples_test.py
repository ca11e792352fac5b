"""NeMo-RL's own example configs, both pinned branches, as ``recipekit import-yaml`` makes them and
``plan`` plans them: the framework accepts its examples, so a refusal of one is recipekit's to
explain. Each config either plans, or is refused only on the keys ``REFUSED`` lists, with why
(the framework fails on them too, or recipekit's model of it falls short, said so). The stage's
hardware comes from the YAML's cluster, so a config written for another node type than the
importer's default is refused on ``cluster.*``, which is not counted here.

Found with it: an imported stage's placeholder model card read as "a dense model" and "no layer
count"; NeMo Gym's runner's own rule applied to run_grpo.py; super-v3's GRPO placing NeMo Gym's
judges inside cluster.num_nodes, which the node split ignored; main's Gym nodes left out of an
imported stage's hardware; Dynamo and TRT-LLM not counted as async engines; expandable segments
in a training worker's env_vars refused as if vLLM read them; vLLM tensor parallelism across
nodes and a packing budget below the sequence length refused where they are risks; the importer
moving a whole generation section where one key inside it was rejected (PPO's unused
mcore_generation_config); the null TRT-LLM's example gives a NotRequired key that NeMo-RL reads
only with ``.get`` (tools/generate_declared.py); four of super-v3's Megatron examples that
its Megatron worker, replayed, cannot start (no ``mtp_*`` keys).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from recipekit.errors import RecipeError
from recipekit.nemo_rl.rules.conftest import imported_stage
from recipekit.plan import make_plan
from recipekit.stage import Stage

ONE_NODE_WITH_GYM = "super-v3/examples/configs/grpo_superv3.yaml"
EXCLUDED = {
    "main/examples/nemo_gym/prefetch_super_all_envs.yaml",  # a Gym prefetch list, no run config
    "super-v3/examples/configs/super/small_stage2_swe_pivot_8node.yaml",  # defaults: a missing file
}
ULTRA = (
    "84 (or 70) training nodes after generation's: TP x CP and EP x PP do not divide their GPUs, "
    "and with its segment_size 16 NeMo-RL's select_segment_nodes raises for a node count that "
    "is no multiple of it; ultra_launch.sh sets the run's real counts"
)
MTP = {
    f"megatron_cfg.mtp_{key}"
    for key in ("detach_heads", "loss_scaling_factor", "num_layers", "use_repeated_layer")
}
STALE_MTP = (
    "no mtp_* keys in its megatron_cfg: super-v3's Megatron worker reads them without a "
    "default (setup.py, _apply_mtp_config), a KeyError before the model is built"
)
# config -> (the keys it is refused on, why the refusal stands)
REFUSED: dict[str, tuple[set[str], str]] = {
    "main/examples/configs/grpo_sliding_puzzle.yaml": (
        {"policy.dtensor_cfg.cpu_offload"},
        "CPU offload on its one GPU: the v2 DTensor worker raises NotImplementedError "
        "(nemo_rl/models/automodel/setup.py)",
    ),
    "main/examples/configs/prorlv2_1_moe.v2.yaml": (
        {"grpo.batch_multiplier"},
        "batch_multiplier 1.5 without dynamic sampling: GRPO's setup asserts it is 1",
    ),
    **{
        f"main/examples/nemo_gym/nemotron-3-ultra/{name}.yaml": (
            {"policy.megatron_cfg", "policy.megatron_cfg.expert_model_parallel_size"},
            ULTRA,
        )
        for name in ("mopd", "reasoning_teacher", "student_rlvr1", "student_rlvr2")
    },
    "super-v3/examples/configs/distillation_math_megatron.yaml": (
        {f"{section}.{key}" for section in ("policy", "teacher") for key in MTP},
        STALE_MTP,
    ),
    **{
        f"super-v3/examples/{name}.yaml": ({f"policy.{key}" for key in MTP}, STALE_MTP)
        for name in (
            "configs/sft_openmathinstruct2_megatron",
            "configs/vlm_grpo_3B_megatron",
            "nemo_gym/grpo_nanov3",
        )
    },
    ONE_NODE_WITH_GYM: (
        {"env.nemo_gym.num_gpu_nodes"},
        "one node with NeMo Gym's judges on four: super-v3's GRPO asserts a cluster of more "
        "than one node (nemo_gym_nodes_leave_the_policy_nodes)",
    ),
}


def _corpus(reference: Path) -> list[str]:
    root = reference / "nemo-rl"
    names = sorted(str(p.relative_to(root)) for p in root.glob("**/*.yaml"))
    return [name for name in names if name not in EXCLUDED]


def _refused_on(stage: Stage) -> set[str]:
    try:
        make_plan(stage, check_pins=False)
    except RecipeError as exc:
        return {i.path for i in exc.issues if not i.path.startswith("cluster.")}
    return set()


def test_nemo_rls_own_examples_plan_or_are_refused_for_a_recorded_reason(
    reference_dir: Path, tmp_path: Path
) -> None:
    names = _corpus(reference_dir)
    if not names:
        pytest.skip(f"no NeMo-RL example configs under {reference_dir}")
    assert len(names) >= 150 and set(REFUSED) <= set(names)
    found = {}
    for index, name in enumerate(names):
        module_dir = tmp_path / str(index)
        module_dir.mkdir()
        refused = _refused_on(imported_stage(reference_dir / "nemo-rl" / name, module_dir))
        if refused:
            found[name] = refused
    assert found == {name: keys for name, (keys, _) in REFUSED.items()}


def test_super_v3s_nemo_gym_judges_come_out_of_the_policys_nodes(
    reference_dir: Path, tmp_path: Path
) -> None:
    # stage1_rlvr.yaml: 109 nodes, 72 for generation and 5 for Gym's judges (grpo.py's setup
    # takes them from cluster.num_nodes), so the policy trains on 32 nodes, which TP 4 x CP 8
    # divides; 37 would not.
    example = reference_dir / "nemo-rl/super-v3/examples/configs/super/stage1_rlvr.yaml"
    if not example.is_file():
        pytest.skip(f"{example} is not here")
    stage = imported_stage(example, tmp_path)
    plan = make_plan(stage, check_pins=False)
    assert plan.layout is not None
    assert plan.layout.nodes.training_nodes == 32  # type: ignore[attr-defined]
    one_node = imported_stage(reference_dir / "nemo-rl" / ONE_NODE_WITH_GYM, tmp_path)
    with pytest.raises(RecipeError) as exc:
        make_plan(one_node, check_pins=False)
    [issue] = [i.render() for i in exc.value.issues if i.path == "env.nemo_gym.num_gpu_nodes"]
    assert "Gym's judge nodes need a cluster of more than one" in issue
    assert "grpo.py:" in issue and "@ super-v3" in issue
