"""The job rules every framework's stage obeys: shared storage (NVIDIA-NeMo/RL#1770), no
expandable segments beside colocated vLLM (NVIDIA-NeMo/RL#2319, #2471), at plan time, at
submit and in preflight; and no secret written into a stage."""

# The catalogued checks these tests break, which the rule catalogue's meta-test finds by
# name (recorded from the checks that produced an issue while these tests ran):
# no_expandable_segments_with_colocated_vllm, paths_on_shared_storage, no_secrets_written.

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest

from recipekit.errors import RecipeError
from recipekit.hardware import H100_NODE
from recipekit.job_rules import paths_on_shared_storage, preflight_rules, relative
from recipekit.launch.profile import ClusterProfile, NoContainer
from recipekit.launch.submit import job_environment_issues, job_memory_issues
from recipekit.nemo_rl.run_env import from_env
from recipekit.plan import Plan, make_plan
from recipekit.stage import Stage
from recipes.super3.dapo import dapo_h100
from recipes.super35.evaluation import evaluation
from recipes.super35.pretrain import pretrain
from recipes.super35.rl import rlvr
from recipes.super35.sft import sft

EXPANDABLE = "expandable_segments:True"


def _warnings(stage: Stage, *overrides: str) -> list[str]:
    return [issue.render() for issue in make_plan(stage, overrides).warnings]


def _errors(stage: Stage, *overrides: str) -> list[str]:
    with pytest.raises(RecipeError) as exc:
        make_plan(stage, overrides)
    return [issue.render() for issue in exc.value.issues]


def _profile(tmp_path: Path, **changes: Any) -> ClusterProfile:
    (tmp_path / "runs").mkdir(exist_ok=True)
    return ClusterProfile(
        name="local",
        node=H100_NODE,
        partition="gpu",
        container=NoContainer(python="/usr/bin/python3"),
        runs_dir=str(tmp_path / "runs"),
        **changes,
    )


def _submit_refusals(plan: Plan, profile: ClusterProfile) -> list[str]:
    return [issue.render() for issue in job_environment_issues(plan, profile)]


# --- shared storage --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stage", "overrides", "environment", "key"),
    [
        (rlvr, ("checkpointing.checkpoint_dir=/tmp/ckpt",), {}, "checkpointing.checkpoint_dir"),
        (rlvr, (), {"HF_HOME": "/tmp/hf"}, "environment.HF_HOME"),
        (rlvr, (), {"NRL_MEGATRON_CHECKPOINT_DIR": "/dev/shm/c"}, "environment.NRL_MEGATRON"),
        (
            rlvr,
            ("policy.megatron_cfg.env_vars={HF_HOME: /tmp/hf}",),
            {},
            "policy.megatron_cfg.env_vars.HF_HOME",
        ),
        (rlvr, ("policy.model_name=/tmp/model",), {}, "policy.model_name"),
        (sft, ("checkpoint.save=/tmp/sft",), {}, "checkpoint.save"),
        (sft, ("checkpoint.pretrained_checkpoint=/tmp/base",), {}, "checkpoint.pretrained"),
        (sft, ("dataset.path=/var/tmp/data",), {}, "dataset.path"),
        (sft, (), {"TRITON_CACHE_DIR": "/tmp/triton"}, "environment.TRITON_CACHE_DIR"),
        (evaluation, ("execution.output_dir=/tmp/eval",), {}, "execution.output_dir"),
        (evaluation, ("deployment.checkpoint_path=/tmp/m",), {}, "deployment.checkpoint_path"),
        # A relative path resolves in each node's container, the image's working directory.
        (rlvr, ("checkpointing.checkpoint_dir=results/grpo",), {}, "checkpointing.checkpoint_dir"),
        (sft, ("checkpoint.save=checkpoints/sft",), {}, "checkpoint.save"),
        (rlvr, (), {"HF_HOME": "hf_cache"}, "environment.HF_HOME"),
    ],
)
def test_a_node_local_path_across_hosts_is_a_warning_at_plan_time(
    stage: Stage, overrides: tuple[str, ...], environment: dict[str, str], key: str
) -> None:
    # The plan cannot see the cluster's mounts (a test cluster on one host shares /tmp):
    # submit and preflight, which know the profile's shared storage, refuse a written one.
    stage = attrs.evolve(stage, environment={**stage.environment, **environment})
    found = [w for w in _warnings(stage, *overrides) if w.startswith(key)]
    assert found and "RL#1770" in found[0], _warnings(stage, *overrides)


def test_a_relative_written_path_names_why() -> None:
    (found,) = (
        w
        for w in _warnings(rlvr, "checkpointing.checkpoint_dir=results/grpo")
        if w.startswith("checkpointing.checkpoint_dir")
    )
    assert "a relative path (each node resolves it in its own container's" in found


def test_a_relative_read_path_may_be_a_hub_name() -> None:
    assert [relative(p) for p in ("results/x", "/abs", "s3://b/k", "$HOME/x", "~/x")] == [
        True,
        False,
        False,
        False,
        False,
    ]
    plan = {
        "hardware": {"num_nodes": 2},
        "inputs": {"model": "Qwen/Qwen2.5-1.5B"},
        "outputs": {},
        "config": {},
    }
    assert paths_on_shared_storage(plan, []) == ([], [])


def test_a_node_local_path_on_one_node_is_fine() -> None:
    one_node = attrs.evolve(
        rlvr, hardware=attrs.evolve(rlvr.hardware, num_nodes=1), environment={"HF_HOME": "/tmp"}
    )
    assert not any("RL#1770" in w for w in _warnings_or_errors(one_node))


def _warnings_or_errors(stage: Stage) -> list[str]:
    try:
        return _warnings(stage)
    except RecipeError as exc:
        return [issue.render() for issue in exc.issues]


def test_submit_refuses_the_profiles_node_local_hf_home(tmp_path: Path) -> None:
    plan = make_plan(rlvr)
    refused = _submit_refusals(plan, _profile(tmp_path, hf_home="/tmp/hf"))
    assert any(r.startswith("profile local: hf_home") and "RL#1770" in r for r in refused)
    local = _profile(tmp_path, extra_env={"HF_DATASETS_CACHE": "/dev/shm/d"})
    refused = _submit_refusals(plan, local)
    assert any(r.startswith("profile local: extra_env.HF_DATASETS_CACHE") for r in refused)


def test_submit_takes_a_node_local_root_the_profile_shares(tmp_path: Path) -> None:
    plan = make_plan(rlvr, ["checkpointing.checkpoint_dir=/tmp/shared/ckpt"])
    refused = _submit_refusals(plan, _profile(tmp_path, hf_home="/tmp/shared/hf"))
    assert {r.split(" = ")[0] for r in refused} == {
        "profile local: hf_home",
        "checkpointing.checkpoint_dir",
    }
    shared = _profile(tmp_path, hf_home="/tmp/shared/hf", shared_paths={"s": "/tmp/shared"})
    assert _submit_refusals(plan, shared) == []


def test_preflight_refuses_a_node_local_cache_in_the_job_environment() -> None:
    plan = make_plan(rlvr).as_json()
    refused = [i.render() for i in preflight_rules(plan, [], {"HF_HOME": "/tmp/hf"})]
    assert refused and refused[0].startswith("job environment HF_HOME")
    assert preflight_rules(plan, ["/tmp"], {"HF_HOME": "/tmp/hf"}) == []


def test_preflight_refuses_nemo_rls_conversion_under_a_scratch_home() -> None:
    plan = make_plan(rlvr).as_json()
    refused = [i.render() for i in preflight_rules(plan, [], {"HOME": "/tmp/home"})]
    assert refused and "unset, so /tmp/home/.cache/huggingface" in refused[0]
    assert preflight_rules(plan, [], {"HOME": "/home/alice"}) == []
    assert preflight_rules(plan, [], {"HOME": "/tmp/h", "HF_HOME": "/shared/hf"}) == []


# --- expandable segments beside colocated vLLM ------------------------------------------------


def test_expandable_segments_in_the_stage_environment_are_refused() -> None:
    stage = attrs.evolve(
        dapo_h100, environment={**dapo_h100.environment, "PYTORCH_CUDA_ALLOC_CONF": EXPANDABLE}
    )
    errors = _errors(stage)
    assert any(
        e.startswith("environment.PYTORCH_CUDA_ALLOC_CONF") and "RL#2319" in e for e in errors
    )


def test_expandable_segments_in_vllms_env_vars_are_refused_a_training_workers_stand() -> None:
    # vLLM's workers get vllm_cfg.env_vars; a training backend's env_vars reach its own
    # processes only (NeMo-RL's lm_policy.py), where vLLM does not run: NeMo-RL's DTensor
    # examples set expandable segments there beside colocated vLLM.
    from recipekit.job_rules import no_expandable_segments_with_colocated_vllm

    colocated = make_plan(dapo_h100).as_json()
    for training in ("policy.megatron_cfg.env_vars", "policy.dtensor_cfg.env_vars"):
        plan = make_plan(dapo_h100, (f"{training}={{PYTORCH_CUDA_ALLOC_CONF: '{EXPANDABLE}'}}",))
        assert not [w for w in plan.warnings if "sleep and wake" in w.message]

    def refused(key: str) -> list[str]:
        env = {"PYTORCH_CUDA_ALLOC_CONF": (f"{key}.PYTORCH_CUDA_ALLOC_CONF", EXPANDABLE)}
        return [i.path for i in no_expandable_segments_with_colocated_vllm(colocated, [env])]

    vllm = "policy.generation.vllm_cfg.env_vars"  # main's key (super-v3 has none)
    assert refused(vllm) == [f"{vllm}.PYTORCH_CUDA_ALLOC_CONF"]
    assert refused("policy.dtensor_cfg.env_vars") == []
    assert refused("teacher.megatron_cfg.env_vars") == []


def test_expandable_segments_without_colocated_vllm_plan() -> None:
    # rlvr generates on nodes of its own: vLLM's sleep mode shares no GPU with training.
    stage = attrs.evolve(rlvr, environment={"PYTORCH_CUDA_ALLOC_CONF": EXPANDABLE})
    make_plan(stage)


def test_submit_refuses_expandable_segments_in_the_profiles_extra_env(tmp_path: Path) -> None:
    plan = make_plan(dapo_h100)
    profile = _profile(tmp_path, extra_env={"PYTORCH_CUDA_ALLOC_CONF": EXPANDABLE})
    refused = _submit_refusals(plan, profile)
    assert any(r.startswith("profile local: extra_env.PYTORCH_CUDA_ALLOC_CONF") for r in refused)


def test_submit_estimates_again_where_the_profile_changes_the_allocator(tmp_path: Path) -> None:
    # With all of Adam's state on the GPU instead of a quarter on the host, and an MTP block a
    # depth, pretrain fits an H100 only with expandable segments (79.0 GiB; 82.0 with fixed
    # segments): a profile that turns them off is refused.
    stage = attrs.evolve(
        pretrain, environment={**pretrain.environment, "PYTORCH_CUDA_ALLOC_CONF": EXPANDABLE}
    )
    overrides = ("optimizer.optimizer_offload_fraction=0.0", "model.mtp_use_repeated_layer=false")
    plan = make_plan(stage, overrides)
    assert job_memory_issues(plan, _profile(tmp_path)) == []
    off = _profile(tmp_path, extra_env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"})
    [refused] = [issue.render() for issue in job_memory_issues(plan, off)]
    assert refused.startswith("memory.training: does not fit: 82.0 GiB"), refused
    assert "profile local: extra_env.PYTORCH_CUDA_ALLOC_CONF" in refused


def test_preflight_refuses_expandable_segments_in_the_job_environment() -> None:
    plan = make_plan(dapo_h100).as_json()
    environ = {"PYTORCH_CUDA_ALLOC_CONF": f"max_split_size_mb:512, {EXPANDABLE}", "HOME": "/h"}
    refused = [i.render() for i in preflight_rules(plan, [], environ)]
    assert refused and refused[0].startswith("job environment PYTORCH_CUDA_ALLOC_CONF")


# --- secrets ---------------------------------------------------------------------------------

SECRET = "wandb-v1-0123456789abcdef0123456789abcdef"


def test_a_credential_variable_set_in_the_stage_is_refused_unshown() -> None:
    key = "policy.megatron_cfg.env_vars.WANDB_API_KEY"
    found = [e for e in _errors(rlvr, f"{key}={SECRET}") if e.startswith(key)]
    assert len(found) == 1 and "a secret written into the stage" in found[0], found
    assert SECRET not in found[0] and "export it in the submitting shell" in found[0]
    # Read from the run's environment it is still resolved into the config NeMo-RL logs.
    interpolated = rlvr.with_values(
        {"policy.megatron_cfg.env_vars": {"WANDB_API_KEY": from_env("WANDB_API_KEY")}}
    )
    with pytest.raises(RecipeError, match=rf"{key}: a secret"):
        make_plan(interpolated)
    environment = attrs.evolve(rlvr, environment={"HF_TOKEN": "hf_x"})
    with pytest.raises(RecipeError, match=r"environment\.HF_TOKEN: a secret"):
        make_plan(environment)


def test_names_that_only_hold_a_credential_word_are_no_secret() -> None:
    # Neither a variable about tokenizers nor one naming a key's file holds a credential.
    stage = attrs.evolve(
        rlvr, environment={"TOKENIZERS_PARALLELISM": "false", "WANDB_API_KEY_FILE": "/k"}
    )
    assert not [w for w in _warnings(stage) if "secret" in w or "credential" in w]


def test_nemo_evaluators_host_reference_is_no_secret_its_literal_is() -> None:
    # The shipped evaluation passes HF_TOKEN as host:HF_TOKEN (read at launch, never written).
    assert not [w for w in _warnings(evaluation) if "secret" in w]
    key = "evaluation.env_vars.HF_TOKEN"
    assert [e for e in _errors(evaluation, f"{key}=lit:hf_abc") if e.startswith(key)]


def test_a_credential_in_a_config_key_warns_unless_a_placeholder() -> None:
    key = "logger.comet_api_key"
    found = [w for w in _warnings(pretrain, f"{key}={SECRET}") if w.startswith(key)]
    assert len(found) == 1 and "looks like a credential" in found[0] and SECRET not in found[0]
    for value in ("dummy_key", "EMPTY"):
        assert not [w for w in _warnings(pretrain, f"{key}={value}") if w.startswith(key)]
    # Read when the job runs, as the hint says, it is not written.
    read = pretrain.with_values({key: from_env("COMET_API_KEY")})
    assert not [w for w in _warnings(read) if w.startswith(key)]
